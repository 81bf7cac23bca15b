//! Reading the link by serde, with an error that names its field by its whole path. serde reads an object tagged
//! by `kind` (a `qdisc`, a meter's `action`) from a buffered copy, so this file also knows every kind of both: it
//! reads such an object again as its kind to find the field at fault.

use crate::check::{field, ConfigError};
use crate::meter::{CeAllAction, CeFractionAction, DemoteAction};
use crate::qdisc::codel::CodelConfig;
use crate::qdisc::dualpi2::DualPi2Config;
use crate::qdisc::fifo::FifoConfig;
use crate::qdisc::fq_codel::FqCodelConfig;
use crate::qdisc::pie::PieConfig;
use crate::qdisc::prio::{self, PrioConfig};
use crate::qdisc::sfq::SfqConfig;
use crate::qdisc::KINDS;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

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
pub fn array_for_object(given: &Value, read: &Value, path: &str) -> Option<ConfigError> {
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
        "qdisc" => error_in_qdisc(kind, &fields, path),
        "action" => error_in_action(kind, &fields, path),
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

/// The error in a discipline serde could not read, found by reading its kind's parameters alone (see `read`).
fn error_in_qdisc(kind: &str, fields: &Value, path: &str) -> Option<ConfigError> {
    match kind {
        "fifo" => read::<FifoConfig>(fields, path).err(),
        "codel" => read::<CodelConfig>(fields, path).err(),
        "pie" => read::<PieConfig>(fields, path).err(),
        "sfq" => read::<SfqConfig>(fields, path).err(),
        "fq_codel" => read::<FqCodelConfig>(fields, path).err(),
        // A band's discipline (`...bands[i].qdisc`): its kind is refused before its fields are read.
        "prio" | "dualpi2" if path.ends_with("].qdisc") => Some(prio::not_a_band_kind(path, kind)),
        "dualpi2" => read::<DualPi2Config>(fields, path).err(),
        "prio" => read::<PrioConfig>(fields, path).err(),
        other => Some(ConfigError::new(&field(path, "kind"), format!("is {other:?}, allowed: {}", KINDS.join(", ")))),
    }
}

/// The error in a meter's action serde could not read, found by reading its kind's fields alone (see `read`).
fn error_in_action(kind: &str, fields: &Value, path: &str) -> Option<ConfigError> {
    match kind {
        "demote" => read::<DemoteAction>(fields, path).err(),
        "ce_all" => read::<CeAllAction>(fields, path).err(),
        "ce_fraction" => read::<CeFractionAction>(fields, path).err(),
        other => {
            Some(ConfigError::new(&field(path, "kind"), format!("is {other:?}, allowed: demote, ce_all, ce_fraction")))
        }
    }
}
