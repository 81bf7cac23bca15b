//! The link the bottleneck runs: exactly the normalised link that netem writes (`bottleneck-<direction>.json`,
//! docs/netem.md). netem fills every default from scenarios/schema.json and converts `limit_ms`; this file only
//! reads what it is given. Every field is required and unknown fields are refused, each error naming the field, so a
//! link that netem and the bottleneck would read differently fails instead of running on a default of its own.
//! The range checks are the schema's. `LinkConfig::to_json` writes the same form back (`--print-config`), which the
//! cross-language conformance test compares with netem's normaliser.

use serde_json::{json, Map, Value};

/// A trace's delivery opportunity: one 1500-byte IP packet, i.e. 1514 link-layer bytes (Mahimahi's format).
pub const TRACE_OPPORTUNITY_BYTES: u64 = 1514;

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub problem: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid link config: field `{}` {}", self.field, self.problem)
    }
}

fn err(field: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError { field: field.to_string(), problem: problem.into() }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    pub delay_ms: f64,
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

#[derive(Debug, Clone, PartialEq)]
pub enum FifoLimit {
    Packets(u64),
    Bytes(u64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum QdiscConfig {
    Fifo { limit: FifoLimit },
    Codel { target_ms: f64, interval_ms: f64, limit_packets: u64, ecn: bool },
    Pie { target_ms: f64, tupdate_ms: f64, alpha: u32, beta: u32, limit_packets: u64, ecn: bool },
    Sfq { limit_packets: u64, quantum_bytes: u64, perturb_s: f64, divisor: u32 },
    FqCodel { target_ms: f64, interval_ms: f64, limit_packets: u64, quantum_bytes: u64, flows: u32, ecn: bool },
    Prio { bands: Vec<PrioBand>, meters: Vec<MeterConfig> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PrioBand {
    /// Empty for the last band, which takes every DSCP the others do not list.
    pub dscp: Vec<u8>,
    pub qdisc: QdiscConfig,
    /// A token bucket on the band (the thesis' HTB baseline): None for no cap.
    pub rate_cap: Option<RateCapConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateCapConfig {
    pub bits_per_s: u64,
    pub burst_bytes: u64,
}

/// A rate meter on a prio discipline and its action (meter.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct MeterConfig {
    pub dscp: Vec<u8>,
    /// One meter per 5-tuple flow (true) or one for all packets of these DSCPs.
    pub per_flow: bool,
    pub window_ms: f64,
    pub limit_kbit: f64,
    pub action: MeterActionConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MeterActionConfig {
    Demote { to_band: usize, hold_ms: f64 },
    CeAll { hold_ms: f64 },
    CeFraction { gain: f64, initial_fraction: f64 },
}

impl MeterConfig {
    fn to_json(&self) -> Value {
        let action = match &self.action {
            MeterActionConfig::Demote { to_band, hold_ms } => {
                json!({"kind": "demote", "to_band": to_band, "hold_ms": num(*hold_ms)})
            }
            MeterActionConfig::CeAll { hold_ms } => json!({"kind": "ce_all", "hold_ms": num(*hold_ms)}),
            MeterActionConfig::CeFraction { gain, initial_fraction } => {
                json!({"kind": "ce_fraction", "gain": num(*gain), "initial_fraction": num(*initial_fraction)})
            }
        };
        json!({"dscp": self.dscp, "per": if self.per_flow { "flow" } else { "class" }, "window_ms": num(self.window_ms),
               "limit_kbit": num(self.limit_kbit), "action": action})
    }
}

impl QdiscConfig {
    /// Packets the discipline can hold at most (for the NFQUEUE queue length); byte limits count 64-byte packets.
    pub fn max_packets(&self) -> u64 {
        match self {
            QdiscConfig::Fifo { limit: FifoLimit::Packets(n) } => *n,
            QdiscConfig::Fifo { limit: FifoLimit::Bytes(b) } => b / 64 + 1,
            QdiscConfig::Codel { limit_packets, .. }
            | QdiscConfig::Pie { limit_packets, .. }
            | QdiscConfig::Sfq { limit_packets, .. }
            | QdiscConfig::FqCodel { limit_packets, .. } => *limit_packets,
            QdiscConfig::Prio { bands, .. } => bands.iter().map(|b| b.qdisc.max_packets()).sum(),
        }
    }

    /// The normalised form of the discipline (the inverse of `parse_qdisc`).
    pub fn to_json(&self) -> Value {
        match self {
            QdiscConfig::Fifo { limit: FifoLimit::Packets(n) } => json!({"kind": "fifo", "limit_packets": n}),
            QdiscConfig::Fifo { limit: FifoLimit::Bytes(n) } => json!({"kind": "fifo", "limit_bytes": n}),
            QdiscConfig::Codel { target_ms, interval_ms, limit_packets, ecn } => json!({"kind": "codel",
                "target_ms": num(*target_ms), "interval_ms": num(*interval_ms), "limit_packets": limit_packets, "ecn": ecn}),
            QdiscConfig::Pie { target_ms, tupdate_ms, alpha, beta, limit_packets, ecn } => json!({"kind": "pie",
                "target_ms": num(*target_ms), "tupdate_ms": num(*tupdate_ms), "alpha": alpha, "beta": beta,
                "limit_packets": limit_packets, "ecn": ecn}),
            QdiscConfig::Sfq { limit_packets, quantum_bytes, perturb_s, divisor } => json!({"kind": "sfq",
                "limit_packets": limit_packets, "quantum_bytes": quantum_bytes, "perturb_s": num(*perturb_s), "divisor": divisor}),
            QdiscConfig::FqCodel { target_ms, interval_ms, limit_packets, quantum_bytes, flows, ecn } => {
                json!({"kind": "fq_codel",
                "target_ms": num(*target_ms), "interval_ms": num(*interval_ms), "limit_packets": limit_packets,
                "quantum_bytes": quantum_bytes, "flows": flows, "ecn": ecn})
            }
            QdiscConfig::Prio { bands, meters } => {
                let bands: Vec<Value> = bands
                    .iter()
                    .map(|b| {
                        let cap = b.rate_cap.map_or(
                            Value::Null,
                            |c| json!({"kbit": kbit_value(c.bits_per_s), "burst_bytes": c.burst_bytes}),
                        );
                        if b.dscp.is_empty() {
                            json!({"qdisc": b.qdisc.to_json(), "rate_cap": cap})
                        } else {
                            json!({"dscp": b.dscp, "qdisc": b.qdisc.to_json(), "rate_cap": cap})
                        }
                    })
                    .collect();
                let meters: Vec<Value> = meters.iter().map(|m| m.to_json()).collect();
                json!({"kind": "prio", "bands": bands, "meters": meters})
            }
        }
    }
}

impl LinkConfig {
    /// Whether the discipline carries rate meters (they need an action log).
    pub fn has_meters(&self) -> bool {
        matches!(&self.qdisc, QdiscConfig::Prio { meters, .. } if !meters.is_empty())
    }

    /// The link in the normalised form it was read from: what `--print-config` prints.
    pub fn to_json(&self) -> Value {
        let rate = match &self.rate {
            RateConfig::Unlimited => Value::Null,
            RateConfig::Schedule { steps, burst_bytes } if steps.len() == 1 && steps[0].at_ns == 0 => {
                json!({"kbit": kbit_value(steps[0].bits_per_s), "burst_bytes": burst_bytes})
            }
            RateConfig::Schedule { steps, burst_bytes } => {
                let steps: Vec<Value> = steps
                    .iter()
                    .map(|s| json!({"at_s": num(s.at_ns as f64 / 1e9), "kbit": kbit_value(s.bits_per_s)}))
                    .collect();
                json!({"schedule": steps, "burst_bytes": burst_bytes})
            }
            RateConfig::Trace { path, burst_bytes, .. } => json!({"trace": path, "burst_bytes": burst_bytes}),
        };
        json!({"delay_ms": num(self.delay_ms), "jitter_ms": num(self.jitter_ms), "loss_percent": num(self.loss_percent),
               "rate": rate, "qdisc": self.qdisc.to_json()})
    }
}

/// A number as JSON, written as an integer when it is one (25 rather than 25.0: the form netem writes).
fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn kbit_value(bits_per_s: u64) -> Value {
    num(bits_per_s as f64 / 1000.0)
}

/// Reads a normalised link object; `read_trace` loads a trace file (a parameter so tests need no files).
pub fn parse_link(v: &Value, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<LinkConfig, ConfigError> {
    let obj = v.as_object().ok_or_else(|| err("(link)", "must be a JSON object"))?;
    check_keys(obj, "", &["delay_ms", "jitter_ms", "loss_percent", "rate", "qdisc"])?;
    let delay_ms = number(obj, "delay_ms", "delay_ms", 0.0, 10000.0, false)?;
    let jitter_ms = number(obj, "jitter_ms", "jitter_ms", 0.0, 10000.0, false)?;
    let loss_percent = number(obj, "loss_percent", "loss_percent", 0.0, 100.0, false)?;
    let rate = parse_rate(required(obj, "rate", "rate")?, read_trace)?;
    let qdisc = parse_qdisc(required(obj, "qdisc", "qdisc")?, "qdisc", true)?;
    Ok(LinkConfig { delay_ms, jitter_ms, loss_percent, rate, qdisc })
}

fn check_keys(obj: &Map<String, Value>, prefix: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(err(
                &format!("{prefix}{k}"),
                format!("is not a known field (allowed: {})", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

/// A field that must be present (netem writes every field of the normalised link).
fn required<'a>(obj: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a Value, ConfigError> {
    obj.get(key)
        .ok_or_else(|| err(field, "is required (the bottleneck takes the normalised link: netem fills every default)"))
}

fn number(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
    min: f64,
    max: f64,
    exclusive_min: bool,
) -> Result<f64, ConfigError> {
    let x = required(obj, key, field)?.as_f64().ok_or_else(|| err(field, "must be a number"))?;
    let low_ok = if exclusive_min { x > min } else { x >= min };
    if !low_ok || x > max || !x.is_finite() {
        let op = if exclusive_min { ">" } else { ">=" };
        return Err(err(field, format!("must be {op} {min} and <= {max} (got {x})")));
    }
    Ok(x)
}

fn integer(obj: &Map<String, Value>, key: &str, field: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
    let x = required(obj, key, field)?.as_u64().ok_or_else(|| err(field, "must be a non-negative integer"))?;
    if x < min || x > max {
        return Err(err(field, format!("must be an integer in [{min}, {max}] (got {x})")));
    }
    Ok(x)
}

fn boolean(obj: &Map<String, Value>, key: &str, field: &str) -> Result<bool, ConfigError> {
    required(obj, key, field)?.as_bool().ok_or_else(|| err(field, "must be true or false"))
}

/// kbit (1 kbit = 1000 bit) as whole bits per second, the unit of the token bucket's exact arithmetic.
fn bits_per_s(obj: &Map<String, Value>, field: &str) -> Result<u64, ConfigError> {
    let kbit = number(obj, "kbit", field, 0.0, 10_000_000.0, true)?;
    let bps = (kbit * 1000.0).round() as u64;
    if bps == 0 {
        return Err(err(field, format!("must be at least 0.001 (1 bit/s; got {kbit})")));
    }
    Ok(bps)
}

fn parse_rate(v: &Value, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<RateConfig, ConfigError> {
    if v.is_null() {
        return Ok(RateConfig::Unlimited);
    }
    let obj = v.as_object().ok_or_else(|| err("rate", "must be null or an object with kbit, schedule or trace"))?;
    check_keys(obj, "rate.", &["kbit", "schedule", "trace", "burst_bytes"])?;
    let given: Vec<&str> = ["kbit", "schedule", "trace"].into_iter().filter(|k| obj.contains_key(*k)).collect();
    if given.len() != 1 {
        return Err(err(
            "rate",
            format!(
                "must have exactly one of kbit, schedule, trace (got: {})",
                if given.is_empty() { "none".into() } else { given.join(", ") }
            ),
        ));
    }
    let burst_bytes = integer(obj, "burst_bytes", "rate.burst_bytes", 1514, u32::MAX as u64)?;
    if obj.contains_key("kbit") {
        let step = RateStep { at_ns: 0, bits_per_s: bits_per_s(obj, "rate.kbit")? };
        return Ok(RateConfig::Schedule { steps: vec![step], burst_bytes });
    }
    if let Some(s) = obj.get("schedule") {
        let arr = s.as_array().ok_or_else(|| err("rate.schedule", "must be an array of {at_s, kbit}"))?;
        let mut steps: Vec<RateStep> = Vec::new();
        for (i, item) in arr.iter().enumerate() {
            let field = format!("rate.schedule[{i}]");
            let o = item.as_object().ok_or_else(|| err(&field, "must be an object {at_s, kbit}"))?;
            check_keys(o, &format!("{field}."), &["at_s", "kbit"])?;
            let at_s = number(o, "at_s", &format!("{field}.at_s"), 0.0, 1e9, false)?;
            let step =
                RateStep { at_ns: (at_s * 1e9).round() as u64, bits_per_s: bits_per_s(o, &format!("{field}.kbit"))? };
            if steps.last().is_some_and(|last| step.at_ns < last.at_ns) {
                return Err(err(
                    &format!("{field}.at_s"),
                    "must not be earlier than the step before (the normalised schedule is sorted)",
                ));
            }
            steps.push(step);
        }
        match steps.first() {
            None => return Err(err("rate.schedule", "must have at least one step")),
            Some(first) if first.at_ns != 0 => {
                return Err(err("rate.schedule[0].at_s", "must be 0 (the rate before any other step)"))
            }
            Some(_) => {}
        }
        return Ok(RateConfig::Schedule { steps, burst_bytes });
    }
    let path =
        obj["trace"].as_str().filter(|p| !p.is_empty()).ok_or_else(|| err("rate.trace", "must be a file path"))?;
    // netem resolves a trace against the scenario's directory; a relative path here would silently depend on the
    // bottleneck's working directory instead.
    if !path.starts_with('/') {
        return Err(err("rate.trace", format!("must be an absolute path (got {path:?})")));
    }
    let text = read_trace(path).map_err(|e| err("rate.trace", format!("cannot be read ({path}: {e})")))?;
    let mut opportunities_ms = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line.parse().map_err(|_| {
            err("rate.trace", format!("line {} of {path} is not an integer ms timestamp: {line:?}", n + 1))
        })?;
        if let Some(&last) = opportunities_ms.last() {
            if ms < last {
                return Err(err(
                    "rate.trace",
                    format!("line {} of {path} goes back in time ({ms} after {last})", n + 1),
                ));
            }
        }
        opportunities_ms.push(ms);
    }
    let period_ms =
        *opportunities_ms.last().ok_or_else(|| err("rate.trace", format!("{path} holds no delivery opportunities")))?;
    if period_ms == 0 {
        return Err(err("rate.trace", format!("{path} must end at a timestamp > 0 ms (it is the trace's period)")));
    }
    Ok(RateConfig::Trace { path: path.to_string(), opportunities_ms, period_ms, burst_bytes })
}

const KINDS: &str = "fifo, codel, pie, sfq, fq_codel, prio";

fn parse_qdisc(v: &Value, field: &str, prio_allowed: bool) -> Result<QdiscConfig, ConfigError> {
    let obj = v.as_object().ok_or_else(|| err(field, "must be an object with a kind"))?;
    let kind = obj
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| err(&format!("{field}.kind"), format!("is required, one of: {KINDS}")))?;
    let f = |k: &str| format!("{field}.{k}");
    let p = format!("{field}.");
    match kind {
        "fifo" => {
            // limit_ms is netem's to convert (bytes at the first rate); the bottleneck gets packets or bytes.
            check_keys(obj, &p, &["kind", "limit_packets", "limit_bytes"])?;
            let limit = match (obj.contains_key("limit_packets"), obj.contains_key("limit_bytes")) {
                (true, false) => {
                    FifoLimit::Packets(integer(obj, "limit_packets", &f("limit_packets"), 1, u32::MAX as u64)?)
                }
                (false, true) => FifoLimit::Bytes(integer(obj, "limit_bytes", &f("limit_bytes"), 1, u32::MAX as u64)?),
                (true, true) => {
                    return Err(err(field, "fifo takes exactly one of limit_packets, limit_bytes (got both)"))
                }
                (false, false) => {
                    return Err(err(
                        &f("limit_packets"),
                        "is required (fifo takes exactly one of limit_packets, limit_bytes)",
                    ))
                }
            };
            Ok(QdiscConfig::Fifo { limit })
        }
        "codel" => {
            check_keys(obj, &p, &["kind", "target_ms", "interval_ms", "limit_packets", "ecn"])?;
            Ok(QdiscConfig::Codel {
                target_ms: number(obj, "target_ms", &f("target_ms"), 0.0, 1e6, true)?,
                interval_ms: number(obj, "interval_ms", &f("interval_ms"), 0.0, 1e6, true)?,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 1, u32::MAX as u64)?,
                ecn: boolean(obj, "ecn", &f("ecn"))?,
            })
        }
        "pie" => {
            check_keys(obj, &p, &["kind", "target_ms", "tupdate_ms", "alpha", "beta", "limit_packets", "ecn"])?;
            Ok(QdiscConfig::Pie {
                target_ms: number(obj, "target_ms", &f("target_ms"), 0.0, 1e6, true)?,
                tupdate_ms: number(obj, "tupdate_ms", &f("tupdate_ms"), 0.0, 1e6, true)?,
                alpha: integer(obj, "alpha", &f("alpha"), 0, 32)? as u32,
                beta: integer(obj, "beta", &f("beta"), 0, 32)? as u32,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 1, u32::MAX as u64)?,
                ecn: boolean(obj, "ecn", &f("ecn"))?,
            })
        }
        "sfq" => {
            check_keys(obj, &p, &["kind", "limit_packets", "quantum_bytes", "perturb_s", "divisor"])?;
            Ok(QdiscConfig::Sfq {
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 2, u32::MAX as u64)?,
                quantum_bytes: integer(obj, "quantum_bytes", &f("quantum_bytes"), 64, u32::MAX as u64)?,
                perturb_s: number(obj, "perturb_s", &f("perturb_s"), 0.0, 1e6, false)?,
                divisor: integer(obj, "divisor", &f("divisor"), 1, 65536)? as u32,
            })
        }
        "fq_codel" => {
            check_keys(
                obj,
                &p,
                &["kind", "target_ms", "interval_ms", "limit_packets", "quantum_bytes", "flows", "ecn"],
            )?;
            Ok(QdiscConfig::FqCodel {
                target_ms: number(obj, "target_ms", &f("target_ms"), 0.0, 1e6, true)?,
                interval_ms: number(obj, "interval_ms", &f("interval_ms"), 0.0, 1e6, true)?,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 1, u32::MAX as u64)?,
                quantum_bytes: integer(obj, "quantum_bytes", &f("quantum_bytes"), 64, u32::MAX as u64)?,
                flows: integer(obj, "flows", &f("flows"), 1, 65536)? as u32,
                ecn: boolean(obj, "ecn", &f("ecn"))?,
            })
        }
        "prio" if prio_allowed => {
            check_keys(obj, &p, &["kind", "bands", "meters"])?;
            let arr = required(obj, "bands", &f("bands"))?
                .as_array()
                .ok_or_else(|| err(&f("bands"), "must be an array of {dscp, qdisc}"))?;
            if arr.len() < 2 || arr.len() > 16 {
                return Err(err(&f("bands"), format!("must have 2 to 16 bands (got {})", arr.len())));
            }
            let mut bands: Vec<PrioBand> = Vec::new();
            for (i, b) in arr.iter().enumerate() {
                let bf = format!("{field}.bands[{i}]");
                let bo = b.as_object().ok_or_else(|| err(&bf, "must be an object {dscp, qdisc}"))?;
                check_keys(bo, &format!("{bf}."), &["dscp", "qdisc", "rate_cap"])?;
                let last = i + 1 == arr.len();
                let dscp = match bo.get("dscp") {
                    None if last => Vec::new(),
                    None => return Err(err(&format!("{bf}.dscp"), "is required on every band but the last")),
                    Some(_) if last => {
                        return Err(err(
                            &format!("{bf}.dscp"),
                            "must be absent on the last band (it takes every other DSCP)",
                        ))
                    }
                    Some(d) => {
                        let list = d
                            .as_array()
                            .filter(|l| !l.is_empty())
                            .ok_or_else(|| err(&format!("{bf}.dscp"), "must be a non-empty array of integers 0-63"))?;
                        let mut out = Vec::new();
                        for x in list {
                            match x.as_u64() {
                                Some(n) if n <= 63 => out.push(n as u8),
                                _ => return Err(err(&format!("{bf}.dscp"), format!("holds {x}, not an integer 0-63"))),
                            }
                        }
                        out
                    }
                };
                // A DSCP in two bands would only ever reach the first: netem refuses it, so must we.
                if let Some(d) = dscp.iter().find(|d| bands.iter().any(|b| b.dscp.contains(d))) {
                    return Err(err(&format!("{bf}.dscp"), format!("holds {d}, which an earlier band already lists")));
                }
                let q = required(bo, "qdisc", &format!("{bf}.qdisc"))?;
                let qdisc = parse_qdisc(q, &format!("{bf}.qdisc"), false)?;
                let rate_cap =
                    parse_rate_cap(required(bo, "rate_cap", &format!("{bf}.rate_cap"))?, &format!("{bf}.rate_cap"))?;
                bands.push(PrioBand { dscp, qdisc, rate_cap });
            }
            let marr = required(obj, "meters", &f("meters"))?
                .as_array()
                .ok_or_else(|| err(&f("meters"), "must be an array of meters"))?;
            if marr.len() > 255 {
                return Err(err(&f("meters"), format!("must have at most 255 meters (got {})", marr.len())));
            }
            let meters = marr
                .iter()
                .enumerate()
                .map(|(i, m)| parse_meter(m, &format!("{field}.meters[{i}]"), bands.len()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(QdiscConfig::Prio { bands, meters })
        }
        "prio" => Err(err(&f("kind"), "cannot be prio inside a prio band (allowed: fifo, codel, pie, sfq, fq_codel)")),
        other => Err(err(&f("kind"), format!("is {other:?}, allowed: {KINDS}"))),
    }
}

fn dscp_list(v: &Value, field: &str) -> Result<Vec<u8>, ConfigError> {
    let list = v
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| err(field, "must be a non-empty array of integers 0-63"))?;
    list.iter()
        .map(|x| match x.as_u64() {
            Some(n) if n <= 63 => Ok(n as u8),
            _ => Err(err(field, format!("holds {x}, not an integer 0-63"))),
        })
        .collect()
}

fn parse_rate_cap(v: &Value, field: &str) -> Result<Option<RateCapConfig>, ConfigError> {
    if v.is_null() {
        return Ok(None);
    }
    let obj = v.as_object().ok_or_else(|| err(field, "must be null or an object {kbit, burst_bytes}"))?;
    check_keys(obj, &format!("{field}."), &["kbit", "burst_bytes"])?;
    let bits_per_s = bits_per_s(obj, &format!("{field}.kbit"))?;
    let burst_bytes = integer(obj, "burst_bytes", &format!("{field}.burst_bytes"), 1514, u32::MAX as u64)?;
    Ok(Some(RateCapConfig { bits_per_s, burst_bytes }))
}

fn parse_meter(v: &Value, field: &str, n_bands: usize) -> Result<MeterConfig, ConfigError> {
    let obj =
        v.as_object().ok_or_else(|| err(field, "must be an object {dscp, per, window_ms, limit_kbit, action}"))?;
    check_keys(obj, &format!("{field}."), &["dscp", "per", "window_ms", "limit_kbit", "action"])?;
    let f = |k: &str| format!("{field}.{k}");
    let dscp = dscp_list(required(obj, "dscp", &f("dscp"))?, &f("dscp"))?;
    let per_flow = match required(obj, "per", &f("per"))?.as_str() {
        Some("flow") => true,
        Some("class") => false,
        _ => return Err(err(&f("per"), "must be \"flow\" or \"class\"")),
    };
    let window_ms = number(obj, "window_ms", &f("window_ms"), 0.0, 1e6, true)?;
    let limit_kbit = number(obj, "limit_kbit", &f("limit_kbit"), 0.0, 10_000_000.0, true)?;
    let a = required(obj, "action", &f("action"))?
        .as_object()
        .ok_or_else(|| err(&f("action"), "must be an object with a kind"))?;
    let af = |k: &str| format!("{field}.action.{k}");
    let ap = format!("{field}.action.");
    let action = match a.get("kind").and_then(|k| k.as_str()) {
        Some("demote") => {
            check_keys(a, &ap, &["kind", "to_band", "hold_ms"])?;
            let to_band = integer(a, "to_band", &af("to_band"), 0, 15)? as usize;
            if to_band >= n_bands {
                return Err(err(&af("to_band"), format!("is {to_band}, but the prio has bands 0 to {}", n_bands - 1)));
            }
            MeterActionConfig::Demote { to_band, hold_ms: number(a, "hold_ms", &af("hold_ms"), 0.0, 1e7, true)? }
        }
        Some("ce_all") => {
            check_keys(a, &ap, &["kind", "hold_ms"])?;
            MeterActionConfig::CeAll { hold_ms: number(a, "hold_ms", &af("hold_ms"), 0.0, 1e7, true)? }
        }
        Some("ce_fraction") => {
            check_keys(a, &ap, &["kind", "gain", "initial_fraction"])?;
            MeterActionConfig::CeFraction {
                gain: number(a, "gain", &af("gain"), 0.0, 1e6, true)?,
                initial_fraction: number(a, "initial_fraction", &af("initial_fraction"), 0.0, 1.0, false)?,
            }
        }
        _ => return Err(err(&af("kind"), "is required, one of: demote, ce_all, ce_fraction")),
    };
    Ok(MeterConfig { dscp, per_flow, window_ms, limit_kbit, action })
}

#[cfg(test)]
pub mod testing {
    //! Complete normalised links for the tests: the bottleneck fills in nothing, so every test spells out a whole
    //! link. The disciplines' parameters here are Linux's defaults (what netem fills in from the schema).
    use serde_json::{json, Value};

    /// A link with this delay, rate and discipline; no jitter, no loss.
    pub fn link(delay_ms: u64, rate: Value, qdisc: Value) -> Value {
        json!({"delay_ms": delay_ms, "jitter_ms": 0, "loss_percent": 0, "rate": rate, "qdisc": qdisc})
    }

    /// A constant rate with a bucket of two full-size frames.
    pub fn kbit(kbit: u64) -> Value {
        json!({"kbit": kbit, "burst_bytes": 3028})
    }

    pub fn fifo(limit_packets: u64) -> Value {
        json!({"kind": "fifo", "limit_packets": limit_packets})
    }

    pub fn codel(ecn: bool) -> Value {
        json!({"kind": "codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 1000, "ecn": ecn})
    }

    pub fn pie(ecn: bool) -> Value {
        json!({"kind": "pie", "target_ms": 15, "tupdate_ms": 15, "alpha": 2, "beta": 20, "limit_packets": 1000, "ecn": ecn})
    }

    pub fn sfq(limit_packets: u64) -> Value {
        json!({"kind": "sfq", "limit_packets": limit_packets, "quantum_bytes": 1514, "perturb_s": 0, "divisor": 1024})
    }

    pub fn fq_codel(ecn: bool) -> Value {
        json!({"kind": "fq_codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 10240, "quantum_bytes": 1514, "flows": 1024, "ecn": ecn})
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
        assert_eq!(c.qdisc, QdiscConfig::Fifo { limit: FifoLimit::Bytes(37500) });
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
            r#"{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"qdisc":{"kind":"fifo","limit_bytes":37500},"rate":{"burst_bytes":3028,"kbit":1000}}"#
        );
    }
}
