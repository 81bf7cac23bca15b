//! Best effort for a real-time loop on a shared machine: SCHED_FIFO, memory that never faults or grows on the hot
//! path, and the CPU kept out of deep idle states. Each step that fails becomes a note; the program goes on.

use std::io;

/// The heap is grown by this much at a time and never given back, so that the loop's few allocations (a packet's
/// bytes, a scheduler's node) never wait for `brk`/`mmap` and the page faults of fresh locked memory (a trace
/// showed a `brk` of 96 us on the loop under `mlockall`).
const HEAP_PAD_BYTES: i32 = 16 << 20;
/// Allocations up to this come from the heap rather than from their own `mmap` (glibc's largest setting).
const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;

/// SCHED_FIFO (priority 10) for the calling thread, locked memory, a heap that does not shrink or grow in small
/// steps, and `/dev/cpu_dma_latency` held at 0 (while the returned file is open). Returns notes on what could not
/// be done. Call after starting the writer threads: they keep the normal policy.
pub fn tune_for_latency(realtime: bool, hold_dma_latency: bool) -> (Option<std::fs::File>, Vec<String>) {
    let mut notes = Vec::new();
    if realtime {
        unsafe {
            // glibc: 0 on failure. Without them the loop still runs, with occasional slow allocations.
            if libc::mallopt(libc::M_TRIM_THRESHOLD, -1) == 0
                || libc::mallopt(libc::M_TOP_PAD, HEAP_PAD_BYTES) == 0
                || libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 0
            {
                notes.push("malloc tuning refused".to_string());
            }
            // Grow the heap by the pad now, before locking, so that mlockall faults it in here.
            drop(std::hint::black_box(Vec::<u8>::with_capacity(1 << 20)));
            let param = libc::sched_param { sched_priority: 10 };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
                notes.push(format!("SCHED_FIFO not available ({})", io::Error::last_os_error()));
            }
            if libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) != 0 {
                notes.push(format!("mlockall failed ({})", io::Error::last_os_error()));
            }
        }
    }
    let mut dma = None;
    if hold_dma_latency {
        use std::io::Write;
        match std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency") {
            Ok(mut f) => match f.write_all(&0i32.to_ne_bytes()) {
                Ok(()) => dma = Some(f),
                Err(e) => notes.push(format!("cannot hold /dev/cpu_dma_latency at 0 ({e})")),
            },
            Err(e) => notes.push(format!("cannot open /dev/cpu_dma_latency ({e})")),
        }
    }
    (dma, notes)
}
