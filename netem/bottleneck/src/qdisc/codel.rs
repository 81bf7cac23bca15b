//! CoDel: RFC 8289, as Linux net/sched/sch_codel.c: one FIFO, the control law of codel_core at dequeue,
//! tail drop at `limit` packets on enqueue.

use super::codel_core::{codel_dequeue, CodelParams, CodelQueue, CodelVars};
use super::{Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, check_number, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// codel's parameters (tc's `target`, `interval`, `limit`, `ecn`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    pub target_ms: f64,
    pub interval_ms: f64,
    pub limit_packets: u64,
    pub ecn: bool,
}

impl QdiscParams for CodelConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_number(path, "target_ms", self.target_ms, 0.0, 1e6, true)?;
        check_number(path, "interval_ms", self.interval_ms, 0.0, 1e6, true)?;
        check_integer(path, "limit_packets", self.limit_packets, 1, u32::MAX.into())
    }

    fn max_packets(&self) -> u64 {
        self.limit_packets
    }

    fn build(&self, _now_ns: u64, _rng: &mut SmallRng) -> Box<dyn Qdisc> {
        let params = CodelParams::new(self.target_ms, self.interval_ms, self.ecn);
        Box::new(Codel::new(params, self.limit_packets as usize))
    }
}

/// A complete codel as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json(ecn: bool) -> serde_json::Value {
    serde_json::json!({"kind": "codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 1000, "ecn": ecn})
}

pub struct Codel {
    params: CodelParams,
    vars: CodelVars,
    limit_packets: usize,
    queue: FifoQueue,
    in_service_packets: usize,
}

struct FifoQueue {
    packets: VecDeque<Packet>,
    bytes: u64,
}

impl CodelQueue for FifoQueue {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes
    }
}

impl Codel {
    pub fn new(params: CodelParams, limit_packets: usize) -> Codel {
        Codel {
            params,
            vars: CodelVars::default(),
            limit_packets,
            queue: FifoQueue { packets: VecDeque::new(), bytes: 0 },
            in_service_packets: 0,
        }
    }

    #[cfg(test)]
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        if self.queue.packets.len() + self.in_service_packets >= self.limit_packets {
            drops.push(Dropped { packet, event: Event::DroppedTail });
            return;
        }
        packet.enqueue_ns = now_ns;
        self.queue.bytes += packet.wire_bytes as u64;
        self.queue.packets.push_back(packet);
    }

    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet> {
        codel_dequeue(&mut self.queue, &mut self.vars, &self.params, now_ns, drops)
    }

    fn len_packets(&self) -> usize {
        self.queue.packets.len()
    }

    fn len_bytes(&self) -> u64 {
        self.queue.bytes
    }

    fn set_in_service(&mut self, packets: usize, _bytes: u64, _band: u8) {
        self.in_service_packets = packets;
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.queue.bytes = 0;
        self.queue.packets.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{udp, udp_tos};

    const MS: u64 = 1_000_000;

    /// A standing queue: 200 packets at t = 0, then one dequeue and one new arrival every 2 ms, so the
    /// sojourn time stays far above target. Returns the times of the AQM drops (or CE marks).
    fn run(ecn: bool, tos: u8) -> (Vec<u64>, Vec<u64>) {
        let mut q = Codel::new(CodelParams::new(5.0, 100.0, ecn), 1000);
        let mut drops = Vec::new();
        for i in 0..200 {
            q.enqueue(udp_tos(1, 1000, i, 0, tos), 0, &mut drops);
        }
        let (mut drop_times, mut mark_times) = (Vec::new(), Vec::new());
        for (seq, step) in (200..).zip(1..=300u64) {
            let now = step * 2 * MS;
            q.enqueue(udp_tos(1, 1000, seq, now, tos), now, &mut drops);
            let n_before = drops.len();
            let p = q.dequeue(now, &mut drops);
            drop_times.extend(std::iter::repeat_n(now, drops.len() - n_before));
            if p.is_some_and(|p| p.ce_marked) {
                mark_times.push(now);
            }
        }
        (drop_times, mark_times)
    }

    #[test]
    fn first_drop_one_interval_after_going_above_target_then_interval_over_sqrt_count() {
        let (drops, _) = run(false, 0);
        // The first dequeue (2 ms) sees 2 ms sojourn (< 5 ms target); at 6 ms it is above target:
        // first_above_time = 6 + 100 ms, so the first drop is at the first dequeue at or after 106 ms.
        assert_eq!(drops[0], 106 * MS);
        // Then drop n+1 comes interval/sqrt(n) after drop n (rounded up to this test's 2 ms dequeue grid).
        for n in 1..6 {
            let gap = drops[n] - drops[n - 1];
            let want = (100.0 / (n as f64).sqrt()) * MS as f64;
            assert!((gap as f64 - want).abs() <= 2.0 * MS as f64, "gap {n}: {gap} vs {want}");
        }
    }

    #[test]
    fn marks_ect_packets_instead_of_dropping_when_ecn_is_on() {
        let (drops, marks) = run(true, 0x02);
        assert!(drops.is_empty());
        assert_eq!(marks[0], 106 * MS);
        assert!(marks.len() > 5);
        // Not-ECT packets are still dropped with ecn on.
        let (drops, marks) = run(true, 0);
        assert_eq!(drops[0], 106 * MS);
        assert!(marks.is_empty());
    }

    #[test]
    fn no_drops_while_the_queue_holds_one_mtu_or_less() {
        let mut q = Codel::new(CodelParams::new(5.0, 100.0, false), 1000);
        let mut drops = Vec::new();
        // One packet at a time, each waiting 50 ms: above target, but the backlog never exceeds one MTU.
        for i in 0..100u64 {
            q.enqueue(udp(1, 1500, i as u32, i * 50 * MS), i * 50 * MS, &mut drops);
            assert!(q.dequeue(i * 50 * MS + 49 * MS, &mut drops).is_some());
        }
        assert!(drops.is_empty());
        assert_eq!(q.vars().count, 0);
    }

    #[test]
    fn tail_drops_at_limit() {
        let mut q = Codel::new(CodelParams::new(5.0, 100.0, false), 2);
        let mut drops = Vec::new();
        for i in 0..3 {
            q.enqueue(udp(1, 100, i, 0), 0, &mut drops);
        }
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].event, Event::DroppedTail);
    }
}
