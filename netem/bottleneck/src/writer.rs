//! A file written by a background thread, so that the real-time loop never blocks on disk I/O (page-cache
//! writeback can stall a write for tens of milliseconds when the machine is busy). Chunks go through a
//! channel; the thread flushes when asked and when the writer is closed.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

enum Msg {
    Bytes(Vec<u8>),
    Flush,
}

pub struct BackgroundWriter {
    tx: Option<Sender<Msg>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl BackgroundWriter {
    /// Creates the file now (so that errors surface at once) and starts its thread. Call before the process
    /// switches to SCHED_FIFO: the thread then keeps the normal policy.
    pub fn create(path: &Path) -> io::Result<BackgroundWriter> {
        let file = File::create(path)?;
        let (tx, rx) = channel::<Msg>();
        let thread = std::thread::Builder::new().name("rtclab-writer".into()).spawn(move || {
            let mut out = BufWriter::with_capacity(1 << 20, file);
            for msg in rx {
                match msg {
                    Msg::Bytes(b) => out.write_all(&b)?,
                    Msg::Flush => out.flush()?,
                }
            }
            out.flush()
        })?;
        Ok(BackgroundWriter { tx: Some(tx), thread: Some(thread) })
    }

    fn send(&self, msg: Msg) -> io::Result<()> {
        self.tx.as_ref().expect("open").send(msg).map_err(|_| io::Error::other("the writer thread stopped (a write failed)"))
    }

    pub fn write(&self, bytes: Vec<u8>) -> io::Result<()> {
        self.send(Msg::Bytes(bytes))
    }

    pub fn flush(&self) -> io::Result<()> {
        self.send(Msg::Flush)
    }

    /// Writes out everything sent so far and closes the file; returns the thread's first error.
    pub fn close(&mut self) -> io::Result<()> {
        self.tx.take();
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| io::Error::other("the writer thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
