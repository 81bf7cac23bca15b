//! The link rate: when may a dequeued packet of `bytes` link-layer bytes finish its transmission.
//!
//! - Constant rate or schedule: a token bucket like Linux TBF (sch_tbf.c): tokens accrue at the rate in force,
//!   up to `burst_bytes`; a packet leaves when the bucket holds its size. Exact integer arithmetic: one byte is
//!   8e9 "bit-nanoseconds", a rate of r bit/s adds r of them per nanosecond.
//! - Trace: Mahimahi delivery opportunities (one ms timestamp a line, each 1500 IP bytes = 1514 link-layer bytes,
//!   the file repeating with the last timestamp as its period, as Mahimahi's link queue loops: repetition r's
//!   opportunity k is at r * period + timestamp k); a packet leaves at an opportunity, several small packets can
//!   share one, an opportunity nobody uses is lost (as in Mahimahi's link queue). Played from an offset into the
//!   trace: time 0 of the link is the offset's time in the trace, so the first opportunity is the first at or
//!   after the offset, and the loop goes on from there.
//! - Unlimited: no serialization.

use crate::config::{RateConfig, RateStep, TRACE_OPPORTUNITY_BYTES};

const UNITS_PER_BYTE: i128 = 8_000_000_000;

pub struct RateLimiter {
    kind: Kind,
}

enum Kind {
    Unlimited,
    Bucket(TokenBucket),
    Trace(TraceLink),
}

impl RateLimiter {
    /// `t0_ns`: the time schedules and traces count from.
    pub fn new(cfg: &RateConfig, t0_ns: u64) -> RateLimiter {
        let kind = match cfg {
            RateConfig::Unlimited => Kind::Unlimited,
            RateConfig::Schedule { steps, burst_bytes } => Kind::Bucket(TokenBucket::new(steps, *burst_bytes, t0_ns)),
            RateConfig::Trace { opportunities_ms, period_ms, offset_ms, .. } => {
                Kind::Trace(TraceLink::new(opportunities_ms, *period_ms, *offset_ms, t0_ns))
            }
        };
        RateLimiter { kind }
    }

    /// The earliest time >= `start_ns` at which a packet of `bytes` can have been transmitted.
    #[allow(dead_code)]
    pub fn ready_at(&self, start_ns: u64, bytes: u32) -> u64 {
        match &self.kind {
            Kind::Unlimited => start_ns,
            Kind::Bucket(b) => b.ready_at(start_ns, bytes),
            Kind::Trace(t) => t.ready_at(start_ns, bytes).0,
        }
    }

    /// Transmits a packet that becomes ready at `ready_at(start_ns, bytes)`; returns that time.
    pub fn transmit(&mut self, start_ns: u64, bytes: u32) -> u64 {
        match &mut self.kind {
            Kind::Unlimited => start_ns,
            Kind::Bucket(b) => b.transmit(start_ns, bytes),
            Kind::Trace(t) => t.transmit(start_ns, bytes),
        }
    }

    /// Time 0 of a schedule or trace becomes `t0_ns` (the call's start, signalled after the bottleneck came up);
    /// tokens and packets already in transmission are kept.
    pub fn restart_schedule(&mut self, t0_ns: u64) {
        match &mut self.kind {
            Kind::Unlimited => {}
            Kind::Bucket(b) => {
                for step in &mut b.steps {
                    step.0 = step.0 - b.t0_ns + t0_ns;
                }
                b.t0_ns = t0_ns;
            }
            Kind::Trace(t) => {
                t.t0_ns = t0_ns;
                t.next_index = t.first_index;
                t.current_time_ns = 0;
                t.current_left_bytes = 0;
            }
        }
    }

    /// The rate in force at `t_ns` in kbit/s (a trace: its average); None when unlimited.
    pub fn kbit_at(&self, t_ns: u64) -> Option<f64> {
        match &self.kind {
            Kind::Unlimited => None,
            Kind::Bucket(b) => Some(b.rate_at(t_ns) as f64 / 1000.0),
            Kind::Trace(t) => Some(
                t.opportunities_ns.len() as f64 * TRACE_OPPORTUNITY_BYTES as f64 * 8.0
                    / (t.period_ns as f64 / 1e9)
                    / 1000.0,
            ),
        }
    }
}

struct TokenBucket {
    /// (absolute start time, bits/s), sorted.
    steps: Vec<(u64, u64)>,
    t0_ns: u64,
    depth: i128,
    tokens: i128,
    last_ns: u64,
}

impl TokenBucket {
    fn new(steps: &[RateStep], burst_bytes: u64, t0_ns: u64) -> TokenBucket {
        let depth = burst_bytes as i128 * UNITS_PER_BYTE;
        TokenBucket {
            steps: steps.iter().map(|s| (t0_ns + s.at_ns, s.bits_per_s)).collect(),
            t0_ns,
            depth,
            tokens: depth,
            last_ns: 0,
        }
    }

    fn step_index_at(&self, t_ns: u64) -> usize {
        // Before t0 the first rate applies.
        self.steps.partition_point(|s| s.0 <= t_ns).saturating_sub(1)
    }

    fn rate_at(&self, t_ns: u64) -> u64 {
        self.steps[self.step_index_at(t_ns)].1
    }

    /// Tokens at `t_ns` (>= last_ns), capped at the depth.
    fn tokens_at(&self, t_ns: u64) -> i128 {
        let mut tokens = self.tokens;
        let mut t = self.last_ns;
        let mut i = self.step_index_at(t);
        while t < t_ns && tokens < self.depth {
            let seg_end = self.steps.get(i + 1).map_or(t_ns, |s| s.0.min(t_ns));
            tokens += self.steps[i].1 as i128 * (seg_end - t) as i128;
            t = seg_end;
            i += 1;
        }
        tokens.min(self.depth)
    }

    fn ready_at(&self, start_ns: u64, bytes: u32) -> u64 {
        let mut t = start_ns.max(self.last_ns);
        let mut tokens = self.tokens_at(t);
        // A packet bigger than the bucket leaves when the bucket is full (TBF would refuse it at setup).
        let need = (bytes as i128 * UNITS_PER_BYTE).min(self.depth);
        let mut i = self.step_index_at(t);
        loop {
            if tokens >= need {
                return t;
            }
            let rate = self.steps[i].1 as i128;
            let dt = ((need - tokens) + rate - 1) / rate;
            match self.steps.get(i + 1) {
                Some(next) if (t as i128 + dt) > next.0 as i128 => {
                    tokens += rate * (next.0 - t) as i128;
                    t = next.0;
                    i += 1;
                }
                _ => return t + dt as u64,
            }
        }
    }

    fn transmit(&mut self, start_ns: u64, bytes: u32) -> u64 {
        let t = self.ready_at(start_ns, bytes);
        let need = (bytes as i128 * UNITS_PER_BYTE).min(self.depth);
        self.tokens = self.tokens_at(t) - need;
        self.last_ns = t;
        t
    }
}

struct TraceLink {
    opportunities_ns: Vec<u64>,
    period_ns: u64,
    /// Where in the trace the link's time 0 is (< period_ns).
    offset_ns: u64,
    t0_ns: u64,
    /// Global index (over repetitions) of the first opportunity at or after the offset: the link's first.
    first_index: u64,
    /// Global index (over repetitions) of the next unused opportunity.
    next_index: u64,
    /// The opportunity partly used by the last packet, and what is left of it.
    current_time_ns: u64,
    current_left_bytes: u64,
}

impl TraceLink {
    fn new(opportunities_ms: &[u64], period_ms: u64, offset_ms: u64, t0_ns: u64) -> TraceLink {
        let mut t = TraceLink {
            opportunities_ns: opportunities_ms.iter().map(|ms| ms * 1_000_000).collect(),
            period_ns: period_ms * 1_000_000,
            offset_ns: offset_ms * 1_000_000,
            t0_ns,
            first_index: 0,
            next_index: 0,
            current_time_ns: 0,
            current_left_bytes: 0,
        };
        t.first_index = t.first_index_at_or_after(t0_ns);
        t.next_index = t.first_index;
        t
    }

    /// Time of opportunity `index` (global, >= first_index): its time in the looped trace, less the offset.
    fn time_of(&self, index: u64) -> u64 {
        let n = self.opportunities_ns.len() as u64;
        self.t0_ns + (index / n) * self.period_ns + self.opportunities_ns[(index % n) as usize] - self.offset_ns
    }

    fn first_index_at_or_after(&self, t_ns: u64) -> u64 {
        let n = self.opportunities_ns.len() as u64;
        let rel = t_ns.saturating_sub(self.t0_ns) + self.offset_ns;
        let period = rel / self.period_ns;
        let within = rel - period * self.period_ns;
        let i = self.opportunities_ns.partition_point(|&o| o < within) as u64;
        period * n + i
    }

    /// (time, index of the last opportunity used, bytes left in it), or the leftover of the current one.
    fn ready_at(&self, start_ns: u64, bytes: u32) -> (u64, Option<(u64, u64)>) {
        let bytes = bytes as u64;
        if start_ns <= self.current_time_ns && self.current_left_bytes >= bytes {
            return (self.current_time_ns, None);
        }
        let mut j = self.first_index_at_or_after(start_ns).max(self.next_index);
        let mut have = TRACE_OPPORTUNITY_BYTES;
        while have < bytes {
            j += 1;
            have += TRACE_OPPORTUNITY_BYTES;
        }
        (self.time_of(j), Some((j, have - bytes)))
    }

    fn transmit(&mut self, start_ns: u64, bytes: u32) -> u64 {
        let (t, used) = self.ready_at(start_ns, bytes);
        match used {
            None => self.current_left_bytes -= bytes as u64,
            Some((j, left)) => {
                self.next_index = j + 1;
                self.current_time_ns = t;
                self.current_left_bytes = left;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constant(kbit: u64, burst: u64) -> RateLimiter {
        RateLimiter::new(
            &RateConfig::Schedule { steps: vec![RateStep { at_ns: 0, bits_per_s: kbit * 1000 }], burst_bytes: burst },
            0,
        )
    }

    #[test]
    fn saturated_1mbit_link_forwards_1e6_bits_per_second_of_link_layer_bytes() {
        // Always backlogged with 1514-byte frames for 10 simulated seconds.
        let mut link = constant(1000, 3028);
        let (mut t, mut bits_sent, mut first_after_1s) = (0u64, 0u64, None);
        loop {
            t = link.transmit(t, 1514);
            if t > 11_000_000_000 {
                break;
            }
            if t >= 1_000_000_000 {
                if first_after_1s.is_none() {
                    first_after_1s = Some(t);
                } else {
                    bits_sent += 1514 * 8;
                }
            }
        }
        let start = first_after_1s.unwrap();
        let bits_per_s = bits_sent as f64 / ((11_000_000_000 - start) as f64 / 1e9);
        assert!((bits_per_s - 1e6).abs() / 1e6 < 0.001, "{bits_per_s}");
    }

    #[test]
    fn idle_bucket_sends_a_burst_then_paces() {
        let mut link = constant(1000, 3028);
        assert_eq!(link.transmit(0, 1514), 0);
        assert_eq!(link.transmit(0, 1514), 0);
        // The third frame waits for 1514 bytes of tokens: 12.112 ms at 1 Mbit/s.
        assert_eq!(link.transmit(0, 1514), 12_112_000);
    }

    #[test]
    fn schedule_changes_rate_mid_packet() {
        let steps =
            vec![RateStep { at_ns: 0, bits_per_s: 1_000_000 }, RateStep { at_ns: 1_000_000_000, bits_per_s: 500_000 }];
        let mut link = RateLimiter::new(&RateConfig::Schedule { steps, burst_bytes: 1514 }, 10);
        link.transmit(10, 1514); // empties the bucket at t = 10 ns
                                 // Needs 12.112 ms of 1 Mbit/s; starting 6.056 ms before the change: half at 1 Mbit/s, rest at 0.5 Mbit/s.
        let start = 10 + 1_000_000_000 - 6_056_000;
        let mut b = RateLimiter::new(
            &RateConfig::Schedule {
                steps: vec![
                    RateStep { at_ns: 0, bits_per_s: 1_000_000 },
                    RateStep { at_ns: 1_000_000_000, bits_per_s: 500_000 },
                ],
                burst_bytes: 1514,
            },
            10,
        );
        b.transmit(start, 1514);
        assert_eq!(b.ready_at(start, 1514), 10 + 1_000_000_000 + 12_112_000);
        assert_eq!(link.kbit_at(2_000_000_000), Some(500.0));
    }

    #[test]
    fn trace_releases_at_opportunities_and_repeats() {
        let mut link = RateLimiter::new(&trace(&[1, 1, 5], 5, 0), 0);
        assert_eq!(link.transmit(0, 1514), 1_000_000);
        assert_eq!(link.transmit(0, 1514), 1_000_000);
        // Two small packets share the opportunity at 5 ms.
        assert_eq!(link.transmit(0, 700), 5_000_000);
        assert_eq!(link.transmit(5_000_000, 700), 5_000_000);
        assert_eq!(link.transmit(5_000_000, 700), 6_000_000);
        // An unused opportunity is lost: after idling until 20 ms the next one is at 21 ms.
        assert_eq!(link.transmit(20_000_000, 1514), 21_000_000);
    }

    #[test]
    fn restarting_the_schedule_moves_its_steps_to_the_new_time_zero() {
        let steps =
            vec![RateStep { at_ns: 0, bits_per_s: 1_000_000 }, RateStep { at_ns: 1_000_000_000, bits_per_s: 500_000 }];
        let mut link = RateLimiter::new(&RateConfig::Schedule { steps, burst_bytes: 1514 }, 0);
        // Started 5 s after the bottleneck came up: until 6 s the first rate holds, then the second.
        link.restart_schedule(5_000_000_000);
        assert_eq!(link.kbit_at(1_500_000_000), Some(1000.0));
        assert_eq!(link.kbit_at(5_900_000_000), Some(1000.0));
        assert_eq!(link.kbit_at(6_000_000_000), Some(500.0));
        // A second restart counts from its own time zero, not from the first one's.
        link.restart_schedule(10_000_000_000);
        assert_eq!(link.kbit_at(10_500_000_000), Some(1000.0));
        assert_eq!(link.kbit_at(11_000_000_000), Some(500.0));
    }

    #[test]
    fn restarting_a_trace_starts_it_over() {
        let cfg = trace(&[1, 5], 5, 0);
        let mut link = RateLimiter::new(&cfg, 0);
        assert_eq!(link.transmit(0, 1514), 1_000_000);
        link.restart_schedule(100_000_000);
        assert_eq!(link.transmit(100_000_000, 1514), 101_000_000);
        assert_eq!(link.transmit(100_000_000, 1514), 105_000_000);
    }

    fn trace(opportunities_ms: &[u64], period_ms: u64, offset_ms: u64) -> RateConfig {
        RateConfig::Trace {
            path: "t".into(),
            opportunities_ms: opportunities_ms.to_vec(),
            period_ms,
            offset_ms,
            burst_bytes: 3028,
        }
    }

    /// Mahimahi's LinkQueue (src/frontend/link_queue.cc), its schedule walked as it walks it: the next delivery is
    /// schedule[i] + base; at the wraparound base grows by the last timestamp. Its first `count` opportunities in
    /// ms, the trace started `offset_ms` in: those before the offset are skipped and times count from the offset.
    fn mahimahi_opportunities(schedule: &[u64], offset_ms: u64, count: usize) -> Vec<u64> {
        let (mut i, mut base, mut out) = (0usize, 0u64, Vec::new());
        while out.len() < count {
            let t = schedule[i] + base;
            if t >= offset_ms {
                out.push(t - offset_ms);
            }
            i = (i + 1) % schedule.len();
            if i == 0 {
                base += schedule.last().unwrap();
            }
        }
        out
    }

    #[test]
    fn a_saturated_trace_uses_every_opportunity_once_as_mahimahi_loops_it() {
        let schedule = [0, 3, 3, 4, 9, 9, 9, 12];
        for offset_ms in [0, 3, 4, 5, 11] {
            let mut link = RateLimiter::new(&trace(&schedule, 12, offset_ms), 1_000);
            // Always backlogged with full-size frames for five periods: one frame per opportunity.
            let sent: Vec<u64> = (0..40).map(|_| (link.transmit(1_000, 1514) - 1_000) / 1_000_000).collect();
            assert_eq!(sent, mahimahi_opportunities(&schedule, offset_ms, 40), "offset {offset_ms}");
        }
    }

    #[test]
    fn an_offset_starts_the_link_that_far_into_the_trace() {
        let mut link = RateLimiter::new(&trace(&[1, 1, 5], 5, 2), 0);
        // Trace time 5 is link time 3; then the second repetition's 6, 6, 10 are 4, 4, 8.
        assert_eq!(link.transmit(0, 1514), 3_000_000);
        assert_eq!(link.transmit(0, 1514), 4_000_000);
        assert_eq!(link.transmit(0, 1514), 4_000_000);
        assert_eq!(link.transmit(0, 1514), 8_000_000);
        // A restart goes back to the offset, not to the trace's start.
        link.restart_schedule(100_000_000);
        assert_eq!(link.transmit(100_000_000, 1514), 103_000_000);
        // Idle until 20 ms after the restart (trace time 22): the next is the fifth repetition's 5 (trace 25), link 23 ms.
        assert_eq!(link.transmit(120_000_000, 1514), 123_000_000);
    }

    #[test]
    fn unlimited_adds_no_time() {
        let mut link = RateLimiter::new(&RateConfig::Unlimited, 0);
        assert_eq!(link.transmit(42, 1514), 42);
    }
}
