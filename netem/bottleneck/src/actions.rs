//! The meters' action log (docs/bottleneck-log.md "Action log", `bottleneck-<direction>.actions.jsonl`): one JSON
//! line per record of meter.rs, written by a background thread like the ground-truth log.

use crate::meter::{FlowKey, MeterRecord, RecordKind};
use crate::writer::{Log, LogRecord};

/// Records waiting for the writer thread (a record per metered flow and window: 1 s of 1000 flows at 100 ms windows).
const RING_RECORDS: usize = 1 << 14;

fn addr(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

fn flow_json(f: &Option<FlowKey>) -> serde_json::Value {
    match f {
        None => serde_json::Value::Null,
        Some(f) => {
            serde_json::json!({"src": addr(f.src), "dst": addr(f.dst), "proto": f.proto, "sport": f.sport, "dport": f.dport})
        }
    }
}

pub fn encode(r: &MeterRecord, out: &mut Vec<u8>) {
    let mut line = serde_json::json!({
        "t": r.t_ns as f64 / 1e9, "t_ns": r.t_ns, "meter": r.meter, "action": r.action.name(), "flow": flow_json(&r.flow),
    });
    match r.kind {
        RecordKind::Window => {
            line["event"] = "window".into();
            line["rate_kbit"] = (r.rate_bps as f64 / 1000.0).into();
            line["limit_kbit"] = (r.limit_bps as f64 / 1000.0).into();
            line["fraction"] = r.fraction.into();
            line["ce_marked"] = r.ce_marked.into();
            line["demoted"] = r.demoted.into();
        }
        RecordKind::Start => {
            line["event"] = "start".into();
            line["rate_kbit"] = (r.rate_bps as f64 / 1000.0).into();
            line["limit_kbit"] = (r.limit_bps as f64 / 1000.0).into();
            line["until"] = (r.until_ns as f64 / 1e9).into();
        }
        RecordKind::End => line["event"] = "end".into(),
    }
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
}

/// The action log: one JSON line per record.
pub type ActionLog = Log<MeterRecord>;

impl LogRecord for MeterRecord {
    const RING: usize = RING_RECORDS;
    fn encode(&self, out: &mut Vec<u8>) {
        encode(self, out)
    }
}
