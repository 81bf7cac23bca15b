//! The link's scheduled changes as they happen: each capacity step (the rate schedule's steps after its first), each
//! delay step (delay_schedule) and a trace's start (at each time 0: where the trace's opportunities count from),
//! recorded once the real-time loop has run past its time, into the schedule log
//! (docs/bottleneck-log.md, "Schedule log", `bottleneck-<direction>.schedule.jsonl`). The link model (link.rs,
//! rate.rs) puts a step in force from the schedule's time 0 plus its offset, whenever the loop looks; this records
//! that time (`in_force_ns`, on the clock of the SIGUSR1 that set time 0) and when the loop got there
//! (`noticed_ns`), so that the harness can say when each step was applied against when the call's clock asked.

use crate::config::{LinkConfig, RateConfig};
use crate::writer::{Log, LogRecord};

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum StepKind {
    #[default]
    Capacity,
    Delay,
    /// A trace starts (again) from its offset: at time 0 itself, so its record holds the time 0 the link took.
    TraceStart,
}

/// One step that has come into force.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct StepRecord {
    pub kind: StepKind,
    /// Its place in its list: rate.schedule[index] (1, 2, ...) or delay_schedule[index] (0, 1, ...).
    pub index: u32,
    /// Its offset on the schedule's time axis.
    pub at_ns: u64,
    /// kbit/s for a capacity step, ms for a delay step, the trace's offset in ms for a trace start.
    pub value: f64,
    /// How many times time 0 was restarted (SIGUSR1) before it came into force: 0 for the --t0-ns given at start.
    pub restart: u32,
    /// Time 0 it counts from (CLOCK_REALTIME ns).
    pub t0_ns: u64,
    /// t0_ns + at_ns: from then on the link model applies it.
    pub in_force_ns: u64,
    /// When the loop first ran at or past in_force_ns and recorded it.
    pub noticed_ns: u64,
}

/// The steps of one link, in time order, and how far the loop has got through them since time 0.
pub struct ScheduleSteps {
    /// (kind, index, offset, value), sorted by offset (stable: a capacity step before a delay step at the same time).
    steps: Vec<(StepKind, u32, u64, f64)>,
    t0_ns: u64,
    restart: u32,
    next: usize,
}

impl ScheduleSteps {
    pub fn new(cfg: &LinkConfig, t0_ns: u64) -> ScheduleSteps {
        let mut steps: Vec<(StepKind, u32, u64, f64)> = Vec::new();
        if let RateConfig::Schedule { steps: rate, .. } = &cfg.rate {
            for (i, s) in rate.iter().enumerate().skip(1) {
                steps.push((StepKind::Capacity, i as u32, s.at_ns, s.bits_per_s as f64 / 1000.0));
            }
        }
        if let RateConfig::Trace { offset_ms, .. } = &cfg.rate {
            steps.push((StepKind::TraceStart, 0, 0, *offset_ms as f64));
        }
        for (i, s) in cfg.delay_schedule.iter().enumerate() {
            steps.push((StepKind::Delay, i as u32, crate::qdisc::ms_to_ns(s.at_s * 1000.0), s.delay_ms));
        }
        steps.sort_by_key(|s| s.2);
        ScheduleSteps { steps, t0_ns, restart: 0, next: 0 }
    }

    /// Time 0 becomes `t0_ns` (as the link's: Link::restart_schedule): every step comes into force again from it.
    pub fn restart(&mut self, t0_ns: u64) {
        self.t0_ns = t0_ns;
        self.restart += 1;
        self.next = 0;
    }

    /// When the next step comes into force (the loop wakes then), None after the last.
    pub fn next_ns(&self) -> Option<u64> {
        self.steps.get(self.next).map(|s| self.t0_ns + s.2)
    }

    /// Every step in force at `now_ns` not recorded yet, noticed at `now_ns`.
    pub fn take_in_force(&mut self, now_ns: u64, mut record: impl FnMut(StepRecord)) {
        while let Some(&(kind, index, at_ns, value)) = self.steps.get(self.next) {
            let in_force_ns = self.t0_ns + at_ns;
            if in_force_ns > now_ns {
                break;
            }
            record(StepRecord {
                kind,
                index,
                at_ns,
                value,
                restart: self.restart,
                t0_ns: self.t0_ns,
                in_force_ns,
                noticed_ns: now_ns,
            });
            self.next += 1;
        }
    }
}

/// Records waiting for the writer thread (steps are rare: a schedule with more would lose some, counted).
const RING_RECORDS: usize = 256;

pub fn encode(r: &StepRecord, out: &mut Vec<u8>) {
    let (kind, value_key) = match r.kind {
        StepKind::Capacity => ("capacity", "kbit"),
        StepKind::Delay => ("delay", "delay_ms"),
        StepKind::TraceStart => ("trace_start", "trace_offset_ms"),
    };
    let mut line = serde_json::json!({
        "kind": kind, "index": r.index, "at_s": r.at_ns as f64 / 1e9, "restart": r.restart, "t0_ns": r.t0_ns,
        "in_force_ns": r.in_force_ns, "noticed_ns": r.noticed_ns,
    });
    line[value_key] = r.value.into();
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

/// The schedule log: one JSON line per step put in force.
pub type ScheduleLog = Log<StepRecord>;

impl LogRecord for StepRecord {
    const RING: usize = RING_RECORDS;
    fn encode(&self, out: &mut Vec<u8>) {
        encode(self, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DelayStep, RateStep};

    fn link(rate: &[(u64, u64)], delays: &[(f64, f64)]) -> LinkConfig {
        use crate::config::testing;
        let json = testing::link(10, testing::kbit(1000), testing::fifo(100));
        let mut cfg = crate::config::parse_link(&json, &|_| Err("no trace".into())).unwrap();
        cfg.rate = RateConfig::Schedule {
            steps: rate.iter().map(|&(at_ns, kbit)| RateStep { at_ns, bits_per_s: kbit * 1000 }).collect(),
            burst_bytes: 3028,
        };
        cfg.delay_schedule = delays.iter().map(|&(at_s, delay_ms)| DelayStep { at_s, delay_ms }).collect();
        cfg
    }

    fn take(s: &mut ScheduleSteps, now: u64) -> Vec<StepRecord> {
        let mut out = Vec::new();
        s.take_in_force(now, |r| out.push(r));
        out
    }

    #[test]
    fn each_step_is_recorded_once_with_its_time_in_force_and_when_the_loop_noticed_it() {
        let cfg = link(&[(0, 2000), (5_000_000_000, 500)], &[(3.0, 80.0)]);
        let mut s = ScheduleSteps::new(&cfg, 100_000_000_000);
        assert_eq!(s.next_ns(), Some(103_000_000_000));
        assert!(take(&mut s, 102_999_999_999).is_empty());
        let delay = take(&mut s, 103_000_000_700);
        assert_eq!(delay.len(), 1);
        assert_eq!((delay[0].kind, delay[0].index, delay[0].value), (StepKind::Delay, 0, 80.0));
        assert_eq!((delay[0].in_force_ns, delay[0].noticed_ns), (103_000_000_000, 103_000_000_700));
        assert!(take(&mut s, 104_000_000_000).is_empty(), "not recorded twice");
        assert_eq!(s.next_ns(), Some(105_000_000_000));
        // A loop that slept past it notices late: the time in force stays the schedule's.
        let cap = take(&mut s, 105_012_000_000);
        assert_eq!((cap[0].kind, cap[0].index, cap[0].value), (StepKind::Capacity, 1, 500.0));
        assert_eq!((cap[0].in_force_ns, cap[0].noticed_ns), (105_000_000_000, 105_012_000_000));
        assert_eq!(s.next_ns(), None);
    }

    #[test]
    fn a_restart_moves_time_zero_and_records_every_step_again_under_its_count() {
        let cfg = link(&[(0, 2000), (1_000_000_000, 500), (2_000_000_000, 300)], &[]);
        let mut s = ScheduleSteps::new(&cfg, 10_000_000_000);
        assert_eq!(take(&mut s, 11_500_000_000).len(), 1);
        s.restart(50_000_000_000);
        assert_eq!(s.next_ns(), Some(51_000_000_000));
        let both = take(&mut s, 52_000_000_001);
        assert_eq!(
            both.iter().map(|r| (r.index, r.restart, r.t0_ns)).collect::<Vec<_>>(),
            vec![(1, 1, 50_000_000_000), (2, 1, 50_000_000_000)]
        );
        assert_eq!(both[1].in_force_ns, 52_000_000_000);
    }

    #[test]
    fn a_record_is_one_json_line_naming_its_step() {
        let r = StepRecord {
            kind: StepKind::Delay,
            index: 2,
            at_ns: 1_500_000_000,
            value: 40.0,
            restart: 1,
            t0_ns: 7,
            in_force_ns: 1_500_000_007,
            noticed_ns: 1_500_000_100,
        };
        let mut out = Vec::new();
        encode(&r, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((v["kind"].as_str(), v["index"].as_u64(), v["at_s"].as_f64()), (Some("delay"), Some(2), Some(1.5)));
        assert_eq!((v["delay_ms"].as_f64(), v["restart"].as_u64()), (Some(40.0), Some(1)));
        assert_eq!((v["in_force_ns"].as_u64(), v["noticed_ns"].as_u64()), (Some(1_500_000_007), Some(1_500_000_100)));
    }

    #[test]
    fn a_trace_records_its_start_at_each_time_zero() {
        let mut cfg = link(&[(0, 2000)], &[]);
        cfg.rate = RateConfig::Trace {
            path: "t".into(),
            opportunities_ms: vec![1, 5],
            period_ms: 5,
            offset_ms: 3,
            burst_bytes: 3028,
        };
        let mut s = ScheduleSteps::new(&cfg, 100);
        let first = take(&mut s, 150);
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].kind, first[0].value, first[0].restart, first[0].t0_ns),
            (StepKind::TraceStart, 3.0, 0, 100)
        );
        assert!(take(&mut s, 1_000).is_empty(), "not recorded twice");
        // A restart whose signal came after the time 0 asked for: the record holds the time 0 the link took.
        s.restart(2_000_349);
        let again = take(&mut s, 2_000_400);
        assert_eq!((again[0].restart, again[0].t0_ns, again[0].in_force_ns), (1, 2_000_349, 2_000_349));
        let mut out = Vec::new();
        encode(&again[0], &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["trace_offset_ms"].as_f64(), v["t0_ns"].as_u64()),
            (Some("trace_start"), Some(3.0), Some(2_000_349))
        );
    }

    #[test]
    fn a_constant_rate_records_nothing() {
        let cfg = link(&[(0, 2000)], &[]);
        let mut s = ScheduleSteps::new(&cfg, 0);
        assert_eq!(s.next_ns(), None);
        assert!(take(&mut s, u64::MAX / 2).is_empty());
    }
}
