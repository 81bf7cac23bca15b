//! A file written by a background thread, so that recording a packet or a stats sample never delays a release.
//! The real-time loop pushes fixed-size items into a preallocated ring (ring.rs): no allocation, lock, page fault
//! or system call on its side, and never a wait. The thread (normal scheduling policy) drains the ring every
//! `DRAIN_INTERVAL`, turns the items into bytes, writes them, and flushes the file every `FLUSH_INTERVAL` and at
//! close. If the ring is full (the thread or the disk fell behind by the ring's whole capacity), the item is not
//! written and is counted in `lost()`: the caller reports it; nothing is dropped silently.

use crate::ring::{self, Producer};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const DRAIN_INTERVAL: Duration = Duration::from_millis(2);
const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

pub struct BackgroundWriter<T> {
    ring: Option<Producer<T>>,
    lost: u64,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl<T: Copy + Send + 'static> BackgroundWriter<T> {
    /// Creates the file and writes `header` to it now (so that errors surface at once), then starts the thread
    /// with a ring of `capacity` items. Call before the process switches to SCHED_FIFO: the thread keeps the
    /// normal policy.
    pub fn create(
        path: &Path,
        header: &[u8],
        capacity: usize,
        fill: T,
        encode: fn(&T, &mut Vec<u8>),
    ) -> io::Result<BackgroundWriter<T>> {
        let mut file = File::create(path)?;
        file.write_all(header)?;
        Self::start(BufWriter::with_capacity(1 << 20, file), capacity, fill, encode)
    }

    /// The same on any output (the tests use memory).
    pub fn start<W: Write + Send + 'static>(
        mut out: W,
        capacity: usize,
        fill: T,
        encode: fn(&T, &mut Vec<u8>),
    ) -> io::Result<BackgroundWriter<T>> {
        let (producer, mut consumer) = ring::ring(capacity, fill);
        let thread = std::thread::Builder::new().name("rtclab-writer".into()).spawn(move || -> io::Result<()> {
            let mut bytes = Vec::with_capacity(1 << 20);
            let mut flushed = Instant::now();
            loop {
                let closed = consumer.is_closed();
                consumer.drain(|item| encode(item, &mut bytes));
                if !bytes.is_empty() {
                    out.write_all(&bytes)?;
                    bytes.clear();
                }
                if closed {
                    return out.flush();
                }
                if flushed.elapsed() >= FLUSH_INTERVAL {
                    out.flush()?;
                    flushed = Instant::now();
                }
                std::thread::park_timeout(DRAIN_INTERVAL);
            }
        })?;
        Ok(BackgroundWriter { ring: Some(producer), lost: 0, thread: Some(thread) })
    }

    /// Hands `item` to the thread; counts it as lost if the ring is full. Never blocks.
    pub fn push(&mut self, item: T) {
        let ok = self.ring.as_mut().is_some_and(|r| r.push(item));
        self.lost += !ok as u64;
    }

    /// Items that could not be written because the ring was full (or the writer was closed).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Err if the thread has stopped on a write error (checked without waiting; the error is returned once).
    pub fn check(&mut self) -> io::Result<()> {
        if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            return self.join();
        }
        Ok(())
    }

    /// Writes out everything pushed so far and closes the file; returns the thread's error, if any.
    pub fn close(&mut self) -> io::Result<()> {
        self.ring.take();
        if let Some(t) = self.thread.as_ref() {
            t.thread().unpark();
        }
        self.join()
    }

    fn join(&mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| io::Error::other("the writer thread panicked"))?,
            None => Ok(()),
        }
    }
}

/// A record of one of the bottleneck's logs: how many wait for the writer thread, and how one becomes bytes.
pub trait LogRecord: Copy + Default + Send + 'static {
    /// Records the ring holds between the real-time loop and the writer thread.
    const RING: usize;
    /// Appends the record's bytes (run on the writer thread).
    fn encode(&self, out: &mut Vec<u8>);
}

/// One of the bottleneck's logs (the ground-truth log, the stats, the meters' actions, the schedule's steps): a file
/// of `R` records, an optional header first, written by a background thread.
pub struct Log<R: LogRecord> {
    out: BackgroundWriter<R>,
}

impl<R: LogRecord> Log<R> {
    /// A log without a header (the JSON-lines logs).
    pub fn create(path: &Path) -> io::Result<Log<R>> {
        Self::with_header(path, b"")
    }

    pub fn with_header(path: &Path, header: &[u8]) -> io::Result<Log<R>> {
        Ok(Log { out: BackgroundWriter::create(path, header, R::RING, R::default(), R::encode)? })
    }

    /// Hands the record to the writer thread (never blocks; counted in `lost()` if its ring is full).
    pub fn write(&mut self, r: R) {
        self.out.push(r);
    }

    /// Records that could not be written (the writer thread fell a whole ring behind).
    pub fn lost(&self) -> u64 {
        self.out.lost()
    }

    /// Err if the writer thread stopped on a write error.
    pub fn check(&mut self) -> io::Result<()> {
        self.out.check()
    }

    pub fn close(&mut self) -> io::Result<()> {
        self.out.close()
    }
}

impl<T> Drop for BackgroundWriter<T> {
    fn drop(&mut self) {
        self.ring.take();
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Mutex};

    fn encode_u32(x: &u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&x.to_le_bytes());
    }

    /// Tells the test that the first write has begun, then waits for the test's go.
    type Gate = Arc<Mutex<(Sender<()>, Receiver<()>)>>;

    /// Output in memory, shared with the test; optionally holds its first write until the test says so.
    #[derive(Clone)]
    struct Sink {
        bytes: Arc<Mutex<Vec<u8>>>,
        gate: Option<Gate>,
    }

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if let Some(g) = self.gate.take() {
                let g = g.lock().unwrap();
                g.0.send(()).unwrap(); // "the thread is inside its first write"
                g.1.recv().unwrap(); // wait for the test to let it go on
            }
            self.bytes.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn values(bytes: &[u8]) -> Vec<u32> {
        bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn writes_every_item_in_order_while_the_producer_runs() {
        let sink = Sink { bytes: Arc::default(), gate: None };
        // Room for all of them, so that a loaded test machine cannot make this one lose any.
        let mut w = BackgroundWriter::start(sink.clone(), 1 << 18, 0u32, encode_u32).unwrap();
        for i in 0..200_000u32 {
            w.push(i);
            if i % 1000 == 0 {
                std::thread::sleep(Duration::from_micros(200)); // a packet train, not one burst
            }
        }
        w.close().unwrap();
        assert_eq!(w.lost(), 0);
        assert_eq!(values(&sink.bytes.lock().unwrap()), (0..200_000).collect::<Vec<u32>>());
    }

    #[test]
    fn a_full_ring_counts_what_it_could_not_take_and_writes_the_rest() {
        let (to_test, from_sink) = channel();
        let (to_sink, from_test) = channel();
        let sink = Sink { bytes: Arc::default(), gate: Some(Arc::new(Mutex::new((to_test, from_test)))) };
        let mut w = BackgroundWriter::start(sink.clone(), 8, 0u32, encode_u32).unwrap();
        w.push(0);
        from_sink.recv().unwrap(); // the thread took item 0 and is stuck writing it: the disk stalls
        for i in 1..=11 {
            w.push(i); // 8 fit, 3 do not
        }
        assert_eq!(w.lost(), 3);
        to_sink.send(()).unwrap();
        w.close().unwrap();
        assert_eq!(values(&sink.bytes.lock().unwrap()), (0..=8).collect::<Vec<u32>>());
        w.push(12); // after close: counted, not written
        assert_eq!(w.lost(), 4);
    }

    #[test]
    fn a_write_error_surfaces() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = BackgroundWriter::start(Broken, 8, 0u32, encode_u32).unwrap();
        w.push(1);
        let t0 = Instant::now();
        while w.check().is_ok() {
            assert!(t0.elapsed() < Duration::from_secs(5), "the error never surfaced");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
