//! PIE: RFC 8033 (Proportional Integral controller Enhanced), as Linux net/sched/sch_pie.c with its defaults
//! (queue delay from per-packet timestamps, i.e. dq_rate_estimator off; bytemode off):
//! - every `tupdate` the drop probability moves by alpha*(qdelay - target) + beta*(qdelay - qdelay_old)
//!   (alpha, beta in units of 1/16 as tc takes them, scaled down while the probability is small; steps capped at
//!   2% above 10%; +2% when the delay exceeds 250 ms; decay by 1/64 when the delay stays zero);
//! - on enqueue: no early drop during the 150 ms burst allowance, below half the target with prob < 20%, or
//!   with fewer than two MTUs queued; otherwise a drop derandomised by the accumulated probability (RFC 8033
//!   section 5.1); ECN-capable packets are marked instead while the probability is at most 10%;
//! - tail drop at `limit` packets.
//!
//! The update runs on Linux's clock when `timer_hz` is set (docs/bottleneck.md, "PIE's update period"): Linux arms
//! its timer `usecs_to_jiffies(tupdate)` ticks ahead, and the timer wheel fires a timer one tick after the tick it
//! was armed for (it never fires early), so Linux updates every (ceil(tupdate x HZ) + 1) ticks: 40 ms for 30 ms at
//! HZ 100, 36 ms at HZ 250. `timer_hz` 0 updates every `tupdate` exactly (RFC 8033's model).
//!
//! The probability is a float in [0, 1] here (Linux: fixed point over 2^56).

use super::codel_core::MTU_BYTES;
use super::{ms_to_ns, Dropped, Qdisc, QdiscParams};
use crate::check::{check_integer, check_number, field, ConfigError};
use crate::packet::{Event, Packet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

const BURST_ALLOWANCE_NS: u64 = 150_000_000;
const NONLINEAR_DELAY_NS: u64 = 250_000_000;

/// pie's parameters (tc's `target`, `tupdate`, `alpha`, `beta`, `limit`, `ecn`), and the kernel tick rate whose
/// timer it models (`timer_hz`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    pub target_ms: f64,
    pub tupdate_ms: f64,
    /// Units of 1/16, as tc takes them.
    pub alpha: u32,
    pub beta: u32,
    pub limit_packets: u64,
    pub ecn: bool,
    /// CONFIG_HZ of the Linux whose update timer is modelled; 0: every `tupdate_ms` exactly.
    pub timer_hz: u32,
}

/// The CONFIG_HZ values Linux offers (kernel/Kconfig.hz), and 0 for no kernel timer.
const TIMER_HZ: [u32; 5] = [0, 100, 250, 300, 1000];

/// How often Linux's sch_pie updates its probability: its timer re-arms `usecs_to_jiffies(tupdate)` ticks ahead
/// (rounded up) and fires one tick after that (kernel/time/timer.c, calc_index: never early); 0 Hz: `tupdate` itself.
pub fn update_period_ns(tupdate_ns: u64, timer_hz: u32) -> u64 {
    if timer_hz == 0 {
        return tupdate_ns;
    }
    let hz = u128::from(timer_hz);
    let ticks = (u128::from(tupdate_ns) * hz).div_ceil(1_000_000_000) + 1;
    (ticks * 1_000_000_000 / hz) as u64
}

impl QdiscParams for PieConfig {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        check_number(path, "target_ms", self.target_ms, 0.0, 1e6, true)?;
        check_number(path, "tupdate_ms", self.tupdate_ms, 0.0, 1e6, true)?;
        check_integer(path, "alpha", self.alpha.into(), 0, 32)?;
        check_integer(path, "beta", self.beta.into(), 0, 32)?;
        check_integer(path, "limit_packets", self.limit_packets, 1, u32::MAX.into())?;
        if !TIMER_HZ.contains(&self.timer_hz) {
            let problem = format!("must be one of {TIMER_HZ:?} (Linux's CONFIG_HZ, or 0; got {})", self.timer_hz);
            return Err(ConfigError::new(&field(path, "timer_hz"), problem));
        }
        Ok(())
    }

    fn max_packets(&self) -> u64 {
        self.limit_packets
    }

    fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
        let params = PieParams {
            target_ns: ms_to_ns(self.target_ms),
            update_period_ns: update_period_ns(ms_to_ns(self.tupdate_ms), self.timer_hz),
            alpha: self.alpha,
            beta: self.beta,
            limit_packets: self.limit_packets as usize,
            ecn: self.ecn,
        };
        Box::new(Pie::new(params, now_ns, SmallRng::from_rng(rng).expect("rng")))
    }
}

/// A complete pie as the link gives it, for the tests (config::testing): Linux's defaults, what netem fills in.
#[cfg(test)]
pub fn test_json(ecn: bool) -> serde_json::Value {
    serde_json::json!({"kind": "pie", "target_ms": 15, "tupdate_ms": 15, "alpha": 2, "beta": 20, "limit_packets": 1000, "ecn": ecn, "timer_hz": 250})
}

#[derive(Debug, Clone)]
pub struct PieParams {
    pub target_ns: u64,
    /// Time between two updates of the probability (`update_period_ns`).
    pub update_period_ns: u64,
    pub alpha: u32,
    pub beta: u32,
    pub limit_packets: usize,
    pub ecn: bool,
}

pub struct Pie {
    params: PieParams,
    queue: VecDeque<Packet>,
    bytes: u64,
    prob: f64,
    accu_prob: f64,
    qdelay_ns: u64,
    qdelay_old_ns: u64,
    burst_time_ns: u64,
    /// Time of the last dequeue (None: none since the last reset).
    dq_tstamp_ns: Option<u64>,
    next_update_ns: u64,
    rng: SmallRng,
    in_service_packets: usize,
}

impl Pie {
    pub fn new(params: PieParams, now_ns: u64, rng: SmallRng) -> Pie {
        let next_update_ns = now_ns + params.update_period_ns;
        Pie {
            params,
            queue: VecDeque::new(),
            bytes: 0,
            prob: 0.0,
            accu_prob: 0.0,
            qdelay_ns: 0,
            qdelay_old_ns: 0,
            burst_time_ns: BURST_ALLOWANCE_NS,
            dq_tstamp_ns: None,
            next_update_ns,
            rng,
            in_service_packets: 0,
        }
    }

    #[allow(dead_code)]
    pub fn drop_probability(&self) -> f64 {
        self.prob
    }

    fn reset_vars(&mut self) {
        self.burst_time_ns = BURST_ALLOWANCE_NS;
        self.dq_tstamp_ns = None;
        self.accu_prob = 0.0;
    }

    /// pie_drop_early(): should this arriving packet be dropped (or marked)?
    fn drop_early(&mut self) -> bool {
        if self.burst_time_ns > 0 {
            return false;
        }
        if self.qdelay_ns < self.params.target_ns / 2 && self.prob < 0.2 {
            return false;
        }
        if self.bytes < 2 * MTU_BYTES {
            return false;
        }
        if self.prob == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += self.prob;
        }
        // Derandomisation (RFC 8033 5.1): never drop below 0.85 accumulated, always above 8.5.
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if self.rng.gen::<f64>() < self.prob {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// pie_calculate_probability(), run every update period.
    fn calculate_probability(&mut self) {
        let qdelay = self.qdelay_ns;
        let qdelay_old = self.qdelay_old_ns;
        let mut update_prob = !(qdelay == 0 && self.bytes != 0);
        let mut alpha = self.params.alpha as f64 / 16.0;
        let mut beta = self.params.beta as f64 / 16.0;
        // Smaller steps while the probability is small (RFC 8033 section 4.2, Linux's table).
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while self.prob < 1.0 / power && power <= 1_000_000.0 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let mut delta = alpha * (qdelay as f64 - self.params.target_ns as f64) / 1e9
            + beta * (qdelay as f64 - qdelay_old as f64) / 1e9;
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > NONLINEAR_DELAY_NS {
            delta += 0.02;
        }
        self.prob += delta;
        if self.prob >= 1.0 {
            self.prob = 1.0;
            update_prob = false;
        }
        if self.prob < 0.0 {
            self.prob = 0.0;
        }
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64.0;
        }
        if qdelay < self.params.target_ns / 2 && qdelay_old < self.params.target_ns / 2 && self.prob == 0.0 {
            self.reset_vars();
        }
        self.qdelay_old_ns = qdelay;
    }
}

impl Qdisc for Pie {
    fn enqueue(&mut self, mut packet: Packet, now_ns: u64, drops: &mut Vec<Dropped>) {
        if self.queue.len() + self.in_service_packets >= self.params.limit_packets {
            self.accu_prob = 0.0;
            drops.push(Dropped { packet, event: Event::DroppedTail });
            return;
        }
        let enqueue = if !self.drop_early() {
            true
        } else {
            // Mark instead of drop only while the probability is low (RFC 8033 section 5.1).
            self.params.ecn && self.prob <= 0.1 && packet.set_ce()
        };
        if !enqueue {
            self.accu_prob = 0.0;
            drops.push(Dropped { packet, event: Event::DroppedAqm });
            return;
        }
        packet.enqueue_ns = now_ns;
        self.bytes += packet.wire_bytes as u64;
        self.queue.push_back(packet);
    }

    fn dequeue(&mut self, now_ns: u64, _drops: &mut Vec<Dropped>) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.bytes -= p.wire_bytes as u64;
        // pie_process_dequeue(): queue delay from the packet's timestamp; burst allowance runs down.
        self.qdelay_ns = if self.bytes == 0 { 0 } else { now_ns.saturating_sub(p.enqueue_ns) };
        let dtime = self.dq_tstamp_ns.map_or(0, |t| now_ns.saturating_sub(t));
        self.dq_tstamp_ns = Some(now_ns);
        if dtime > 0 {
            self.burst_time_ns = self.burst_time_ns.saturating_sub(dtime);
        }
        Some(p)
    }

    fn len_packets(&self) -> usize {
        self.queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn next_timer_ns(&self) -> Option<u64> {
        Some(self.next_update_ns)
    }

    fn on_timer(&mut self, now_ns: u64) {
        while self.next_update_ns <= now_ns {
            self.calculate_probability();
            self.next_update_ns += self.params.update_period_ns;
        }
    }

    fn set_in_service(&mut self, packets: usize, _bytes: u64, _band: u8) {
        self.in_service_packets = packets;
    }

    fn drain(&mut self) -> Vec<Packet> {
        self.bytes = 0;
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn update_period_is_linux_timer_ticks_plus_one() {
        // Measured in Linux 6.1 at HZ 100 (the uml guest, bench/uml/RESULTS.md): tupdate 30 ms updated every 40 ms.
        assert_eq!(update_period_ns(30 * MS, 100), 40 * MS);
        assert_eq!(update_period_ns(30 * MS, 250), 36 * MS); // 7.5 ticks round up to 8, + 1
        assert_eq!(update_period_ns(15 * MS, 250), 20 * MS);
        assert_eq!(update_period_ns(15 * MS, 1000), 16 * MS);
        assert_eq!(update_period_ns(15 * MS, 300), 20 * MS); // 4.5 ticks -> 5, + 1 = 6 ticks of 3.33 ms
        assert_eq!(update_period_ns(30 * MS, 0), 30 * MS);
    }

    #[test]
    fn probability_updates_on_that_period() {
        let cfg = PieConfig {
            target_ms: 20.0,
            tupdate_ms: 30.0,
            alpha: 2,
            beta: 20,
            limit_packets: 1000,
            ecn: false,
            timer_hz: 100,
        };
        let mut q = cfg.build(5 * MS, &mut SmallRng::seed_from_u64(1));
        assert_eq!(q.next_timer_ns(), Some(45 * MS));
        q.on_timer(45 * MS);
        assert_eq!(q.next_timer_ns(), Some(85 * MS));
    }
}
