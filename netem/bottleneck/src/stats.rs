//! Periodic counters as JSON lines (docs/run-directory.md, `bottleneck-<direction>.stats.jsonl`). The real-time
//! loop hands over a plain copy of the numbers (`Sample`); the writer thread turns it into JSON.

use crate::lateness::Lateness;
use crate::link::Counters;
use crate::qdisc::dualpi2::CoupledState;
use crate::writer::{Log, LogRecord};

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t_ns: u64,
    pub queue_packets: usize,
    pub queue_bytes: u64,
    pub counters: Counters,
    pub rate_kbit: Option<f64>,
    /// Packets the kernel dropped because our socket buffer overflowed (ENOBUFS), never seen by us.
    pub kernel_overruns: u64,
    /// Packets whose arrival time is the kernel's timestamp (the rest: our clock when read).
    pub kernel_timestamped: u64,
    /// Ground-truth records the writer thread could not take (its ring was full).
    pub log_records_lost: u64,
    /// How late the forwarded packets were released so far (lateness.rs).
    pub lateness: Lateness,
    /// The link's DualPI2 probabilities and queues, when its discipline is dualpi2.
    pub dualpi2: Option<CoupledState>,
}

/// Samples waiting for the writer thread: 100 s of them at the default interval.
const RING_SAMPLES: usize = 1024;

pub fn encode(s: &Sample, out: &mut Vec<u8>) {
    let c = &s.counters;
    let mut line = serde_json::json!({
        "t": s.t_ns as f64 / 1e9,
        "queue_packets": s.queue_packets, "queue_bytes": s.queue_bytes,
        "enqueued": c.enqueued, "forwarded": c.forwarded,
        "dropped_tail": c.dropped_tail, "dropped_aqm": c.dropped_aqm, "dropped_loss": c.dropped_loss,
        "ecn_marked": c.ecn_marked, "rate_kbit": s.rate_kbit,
        "dropped_shutdown": c.dropped_shutdown, "dropped_outage": c.dropped_outage,
        "dropped_gemodel": c.dropped_gemodel, "kernel_overruns": s.kernel_overruns,
        "kernel_timestamped": s.kernel_timestamped, "log_records_lost": s.log_records_lost,
        "released_late_1ms": s.lateness.over[0], "released_late_10ms": s.lateness.over[1],
        "released_late_100ms": s.lateness.over[2], "max_lateness_ms": s.lateness.max_ns as f64 / 1e6,
    });
    if let Some(d) = &s.dualpi2 {
        line["dualpi2"] = serde_json::json!({
            "p_base": d.base_prob, "p_classic": d.classic_prob, "p_coupled": d.coupled_prob,
            "l_packets": d.l_packets, "c_packets": d.c_packets,
        });
    }
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

/// The stats file: one JSON line per sample.
pub type StatsWriter = Log<Sample>;

impl LogRecord for Sample {
    const RING: usize = RING_SAMPLES;
    fn encode(&self, out: &mut Vec<u8>) {
        encode(self, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_one_json_line_with_every_field() {
        let mut s = Sample {
            t_ns: 1_500_000_000,
            queue_packets: 3,
            queue_bytes: 4542,
            rate_kbit: Some(1000.0),
            log_records_lost: 2,
            ..Sample::default()
        };
        s.counters.forwarded = 7;
        let mut out = Vec::new();
        encode(&s, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["t"], 1.5);
        assert_eq!(
            (v["queue_packets"].as_u64(), v["queue_bytes"].as_u64(), v["forwarded"].as_u64()),
            (Some(3), Some(4542), Some(7))
        );
        assert_eq!(v["rate_kbit"], 1000.0);
        assert_eq!(v["log_records_lost"], 2);
        for k in [
            "enqueued",
            "dropped_tail",
            "dropped_aqm",
            "dropped_loss",
            "ecn_marked",
            "dropped_shutdown",
            "dropped_outage",
            "dropped_gemodel",
            "kernel_overruns",
            "kernel_timestamped",
            "released_late_1ms",
            "released_late_10ms",
            "released_late_100ms",
        ] {
            assert_eq!(v[k], 0, "{k}");
        }
        assert_eq!(v["max_lateness_ms"], 0.0);
        assert!(v.get("dualpi2").is_none(), "only a dualpi2 link's samples have it");
    }

    #[test]
    fn a_dualpi2_sample_carries_its_probabilities_and_queues() {
        let d = CoupledState { base_prob: 0.25, classic_prob: 0.0625, coupled_prob: 0.5, l_packets: 2, c_packets: 9 };
        let mut out = Vec::new();
        encode(&Sample { dualpi2: Some(d), ..Sample::default() }, &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["dualpi2"],
            serde_json::json!({"p_base": 0.25, "p_classic": 0.0625, "p_coupled": 0.5, "l_packets": 2, "c_packets": 9})
        );
    }
}
