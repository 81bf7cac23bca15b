//! The link's `rate`: as the link runs it (`RateConfig`: whole bits per second, steps at whole nanoseconds, a
//! trace's delivery opportunities) and as JSON (`RateJson`: exactly one of `kbit`, `schedule` and `trace`), each
//! turned into the other.

use crate::check::{check_integer, check_number, field, kbit_to_bits, optional, ConfigError};
use serde::{Deserialize, Serialize};

/// A trace's delivery opportunity: one 1500-byte IP packet, i.e. 1514 link-layer bytes (Mahimahi's format).
pub const TRACE_OPPORTUNITY_BYTES: u64 = 1514;

#[derive(Debug, Clone, PartialEq)]
pub enum RateConfig {
    Unlimited,
    /// Piecewise constant; a constant rate is one step at 0 s. Steps sorted by time.
    Schedule {
        steps: Vec<RateStep>,
        burst_bytes: u64,
    },
    /// Mahimahi delivery opportunities (ms offsets, sorted), repeating with `period_ms`, played from `offset_ms`
    /// into the trace (< `period_ms`). `burst_bytes` is part of the normalised form but a trace player has no token
    /// bucket: it is kept only to write the link back.
    Trace {
        path: String,
        opportunities_ms: Vec<u64>,
        period_ms: u64,
        offset_ms: u64,
        burst_bytes: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStep {
    pub at_ns: u64,
    pub bits_per_s: u64,
}

impl RateConfig {
    /// The rate in force at t = 0 (bits/s); trace: its average rate. Sizes the kernel queue (main.rs).
    pub fn first_bits_per_s(&self) -> Option<u64> {
        match self {
            RateConfig::Unlimited => None,
            RateConfig::Schedule { steps, .. } => Some(steps[0].bits_per_s),
            RateConfig::Trace { opportunities_ms, period_ms, .. } => {
                Some(opportunities_ms.len() as u64 * TRACE_OPPORTUNITY_BYTES * 8 * 1000 / (*period_ms).max(1))
            }
        }
    }
}

/// `rate` as JSON: exactly one of `kbit` (constant), `schedule` and `trace` (a file of delivery opportunities, with
/// `trace_offset_ms`, where in the trace the link starts; only with a trace).
#[derive(Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateJson {
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    kbit: Option<f64>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    schedule: Option<Vec<StepJson>>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    trace_offset_ms: Option<u64>,
    burst_bytes: u64,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct StepJson {
    at_s: f64,
    kbit: f64,
}

/// The rate as JSON: a schedule of one step at 0 s as a constant `kbit`; kbit = bits/s / 1000.
pub fn rate_json(rate: &RateConfig) -> Option<RateJson> {
    let kbit = |bits_per_s: u64| bits_per_s as f64 / 1000.0;
    match rate {
        RateConfig::Unlimited => None,
        RateConfig::Schedule { steps, burst_bytes } if steps.len() == 1 && steps[0].at_ns == 0 => {
            Some(RateJson { kbit: Some(kbit(steps[0].bits_per_s)), burst_bytes: *burst_bytes, ..RateJson::default() })
        }
        RateConfig::Schedule { steps, burst_bytes } => {
            let steps = steps.iter().map(|s| StepJson { at_s: s.at_ns as f64 / 1e9, kbit: kbit(s.bits_per_s) });
            Some(RateJson { schedule: Some(steps.collect()), burst_bytes: *burst_bytes, ..RateJson::default() })
        }
        RateConfig::Trace { path, offset_ms, burst_bytes, .. } => Some(RateJson {
            trace: Some(path.clone()),
            trace_offset_ms: Some(*offset_ms),
            burst_bytes: *burst_bytes,
            ..RateJson::default()
        }),
    }
}

impl RateJson {
    /// The rate as the link runs it: whole bits per second, steps at whole nanoseconds, a trace's opportunities.
    pub fn to_config(&self, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<RateConfig, ConfigError> {
        let forms =
            [("kbit", self.kbit.is_some()), ("schedule", self.schedule.is_some()), ("trace", self.trace.is_some())];
        let given: Vec<&str> = forms.iter().filter(|(_, given)| *given).map(|(name, _)| *name).collect();
        if given.len() != 1 {
            let got = if given.is_empty() { "none".to_string() } else { given.join(", ") };
            return Err(ConfigError::new(
                "rate",
                format!("must have exactly one of kbit, schedule, trace (got: {got})"),
            ));
        }
        let burst_bytes = self.burst_bytes;
        check_integer("rate", "burst_bytes", burst_bytes, 1514, u32::MAX.into())?;
        if self.trace.is_none() && self.trace_offset_ms.is_some() {
            return Err(ConfigError::new("rate.trace_offset_ms", "is only for a trace (this rate has none)"));
        }
        if let Some(kbit) = self.kbit {
            let step = RateStep { at_ns: 0, bits_per_s: kbit_to_bits("rate", "kbit", kbit)? };
            return Ok(RateConfig::Schedule { steps: vec![step], burst_bytes });
        }
        if let Some(schedule) = &self.schedule {
            return Ok(RateConfig::Schedule { steps: schedule_steps(schedule)?, burst_bytes });
        }
        let path = self.trace.as_deref().unwrap_or_default();
        let (opportunities_ms, period_ms) = read_opportunities(path, read_trace)?;
        let offset_ms = self.trace_offset_ms.ok_or_else(|| {
            ConfigError::new(
                "rate.trace_offset_ms",
                "is missing (where in the trace the link starts, in ms; 0: its start)",
            )
        })?;
        if offset_ms >= period_ms {
            return Err(ConfigError::new(
                "rate.trace_offset_ms",
                format!("must be less than the trace's period, its last timestamp ({period_ms} ms in {path}; got {offset_ms})"),
            ));
        }
        Ok(RateConfig::Trace { path: path.to_string(), opportunities_ms, period_ms, offset_ms, burst_bytes })
    }
}

fn schedule_steps(schedule: &[StepJson]) -> Result<Vec<RateStep>, ConfigError> {
    let mut steps: Vec<RateStep> = Vec::new();
    for (i, s) in schedule.iter().enumerate() {
        let at = format!("rate.schedule[{i}]");
        check_number(&at, "at_s", s.at_s, 0.0, 1e9, false)?;
        let step = RateStep { at_ns: (s.at_s * 1e9).round() as u64, bits_per_s: kbit_to_bits(&at, "kbit", s.kbit)? };
        if steps.last().is_some_and(|last| step.at_ns < last.at_ns) {
            return Err(ConfigError::new(
                &field(&at, "at_s"),
                "must not be earlier than the step before (the normalised schedule is sorted)",
            ));
        }
        steps.push(step);
    }
    match steps.first() {
        None => Err(ConfigError::new("rate.schedule", "must have at least one step")),
        Some(first) if first.at_ns != 0 => {
            Err(ConfigError::new("rate.schedule[0].at_s", "must be 0 (the rate before any other step)"))
        }
        Some(_) => Ok(steps),
    }
}

/// A trace file's delivery opportunities (ms, sorted) and its period (the last one).
fn read_opportunities(
    path: &str,
    read_trace: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(Vec<u64>, u64), ConfigError> {
    let err = |problem: String| ConfigError::new("rate.trace", problem);
    if path.is_empty() {
        return Err(err("must be a file path".into()));
    }
    // netem resolves a trace against the scenario's directory; a relative path here would silently depend on the
    // bottleneck's working directory instead.
    if !path.starts_with('/') {
        return Err(err(format!("must be an absolute path (got {path:?})")));
    }
    let text = read_trace(path).map_err(|e| err(format!("cannot be read ({path}: {e})")))?;
    let mut opportunities_ms = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line
            .parse()
            .map_err(|_| err(format!("line {} of {path} is not an integer ms timestamp: {line:?}", n + 1)))?;
        if let Some(&last) = opportunities_ms.last() {
            if ms < last {
                return Err(err(format!("line {} of {path} goes back in time ({ms} after {last})", n + 1)));
            }
        }
        opportunities_ms.push(ms);
    }
    let period_ms = *opportunities_ms.last().ok_or_else(|| err(format!("{path} holds no delivery opportunities")))?;
    if period_ms == 0 {
        return Err(err(format!("{path} must end at a timestamp > 0 ms (it is the trace's period)")));
    }
    Ok((opportunities_ms, period_ms))
}
