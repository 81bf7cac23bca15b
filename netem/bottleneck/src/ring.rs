//! A bounded single-producer, single-consumer queue of `Copy` items, allocated and touched once when it is made:
//! the real-time loop hands records to the writer thread (writer.rs) through it without allocating, locking, faulting
//! a page in or making a system call. A full ring refuses the item, and the producer counts what it could not push.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

struct Shared<T> {
    slots: Box<[UnsafeCell<T>]>,
    /// Items pushed so far; written by the producer only.
    head: AtomicUsize,
    /// Items taken so far; written by the consumer only.
    tail: AtomicUsize,
    /// Set when the producer is dropped: nothing more will come.
    closed: AtomicBool,
}

// SAFETY: a slot is written by the producer only while it is free (between tail and tail + capacity, not yet
// published through `head`), and read by the consumer only after `head` published it and before `tail` releases it.
unsafe impl<T: Send> Sync for Shared<T> {}

pub struct Producer<T> {
    shared: Arc<Shared<T>>,
}

pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
}

/// A ring of `capacity` items, every slot written with `fill` now (so that its pages are in memory before the
/// real-time loop starts).
pub fn ring<T: Copy + Send>(capacity: usize, fill: T) -> (Producer<T>, Consumer<T>) {
    assert!(capacity > 0, "a ring needs room for at least one item");
    let slots: Box<[UnsafeCell<T>]> = (0..capacity).map(|_| UnsafeCell::new(fill)).collect();
    let shared = Arc::new(Shared {
        slots,
        head: AtomicUsize::new(0),
        tail: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
    });
    (Producer { shared: shared.clone() }, Consumer { shared })
}

impl<T: Copy + Send> Producer<T> {
    /// Appends `item`; false (and nothing written) when the ring is full.
    pub fn push(&mut self, item: T) -> bool {
        let s = &*self.shared;
        let head = s.head.load(Ordering::Relaxed);
        let tail = s.tail.load(Ordering::Acquire);
        if head.wrapping_sub(tail) == s.slots.len() {
            return false;
        }
        // SAFETY: the slot is free (see `Shared`), and this is the only producer.
        unsafe { *s.slots[head % s.slots.len()].get() = item };
        s.head.store(head.wrapping_add(1), Ordering::Release);
        true
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

impl<T: Copy + Send> Consumer<T> {
    /// Passes every item pushed so far to `f`, oldest first, and frees their slots; returns how many.
    pub fn drain(&mut self, mut f: impl FnMut(&T)) -> usize {
        let s = &*self.shared;
        let tail = s.tail.load(Ordering::Relaxed);
        let head = s.head.load(Ordering::Acquire);
        let n = head.wrapping_sub(tail);
        for i in 0..n {
            // SAFETY: published by the producer (below head), not yet released to it (at or above tail).
            f(unsafe { &*s.slots[tail.wrapping_add(i) % s.slots.len()].get() });
        }
        s.tail.store(head, Ordering::Release);
        n
    }

    /// True once the producer is gone. Read it before the last `drain`: that drain then sees every item.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_refuses_items_and_keeps_the_ones_it_holds() {
        let (mut p, mut c) = ring(4, 0u32);
        assert!((1..=4).all(|i| p.push(i)));
        assert!(!p.push(5));
        let mut got = Vec::new();
        assert_eq!(c.drain(|&x| got.push(x)), 4);
        assert_eq!(got, [1, 2, 3, 4]);
        // Room again, and the positions wrap around.
        assert!((6..=9).all(|i| p.push(i)));
        got.clear();
        c.drain(|&x| got.push(x));
        assert_eq!(got, [6, 7, 8, 9]);
        assert_eq!(c.drain(|_| panic!("empty")), 0);
    }

    #[test]
    fn every_item_crosses_threads_once_and_in_order() {
        const N: u64 = 2_000_000;
        let (mut p, mut c) = ring(1024, 0u64);
        let producer = std::thread::spawn(move || {
            for i in 0..N {
                while !p.push(i) {
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0u64;
        loop {
            let closed = c.is_closed();
            c.drain(|&x| {
                assert_eq!(x, next);
                next += 1;
            });
            if closed {
                break;
            }
        }
        producer.join().unwrap();
        assert_eq!(next, N);
    }
}
