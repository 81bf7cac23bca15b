//! Queue disciplines: one module each, all behind one enqueue/dequeue interface (as Linux's `Qdisc_ops`),
//! parameters named and defaulted as `tc` names them (see config.rs).

pub mod codel;
pub mod codel_core;
pub mod fifo;
pub mod fq_codel;
pub mod pie;
pub mod prio;
pub mod sfq;

use crate::config::QdiscConfig;
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;

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
    /// What the rate meters (prio only) recorded since the last call.
    fn take_meter_records(&mut self, _out: &mut Vec<crate::meter::MeterRecord>) {}
    /// Everything still held, for shutdown.
    fn drain(&mut self) -> Vec<Packet>;
}

/// Builds the discipline a config names. `rng` seeds the randomised ones (PIE's drops, SFQ's hash perturbation).
pub fn build(cfg: &QdiscConfig, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
    use rand::SeedableRng;
    match cfg {
        QdiscConfig::Fifo { limit } => Box::new(fifo::Fifo::new(limit.clone())),
        QdiscConfig::Codel { target_ms, interval_ms, limit_packets, ecn } => Box::new(codel::Codel::new(
            codel_core::CodelParams::new(*target_ms, *interval_ms, *ecn),
            *limit_packets as usize,
        )),
        QdiscConfig::Pie { target_ms, tupdate_ms, alpha, beta, limit_packets, ecn } => Box::new(pie::Pie::new(
            pie::PieParams {
                target_ns: ms_to_ns(*target_ms),
                tupdate_ns: ms_to_ns(*tupdate_ms),
                alpha: *alpha,
                beta: *beta,
                limit_packets: *limit_packets as usize,
                ecn: *ecn,
            },
            now_ns,
            SmallRng::from_rng(rng).expect("rng"),
        )),
        QdiscConfig::Sfq { limit_packets, quantum_bytes, perturb_s, divisor } => Box::new(sfq::Sfq::new(
            *limit_packets as usize,
            *quantum_bytes as i64,
            (*perturb_s * 1e9) as u64,
            *divisor,
            now_ns,
            SmallRng::from_rng(rng).expect("rng"),
        )),
        QdiscConfig::FqCodel { target_ms, interval_ms, limit_packets, quantum_bytes, flows, ecn } => {
            Box::new(fq_codel::FqCodel::new(
                codel_core::CodelParams::new(*target_ms, *interval_ms, *ecn),
                *limit_packets as usize,
                *quantum_bytes as i64,
                *flows,
            ))
        }
        QdiscConfig::Prio { bands, meters } => {
            let children = bands
                .iter()
                .map(|b| prio::Band {
                    dscp: b.dscp.clone(),
                    qdisc: build(&b.qdisc, now_ns, rng),
                    cap: b.rate_cap.map(|c| crate::meter::RateCap::new(c.bits_per_s, c.burst_bytes, now_ns)),
                })
                .collect();
            let meters = meters.iter().enumerate().map(|(i, m)| crate::meter::Meter::new(i as u8, m, now_ns)).collect();
            Box::new(prio::Prio::new(children, meters))
        }
    }
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
