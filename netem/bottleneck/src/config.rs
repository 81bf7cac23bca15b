//! The link as the scenario describes it (scenarios/schema.json `definitions/link`), checked field by field so that
//! an invalid config fails with an error naming the field. Defaults are Linux's (tc's) where the schema leaves one out.

use serde_json::{Map, Value};

/// Default token bucket depth: one 1514-byte frame above the 1514 bytes the kernel needs at least.
pub const DEFAULT_BURST_BYTES: u64 = 3028;
/// Linux pfifo's default limit: the device's txqueuelen (1000 on a veth).
pub const DEFAULT_FIFO_LIMIT_PACKETS: u64 = 1000;
/// A trace's delivery opportunity: one 1500-byte IP packet, i.e. 1514 link-layer bytes.
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
    Schedule { steps: Vec<RateStep>, burst_bytes: u64 },
    /// Mahimahi delivery opportunities (ms offsets, sorted), repeating with `period_ms`.
    Trace { path: String, opportunities_ms: Vec<u64>, period_ms: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStep {
    pub at_ns: u64,
    pub bits_per_s: u64,
}

impl RateConfig {
    /// The rate in force at t = 0 (bits/s), which `limit_ms` converts with; trace: its average rate.
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
    Prio { bands: Vec<PrioBand> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PrioBand {
    /// Empty for the last band, which takes every DSCP the others do not list.
    pub dscp: Vec<u8>,
    pub qdisc: QdiscConfig,
}

impl QdiscConfig {
    #[allow(dead_code)]
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscConfig::Fifo { .. } => "fifo",
            QdiscConfig::Codel { .. } => "codel",
            QdiscConfig::Pie { .. } => "pie",
            QdiscConfig::Sfq { .. } => "sfq",
            QdiscConfig::FqCodel { .. } => "fq_codel",
            QdiscConfig::Prio { .. } => "prio",
        }
    }

    /// Packets the discipline can hold at most (for the NFQUEUE queue length); byte limits count 64-byte packets.
    pub fn max_packets(&self) -> u64 {
        match self {
            QdiscConfig::Fifo { limit: FifoLimit::Packets(n) } => *n,
            QdiscConfig::Fifo { limit: FifoLimit::Bytes(b) } => b / 64 + 1,
            QdiscConfig::Codel { limit_packets, .. }
            | QdiscConfig::Pie { limit_packets, .. }
            | QdiscConfig::Sfq { limit_packets, .. }
            | QdiscConfig::FqCodel { limit_packets, .. } => *limit_packets,
            QdiscConfig::Prio { bands } => bands.iter().map(|b| b.qdisc.max_packets()).sum(),
        }
    }
}

/// Reads a link object; `read_trace` loads a trace file (a parameter so tests need no files).
pub fn parse_link(v: &Value, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<LinkConfig, ConfigError> {
    let obj = v.as_object().ok_or_else(|| err("(link)", "must be a JSON object"))?;
    check_keys(obj, "", &["delay_ms", "jitter_ms", "loss_percent", "rate", "qdisc"])?;
    let delay_ms = number(obj, "delay_ms", "delay_ms", 25.0, 0.0, 10000.0, false)?;
    let jitter_ms = number(obj, "jitter_ms", "jitter_ms", 0.0, 0.0, 10000.0, false)?;
    let loss_percent = number(obj, "loss_percent", "loss_percent", 0.0, 0.0, 100.0, false)?;
    let rate = parse_rate(obj.get("rate"), read_trace)?;
    let first_rate = rate.first_bits_per_s();
    let qdisc_value = obj.get("qdisc").cloned().unwrap_or_else(|| serde_json::json!({"kind": "fifo"}));
    let qdisc = parse_qdisc(&qdisc_value, "qdisc", first_rate, true)?;
    Ok(LinkConfig { delay_ms, jitter_ms, loss_percent, rate, qdisc })
}

fn check_keys(obj: &Map<String, Value>, prefix: &str, allowed: &[&str]) -> Result<(), ConfigError> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(err(&format!("{prefix}{k}"), format!("is not a known field (allowed: {})", allowed.join(", "))));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn number(obj: &Map<String, Value>, key: &str, field: &str, default: f64, min: f64, max: f64, exclusive_min: bool) -> Result<f64, ConfigError> {
    match obj.get(key) {
        None => Ok(default),
        Some(v) => {
            let x = v.as_f64().ok_or_else(|| err(field, "must be a number"))?;
            let low_ok = if exclusive_min { x > min } else { x >= min };
            if !low_ok || x > max || !x.is_finite() {
                let op = if exclusive_min { ">" } else { ">=" };
                return Err(err(field, format!("must be {op} {min} and <= {max} (got {x})")));
            }
            Ok(x)
        }
    }
}

fn integer(obj: &Map<String, Value>, key: &str, field: &str, default: u64, min: u64, max: u64) -> Result<u64, ConfigError> {
    match obj.get(key) {
        None => Ok(default),
        Some(v) => {
            let x = v.as_u64().ok_or_else(|| err(field, "must be a non-negative integer"))?;
            if x < min || x > max {
                return Err(err(field, format!("must be an integer in [{min}, {max}] (got {x})")));
            }
            Ok(x)
        }
    }
}

fn boolean(obj: &Map<String, Value>, key: &str, field: &str, default: bool) -> Result<bool, ConfigError> {
    match obj.get(key) {
        None => Ok(default),
        Some(v) => v.as_bool().ok_or_else(|| err(field, "must be true or false")),
    }
}

fn kbit_to_bits_per_s(kbit: f64) -> u64 {
    (kbit * 1000.0).round() as u64
}

fn parse_rate(v: Option<&Value>, read_trace: &dyn Fn(&str) -> Result<String, String>) -> Result<RateConfig, ConfigError> {
    let v = match v {
        None | Some(Value::Null) => return Ok(RateConfig::Unlimited),
        Some(v) => v,
    };
    let obj = v.as_object().ok_or_else(|| err("rate", "must be null or an object with kbit, schedule or trace"))?;
    check_keys(obj, "rate.", &["kbit", "schedule", "trace", "burst_bytes"])?;
    let given: Vec<&str> = ["kbit", "schedule", "trace"].into_iter().filter(|k| obj.contains_key(*k)).collect();
    if given.len() != 1 {
        return Err(err("rate", format!("must have exactly one of kbit, schedule, trace (got: {})", if given.is_empty() { "none".into() } else { given.join(", ") })));
    }
    let burst_bytes = integer(obj, "burst_bytes", "rate.burst_bytes", DEFAULT_BURST_BYTES, 1514, u32::MAX as u64)?;
    if obj.contains_key("kbit") {
        let kbit = number(obj, "kbit", "rate.kbit", 0.0, 0.0, 10_000_000.0, true)?;
        return Ok(RateConfig::Schedule { steps: vec![RateStep { at_ns: 0, bits_per_s: kbit_to_bits_per_s(kbit) }], burst_bytes });
    }
    if let Some(s) = obj.get("schedule") {
        let arr = s.as_array().ok_or_else(|| err("rate.schedule", "must be an array of {at_s, kbit}"))?;
        if arr.is_empty() {
            return Err(err("rate.schedule", "must have at least one step"));
        }
        let mut steps = Vec::new();
        for (i, item) in arr.iter().enumerate() {
            let field = format!("rate.schedule[{i}]");
            let o = item.as_object().ok_or_else(|| err(&field, "must be an object {at_s, kbit}"))?;
            check_keys(o, &format!("{field}."), &["at_s", "kbit"])?;
            if !o.contains_key("at_s") || !o.contains_key("kbit") {
                return Err(err(&field, "needs both at_s and kbit"));
            }
            let at_s = number(o, "at_s", &format!("{field}.at_s"), 0.0, 0.0, 1e9, false)?;
            let kbit = number(o, "kbit", &format!("{field}.kbit"), 0.0, 0.0, 10_000_000.0, true)?;
            steps.push(RateStep { at_ns: (at_s * 1e9).round() as u64, bits_per_s: kbit_to_bits_per_s(kbit) });
        }
        steps.sort_by_key(|s| s.at_ns);
        if steps[0].at_ns != 0 {
            return Err(err("rate.schedule", "must have a step at at_s 0 (the rate before any other step)"));
        }
        return Ok(RateConfig::Schedule { steps, burst_bytes });
    }
    let path = obj["trace"].as_str().filter(|p| !p.is_empty()).ok_or_else(|| err("rate.trace", "must be a file path"))?;
    let text = read_trace(path).map_err(|e| err("rate.trace", format!("cannot be read ({path}: {e})")))?;
    let mut opportunities_ms = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line.parse().map_err(|_| err("rate.trace", format!("line {} of {path} is not an integer ms timestamp: {line:?}", n + 1)))?;
        if let Some(&last) = opportunities_ms.last() {
            if ms < last {
                return Err(err("rate.trace", format!("line {} of {path} goes back in time ({ms} after {last})", n + 1)));
            }
        }
        opportunities_ms.push(ms);
    }
    let period_ms = *opportunities_ms.last().ok_or_else(|| err("rate.trace", format!("{path} holds no delivery opportunities")))?;
    if period_ms == 0 {
        return Err(err("rate.trace", format!("{path} must end at a timestamp > 0 ms (it is the trace's period)")));
    }
    Ok(RateConfig::Trace { path: path.to_string(), opportunities_ms, period_ms })
}

const KINDS: &str = "fifo, codel, pie, sfq, fq_codel, prio";

fn parse_qdisc(v: &Value, field: &str, first_rate: Option<u64>, prio_allowed: bool) -> Result<QdiscConfig, ConfigError> {
    let obj = v.as_object().ok_or_else(|| err(field, "must be an object with a kind"))?;
    let kind = obj.get("kind").and_then(|k| k.as_str()).ok_or_else(|| err(&format!("{field}.kind"), format!("is required, one of: {KINDS}")))?;
    let f = |k: &str| format!("{field}.{k}");
    let p = format!("{field}.");
    match kind {
        "fifo" => {
            check_keys(obj, &p, &["kind", "limit_packets", "limit_bytes", "limit_ms"])?;
            let given: Vec<&str> = ["limit_packets", "limit_bytes", "limit_ms"].into_iter().filter(|k| obj.contains_key(*k)).collect();
            if given.len() > 1 {
                return Err(err(field, format!("fifo takes only one of limit_packets, limit_bytes, limit_ms (got {})", given.join(", "))));
            }
            let limit = match given.first().copied() {
                None => FifoLimit::Packets(DEFAULT_FIFO_LIMIT_PACKETS),
                Some("limit_packets") => FifoLimit::Packets(integer(obj, "limit_packets", &f("limit_packets"), 0, 1, u32::MAX as u64)?),
                Some("limit_bytes") => FifoLimit::Bytes(integer(obj, "limit_bytes", &f("limit_bytes"), 0, 1, u32::MAX as u64)?),
                _ => {
                    let ms = number(obj, "limit_ms", &f("limit_ms"), 0.0, 0.0, 1e7, true)?;
                    let bps = first_rate.ok_or_else(|| err(&f("limit_ms"), "needs a rate (rate is null); use limit_packets or limit_bytes"))?;
                    FifoLimit::Bytes(((ms / 1000.0) * bps as f64 / 8.0).round().max(1.0) as u64)
                }
            };
            Ok(QdiscConfig::Fifo { limit })
        }
        "codel" => {
            check_keys(obj, &p, &["kind", "target_ms", "interval_ms", "limit_packets", "ecn"])?;
            Ok(QdiscConfig::Codel {
                target_ms: number(obj, "target_ms", &f("target_ms"), 5.0, 0.0, 1e6, true)?,
                interval_ms: number(obj, "interval_ms", &f("interval_ms"), 100.0, 0.0, 1e6, true)?,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 1000, 1, u32::MAX as u64)?,
                ecn: boolean(obj, "ecn", &f("ecn"), false)?,
            })
        }
        "pie" => {
            check_keys(obj, &p, &["kind", "target_ms", "tupdate_ms", "alpha", "beta", "limit_packets", "ecn"])?;
            Ok(QdiscConfig::Pie {
                target_ms: number(obj, "target_ms", &f("target_ms"), 15.0, 0.0, 1e6, true)?,
                tupdate_ms: number(obj, "tupdate_ms", &f("tupdate_ms"), 15.0, 0.0, 1e6, true)?,
                alpha: integer(obj, "alpha", &f("alpha"), 2, 0, 32)? as u32,
                beta: integer(obj, "beta", &f("beta"), 20, 0, 32)? as u32,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 1000, 1, u32::MAX as u64)?,
                ecn: boolean(obj, "ecn", &f("ecn"), false)?,
            })
        }
        "sfq" => {
            check_keys(obj, &p, &["kind", "limit_packets", "limit_ms", "quantum_bytes", "perturb_s", "divisor"])?;
            if obj.contains_key("limit_packets") && obj.contains_key("limit_ms") {
                return Err(err(field, "sfq takes only one of limit_packets, limit_ms"));
            }
            let limit_packets = if obj.contains_key("limit_ms") {
                let ms = number(obj, "limit_ms", &f("limit_ms"), 0.0, 0.0, 1e7, true)?;
                let bps = first_rate.ok_or_else(|| err(&f("limit_ms"), "needs a rate (rate is null); use limit_packets"))?;
                ((ms / 1000.0) * bps as f64 / (1514.0 * 8.0)).round().max(2.0) as u64
            } else {
                integer(obj, "limit_packets", &f("limit_packets"), 127, 2, u32::MAX as u64)?
            };
            Ok(QdiscConfig::Sfq {
                limit_packets,
                quantum_bytes: integer(obj, "quantum_bytes", &f("quantum_bytes"), 1514, 64, u32::MAX as u64)?,
                perturb_s: number(obj, "perturb_s", &f("perturb_s"), 0.0, 0.0, 1e6, false)?,
                divisor: integer(obj, "divisor", &f("divisor"), 1024, 1, 65536)? as u32,
            })
        }
        "fq_codel" => {
            check_keys(obj, &p, &["kind", "target_ms", "interval_ms", "limit_packets", "quantum_bytes", "flows", "ecn"])?;
            Ok(QdiscConfig::FqCodel {
                target_ms: number(obj, "target_ms", &f("target_ms"), 5.0, 0.0, 1e6, true)?,
                interval_ms: number(obj, "interval_ms", &f("interval_ms"), 100.0, 0.0, 1e6, true)?,
                limit_packets: integer(obj, "limit_packets", &f("limit_packets"), 10240, 1, u32::MAX as u64)?,
                quantum_bytes: integer(obj, "quantum_bytes", &f("quantum_bytes"), 1514, 64, u32::MAX as u64)?,
                flows: integer(obj, "flows", &f("flows"), 1024, 1, 65536)? as u32,
                ecn: boolean(obj, "ecn", &f("ecn"), true)?,
            })
        }
        "prio" if prio_allowed => {
            check_keys(obj, &p, &["kind", "bands"])?;
            let arr = obj.get("bands").and_then(|b| b.as_array()).ok_or_else(|| err(&f("bands"), "is required: an array of {dscp, qdisc}"))?;
            if arr.len() < 2 || arr.len() > 16 {
                return Err(err(&f("bands"), format!("must have 2 to 16 bands (got {})", arr.len())));
            }
            let mut bands = Vec::new();
            for (i, b) in arr.iter().enumerate() {
                let bf = format!("{field}.bands[{i}]");
                let bo = b.as_object().ok_or_else(|| err(&bf, "must be an object {dscp, qdisc}"))?;
                check_keys(bo, &format!("{bf}."), &["dscp", "qdisc"])?;
                let last = i + 1 == arr.len();
                let dscp = match bo.get("dscp") {
                    None if last => Vec::new(),
                    None => return Err(err(&format!("{bf}.dscp"), "is required on every band but the last")),
                    Some(_) if last => return Err(err(&format!("{bf}.dscp"), "must be absent on the last band (it takes every other DSCP)")),
                    Some(d) => {
                        let list = d.as_array().filter(|l| !l.is_empty()).ok_or_else(|| err(&format!("{bf}.dscp"), "must be a non-empty array of integers 0-63"))?;
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
                let q = bo.get("qdisc").ok_or_else(|| err(&format!("{bf}.qdisc"), "is required"))?;
                bands.push(PrioBand { dscp, qdisc: parse_qdisc(q, &format!("{bf}.qdisc"), first_rate, false)? });
            }
            Ok(QdiscConfig::Prio { bands })
        }
        "prio" => Err(err(&f("kind"), "cannot be prio inside a prio band (allowed: fifo, codel, pie, sfq, fq_codel)")),
        other => Err(err(&f("kind"), format!("is {other:?}, allowed: {KINDS}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_trace(_: &str) -> Result<String, String> {
        Err("no files in this test".into())
    }

    #[test]
    fn parses_the_default_link_and_converts_limit_ms() {
        let v = json!({"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":1000,"burst_bytes":3028},"qdisc":{"kind":"fifo","limit_ms":300}});
        let c = parse_link(&v, &no_trace).unwrap();
        assert_eq!(c.delay_ms, 25.0);
        assert_eq!(c.qdisc, QdiscConfig::Fifo { limit: FifoLimit::Bytes(37500) });
        assert_eq!(c.rate.first_bits_per_s(), Some(1_000_000));
    }

    #[test]
    fn names_the_bad_field() {
        let v = json!({"qdisc":{"kind":"codel","target_ms":-1}});
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "qdisc.target_ms");
        let v = json!({"qdisc":{"kind":"red"}});
        let e = parse_link(&v, &no_trace).unwrap_err();
        assert_eq!(e.field, "qdisc.kind");
        assert!(e.to_string().contains("fq_codel"));
        let v = json!({"qdisc":{"kind":"fifo","limit_ms":300}});
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "qdisc.limit_ms");
        let v = json!({"qdisc":{"kind":"prio","bands":[{"dscp":[46],"qdisc":{"kind":"fifo"}},{"dscp":[0],"qdisc":{"kind":"fifo"}}]}});
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "qdisc.bands[1].dscp");
        let v = json!({"rate":{"kbit":1000,"trace":"/x"}});
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "rate");
        let v = json!({"delay":5});
        assert_eq!(parse_link(&v, &no_trace).unwrap_err().field, "delay");
    }

    #[test]
    fn reads_a_trace_and_its_average_rate() {
        let read = |_: &str| Ok::<String, String>("1\n1\n2\n4\n".to_string());
        let c = parse_link(&json!({"rate":{"trace":"/t"}}), &read).unwrap();
        match &c.rate {
            RateConfig::Trace { opportunities_ms, period_ms, .. } => {
                assert_eq!(opportunities_ms, &vec![1, 1, 2, 4]);
                assert_eq!(*period_ms, 4);
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(c.rate.first_bits_per_s(), Some(4 * 1514 * 8 * 1000 / 4));
    }
}
