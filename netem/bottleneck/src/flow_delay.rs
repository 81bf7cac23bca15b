//! A propagation delay of its own per flow (RFC 8867 5.5: flows of different RTTs through one bottleneck): a table of
//! UDP/TCP flows, each named by its two endpoints and matched in either direction, whose packets get the flow's delay
//! on the delay line instead of the link's (after the shared queue, as every delay here). The harness learns a call's
//! endpoints only once ICE has chosen them, so the table comes at run time: written to --flow-delays-file, read on
//! SIGUSR2 (docs/bottleneck.md, "Delay per flow").

use crate::packet::Packet;
use std::net::Ipv4Addr;

#[derive(Debug, Clone, PartialEq)]
pub struct FlowDelay {
    pub a: ([u8; 4], u16),
    pub b: ([u8; 4], u16),
    pub delay_ns: u64,
}

/// The flow table and the number the harness gave it (printed back once it is in force).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowDelays {
    pub generation: u64,
    pub flows: Vec<FlowDelay>,
}

impl FlowDelays {
    /// The index of the flow a packet belongs to (either direction), if any.
    pub fn flow_of(&self, p: &Packet) -> Option<usize> {
        let from = (p.src, p.sport);
        let to = (p.dst, p.dport);
        self.flows.iter().position(|f| (f.a == from && f.b == to) || (f.a == to && f.b == from))
    }
}

fn endpoint(v: &serde_json::Value, field: &str, at: usize) -> Result<([u8; 4], u16), String> {
    let text = v
        .get(field)
        .and_then(|x| x.as_str())
        .ok_or_else(|| format!("flows[{at}].{field}: missing (\"ADDRESS:PORT\")"))?;
    let (addr, port) =
        text.rsplit_once(':').ok_or_else(|| format!("flows[{at}].{field}: {text:?} is not ADDRESS:PORT"))?;
    let addr: Ipv4Addr = addr.parse().map_err(|_| format!("flows[{at}].{field}: {addr:?} is not an IPv4 address"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("flows[{at}].{field}: port {port:?} is not 1-65535"))?;
    Ok((addr.octets(), port))
}

/// Parses the file's JSON: `{"generation": N, "flows": [{"a": "IP:PORT", "b": "IP:PORT", "delay_ms": D}, ...]}`.
pub fn parse(text: &str) -> Result<FlowDelays, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let generation = v.get("generation").and_then(|g| g.as_u64()).ok_or("generation: missing (a whole number)")?;
    let list = v.get("flows").and_then(|f| f.as_array()).ok_or("flows: missing (a list)")?;
    let mut flows = Vec::with_capacity(list.len());
    for (i, f) in list.iter().enumerate() {
        let delay_ms = f
            .get("delay_ms")
            .and_then(|d| d.as_f64())
            .filter(|d| d.is_finite() && *d >= 0.0)
            .ok_or_else(|| format!("flows[{i}].delay_ms: missing or not a number >= 0"))?;
        flows.push(FlowDelay {
            a: endpoint(f, "a", i)?,
            b: endpoint(f, "b", i)?,
            delay_ns: crate::qdisc::ms_to_ns(delay_ms),
        });
    }
    Ok(FlowDelays { generation, flows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::build_udp_packet;

    fn packet(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Packet {
        Packet::parse(1, 0, build_udp_packet(src, dst, sport, dport, 0, 200, 0)).unwrap()
    }

    #[test]
    fn a_flow_is_found_in_both_directions_and_only_by_its_four_fields() {
        let t = parse(r#"{"generation": 3, "flows": [{"a": "10.0.1.2:5000", "b": "10.0.2.2:6000", "delay_ms": 150}]}"#)
            .unwrap();
        assert_eq!(t.generation, 3);
        assert_eq!(t.flows[0].delay_ns, 150_000_000);
        assert_eq!(t.flow_of(&packet([10, 0, 1, 2], 5000, [10, 0, 2, 2], 6000)), Some(0));
        assert_eq!(t.flow_of(&packet([10, 0, 2, 2], 6000, [10, 0, 1, 2], 5000)), Some(0));
        assert_eq!(t.flow_of(&packet([10, 0, 1, 2], 5001, [10, 0, 2, 2], 6000)), None);
        assert_eq!(t.flow_of(&packet([10, 0, 1, 3], 5000, [10, 0, 2, 2], 6000)), None);
    }

    #[test]
    fn bad_tables_are_refused_naming_the_field() {
        assert!(parse(r#"{"flows": []}"#).unwrap_err().contains("generation"));
        let e =
            parse(r#"{"generation": 1, "flows": [{"a": "10.0.1.2", "b": "10.0.2.2:1", "delay_ms": 5}]}"#).unwrap_err();
        assert!(e.contains("flows[0].a"), "{e}");
        let e = parse(r#"{"generation": 1, "flows": [{"a": "10.0.1.2:1", "b": "10.0.2.2:0", "delay_ms": 5}]}"#)
            .unwrap_err();
        assert!(e.contains("flows[0].b"), "{e}");
        let e = parse(r#"{"generation": 1, "flows": [{"a": "10.0.1.2:1", "b": "10.0.2.2:2", "delay_ms": -1}]}"#)
            .unwrap_err();
        assert!(e.contains("delay_ms"), "{e}");
    }
}
