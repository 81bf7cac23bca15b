//! Queue disciplines: one module each, all behind one enqueue/dequeue interface (as Linux's `Qdisc_ops`). Each
//! module also owns its parameters as the link gives them (`QdiscParams`: named as `tc` names them, their ranges,
//! how they build the discipline), so a new parameter is a change to scenarios/schema.json and that module.

pub mod codel;
pub mod codel_core;
pub mod dualpi2;
pub mod fifo;
pub mod fq_codel;
pub mod pie;
pub mod prio;
pub mod sfq;

use crate::check::ConfigError;
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;

/// Every discipline a link's `qdisc` may be: scenarios/schema.json's `qdisc.kind` enum, in its order (a test
/// compares them, and reads a link of each kind). A prio's band may be any of them but prio and dualpi2
/// (`band_kinds`).
pub const KINDS: [&str; 7] = ["fifo", "codel", "pie", "sfq", "fq_codel", "dualpi2", "prio"];

/// The disciplines a prio's band may be (the schema's `leaf_qdisc`): every kind but prio and dualpi2, a dual-queue
/// AQM of the whole link (its coupled probabilities are the link's, in the stats file).
pub fn band_kinds() -> impl Iterator<Item = &'static str> {
    KINDS.into_iter().filter(|k| *k != "prio" && *k != "dualpi2")
}

/// A packet the discipline dropped, and why (tail/limit or AQM).
#[derive(Debug)]
pub struct Dropped {
    pub packet: Packet,
    pub event: Event,
}

pub trait Qdisc {
    /// Takes a packet; anything dropped (the packet itself or another, e.g. from the fattest flow) goes to `drops`.
    fn enqueue(&mut self, packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>);
    /// The next packet to transmit, if any; AQM drops made on the way go to `drops`. A returned packet may carry
    /// `ce_marked`.
    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet>;
    fn len_packets(&self) -> usize;
    /// Link-layer bytes held.
    fn len_bytes(&self) -> u64;
    /// When the discipline's own timer (PIE's tupdate, SFQ's perturbation) fires next.
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    fn on_timer(&mut self, _now_ns: u64) {}
    /// The packet the link is transmitting (dequeued, waiting for its tokens): in Linux it is still counted in
    /// the child qdisc's backlog under TBF (peek keeps it there), so it counts against the limit here too.
    fn set_in_service(&mut self, _packets: usize, _bytes: u64, _band: u8) {}
    /// DualPI2's coupled probabilities and queue lengths now (dualpi2 only), for the stats file.
    fn coupled_state(&self) -> Option<dualpi2::CoupledState> {
        None
    }
    /// What the rate meters (prio only) recorded since the last call.
    fn take_meter_records(&mut self, _out: &mut Vec<crate::meter::MeterRecord>) {}
    /// Everything still held, for shutdown.
    fn drain(&mut self) -> Vec<Packet>;
}

/// A discipline's parameters, as the link gives them (a struct read by serde in the discipline's module).
pub trait QdiscParams {
    /// The schema's ranges; an error names the field under `path`, where the discipline is in the link (`qdisc`,
    /// `qdisc.bands[1].qdisc`).
    fn validate(&self, path: &str) -> Result<(), ConfigError>;
    /// Packets the discipline can hold at most (for the NFQUEUE queue length); a byte limit counts 64-byte packets.
    fn max_packets(&self) -> u64;
    /// The discipline; `rng` seeds the randomised ones (PIE's drops, SFQ's hash perturbation).
    fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc>;
}

pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

#[cfg(test)]
pub mod testing {
    //! Helpers for the disciplines' tests: synthetic packets of a given flow.
    use crate::packet::{build_udp_packet, Packet};

    pub fn udp(flow: u16, ip_len: u16, seq: u32, now_ns: u64) -> Packet {
        udp_tos(flow, ip_len, seq, now_ns, 0)
    }

    pub fn udp_tos(flow: u16, ip_len: u16, seq: u32, now_ns: u64, tos: u8) -> Packet {
        let data = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 10000 + flow, 5201, tos, ip_len, seq);
        Packet::parse(seq, now_ns, data).unwrap()
    }
}
