//! DropTail FIFO: Linux pfifo (limit in packets) and bfifo (limit in bytes), net/sched/sch_fifo.c.
//! A packet that does not fit is dropped at the tail.

use super::{Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, field, optional, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// fifo's parameters: exactly one of `limit_packets` (pfifo) and `limit_bytes` (bfifo). netem turns a scenario's
/// `limit_ms` into bytes at the link's first rate, so the bottleneck refuses `limit_ms`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FifoConfig {
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    pub limit_packets: Option<u64>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FifoLimit {
    Packets(u64),
    Bytes(u64),
}

impl FifoConfig {
    /// The limit of a validated config (which has exactly one).
    pub fn limit(&self) -> FifoLimit {
        match (self.limit_packets, self.limit_bytes) {
            (_, Some(bytes)) => FifoLimit::Bytes(bytes),
            (packets, None) => FifoLimit::Packets(packets.unwrap_or(0)),
        }
    }
}

impl QdiscParams for FifoConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        match (self.limit_packets, self.limit_bytes) {
            (Some(n), None) => check_integer(path, "limit_packets", n, 1, u32::MAX.into()),
            (None, Some(n)) => check_integer(path, "limit_bytes", n, 1, u32::MAX.into()),
            (Some(_), Some(_)) => {
                Err(ConfigError::new(path, "fifo takes exactly one of limit_packets, limit_bytes (got both)"))
            }
            (None, None) => Err(ConfigError::new(
                &field(path, "limit_packets"),
                "is required (fifo takes exactly one of limit_packets, limit_bytes)",
            )),
        }
    }

    fn max_packets(&self) -> u64 {
        match self.limit() {
            FifoLimit::Packets(n) => n,
            FifoLimit::Bytes(b) => b / 64 + 1,
        }
    }

    fn build(&self, _now_ns: u64, _rng: &mut SmallRng) -> Box<dyn Qdisc> {
        Box::new(Fifo::new(self.limit()))
    }
}

/// A complete fifo as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json(limit_packets: u64) -> serde_json::Value {
    serde_json::json!({"kind": "fifo", "limit_packets": limit_packets})
}

pub struct Fifo {
    limit: FifoLimit,
    queue: VecDeque<Packet>,
    bytes: u64,
    in_service: (usize, u64),
}

impl Fifo {
    pub fn new(limit: FifoLimit) -> Fifo {
        Fifo { limit, queue: VecDeque::new(), bytes: 0, in_service: (0, 0) }
    }
}

impl Qdisc for Fifo {
    fn enqueue(&mut self, packet: Packet, _now_ns: u64, drops: &mut Vec<Dropped>) {
        let fits = match self.limit {
            FifoLimit::Packets(n) => ((self.queue.len() + self.in_service.0) as u64) < n,
            FifoLimit::Bytes(b) => self.bytes + self.in_service.1 + packet.wire_bytes as u64 <= b,
        };
        if fits {
            self.bytes += packet.wire_bytes as u64;
            self.queue.push_back(packet);
        } else {
            drops.push(Dropped { packet, event: Event::DroppedTail });
        }
    }

    fn dequeue(&mut self, _now_ns: u64, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        Some(p)
    }

    fn len_packets(&self) -> usize {
        self.queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn set_in_service(&mut self, packets: usize, bytes: u64, _band: u8) {
        self.in_service = (packets, bytes);
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.bytes = 0;
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::udp;

    #[test]
    fn packet_limit_drops_the_tail() {
        let mut q = Fifo::new(FifoLimit::Packets(3));
        let mut drops = Vec::new();
        for i in 0..5 {
            q.enqueue(udp(1, 100, i, 0), 0, &mut drops);
        }
        assert_eq!(q.len_packets(), 3);
        assert_eq!(drops.iter().map(|d| d.packet.id).collect::<Vec<_>>(), vec![3, 4]);
        assert!(drops.iter().all(|d| d.event == Event::DroppedTail));
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 0);
    }

    #[test]
    fn byte_limit_counts_link_layer_bytes() {
        // 1000-byte IP packets are 1014 link-layer bytes: three fit in 3042 bytes, not in 3041.
        let mut drops = Vec::new();
        let mut q = Fifo::new(FifoLimit::Bytes(3042));
        for i in 0..4 {
            q.enqueue(udp(1, 1000, i, 0), 0, &mut drops);
        }
        assert_eq!((q.len_packets(), q.len_bytes(), drops.len()), (3, 3042, 1));
        let mut q = Fifo::new(FifoLimit::Bytes(3041));
        drops.clear();
        for i in 0..4 {
            q.enqueue(udp(1, 1000, i, 0), 0, &mut drops);
        }
        assert_eq!((q.len_packets(), drops.len()), (2, 2));
        // A small packet still fits after a big one was refused (bfifo checks each packet on its own).
        q.enqueue(udp(1, 100, 9, 0), 0, &mut drops);
        assert_eq!(q.len_packets(), 3);
    }
}
