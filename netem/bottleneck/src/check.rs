//! Checking the link's fields, for every part that reads one (config/, each discipline's parameters, the meters):
//! the error that names a field by its path, the schema's ranges, and the serde helpers for fields that may be
//! null or left out. It imports nothing of the crate, so every reader depends on it and it on none of them.

use serde::{Deserialize, Deserializer, Serializer};

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

/// A DSCP list (a band's, a meter's): not empty, each 0-63.
pub fn check_dscp(path: &str, dscp: &[u8]) -> Result<(), ConfigError> {
    if dscp.is_empty() {
        return Err(ConfigError::new(path, "must be a non-empty array of integers 0-63"));
    }
    match dscp.iter().find(|d| **d > 63) {
        Some(d) => Err(ConfigError::new(path, format!("holds {d}, not an integer 0-63"))),
        None => Ok(()),
    }
}
