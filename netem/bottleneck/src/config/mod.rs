//! The link the bottleneck runs: exactly the normalised link that netem writes (`bottleneck-<direction>.json`,
//! docs/netem.md). netem fills every default from scenarios/schema.json and converts `limit_ms`; this module only
//! reads what it is given. Every field is required and unknown fields are refused, each error naming the field, so a
//! link that netem and the bottleneck would read differently fails instead of running on a default of its own.
//!
//! serde reads the JSON (derive; `deny_unknown_fields` on every object; no serde defaults; read.rs names the field
//! of an error), then `validate` checks the schema's ranges (check.rs). This file holds the link's own fields
//! (delay, jitter, loss) and the discipline enum, tagged by `kind`; src/loss.rs holds the loss models' parameters;
//! rate.rs holds the rate; each discipline's parameters, their ranges and how they build it are in its own file
//! under src/qdisc/ (as Linux's sch_pie.c owns its change and dump). `LinkConfig::to_json` writes the same form
//! back (`--print-config`), which the cross-language conformance test compares with netem's normaliser.

mod rate;
mod read;

use crate::check::{check_number, field, nullable, ConfigError};
use crate::loss::{GeModelConfig, OutageConfig};
use crate::qdisc::codel::CodelConfig;
use crate::qdisc::dualpi2::DualPi2Config;
use crate::qdisc::fifo::FifoConfig;
use crate::qdisc::fq_codel::FqCodelConfig;
use crate::qdisc::pie::PieConfig;
use crate::qdisc::prio::PrioConfig;
use crate::qdisc::sfq::SfqConfig;
use crate::qdisc::{Qdisc, QdiscParams};
use rand::rngs::SmallRng;
use rate::{rate_json, RateJson};
pub use rate::{RateConfig, RateStep, TRACE_OPPORTUNITY_BYTES};
use read::{array_for_object, read};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    pub delay_ms: f64,
    /// Later propagation delays: from `at_s` on the schedule's time axis, packets reaching the bottleneck get
    /// `delay_ms` (strictly increasing `at_s`, all > 0).
    pub delay_schedule: Vec<DelayStep>,
    pub jitter_ms: f64,
    pub loss_percent: f64,
    /// On/off outages (src/loss.rs), or none.
    pub outage: Option<OutageConfig>,
    /// Gilbert-Elliott burst loss (src/loss.rs), or none; never beside `loss_percent` > 0 (netem has one loss model).
    pub loss_gemodel: Option<GeModelConfig>,
    pub rate: RateConfig,
    pub qdisc: QdiscConfig,
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
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Config),
    Prio(PrioConfig),
}

impl QdiscConfig {
    /// The kind's parameters: their ranges, their limit and the discipline they build.
    pub fn params(&self) -> &dyn QdiscParams {
        match self {
            QdiscConfig::Fifo(p) => p,
            QdiscConfig::Codel(p) => p,
            QdiscConfig::Pie(p) => p,
            QdiscConfig::Sfq(p) => p,
            QdiscConfig::FqCodel(p) => p,
            QdiscConfig::DualPi2(p) => p,
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

    /// Builds the discipline; `rng` seeds the randomised ones.
    pub fn build(&self, now_ns: u64, rng: &mut SmallRng) -> Box<dyn Qdisc> {
        self.params().build(now_ns, rng)
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
    outage: Option<OutageConfig>,
    #[serde(deserialize_with = "nullable")]
    loss_gemodel: Option<GeModelConfig>,
    #[serde(deserialize_with = "nullable")]
    rate: Option<RateJson>,
    qdisc: QdiscConfig,
}

/// One step of the propagation delay (`delay_schedule`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DelayStep {
    pub at_s: f64,
    pub delay_ms: f64,
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
            outage: self.outage.clone(),
            loss_gemodel: self.loss_gemodel.clone(),
            rate: rate_json(&self.rate),
            qdisc: self.qdisc.clone(),
        };
        let mut v = serde_json::to_value(link).expect("a link is plain JSON");
        whole_numbers(&mut v);
        v
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
    if let Some(outage) = &link.outage {
        outage.validate("outage")?;
    }
    if let Some(ge) = &link.loss_gemodel {
        ge.validate("loss_gemodel")?;
        if link.loss_percent > 0.0 {
            return Err(ConfigError::new(
                "loss_gemodel",
                "cannot be combined with loss_percent > 0 (one loss model per link, as netem has)",
            ));
        }
    }
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
        outage: link.outage,
        loss_gemodel: link.loss_gemodel,
        rate,
        qdisc: link.qdisc,
    })
}

#[cfg(test)]
pub mod testing {
    //! Complete normalised links for the tests: the bottleneck fills in nothing, so every test spells out a whole
    //! link. Each discipline's own file has a complete one of its kind (`test_json`), with Linux's defaults.
    pub use crate::qdisc::codel::test_json as codel;
    pub use crate::qdisc::dualpi2::test_json as dualpi2;
    pub use crate::qdisc::fifo::test_json as fifo;
    pub use crate::qdisc::fq_codel::test_json as fq_codel;
    pub use crate::qdisc::pie::test_json as pie;
    pub use crate::qdisc::sfq::test_json as sfq;
    use serde_json::{json, Value};

    /// A link with this delay, rate and discipline; no jitter, no loss, no outages.
    pub fn link(delay_ms: u64, rate: Value, qdisc: Value) -> Value {
        json!({"delay_ms": delay_ms, "delay_schedule": [], "jitter_ms": 0, "loss_percent": 0, "outage": null,
            "loss_gemodel": null, "rate": rate, "qdisc": qdisc})
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
mod tests;
