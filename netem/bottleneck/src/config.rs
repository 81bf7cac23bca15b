//! The link the bottleneck runs: exactly the normalised link that netem writes (`bottleneck-<direction>.json`,
//! docs/netem.md). netem fills every default from scenarios/schema.json and converts `limit_ms`; this file only
//! reads what it is given. Every field is required and unknown fields are refused, each error naming the field, so a
//! link that netem and the bottleneck would read differently fails instead of running on a default of its own.
//!
//! serde reads the JSON (derive; `deny_unknown_fields` on every object; no serde defaults), then `validate` checks
//! the schema's ranges. This file holds the link's own fields (delay, jitter, loss, the rate) and the discipline
//! enum, tagged by `kind`; each discipline's parameters, their ranges and how they build it are in its own file under
//! src/qdisc/ (as Linux's sch_pie.c owns its change and dump). `LinkConfig::to_json` writes the same form back
//! (`--print-config`), which the cross-language conformance test compares with netem's normaliser.

use crate::meter::MeterActionConfig;
use crate::qdisc::codel::CodelConfig;
use crate::qdisc::fifo::FifoConfig;
use crate::qdisc::fq_codel::FqCodelConfig;
use crate::qdisc::pie::PieConfig;
use crate::qdisc::prio::{self, PrioConfig};
use crate::qdisc::sfq::SfqConfig;
use crate::qdisc::QdiscParams;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_path_to_error::Segment;

/// A trace's delivery opportunity: one 1500-byte IP packet, i.e. 1514 link-layer bytes (Mahimahi's format).
pub const TRACE_OPPORTUNITY_BYTES: u64 = 1514;

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub problem: String,
}

impl ConfigError {
    pub fn new(field: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError { field: field.to_string(), problem: problem.into() }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid link config: field `{}` {}", self.field, self.problem)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    pub delay_ms: f64,
    /// Later propagation delays: from `at_s` on the schedule's time axis, packets reaching the bottleneck get
    /// `delay_ms` (strictly increasing `at_s`, all > 0).
    pub delay_schedule: Vec<DelayStep>,
    pub jitter_ms: f64,
    pub loss_percent: f64,
    pub rate: RateConfig,
    pub qdisc: QdiscConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RateConfig {
    Unlimited,
    /// Piecewise constant; a constant rate is one step at 0 s. Steps sorted by time.
    Schedule {
        steps: Vec<RateStep>,
        burst_bytes: u64,
    },
    /// Mahimahi delivery opportunities (ms offsets, sorted), repeating with `period_ms`. `burst_bytes` is part of
    /// the normalised form but a trace player has no token bucket: it is kept only to write the link back.
    Trace {
        path: String,
        opportunities_ms: Vec<u64>,
        period_ms: u64,
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

/// The discipline: its `kind` and that kind's parameters, each kind's in its file under src/qdisc/.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    Fifo(FifoConfig),
    Codel(CodelConfig),
    Pie(PieConfig),
    Sfq(SfqConfig),
    FqCodel(FqCodelConfig),
    Prio(PrioConfig),
}

const KINDS: &str = "fifo, codel, pie, sfq, fq_codel, prio";

impl QdiscConfig {
    /// The kind's parameters: their ranges, their limit and the discipline they build.
    pub fn params(&self) -> &dyn QdiscParams {
        match self {
            QdiscConfig::Fifo(p) => p,
            QdiscConfig::Codel(p) => p,
            QdiscConfig::Pie(p) => p,
            QdiscConfig::Sfq(p) => p,
            QdiscConfig::FqCodel(p) => p,
            QdiscConfig::Prio(p) => p,
        }
    }

    /// Packets the discipline can hold at most (for the NFQUEUE queue length).
    pub fn max_packets(&self) -> u64 {
        self.params().max_packets()
    }

    /// The schema's ranges; `path` is where the discipline is in the link (`qdisc`, `qdisc.bands[1].qdisc`).
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        self.params().validate(path)
    }

    /// The error in a discipline serde could not read, found by reading its kind's parameters alone (see `read`).
    fn error_in(kind: &str, fields: &Value, path: &str) -> Option<ConfigError> {
        match kind {
            "fifo" => read::<FifoConfig>(fields, path).err(),
            "codel" => read::<CodelConfig>(fields, path).err(),
            "pie" => read::<PieConfig>(fields, path).err(),
            "sfq" => read::<SfqConfig>(fields, path).err(),
            "fq_codel" => read::<FqCodelConfig>(fields, path).err(),
            // A band's discipline (`...bands[i].qdisc`): its kind is refused before its fields are read.
            "prio" if path.ends_with("].qdisc") => Some(prio::nested_prio(path)),
            "prio" => read::<PrioConfig>(fields, path).err(),
            other => Some(ConfigError::new(&field(path, "kind"), format!("is {other:?}, allowed: {KINDS}"))),
        }
    }
}

/// The link as JSON, as serde reads and writes it; `parse_link` turns its rate into a `RateConfig`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct LinkJson {
    delay_ms: f64,
    delay_schedule: Vec<DelayStep>,
    jitter_ms: f64,
    loss_percent: f64,
    #[serde(deserialize_with = "nullable")]
    rate: Option<RateJson>,
    qdisc: QdiscConfig,
}

/// `rate` as JSON: exactly one of `kbit` (constant), `schedule` and `trace` (a file of delivery opportunities).
#[derive(Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RateJson {
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    kbit: Option<f64>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    schedule: Option<Vec<StepJson>>,
    #[serde(default, deserialize_with = "optional", skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
    burst_bytes: u64,
}

/// One step of the propagation delay (`delay_schedule`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DelayStep {
    pub at_s: f64,
    pub delay_ms: f64,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct StepJson {
    at_s: f64,
    kbit: f64,
}

impl LinkConfig {
    /// Whether the discipline carries rate meters (they need an action log).
    pub fn has_meters(&self) -> bool {
        matches!(&self.qdisc, QdiscConfig::Prio(p) if !p.meters.is_empty())
    }

    /// The link in the normalised form it was read from: what `--print-config` prints.
    pub fn to_json(&self) -> Value {
        let link = LinkJson {
            delay_ms: self.delay_ms,
            delay_schedule: self.delay_schedule.clone(),
            jitter_ms: self.jitter_ms,
            loss_percent: self.loss_percent,
            rate: rate_json(&self.rate),
            qdisc: self.qdisc.clone(),
        };
        let mut v = serde_json::to_value(link).expect("a link is plain JSON");
        whole_numbers(&mut v);
        v
    }
}

/// The rate as JSON: a schedule of one step at 0 s as a constant `kbit`; kbit = bits/s / 1000.
fn rate_json(rate: &RateConfig) -> Option<RateJson> {
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
        RateConfig::Trace { path, burst_bytes, .. } => {
            Some(RateJson { trace: Some(path.clone()), burst_bytes: *burst_bytes, ..RateJson::default() })
        }
    }
}

/// Every whole number written without a fraction (25 rather than 25.0: the form netem writes).
fn whole_numbers(v: &mut Value) {
    if v.is_f64() {
        let x = v.as_f64().unwrap_or_default();
        if x.fract() == 0.0 && x.abs() < 9e15 {
            *v = Value::from(x as i64);
        }
    } else if let Some(items) = v.as_array_mut() {
        items.iter_mut().for_each(whole_numbers);
    } else if let Some(fields) = v.as_object_mut() {
        fields.values_mut().for_each(whole_numbers);
    }
}

/// Reads a normalised link object; `read_trace` loads a trace file (a parameter so tests need no files).
pub fn parse_link(v: &Value, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<LinkConfig, ConfigError> {
    let link: LinkJson = read(v, "")?;
    if let Some(e) = array_for_object(v, &serde_json::to_value(&link).expect("a link is plain JSON"), "") {
        return Err(e);
    }
    check_number("", "delay_ms", link.delay_ms, 0.0, 10000.0, false)?;
    for (i, step) in link.delay_schedule.iter().enumerate() {
        let path = format!("delay_schedule[{i}]");
        check_number(&path, "at_s", step.at_s, 0.0, 1e6, true)?;
        check_number(&path, "delay_ms", step.delay_ms, 0.0, 10000.0, false)?;
        if i > 0 && step.at_s <= link.delay_schedule[i - 1].at_s {
            return Err(ConfigError::new(&field(&path, "at_s"), "must be later than the step before"));
        }
    }
    check_number("", "jitter_ms", link.jitter_ms, 0.0, 10000.0, false)?;
    check_number("", "loss_percent", link.loss_percent, 0.0, 100.0, false)?;
    let rate = match &link.rate {
        None => RateConfig::Unlimited,
        Some(rate) => rate.to_config(read_trace)?,
    };
    link.qdisc.validate("qdisc")?;
    Ok(LinkConfig {
        delay_ms: link.delay_ms,
        delay_schedule: link.delay_schedule,
        jitter_ms: link.jitter_ms,
        loss_percent: link.loss_percent,
        rate,
        qdisc: link.qdisc,
    })
}

impl RateJson {
    /// The rate as the link runs it: whole bits per second, steps at whole nanoseconds, a trace's opportunities.
    fn to_config(&self, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<RateConfig, ConfigError> {
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
        if let Some(kbit) = self.kbit {
            let step = RateStep { at_ns: 0, bits_per_s: kbit_to_bits("rate", "kbit", kbit)? };
            return Ok(RateConfig::Schedule { steps: vec![step], burst_bytes });
        }
        if let Some(schedule) = &self.schedule {
            return Ok(RateConfig::Schedule { steps: schedule_steps(schedule)?, burst_bytes });
        }
        let path = self.trace.as_deref().unwrap_or_default();
        let (opportunities_ms, period_ms) = read_opportunities(path, read_trace)?;
        Ok(RateConfig::Trace { path: path.to_string(), opportunities_ms, period_ms, burst_bytes })
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

// Reading and checking, for this file and the disciplines' files.

/// The path of field `name` of the object at `path` ("" is the link itself).
pub fn field(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Field `name` of the object at `path` in [min, max], or in (min, max] when `exclusive_min`: the schema's range.
pub fn check_number(
    path: &str,
    name: &str,
    x: f64,
    min: f64,
    max: f64,
    exclusive_min: bool,
) -> Result<(), ConfigError> {
    let low_ok = if exclusive_min { x > min } else { x >= min };
    if !low_ok || x > max || !x.is_finite() {
        let op = if exclusive_min { ">" } else { ">=" };
        return Err(ConfigError::new(&field(path, name), format!("must be {op} {min} and <= {max} (got {x})")));
    }
    Ok(())
}

pub fn check_integer(path: &str, name: &str, x: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if x < min || x > max {
        return Err(ConfigError::new(&field(path, name), format!("must be an integer in [{min}, {max}] (got {x})")));
    }
    Ok(())
}

/// A `kbit` field (1 kbit = 1000 bit) as whole bits per second, the unit of the token buckets' exact arithmetic.
pub fn kbit_to_bits(path: &str, name: &str, kbit: f64) -> Result<u64, ConfigError> {
    check_number(path, name, kbit, 0.0, 10_000_000.0, true)?;
    let bits_per_s = (kbit * 1000.0).round() as u64;
    if bits_per_s == 0 {
        return Err(ConfigError::new(&field(path, name), format!("must be at least 0.001 (1 bit/s; got {kbit})")));
    }
    Ok(bits_per_s)
}

/// serde `serialize_with` for a `kbit` field: written back as the bucket runs it, in whole bits per second.
pub fn whole_bits<S: Serializer>(kbit: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((kbit * 1000.0).round() / 1000.0)
}

/// serde `deserialize_with` for a field that must be given but may be null (a plain `Option` field could also be
/// left out).
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

/// serde `deserialize_with` (with `default`) for a field that may be left out but is not null when given (one of
/// a choice: fifo's two limits, the rate's three forms, a band's DSCPs).
pub fn optional<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Reads `T` by serde from `v`, the value at `path` in the link; an error names its field by its whole path.
pub fn read<T: DeserializeOwned>(v: &Value, path: &str) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let (mut at, mut here) = (path.to_string(), v);
        for segment in e.path() {
            match segment {
                Segment::Seq { index } => {
                    at = format!("{at}[{index}]");
                    here = &here[*index];
                }
                Segment::Map { key } => {
                    at = field(&at, key);
                    here = &here[key.as_str()];
                    if let Some(found) = error_in_tagged(key, here, &at) {
                        return found;
                    }
                }
                _ => {}
            }
        }
        serde_error(&at, &e.into_inner().to_string())
    })
}

/// serde derive also reads a struct from an array of its fields' values, which the link never holds: the first place
/// where `given` has an array and the link read from it (`read`, written back) has an object.
fn array_for_object(given: &Value, read: &Value, path: &str) -> Option<ConfigError> {
    match (given, read) {
        (Value::Array(_), Value::Object(_)) => {
            Some(ConfigError::new(if path.is_empty() { "(link)" } else { path }, "must be an object, not an array"))
        }
        (Value::Array(given), Value::Array(read)) => {
            given.iter().zip(read).enumerate().find_map(|(i, (g, r))| array_for_object(g, r, &format!("{path}[{i}]")))
        }
        (Value::Object(given), Value::Object(read)) => {
            given.iter().find_map(|(k, g)| array_for_object(g, read.get(k)?, &field(path, k)))
        }
        _ => None,
    }
}

/// serde reads an object tagged by `kind` (a `qdisc`, a meter's `action`) from a buffered copy, so the path of an
/// error inside one stops at the object (dtolnay/path-to-error#1): this reads the object again as its kind, which
/// names the field. None: not such an object, or no error in it.
fn error_in_tagged(key: &str, v: &Value, path: &str) -> Option<ConfigError> {
    let kind = v.get("kind")?.as_str()?;
    let mut fields = v.as_object()?.clone();
    fields.remove("kind");
    let fields = Value::Object(fields);
    match key {
        "qdisc" => QdiscConfig::error_in(kind, &fields, path),
        "action" => MeterActionConfig::error_in(kind, &fields, path),
        _ => None,
    }
}

/// A serde error as a problem of the field at `path`. serde names a missing field and an unknown one only in its
/// message ("missing field `x`", "unknown field `x`, expected one of ...").
fn serde_error(path: &str, message: &str) -> ConfigError {
    if let Some(name) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        return ConfigError::new(
            &field(path, name),
            "is required (the bottleneck takes the normalised link: netem fills every default)",
        );
    }
    let path = if path.is_empty() { "(link)" } else { path };
    match message.strip_prefix("unknown field `").and_then(|m| m.split_once(", ")) {
        Some((_, allowed)) => ConfigError::new(path, format!("is not a known field ({allowed})")),
        None => ConfigError::new(path, format!("is not valid ({message})")),
    }
}

#[cfg(test)]
pub mod testing {
    //! Complete normalised links for the tests: the bottleneck fills in nothing, so every test spells out a whole
    //! link. Each discipline's own file has a complete one of its kind (`test_json`), with Linux's defaults.
    pub use crate::qdisc::codel::test_json as codel;
    pub use crate::qdisc::fifo::test_json as fifo;
    pub use crate::qdisc::fq_codel::test_json as fq_codel;
    pub use crate::qdisc::pie::test_json as pie;
    pub use crate::qdisc::sfq::test_json as sfq;
    use serde_json::{json, Value};

    /// A link with this delay, rate and discipline; no jitter, no loss.
    pub fn link(delay_ms: u64, rate: Value, qdisc: Value) -> Value {
        json!({"delay_ms": delay_ms, "delay_schedule": [], "jitter_ms": 0, "loss_percent": 0, "rate": rate, "qdisc": qdisc})
    }

    /// A constant rate with a bucket of two full-size frames.
    pub fn kbit(kbit: u64) -> Value {
        json!({"kbit": kbit, "burst_bytes": 3028})
    }

    /// A prio of these bands (each given `rate_cap: null` unless it has one) and meters.
    pub fn prio(bands: Value, meters: Value) -> Value {
        let mut bands = bands;
        for b in bands.as_array_mut().unwrap() {
            if b.get("rate_cap").is_none() {
                b["rate_cap"] = Value::Null;
            }
        }
        json!({"kind": "prio", "bands": bands, "meters": meters})
    }

    /// `v` with one top-level field replaced.
    pub fn with(mut v: Value, key: &str, value: Value) -> Value {
        v[key] = value;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    fn no_trace(_: &str) -> Result<String, String> {
        Err("no files in this test".into())
    }

    fn trace_1_1_2_4(_: &str) -> Result<String, String> {
        Ok("1\n1\n2\n4\n".to_string())
    }

    /// One complete link of every rate form and discipline, in the normalised form.
    fn complete_links() -> Vec<Value> {
        vec![
            link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})),
            link(0, Value::Null, fifo(1000)),
            with(
                link(
                    10,
                    json!({"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 3.5, "kbit": 500}], "burst_bytes": 3028}),
                    codel(true),
                ),
                "jitter_ms",
                json!(5),
            ),
            with(
                link(10, json!({"trace": "/t/trace.txt", "burst_bytes": 3028}), pie(false)),
                "loss_percent",
                json!(1.5),
            ),
            link(25, kbit(2000), sfq(25)),
            link(25, kbit(2000), fq_codel(true)),
            link(
                25,
                kbit(18000),
                prio(
                    json!([{"dscp": [46], "qdisc": fifo(100), "rate_cap": {"kbit": 2000, "burst_bytes": 3028}}, {"qdisc": fq_codel(false)}]),
                    json!([
                {"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": {"kind": "ce_fraction", "gain": 0.5, "initial_fraction": 0}},
                {"dscp": [46, 34], "per": "class", "window_ms": 100, "limit_kbit": 2500.5, "action": {"kind": "demote", "to_band": 1, "hold_ms": 2000}},
                {"dscp": [34], "per": "flow", "window_ms": 100, "limit_kbit": 1000, "action": {"kind": "ce_all", "hold_ms": 1500}}]),
                ),
            ),
            link(
                25,
                kbit(2000),
                prio(
                    json!([{"dscp": [46, 34], "qdisc": fifo(100)}, {"dscp": [10], "qdisc": sfq(127)}, {"qdisc": fq_codel(false)}]),
                    json!([]),
                ),
            ),
        ]
    }

    /// Every leaf field of `v` (objects only; array items by index), as (path for the error, JSON pointer).
    fn fields(v: &Value, path: &str, pointer: &str, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let (p, q) =
                        (if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, format!("{pointer}/{k}"));
                    out.push((p.clone(), q.clone()));
                    fields(x, &p, &q, out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    fields(x, &format!("{path}[{i}]"), &format!("{pointer}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn remove(v: &Value, pointer: &str) -> Value {
        let mut v = v.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        v.pointer_mut(parent).unwrap().as_object_mut().unwrap().remove(key);
        v
    }

    #[test]
    fn parses_a_complete_fifo_link() {
        let c = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})), &no_trace).unwrap();
        assert_eq!(c.delay_ms, 25.0);
        assert_eq!(c.jitter_ms, 0.0);
        assert_eq!(c.loss_percent, 0.0);
        assert_eq!(
            c.rate,
            RateConfig::Schedule { steps: vec![RateStep { at_ns: 0, bits_per_s: 1_000_000 }], burst_bytes: 3028 }
        );
        assert_eq!(c.qdisc, QdiscConfig::Fifo(FifoConfig { limit_packets: None, limit_bytes: Some(37500) }));
    }

    #[test]
    fn every_missing_field_is_an_error_naming_it() {
        let mut checked = 0;
        for v in complete_links() {
            parse_link(&v, &trace_1_1_2_4).unwrap();
            let mut all = Vec::new();
            fields(&v, "", "", &mut all);
            for (path, pointer) in all {
                // These choose the form of their object, and a fifo's limit is one of two fields (both checked below).
                if ["rate.kbit", "rate.schedule", "rate.trace"].contains(&path.as_str())
                    || path.ends_with("].dscp")
                    || path.ends_with("limit_bytes")
                {
                    continue;
                }
                let e = parse_link(&remove(&v, &pointer), &trace_1_1_2_4).expect_err(&path);
                assert_eq!(e.field, path, "{e}");
                checked += 1;
            }
        }
        assert!(checked > 50, "{checked}");
        // The rate's form and a band's DSCP list.
        let e = parse_link(&link(0, json!({"burst_bytes": 3028}), fifo(10)), &no_trace).unwrap_err();
        assert_eq!(e.field, "rate");
        let prio = prio(json!([{"qdisc": fifo(10)}, {"qdisc": fifo(10)}]), json!([]));
        assert_eq!(parse_link(&link(0, kbit(1000), prio), &no_trace).unwrap_err().field, "qdisc.bands[0].dscp");
        // A fifo needs one of its two limits.
        let e = parse_link(&link(0, kbit(1000), json!({"kind": "fifo"})), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.limit_packets");
        assert!(e.to_string().contains("limit_bytes"), "{e}");
    }

    #[test]
    fn unknown_fields_are_refused_at_every_level() {
        let cases = [
            ("/", "extra"),
            ("/rate", "rate.extra"),
            ("/rate/schedule/1", "rate.schedule[1].extra"),
            ("/qdisc", "qdisc.extra"),
            ("/qdisc/bands/1", "qdisc.bands[1].extra"),
            ("/qdisc/bands/2/qdisc", "qdisc.bands[2].qdisc.extra"),
            ("/qdisc/bands/0/rate_cap", "qdisc.bands[0].rate_cap.extra"),
        ];
        let schedule = link(
            0,
            json!({"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 1, "kbit": 500}], "burst_bytes": 3028}),
            fifo(10),
        );
        let mut prio = complete_links().pop().unwrap();
        prio["qdisc"]["bands"][0]["rate_cap"] = json!({"kbit": 2000, "burst_bytes": 3028});
        for (pointer, field) in cases {
            let mut v = if pointer.starts_with("/qdisc") { prio.clone() } else { schedule.clone() };
            let target = if pointer == "/" { &mut v } else { v.pointer_mut(pointer).unwrap() };
            target.as_object_mut().unwrap().insert("extra".into(), json!(1));
            assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, field);
        }
        let metered = &complete_links()[complete_links().len() - 2];
        for (pointer, field) in
            [("/qdisc/meters/0", "qdisc.meters[0].extra"), ("/qdisc/meters/1/action", "qdisc.meters[1].action.extra")]
        {
            let mut v = metered.clone();
            v.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert("extra".into(), json!(1));
            assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, field);
        }
        // limit_ms is netem's to convert: the bottleneck only takes packets or bytes.
        let e = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_ms": 300})), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.limit_ms");
        let e = parse_link(&link(25, kbit(1000), json!({"kind": "sfq", "limit_ms": 300, "limit_packets": 25, "quantum_bytes": 1514, "perturb_s": 0, "divisor": 1024})), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.limit_ms");
    }

    #[test]
    fn names_the_field_out_of_range() {
        let bad = |v: Value| parse_link(&v, &no_trace).unwrap_err().field;
        assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_ms", json!(-1))), "delay_ms");
        let back = json!([{"at_s": 2, "delay_ms": 50}, {"at_s": 1, "delay_ms": 25}]);
        assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_schedule", back)), "delay_schedule[1].at_s");
        let at0 = json!([{"at_s": 0, "delay_ms": 50}]);
        assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "delay_schedule", at0)), "delay_schedule[0].at_s");
        assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "loss_percent", json!(150))), "loss_percent");
        assert_eq!(bad(with(link(0, Value::Null, fifo(10)), "jitter_ms", json!("5"))), "jitter_ms");
        assert_eq!(bad(link(0, json!({"kbit": 0, "burst_bytes": 3028}), fifo(10))), "rate.kbit");
        assert_eq!(bad(link(0, json!({"kbit": 0.0001, "burst_bytes": 3028}), fifo(10))), "rate.kbit");
        assert_eq!(bad(link(0, json!({"kbit": 1000, "burst_bytes": 1000}), fifo(10))), "rate.burst_bytes");
        assert_eq!(bad(link(0, json!({"kbit": 1000, "trace": "/x", "burst_bytes": 3028}), fifo(10))), "rate");
        assert_eq!(
            bad(link(0, json!({"schedule": [{"at_s": 1, "kbit": 500}], "burst_bytes": 3028}), fifo(10))),
            "rate.schedule[0].at_s"
        );
        assert_eq!(
            bad(link(
                0,
                json!({"schedule": [{"at_s": 0, "kbit": 500}, {"at_s": 5, "kbit": 1}, {"at_s": 2, "kbit": 1}], "burst_bytes": 3028}),
                fifo(10)
            )),
            "rate.schedule[2].at_s"
        );
        assert_eq!(bad(link(0, json!({"schedule": [], "burst_bytes": 3028}), fifo(10))), "rate.schedule");
        assert_eq!(bad(link(0, json!({"trace": "relative.txt", "burst_bytes": 3028}), fifo(10))), "rate.trace");
        assert_eq!(bad(link(0, kbit(1000), json!({"kind": "fifo", "limit_packets": 0}))), "qdisc.limit_packets");
        assert_eq!(bad(link(0, kbit(1000), json!({"kind": "fifo", "limit_packets": 10, "limit_bytes": 10}))), "qdisc");
        assert_eq!(bad(link(0, kbit(1000), with(codel(false), "target_ms", json!(-1)))), "qdisc.target_ms");
        assert_eq!(bad(link(0, kbit(1000), with(pie(false), "alpha", json!(33)))), "qdisc.alpha");
        assert_eq!(bad(link(0, kbit(1000), with(pie(false), "timer_hz", json!(200)))), "qdisc.timer_hz");
        assert_eq!(bad(link(0, kbit(1000), with(sfq(127), "limit_packets", json!(1)))), "qdisc.limit_packets");
        assert_eq!(bad(link(0, kbit(1000), with(fq_codel(true), "ecn", json!(1)))), "qdisc.ecn");
        let e = parse_link(&link(0, kbit(1000), json!({"kind": "red"})), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.kind");
        assert!(e.to_string().contains("fq_codel"), "{e}");
        let band = |dscp: Value| {
            prio(
                json!([{"dscp": dscp, "qdisc": fifo(10)}, {"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]),
                json!([]),
            )
        };
        assert_eq!(bad(link(0, kbit(1000), band(json!([64])))), "qdisc.bands[0].dscp");
        assert_eq!(bad(link(0, kbit(1000), band(json!([46])))), "qdisc.bands[1].dscp");
        let last_with_dscp =
            prio(json!([{"dscp": [46], "qdisc": fifo(10)}, {"dscp": [0], "qdisc": fifo(10)}]), json!([]));
        assert_eq!(bad(link(0, kbit(1000), last_with_dscp)), "qdisc.bands[1].dscp");
        let nested =
            prio(json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": {"kind": "prio", "bands": []}}]), json!([]));
        assert_eq!(bad(link(0, kbit(1000), nested)), "qdisc.bands[1].qdisc.kind");
        // Rate caps and meters.
        let two = json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]);
        let meter = |action: Value| json!([{"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": action}]);
        let capped = prio(
            json!([{"dscp": [46], "qdisc": fifo(10), "rate_cap": {"kbit": 0, "burst_bytes": 3028}}, {"qdisc": fifo(10)}]),
            json!([]),
        );
        assert_eq!(bad(link(0, kbit(1000), capped)), "qdisc.bands[0].rate_cap.kbit");
        assert_eq!(
            bad(link(
                0,
                kbit(1000),
                prio(two.clone(), meter(json!({"kind": "demote", "to_band": 2, "hold_ms": 1000})))
            )),
            "qdisc.meters[0].action.to_band"
        );
        assert_eq!(
            bad(link(
                0,
                kbit(1000),
                prio(two.clone(), meter(json!({"kind": "ce_fraction", "gain": 1, "initial_fraction": 1.5})))
            )),
            "qdisc.meters[0].action.initial_fraction"
        );
        assert_eq!(
            bad(link(0, kbit(1000), prio(two.clone(), meter(json!({"kind": "police"}))))),
            "qdisc.meters[0].action.kind"
        );
        assert_eq!(
            bad(link(0, kbit(1000), prio(two.clone(), meter(json!({"kind": "ce_all", "hold_ms": 0}))))),
            "qdisc.meters[0].action.hold_ms"
        );
        let mut per = prio(two, meter(json!({"kind": "ce_all", "hold_ms": 10})));
        per["meters"][0]["per"] = json!("host");
        assert_eq!(bad(link(0, kbit(1000), per)), "qdisc.meters[0].per");
    }

    #[test]
    fn reads_a_trace_and_its_average_rate() {
        let c = parse_link(&link(0, json!({"trace": "/t", "burst_bytes": 3028}), fifo(10)), &trace_1_1_2_4).unwrap();
        match &c.rate {
            RateConfig::Trace { opportunities_ms, period_ms, .. } => {
                assert_eq!(opportunities_ms, &vec![1, 1, 2, 4]);
                assert_eq!(*period_ms, 4);
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(c.rate.first_bits_per_s(), Some(4 * 1514 * 8 * 1000 / 4));
        let unreadable =
            parse_link(&link(0, json!({"trace": "/t", "burst_bytes": 3028}), fifo(10)), &no_trace).unwrap_err();
        assert_eq!(unreadable.field, "rate.trace");
    }

    #[test]
    fn writes_back_exactly_the_normalised_link_it_read() {
        for v in complete_links() {
            let c = parse_link(&v, &trace_1_1_2_4).unwrap();
            assert_eq!(c.to_json(), v);
        }
        // A schedule of a single step at 0 is a constant rate; kbit is bits/s / 1000.
        let one_step = link(0, json!({"schedule": [{"at_s": 0, "kbit": 1500.5}], "burst_bytes": 4000}), fifo(10));
        assert_eq!(
            parse_link(&one_step, &no_trace).unwrap().to_json()["rate"],
            json!({"kbit": 1500.5, "burst_bytes": 4000})
        );
        // The exact text of the default forward link (1 Mbit/s, DropTail 300 ms = 37500 bytes).
        let text = parse_link(&link(25, kbit(1000), json!({"kind": "fifo", "limit_bytes": 37500})), &no_trace)
            .unwrap()
            .to_json()
            .to_string();
        assert_eq!(
            text,
            r#"{"delay_ms":25,"delay_schedule":[],"jitter_ms":0,"loss_percent":0,"qdisc":{"kind":"fifo","limit_bytes":37500},"rate":{"burst_bytes":3028,"kbit":1000}}"#
        );
    }

    #[test]
    fn an_array_in_place_of_an_object_is_refused() {
        // serde derive would read these as the objects' fields in order.
        let capped =
            prio(json!([{"dscp": [46], "qdisc": fifo(10), "rate_cap": [2000, 3028]}, {"qdisc": fifo(10)}]), json!([]));
        let e = parse_link(&link(0, kbit(1000), capped), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.bands[0].rate_cap", "{e}");
        let e = parse_link(&link(0, json!([1000, [], "/t", 3028]), fifo(10)), &no_trace).unwrap_err();
        assert_eq!(e.field, "rate", "{e}");
        let e = parse_link(&json!([0, [], 0, 0, null, fifo(10)]), &no_trace).unwrap_err();
        assert_eq!(e.field, "(link)", "{e}");
    }

    /// One link of each leaf discipline at the top, and a prio with each of them in a band.
    fn every_discipline() -> Vec<Value> {
        let leaves =
            [fifo(10), json!({"kind": "fifo", "limit_bytes": 3000}), codel(false), pie(true), sfq(127), fq_codel(true)];
        let mut links: Vec<Value> = leaves.iter().map(|q| link(0, kbit(1000), q.clone())).collect();
        let mut bands: Vec<Value> =
            leaves.iter().enumerate().map(|(i, q)| json!({"dscp": [i + 10], "qdisc": q.clone()})).collect();
        bands.push(json!({"qdisc": fifo(10), "rate_cap": {"kbit": 500.5, "burst_bytes": 3028}}));
        links.push(link(0, kbit(1000), prio(Value::Array(bands), json!([]))));
        links
    }

    #[test]
    fn an_unknown_field_in_a_discipline_is_refused_naming_its_path() {
        for v in every_discipline() {
            let q = &v["qdisc"];
            if q["kind"] == "prio" {
                for (i, band) in q["bands"].as_array().unwrap().iter().enumerate() {
                    let mut bad = v.clone();
                    bad["qdisc"]["bands"][i]["qdisc"]["extra"] = json!(1);
                    let e = parse_link(&bad, &no_trace).unwrap_err();
                    assert_eq!(e.field, format!("qdisc.bands[{i}].qdisc.extra"), "{} {e}", band["qdisc"]["kind"]);
                }
            }
            let mut bad = v.clone();
            bad["qdisc"]["extra"] = json!(1);
            let e = parse_link(&bad, &no_trace).unwrap_err();
            assert_eq!(e.field, "qdisc.extra", "{} {e}", q["kind"]);
            assert!(e.to_string().contains("is not a known field"), "{e}");
        }
        // A value of the wrong type inside a band, or inside a meter's action, is named the same way.
        let mut v = every_discipline().pop().unwrap();
        v["qdisc"]["bands"][3]["qdisc"]["alpha"] = json!(1.5);
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "qdisc.bands[3].qdisc.alpha");
        let two = json!([{"dscp": [46], "qdisc": fifo(10)}, {"qdisc": fifo(10)}]);
        let meter = json!([{"dscp": [46], "per": "flow", "window_ms": 150, "limit_kbit": 2000, "action": {"kind": "ce_all", "hold_ms": "long"}}]);
        let e = parse_link(&link(0, kbit(1000), prio(two, meter)), &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.meters[0].action.hold_ms", "{e}");
    }

    #[test]
    fn a_missing_discipline_field_is_refused_naming_it() {
        for q in [codel(true), pie(false), sfq(127), fq_codel(true)] {
            for key in q.as_object().unwrap().keys().filter(|k| *k != "kind") {
                let mut without = q.clone();
                without.as_object_mut().unwrap().remove(key);
                let e = parse_link(&link(0, kbit(1000), without.clone()), &no_trace).unwrap_err();
                assert_eq!(e.field, format!("qdisc.{key}"), "{e}");
                assert!(e.to_string().contains("is required"), "{e}");
                let in_band = prio(json!([{"dscp": [46], "qdisc": without}, {"qdisc": fifo(10)}]), json!([]));
                let e = parse_link(&link(0, kbit(1000), in_band), &no_trace).unwrap_err();
                assert_eq!(e.field, format!("qdisc.bands[0].qdisc.{key}"), "{e}");
            }
        }
    }

    #[test]
    fn every_discipline_reads_back_what_it_writes() {
        let mut kinds = Vec::new();
        for v in every_discipline().into_iter().chain(complete_links()) {
            let c = parse_link(&v, &trace_1_1_2_4).unwrap();
            let again = parse_link(&c.to_json(), &trace_1_1_2_4).unwrap();
            assert_eq!(again, c, "{v}");
            assert_eq!(again.to_json(), v);
            kinds.push(v["qdisc"]["kind"].as_str().unwrap().to_string());
        }
        for kind in KINDS.split(", ") {
            assert!(kinds.iter().any(|k| k == kind), "{kind}");
        }
    }
}
