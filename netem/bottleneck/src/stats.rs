//! Periodic counters as JSON lines (docs/run-directory.md, `bottleneck-<direction>.stats.jsonl`).

use crate::link::Counters;
use crate::writer::BackgroundWriter;
use std::io;
use std::path::Path;

pub struct StatsWriter {
    out: BackgroundWriter,
}

pub struct Sample<'a> {
    pub t_ns: u64,
    pub queue_packets: usize,
    pub queue_bytes: u64,
    pub counters: &'a Counters,
    pub rate_kbit: Option<f64>,
    /// Packets the kernel dropped because our socket buffer overflowed (ENOBUFS), never seen by us.
    pub kernel_overruns: u64,
    /// Packets whose arrival time is the kernel's timestamp (the rest: our clock when read).
    pub kernel_timestamped: u64,
}

impl StatsWriter {
    pub fn create(path: &Path) -> io::Result<StatsWriter> {
        Ok(StatsWriter { out: BackgroundWriter::create(path)? })
    }

    pub fn write(&mut self, s: &Sample) -> io::Result<()> {
        let c = s.counters;
        let line = serde_json::json!({
            "t": s.t_ns as f64 / 1e9,
            "queue_packets": s.queue_packets, "queue_bytes": s.queue_bytes,
            "enqueued": c.enqueued, "forwarded": c.forwarded,
            "dropped_tail": c.dropped_tail, "dropped_aqm": c.dropped_aqm, "dropped_loss": c.dropped_loss,
            "ecn_marked": c.ecn_marked, "rate_kbit": s.rate_kbit,
            "dropped_shutdown": c.dropped_shutdown, "kernel_overruns": s.kernel_overruns,
            "kernel_timestamped": s.kernel_timestamped,
        });
        self.out.write(format!("{line}\n").into_bytes())?;
        self.out.flush()
    }

    pub fn close(&mut self) -> io::Result<()> {
        self.out.close()
    }
}
