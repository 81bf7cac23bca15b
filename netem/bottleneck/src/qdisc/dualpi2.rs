//! DualPI2: the DualQ Coupled AQM of RFC 9332 (its Appendix A: PI2 as the base AQM), with the parameter names and
//! defaults of Linux's net/sched/sch_dualpi2.c (tc-dualpi2(8)); docs/bottleneck.md, "DualPI2", names each
//! parameter's RFC section.
//! - Classifier (RFC 9332 section 2.3, Linux's default `l4s_ect`): ECT(1) and CE go to the L queue, Not-ECT and
//!   ECT(0) to the C queue.
//! - Base probability p' (PI, RFC 9332 A.1): every `tupdate`, p' += alpha (qdelay - target) + beta (qdelay -
//!   qdelay_old), clamped to [0, 1]; qdelay is the larger head-of-queue sojourn of the two queues (Linux; A.1 uses
//!   the C queue's only, which is the same while L keeps its shallow queue).
//! - Coupling (RFC 9332 section 2.1): classic p_C = p'^2 (two independent rolls of p', as Linux and A.2), coupled L4S
//!   p_CL = k p'. A C packet is dropped (Not-ECT) or marked (ECT(0)) with p_C; an L packet is marked with p_CL.
//! - Native L4S AQM: an L packet whose sojourn exceeds `step_thresh` is marked (a step: A.1's ramp with no range,
//!   Linux's default), if it found at least `min_qlen_step` packets in the L queue (A.1's Th_len floor).
//! - Neither p_C nor p_CL acts while less than 2 MTUs are queued in all (Linux's rule; as RED's min_th).
//! - Overload (RFC 9332 section 4.2.3, A.2): once k p' > 1 the L queue's marks saturate; with `drop_on_overload` an L
//!   packet is then dropped with p_C as a classic one (and marked otherwise), and a C packet is dropped even if
//!   ECT(0). Without it, p' stops at 1/k and L packets are only marked (the queue then grows to `limit`).
//! - Scheduler: a time-shifted FIFO (RFC 9332 A.1 and section 4.2.2): the head of the L queue goes first unless the C
//!   queue's head arrived more than `tshift` before it. Linux uses a WRR with a 10 % classic weight instead
//!   (`classic_protection`), which this discipline does not have.
//! - All decisions at dequeue (Linux's default `drop_dequeue`); tail drop at `limit` packets of both queues.
//!
//! The probability is a float in [0, 1] here (Linux: fixed point over 2^32); the update runs every `tupdate`
//! exactly (Linux's hrtimer, not the jiffies timer of PIE).

use super::codel_core::MTU_BYTES;
use super::{ms_to_ns, Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, check_number, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The L queue's packets carry band 1 in the log, the C queue's band 0 (docs/bottleneck-log.md).
pub const L_BAND: u8 = 1;
pub const C_BAND: u8 = 0;

/// dualpi2's parameters, named as tc-dualpi2(8) names them (`limit`, `target`, `tupdate`, `alpha`, `beta`,
/// `coupling_factor`, `step_thresh`, `min_qlen_step`, `drop_on_overload`), and the time shift of RFC 9332's
/// TS-FIFO scheduler.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Config {
    pub limit_packets: u64,
    pub target_ms: f64,
    pub tupdate_ms: f64,
    /// PI integral gain in Hz (tc's `alpha`, as a number: 0.16).
    pub alpha: f64,
    /// PI proportional gain in Hz.
    pub beta: f64,
    /// k: p_CL = k p'.
    pub coupling_factor: u32,
    pub step_thresh_ms: f64,
    /// The step applies to an L packet only if it found at least this many packets in the L queue.
    pub min_qlen_step: u32,
    pub drop_on_overload: bool,
    pub tshift_ms: f64,
}

impl QdiscParams for DualPi2Config {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_integer(path, "limit_packets", self.limit_packets, 1, u32::MAX.into())?;
        check_number(path, "target_ms", self.target_ms, 0.0, 1e6, true)?;
        check_number(path, "tupdate_ms", self.tupdate_ms, 0.0, 1e6, true)?;
        check_number(path, "alpha", self.alpha, 0.0, 1e6, true)?;
        check_number(path, "beta", self.beta, 0.0, 1e6, true)?;
        check_integer(path, "coupling_factor", self.coupling_factor.into(), 1, 255)?;
        check_number(path, "step_thresh_ms", self.step_thresh_ms, 0.0, 1e6, false)?;
        check_integer(path, "min_qlen_step", self.min_qlen_step.into(), 0, u32::MAX.into())?;
        check_number(path, "tshift_ms", self.tshift_ms, 0.0, 1e6, false)?;
        Ok(())
    }

    fn max_packets(&self) -> u64 {
        self.limit_packets
    }

    fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
        Box::new(DualPi2::new(self.clone(), now_ns, SmallRng::from_rng(rng).expect("rng")))
    }
}

/// A complete dualpi2 as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json() -> serde_json::Value {
    serde_json::json!({"kind": "dualpi2", "limit_packets": 10000, "target_ms": 15, "tupdate_ms": 16, "alpha": 0.16,
        "beta": 3.2, "coupling_factor": 2, "step_thresh_ms": 1, "min_qlen_step": 0, "drop_on_overload": true, "tshift_ms": 50})
}

/// The coupled probabilities and the two queues' lengths at one moment, for the stats file (docs/bottleneck.md).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct CoupledState {
    /// p', the PI controller's output.
    pub base_prob: f64,
    /// p_C = p'^2.
    pub classic_prob: f64,
    /// p_CL = min(k p', 1).
    pub coupled_prob: f64,
    pub l_packets: usize,
    pub c_packets: usize,
}

pub struct DualPi2 {
    target_ns: u64,
    tupdate_ns: u64,
    alpha: f64,
    beta: f64,
    k: f64,
    step_thresh_ns: u64,
    min_qlen_step: usize,
    tshift_ns: u64,
    limit_packets: usize,
    drop_on_overload: bool,
    l_queue: VecDeque<Packet>,
    /// Per packet of the L queue, in the same order: whether the step applies to it (`min_qlen_step`).
    l_apply_step: VecDeque<bool>,
    c_queue: VecDeque<Packet>,
    bytes: u64,
    base_prob: f64,
    last_qdelay_ns: u64,
    next_update_ns: u64,
    rng: SmallRng,
    in_service_packets: usize,
}

impl DualPi2 {
    pub fn new(cfg: DualPi2Config, now_ns: u64, rng: SmallRng) -> DualPi2 {
        let tupdate_ns = ms_to_ns(cfg.tupdate_ms);
        DualPi2 {
            target_ns: ms_to_ns(cfg.target_ms),
            tupdate_ns,
            alpha: cfg.alpha,
            beta: cfg.beta,
            k: cfg.coupling_factor as f64,
            step_thresh_ns: ms_to_ns(cfg.step_thresh_ms),
            min_qlen_step: cfg.min_qlen_step as usize,
            tshift_ns: ms_to_ns(cfg.tshift_ms),
            limit_packets: cfg.limit_packets as usize,
            drop_on_overload: cfg.drop_on_overload,
            l_queue: VecDeque::new(),
            l_apply_step: VecDeque::new(),
            c_queue: VecDeque::new(),
            bytes: 0,
            base_prob: 0.0,
            last_qdelay_ns: 0,
            next_update_ns: now_ns + tupdate_ns,
            rng,
            in_service_packets: 0,
        }
    }

    fn head_sojourn_ns(queue: &VecDeque<Packet>, now_ns: u64) -> u64 {
        queue.front().map_or(0, |p| now_ns.saturating_sub(p.enqueue_ns))
    }

    /// The PI update of p' (RFC 9332 A.1's dualpi2_update), at `now_ns`.
    fn update(&mut self, now_ns: u64) {
        let qdelay = Self::head_sojourn_ns(&self.l_queue, now_ns).max(Self::head_sojourn_ns(&self.c_queue, now_ns));
        let delta = self.alpha * (qdelay as f64 - self.target_ns as f64) / 1e9
            + self.beta * (qdelay as f64 - self.last_qdelay_ns as f64) / 1e9;
        self.last_qdelay_ns = qdelay;
        let ceiling = if self.drop_on_overload { 1.0 } else { 1.0 / self.k };
        self.base_prob = (self.base_prob + delta).clamp(0.0, ceiling);
    }

    /// A roll that comes true with probability `p`.
    fn roll(&mut self, p: f64) -> bool {
        self.rng.gen::<f64>() < p
    }

    /// p_C = p'^2 as two independent rolls of p' (Linux; RFC 9332 A.2's squared-random comparison).
    fn roll_classic(&mut self) -> bool {
        let p = self.base_prob;
        self.roll(p) && self.roll(p)
    }

    /// The TS-FIFO's choice: the L queue's head, unless the C queue's head arrived more than `tshift` before it.
    fn serve_l(&self) -> Option<bool> {
        match (self.l_queue.front(), self.c_queue.front()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(l), Some(c)) => Some(c.enqueue_ns + self.tshift_ns >= l.enqueue_ns),
        }
    }

    /// The AQM's decision for a dequeued packet: false to drop it; it may be marked CE.
    fn keep(&mut self, p: &mut Packet, from_l: bool, apply_step: bool, sojourn_ns: u64) -> bool {
        let coupled = self.k * self.base_prob;
        let overload = coupled > 1.0;
        // Linux's rule: no PI mark or drop while less than 2 MTUs are queued (in both queues, after this one).
        let pi_active = self.bytes >= 2 * MTU_BYTES;
        if !from_l {
            if pi_active && self.roll_classic() && (overload || !p.set_ce()) {
                return false;
            }
            return true;
        }
        if pi_active {
            if overload {
                if self.drop_on_overload && self.roll_classic() {
                    return false;
                }
                p.set_ce();
            } else if self.roll(coupled) {
                p.set_ce();
            }
        }
        if apply_step && sojourn_ns > self.step_thresh_ns {
            p.set_ce();
        }
        true
    }
}

impl Qdisc for DualPi2 {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        if self.l_queue.len() + self.c_queue.len() + self.in_service_packets >= self.limit_packets {
            drops.push(Dropped { packet, event: Event::DroppedTail });
            return;
        }
        packet.enqueue_ns = now_ns;
        self.bytes += packet.wire_bytes as u64;
        // ECT(1) (01) and CE (11): the L4S identifier of RFC 9331.
        if packet.ecn_in & 1 == 1 {
            packet.band = L_BAND;
            self.l_apply_step.push_back(self.l_queue.len() >= self.min_qlen_step);
            self.l_queue.push_back(packet);
        } else {
            packet.band = C_BAND;
            self.c_queue.push_back(packet);
        }
    }

    fn dequeue(&mut self, now_ns: u64, drops: &mut Vec<Dropped>) -> Option<Packet> {
        while let Some(from_l) = self.serve_l() {
            let (popped, apply_step) = if from_l {
                (self.l_queue.pop_front(), self.l_apply_step.pop_front().unwrap_or(false))
            } else {
                (self.c_queue.pop_front(), false)
            };
            let mut p = popped.expect("the scheduler chose a queue with packets");
            self.bytes -= p.wire_bytes as u64;
            let sojourn_ns = now_ns.saturating_sub(p.enqueue_ns);
            if self.keep(&mut p, from_l, apply_step, sojourn_ns) {
                return Some(p);
            }
            drops.push(Dropped { packet: p, event: Event::DroppedAqm });
        }
        None
    }

    fn len_packets(&self) -> usize {
        self.l_queue.len() + self.c_queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.next_update_ns)
    }

    fn on_timer(&mut self, now_ns: u64) {
        while self.next_update_ns <= now_ns {
            self.update(self.next_update_ns);
            self.next_update_ns += self.tupdate_ns;
        }
    }

    fn set_in_service(&mut self, packets: usize, _bytes: u64, _band: u8) {
        self.in_service_packets = packets;
    }

    fn coupled_state(&self) -> Option<CoupledState> {
        Some(CoupledState {
            base_prob: self.base_prob,
            classic_prob: self.base_prob * self.base_prob,
            coupled_prob: (self.k * self.base_prob).min(1.0),
            l_packets: self.l_queue.len(),
            c_packets: self.c_queue.len(),
        })
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.bytes = 0;
        self.l_apply_step.clear();
        self.l_queue.drain(..).chain(self.c_queue.drain(..)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::udp_tos;

    const MS: u64 = 1_000_000;
    const NOT_ECT: u8 = 0;
    const ECT1: u8 = 1;
    const ECT0: u8 = 2;
    const CE: u8 = 3;

    fn config() -> DualPi2Config {
        serde_json::from_value({
            let mut v = test_json();
            v.as_object_mut().unwrap().remove("kind");
            v
        })
        .unwrap()
    }

    fn dualpi2(cfg: DualPi2Config) -> DualPi2 {
        DualPi2::new(cfg, 0, SmallRng::seed_from_u64(3))
    }

    fn packet(seq: u32, now_ns: u64, ecn: u8) -> Packet {
        udp_tos(1, 1200, seq, now_ns, ecn)
    }

    #[test]
    fn the_classifier_puts_ect1_and_ce_in_the_l_queue() {
        let mut q = dualpi2(config());
        let mut drops = Vec::new();
        for (seq, ecn) in [NOT_ECT, ECT1, ECT0, CE].into_iter().enumerate() {
            q.enqueue(packet(seq as u32, 0, ecn), 0, &mut drops);
        }
        assert!(drops.is_empty());
        let bands: Vec<(u8, u8)> = q.drain().iter().map(|p| (p.ecn_in, p.band)).collect();
        assert_eq!(bands, [(ECT1, L_BAND), (CE, L_BAND), (NOT_ECT, C_BAND), (ECT0, C_BAND)]);
    }

    #[test]
    fn the_pi_update_moves_p_by_alpha_and_beta_every_tupdate() {
        let mut q = dualpi2(config());
        let mut drops = Vec::new();
        // A C packet from time 0 and an L packet from 2 ms: qdelay is the older head's sojourn, the C packet's.
        q.enqueue(packet(0, 0, NOT_ECT), 0, &mut drops);
        q.enqueue(packet(1, 2 * MS, ECT1), 2 * MS, &mut drops);
        assert_eq!(q.next_timer_ns(), Some(16 * MS));
        q.on_timer(16 * MS);
        // By hand: 0.16 Hz x (16 - 15) ms + 3.2 Hz x (16 - 0) ms = 0.00016 + 0.0512.
        let p1 = 0.16 * 0.001 + 3.2 * 0.016;
        assert!((q.base_prob - p1).abs() < 1e-12, "{}", q.base_prob);
        assert_eq!(q.next_timer_ns(), Some(32 * MS));
        q.on_timer(32 * MS);
        // 0.16 x (32 - 15) ms + 3.2 x (32 - 16) ms.
        let p2 = p1 + 0.16 * 0.017 + 3.2 * 0.016;
        assert!((q.base_prob - p2).abs() < 1e-12, "{}", q.base_prob);
        let s = q.coupled_state().unwrap();
        assert!((s.classic_prob - p2 * p2).abs() < 1e-12 && (s.coupled_prob - 2.0 * p2).abs() < 1e-12, "{s:?}");
        assert_eq!((s.l_packets, s.c_packets), (1, 1));
        // Both queues empty: qdelay 0, a fall of 0.16 x 15 ms + 3.2 x 32 ms = 0.1048, just under p'.
        q.drain();
        q.on_timer(48 * MS);
        let p3 = p2 - 0.16 * 0.015 - 3.2 * 0.032;
        assert!(p3 > 0.0 && (q.base_prob - p3).abs() < 1e-12, "{}", q.base_prob);
        // Then 0.16 x 15 ms = 0.0024 more than is left: clamped at 0.
        q.on_timer(64 * MS);
        assert_eq!(q.base_prob, 0.0);
    }

    /// Dequeues until `n` packets of this ECN were forwarded, at time 0 from a queue kept at 64 packets (the 2-MTU
    /// rule never holds back); returns (dropped, marked) counts.
    fn decisions(q: &mut DualPi2, ecn: u8, n: u32) -> (u32, u32) {
        let mut drops = Vec::new();
        let (mut dropped, mut marked, mut seq) = (0, 0, 0);
        for _ in 0..n {
            while q.len_packets() < 64 {
                q.enqueue(packet(seq, 0, ecn), 0, &mut drops);
                seq += 1;
            }
            let p = q.dequeue(0, &mut drops).expect("the queue holds packets");
            marked += p.ce_marked as u32;
            assert!(drops.iter().all(|d| d.event == Event::DroppedAqm));
            dropped += drops.len() as u32;
            drops.clear();
        }
        q.drain();
        (dropped, marked)
    }

    fn near(x: u32, n: u32, p: f64) -> bool {
        // Within 5 standard deviations of a binomial count.
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        (x as f64 - n as f64 * p).abs() <= 5.0 * sd + 1.0
    }

    #[test]
    fn classic_packets_see_p_squared_and_l4s_packets_k_times_p() {
        let n = 20_000;
        let mut q = dualpi2(config());
        q.base_prob = 0.3;
        let (dropped, marked) = decisions(&mut q, NOT_ECT, n);
        assert!(near(dropped, n + dropped, 0.09) && marked == 0, "Not-ECT: {dropped} dropped, {marked} marked");
        let (dropped, marked) = decisions(&mut q, ECT0, n);
        assert!(dropped == 0 && near(marked, n, 0.09), "ECT(0): {dropped} dropped, {marked} marked");
        let (dropped, marked) = decisions(&mut q, ECT1, n);
        assert!(dropped == 0 && near(marked, n, 0.6), "ECT(1): {dropped} dropped, {marked} marked");
    }

    #[test]
    fn nothing_is_marked_or_dropped_below_two_mtus_of_backlog() {
        let mut q = dualpi2(config());
        q.base_prob = 1.0;
        let mut drops = Vec::new();
        // Two 1214-byte frames: after the first leaves, 1214 bytes < 2 x 1514 remain.
        q.enqueue(packet(0, 0, NOT_ECT), 0, &mut drops);
        q.enqueue(packet(1, 0, NOT_ECT), 0, &mut drops);
        assert!(q.dequeue(0, &mut drops).is_some() && q.dequeue(0, &mut drops).is_some() && drops.is_empty());
    }

    #[test]
    fn the_l_queue_marks_every_packet_whose_sojourn_exceeds_the_step_threshold() {
        let mut q = dualpi2(config());
        let mut drops = Vec::new();
        // p' = 0: only the step marks. Sojourns of 0.5, 1.0 (not above) and 1.001 ms.
        q.enqueue(packet(0, 0, ECT1), 0, &mut drops);
        assert!(!q.dequeue(MS / 2, &mut drops).unwrap().ce_marked);
        q.enqueue(packet(1, MS, ECT1), MS, &mut drops);
        assert!(!q.dequeue(2 * MS, &mut drops).unwrap().ce_marked);
        q.enqueue(packet(2, 2 * MS, ECT1), 2 * MS, &mut drops);
        assert!(q.dequeue(3 * MS + 1000, &mut drops).unwrap().ce_marked);
        // A C packet is never step-marked.
        q.enqueue(packet(3, 3 * MS, ECT0), 3 * MS, &mut drops);
        assert!(!q.dequeue(10 * MS, &mut drops).unwrap().ce_marked);
    }

    #[test]
    fn with_min_qlen_step_the_step_spares_a_packet_that_found_the_l_queue_shorter() {
        let mut q = dualpi2(DualPi2Config { min_qlen_step: 1, ..config() });
        let mut drops = Vec::new();
        // The first finds the L queue empty, the second finds one packet: both wait 5 ms, only the second is marked.
        q.enqueue(packet(0, 0, ECT1), 0, &mut drops);
        q.enqueue(packet(1, 0, ECT1), 0, &mut drops);
        assert!(!q.dequeue(5 * MS, &mut drops).unwrap().ce_marked);
        assert!(q.dequeue(5 * MS, &mut drops).unwrap().ce_marked);
    }

    #[test]
    fn overload_drops_l4s_packets_as_classic_and_never_marks_classic_ones() {
        let n = 20_000;
        // k p' = 1.2 > 1: overload.
        let mut q = dualpi2(config());
        q.base_prob = 0.6;
        let (dropped, marked) = decisions(&mut q, ECT1, n);
        // Dropped with p'^2 = 0.36, every packet kept is marked.
        assert!(near(dropped, n + dropped, 0.36) && marked == n, "ECT(1): {dropped} dropped, {marked} marked");
        let (dropped, marked) = decisions(&mut q, ECT0, n);
        assert!(near(dropped, n + dropped, 0.36) && marked == 0, "ECT(0): {dropped} dropped, {marked} marked");
        // Without drop_on_overload: p' stops at 1/k, and L4S packets are marked, never dropped.
        let mut q = dualpi2(DualPi2Config { drop_on_overload: false, ..config() });
        let mut drops = Vec::new();
        for seq in 0..100 {
            q.enqueue(packet(seq, 0, NOT_ECT), 0, &mut drops);
        }
        for t in 1..=100 {
            q.on_timer(16 * MS * t);
        }
        assert_eq!(q.base_prob, 0.5);
        q.drain();
        let (dropped, marked) = decisions(&mut q, ECT1, 1000);
        assert_eq!((dropped, marked), (0, 1000));
    }

    #[test]
    fn the_time_shifted_fifo_serves_l_first_unless_c_waited_tshift_longer() {
        let mut q = dualpi2(config());
        let mut drops = Vec::new();
        q.enqueue(packet(0, 0, NOT_ECT), 0, &mut drops);
        q.enqueue(packet(1, 10 * MS, ECT1), 10 * MS, &mut drops);
        // The C head arrived 10 ms before the L head: less than tshift (50 ms), L goes first.
        assert_eq!(q.dequeue(20 * MS, &mut drops).unwrap().band, L_BAND);
        q.enqueue(packet(2, 60 * MS, ECT1), 60 * MS, &mut drops);
        // Now it arrived 60 ms before the L head: C goes first.
        assert_eq!(q.dequeue(61 * MS, &mut drops).unwrap().band, C_BAND);
        assert_eq!(q.dequeue(61 * MS, &mut drops).unwrap().band, L_BAND);
    }

    #[test]
    fn both_queues_share_the_limit() {
        let mut q = dualpi2(DualPi2Config { limit_packets: 3, ..config() });
        let mut drops = Vec::new();
        q.enqueue(packet(0, 0, ECT1), 0, &mut drops);
        q.enqueue(packet(1, 0, NOT_ECT), 0, &mut drops);
        q.set_in_service(1, 1214, 0);
        q.enqueue(packet(2, 0, ECT1), 0, &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].event, Event::DroppedTail);
        assert_eq!(q.len_packets(), 2);
    }
}
