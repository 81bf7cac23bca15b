//! FQ-CoDel: RFC 8290 (The Flow Queue CoDel Packet Scheduler and Active Queue Management Algorithm), as Linux
//! net/sched/sch_fq_codel.c: packets hashed by 5-tuple into `flows` queues; a queue that becomes active joins
//! the new-flows list with a `quantum` deficit; dequeue serves new flows before old ones (deficit round robin),
//! a new flow that runs out of deficit or empties moves to the old list; each flow runs its own CoDel (with the
//! whole qdisc's backlog for the MTU check, as Linux); over `limit` packets, the fattest flow (most bytes)
//! loses packets from its head, up to half its backlog and at most 64 (Linux's drop batch).
//! Linux's memory_limit (32 MB of buffers) is not modelled.

use super::codel_core::{codel_dequeue, CodelParams, CodelQueue, CodelVars};
use super::{Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, check_number, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// fq_codel's parameters (tc's `target`, `interval`, `limit`, `quantum`, `flows`, `ecn`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    pub target_ms: f64,
    pub interval_ms: f64,
    pub limit_packets: u64,
    pub quantum_bytes: u64,
    pub flows: u32,
    pub ecn: bool,
}

impl QdiscParams for FqCodelConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_number(path, "target_ms", self.target_ms, 0.0, 1e6, true)?;
        check_number(path, "interval_ms", self.interval_ms, 0.0, 1e6, true)?;
        check_integer(path, "limit_packets", self.limit_packets, 1, u32::MAX.into())?;
        check_integer(path, "quantum_bytes", self.quantum_bytes, 64, u32::MAX.into())?;
        check_integer(path, "flows", self.flows.into(), 1, 65536)
    }

    fn max_packets(&self) -> u64 {
        self.limit_packets
    }

    fn build(&self, _now_ns: u64, _rng: &mut SmallRng) -> Box<dyn Qdisc> {
        let params = CodelParams::new(self.target_ms, self.interval_ms, self.ecn);
        Box::new(FqCodel::new(params, self.limit_packets as usize, self.quantum_bytes as i64, self.flows))
    }
}

/// A complete fq_codel as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json(ecn: bool) -> serde_json::Value {
    serde_json::json!({"kind": "fq_codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 10240, "quantum_bytes": 1514, "flows": 1024, "ecn": ecn})
}

const DROP_BATCH_PACKETS: usize = 64;

#[derive(Clone, Copy, PartialEq)]
enum List {
    None,
    New,
    Old,
}

struct Flow {
    packets: VecDeque<Packet>,
    bytes: u64,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

pub struct FqCodel {
    params: CodelParams,
    limit_packets: usize,
    quantum_bytes: i64,
    flows: Vec<Flow>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    len_packets: usize,
    len_bytes: u64,
    in_service_packets: usize,
}

/// One flow's queue as CoDel sees it, with the qdisc-wide counters it must keep in step.
struct FlowQueue<'a> {
    flow: &'a mut Flow,
    len_packets: &'a mut usize,
    len_bytes: &'a mut u64,
}

impl CodelQueue for FlowQueue<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.flow.packets.pop_front()?;
        self.flow.bytes -= p.wire_bytes as u64;
        *self.len_packets -= 1;
        *self.len_bytes -= p.wire_bytes as u64;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.len_bytes
    }
}

impl FqCodel {
    pub fn new(params: CodelParams, limit_packets: usize, quantum_bytes: i64, flows: u32) -> FqCodel {
        let flows = (0..flows)
            .map(|_| Flow {
                packets: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                vars: CodelVars::default(),
                list: List::None,
            })
            .collect();
        FqCodel {
            params,
            limit_packets,
            quantum_bytes,
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len_packets: 0,
            len_bytes: 0,
            in_service_packets: 0,
        }
    }

    fn classify(&self, p: &Packet) -> usize {
        let h = p.flow_hash.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 32) % self.flows.len() as u64) as usize
    }

    /// fq_codel_drop(): head drops from the fattest flow, up to half its backlog (at most 64 packets).
    fn drop_from_fattest(&mut self, drops: &mut Vec<Dropped>) {
        let fattest = (0..self.flows.len()).max_by_key(|&i| self.flows[i].bytes).unwrap();
        let flow = &mut self.flows[fattest];
        let threshold = flow.bytes / 2;
        let mut dropped_bytes = 0;
        let mut n = 0;
        while n < DROP_BATCH_PACKETS && dropped_bytes < threshold {
            let Some(p) = flow.packets.pop_front() else { break };
            flow.bytes -= p.wire_bytes as u64;
            self.len_packets -= 1;
            self.len_bytes -= p.wire_bytes as u64;
            dropped_bytes += p.wire_bytes as u64;
            n += 1;
            drops.push(Dropped { packet: p, event: Event::DroppedTail });
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        let idx = self.classify(&packet);
        packet.band = idx as u8;
        packet.enqueue_ns = now_ns;
        let flow = &mut self.flows[idx];
        flow.bytes += packet.wire_bytes as u64;
        self.len_bytes += packet.wire_bytes as u64;
        flow.packets.push_back(packet);
        self.len_packets += 1;
        if flow.list == List::None {
            flow.list = List::New;
            flow.deficit = self.quantum_bytes;
            self.new_flows.push_back(idx);
        }
        if self.len_packets + self.in_service_packets > self.limit_packets {
            self.drop_from_fattest(drops);
        }
    }

    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let idx = if from_new { *self.new_flows.front()? } else { *self.old_flows.front()? };
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.quantum_bytes;
                flow.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx);
                continue;
            }
            let mut vars = std::mem::take(&mut flow.vars);
            let p = {
                let mut q = FlowQueue { flow, len_packets: &mut self.len_packets, len_bytes: &mut self.len_bytes };
                codel_dequeue(&mut q, &mut vars, &self.params, now_ns, drops)
            };
            let flow = &mut self.flows[idx];
            flow.vars = vars;
            match p {
                None => {
                    // An empty new flow goes to the old list once, so old flows cannot be starved.
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if from_new && !self.old_flows.is_empty() {
                        flow.list = List::Old;
                        self.old_flows.push_back(idx);
                    } else {
                        flow.list = List::None;
                    }
                }
                Some(p) => {
                    flow.deficit -= p.wire_bytes as i64;
                    return Some(p);
                }
            }
        }
    }

    fn len_packets(&self) -> usize {
        self.len_packets
    }

    fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    fn set_in_service(&mut self, packets: usize, _bytes: u64, _band: u8) {
        self.in_service_packets = packets;
    }

    fn drain(&mut self) -> Vec<Packet> {
        let mut out = Vec::with_capacity(self.len_packets);
        for f in &mut self.flows {
            out.extend(f.packets.drain(..));
            f.bytes = 0;
            f.list = List::None;
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.len_packets = 0;
        self.len_bytes = 0;
        out
    }
}
