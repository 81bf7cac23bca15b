//! SFQ: Stochastic Fairness Queueing (McKenney, "Stochastic Fairness Queueing", INFOCOM 1990), as Linux
//! net/sched/sch_sfq.c: packets hashed by their 5-tuple (with a seed that `perturb` changes) into `divisor`
//! buckets, one FIFO per bucket; active buckets served round robin, each sending up to `quantum` bytes a turn
//! (deficit round robin); a new flow joins at the end of the round; when `limit` packets are queued, the
//! longest flow loses its tail packet. Linux also caps each flow at 127 packets (`depth`), kept here.

use super::{Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, check_number, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// sfq's parameters (tc's `limit`, `quantum`, `perturb`, `divisor`). netem turns a scenario's `limit_ms` into
/// packets, so the bottleneck refuses `limit_ms`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfqConfig {
    pub limit_packets: u64,
    pub quantum_bytes: u64,
    pub perturb_s: f64,
    pub divisor: u32,
}

impl QdiscParams for SfqConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_integer(path, "limit_packets", self.limit_packets, 2, u32::MAX.into())?;
        check_integer(path, "quantum_bytes", self.quantum_bytes, 64, u32::MAX.into())?;
        check_number(path, "perturb_s", self.perturb_s, 0.0, 1e6, false)?;
        check_integer(path, "divisor", self.divisor.into(), 1, 65536)
    }

    fn max_packets(&self) -> u64 {
        self.limit_packets
    }

    fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
        Box::new(Sfq::new(
            self.limit_packets as usize,
            self.quantum_bytes as i64,
            (self.perturb_s * 1e9) as u64,
            self.divisor,
            now_ns,
            SmallRng::from_rng(rng).expect("rng"),
        ))
    }
}

/// A complete sfq as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json(limit_packets: u64) -> serde_json::Value {
    serde_json::json!({"kind": "sfq", "limit_packets": limit_packets, "quantum_bytes": 1514, "perturb_s": 0, "divisor": 1024})
}

const MAX_DEPTH_PACKETS: usize = 127;

struct Slot {
    packets: VecDeque<Packet>,
    bytes: u64,
    allot: i64,
}

pub struct Sfq {
    limit_packets: usize,
    quantum_bytes: i64,
    perturb_ns: u64,
    divisor: u32,
    seed: u64,
    next_perturb_ns: u64,
    slots: HashMap<u32, Slot>,
    /// Active buckets in round-robin order; the front is served.
    active: VecDeque<u32>,
    len_packets: usize,
    len_bytes: u64,
    rng: SmallRng,
    in_service_packets: usize,
}

impl Sfq {
    pub fn new(
        limit_packets: usize,
        quantum_bytes: i64,
        perturb_ns: u64,
        divisor: u32,
        now_ns: u64,
        mut rng: SmallRng,
    ) -> Sfq {
        let seed = rng.gen();
        Sfq {
            limit_packets,
            quantum_bytes,
            perturb_ns,
            divisor,
            seed,
            next_perturb_ns: now_ns + perturb_ns,
            slots: HashMap::new(),
            active: VecDeque::new(),
            len_packets: 0,
            len_bytes: 0,
            rng,
            in_service_packets: 0,
        }
    }

    fn bucket(&self, p: &Packet) -> u32 {
        let h = (p.flow_hash ^ self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 32) % self.divisor as u64) as u32
    }

    fn push(&mut self, mut packet: Packet) -> u32 {
        let b = self.bucket(&packet);
        packet.band = b as u8;
        let quantum = self.quantum_bytes;
        let slot = self.slots.entry(b).or_insert_with(|| Slot { packets: VecDeque::new(), bytes: 0, allot: 0 });
        if slot.packets.is_empty() {
            slot.allot = quantum;
            self.active.push_back(b);
        }
        slot.bytes += packet.wire_bytes as u64;
        slot.packets.push_back(packet);
        self.len_packets += 1;
        self.len_bytes += slot.packets.back().unwrap().wire_bytes as u64;
        b
    }

    fn drop_tail_of(&mut self, b: u32) -> Packet {
        let slot = self.slots.get_mut(&b).unwrap();
        let p = slot.packets.pop_back().unwrap();
        slot.bytes -= p.wire_bytes as u64;
        self.len_packets -= 1;
        self.len_bytes -= p.wire_bytes as u64;
        if slot.packets.is_empty() {
            self.active.retain(|&x| x != b);
        }
        p
    }
}

impl Qdisc for Sfq {
    fn enqueue(&mut self, packet: Packet, _now_ns: u64, drops: &mut Vec<Dropped>) {
        let b = self.bucket(&packet);
        if self.slots.get(&b).map_or(0, |s| s.packets.len()) >= MAX_DEPTH_PACKETS {
            drops.push(Dropped { packet, event: Event::DroppedTail });
            return;
        }
        self.push(packet);
        if self.len_packets + self.in_service_packets > self.limit_packets {
            // sfq_drop(): the longest flow loses its tail packet.
            let longest =
                *self.active.iter().max_by_key(|b| (self.slots[b].packets.len(), std::cmp::Reverse(**b))).unwrap();
            let p = self.drop_tail_of(longest);
            drops.push(Dropped { packet: p, event: Event::DroppedTail });
        }
    }

    fn dequeue(&mut self, _now_ns: u64, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        loop {
            let b = *self.active.front()?;
            let slot = self.slots.get_mut(&b).unwrap();
            if slot.allot <= 0 {
                slot.allot += self.quantum_bytes;
                self.active.rotate_left(1);
                continue;
            }
            let p = slot.packets.pop_front().unwrap();
            slot.bytes -= p.wire_bytes as u64;
            self.len_packets -= 1;
            self.len_bytes -= p.wire_bytes as u64;
            if slot.packets.is_empty() {
                self.active.pop_front();
            } else {
                slot.allot -= p.wire_bytes as i64;
            }
            return Some(p);
        }
    }

    fn len_packets(&self) -> usize {
        self.len_packets
    }

    fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    fn next_timer_ns(&self) -> Option<u64> {
        (self.perturb_ns > 0).then_some(self.next_perturb_ns)
    }

    fn on_timer(&mut self, now_ns: u64) {
        if self.perturb_ns == 0 || now_ns < self.next_perturb_ns {
            return;
        }
        while self.next_perturb_ns <= now_ns {
            self.next_perturb_ns += self.perturb_ns;
        }
        // New seed; queued packets move to their new buckets in their old order (Linux sfq_rehash()).
        self.seed = self.rng.gen();
        let held = self.drain();
        for p in held {
            self.push(p);
        }
    }

    fn set_in_service(&mut self, packets: usize, _bytes: u64, _band: u8) {
        self.in_service_packets = packets;
    }

    fn drain(&mut self) -> Vec<Packet> {
        let mut out = Vec::with_capacity(self.len_packets);
        for b in self.active.drain(..) {
            if let Some(slot) = self.slots.get_mut(&b) {
                out.extend(slot.packets.drain(..));
                slot.bytes = 0;
            }
        }
        self.len_packets = 0;
        self.len_bytes = 0;
        out
    }
}
