//! One IPv4 packet held by the bottleneck: the fields the disciplines and the log need, parsed once,
//! and ECN CE marking with the header checksum fixed (RFC 3168 section 5, RFC 1624 incremental update).

use std::hash::Hasher;

/// Bytes Linux TBF counts on an Ethernet veth beside the IP packet: the 14-byte Ethernet header.
pub const ETHERNET_HEADER_BYTES: u32 = 14;

/// What the bottleneck did to a packet: the `event` field of the ground-truth log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Forwarded = 0,
    ForwardedCe = 1,
    DroppedTail = 2,
    DroppedAqm = 3,
    DroppedLoss = 4,
    DroppedShutdown = 5,
    /// Arrived while the link was in an off period of its `outage` model.
    DroppedOutage = 6,
    /// Lost by the `loss_gemodel` (Gilbert-Elliott) model.
    DroppedGeModel = 7,
}

#[derive(Debug, Clone)]
pub struct Packet {
    /// NFQUEUE packet id (the verdict needs it).
    pub id: u32,
    pub arrival_ns: u64,
    /// When it entered the discipline (CoDel and PIE measure sojourn from here).
    pub enqueue_ns: u64,
    pub dequeue_ns: u64,
    /// End of its transmission at the link rate, and its scheduled release (+ propagation delay and jitter).
    pub tx_end_ns: u64,
    pub due_ns: u64,
    /// Link-layer bytes: IP total length + 14, what TBF counts.
    pub wire_bytes: u32,
    pub ip_len: u16,
    pub ip_id: u16,
    pub ip_proto: u8,
    pub dscp: u8,
    /// ECN bits as the packet arrived.
    pub ecn_in: u8,
    /// Hash of the 5-tuple (addresses, protocol, ports): the flow, for sfq and fq_codel.
    pub flow_hash: u64,
    /// Source and destination address and ports (ports 0 for a protocol without them): a call's own delay
    /// (flow_delay.rs) finds its packets by them.
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    /// FNV-1a 64 over the first min(64) bytes after the IP header (docs/bottleneck-log.md).
    pub key: u64,
    /// prio band, or low bits of the fq/sfq flow bucket, for the log.
    pub band: u8,
    /// Set by a discipline that marked instead of dropping.
    pub ce_marked: bool,
    pub queue_packets_at_arrival: u32,
    pub queue_bytes_at_arrival: u32,
    pub data: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum ParseError {
    TooShort,
    NotIpv4,
}

/// FNV-1a 64 over the first min(64, length) bytes of the IP payload.
pub fn packet_key(ip_payload: &[u8]) -> u64 {
    let n = ip_payload.len().min(64);
    let mut h = fnv::FnvHasher::default();
    h.write(&ip_payload[..n]);
    h.finish()
}

impl Packet {
    /// Parses an IPv4 packet as NFQUEUE hands it over (starting at the IP header).
    pub fn parse(id: u32, arrival_ns: u64, data: Vec<u8>) -> Result<Packet, ParseError> {
        if data.len() < 20 {
            return Err(ParseError::TooShort);
        }
        if data[0] >> 4 != 4 {
            return Err(ParseError::NotIpv4);
        }
        let ihl_bytes = ((data[0] & 0x0f) as usize) * 4;
        if ihl_bytes < 20 || data.len() < ihl_bytes {
            return Err(ParseError::TooShort);
        }
        let ip_len = u16::from_be_bytes([data[2], data[3]]);
        let ip_id = u16::from_be_bytes([data[4], data[5]]);
        let ip_proto = data[9];
        let tos = data[1];
        // The key covers the bytes after the header, bounded by the IP length (not by trailing padding).
        let payload_end = (ip_len as usize).min(data.len()).max(ihl_bytes);
        let payload = &data[ihl_bytes..payload_end];
        let key = packet_key(payload);
        let ports: [u8; 4] = if matches!(ip_proto, 6 | 17 | 132 | 136) && payload.len() >= 4 {
            [payload[0], payload[1], payload[2], payload[3]]
        } else {
            [0; 4]
        };
        let mut h = fnv::FnvHasher::default();
        h.write(&data[12..20]);
        h.write(&[ip_proto]);
        h.write(&ports);
        Ok(Packet {
            id,
            arrival_ns,
            enqueue_ns: arrival_ns,
            dequeue_ns: 0,
            tx_end_ns: 0,
            due_ns: 0,
            wire_bytes: ip_len as u32 + ETHERNET_HEADER_BYTES,
            ip_len,
            ip_id,
            ip_proto,
            dscp: tos >> 2,
            ecn_in: tos & 0x03,
            flow_hash: h.finish(),
            src: [data[12], data[13], data[14], data[15]],
            dst: [data[16], data[17], data[18], data[19]],
            sport: u16::from_be_bytes([ports[0], ports[1]]),
            dport: u16::from_be_bytes([ports[2], ports[3]]),
            key,
            band: 0,
            ce_marked: false,
            queue_packets_at_arrival: 0,
            queue_bytes_at_arrival: 0,
            data,
        })
    }

    /// ECN-capable transport: ECT(0), ECT(1) or already CE (Linux INET_ECN_set_ce succeeds on all three).
    pub fn is_ect(&self) -> bool {
        self.ecn_in != 0
    }

    /// Marks CE if the packet is ECN-capable; returns whether it is now CE (Linux INET_ECN_set_ce).
    pub fn set_ce(&mut self) -> bool {
        if !self.is_ect() {
            return false;
        }
        self.ce_marked = true;
        true
    }

    /// Writes CE into the header bytes and updates the checksum; true when the bytes changed.
    pub fn apply_ce_to_data(&mut self) -> bool {
        if !self.ce_marked || self.data.len() < 20 {
            return false;
        }
        let old_tos = self.data[1];
        let new_tos = old_tos | 0x03;
        if new_tos == old_tos {
            return false;
        }
        // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit word holding version/IHL and TOS.
        let old_word = u16::from_be_bytes([self.data[0], old_tos]);
        let new_word = u16::from_be_bytes([self.data[0], new_tos]);
        let old_sum = u16::from_be_bytes([self.data[10], self.data[11]]);
        let mut sum = (!old_sum as u32) + (!old_word as u32) + new_word as u32;
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let new_sum = !(sum as u16);
        self.data[1] = new_tos;
        self.data[10..12].copy_from_slice(&new_sum.to_be_bytes());
        true
    }
}

#[cfg(test)]
/// Builds an IPv4/UDP packet with a correct header checksum (tests and the synthetic load of the unit tests).
pub fn build_udp_packet(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, tos: u8, ip_len: u16, seq: u32) -> Vec<u8> {
    let len = ip_len.max(28) as usize;
    let mut d = vec![0u8; len];
    d[0] = 0x45;
    d[1] = tos;
    d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    d[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
    d[8] = 64;
    d[9] = 17;
    d[12..16].copy_from_slice(&src);
    d[16..20].copy_from_slice(&dst);
    d[20..22].copy_from_slice(&sport.to_be_bytes());
    d[22..24].copy_from_slice(&dport.to_be_bytes());
    d[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    if len >= 32 {
        d[28..32].copy_from_slice(&seq.to_be_bytes());
    }
    let sum = ipv4_header_checksum(&d[..20]);
    d[10..12].copy_from_slice(&sum.to_be_bytes());
    d
}

#[cfg(test)]
/// The RFC 791 header checksum, computed from scratch (with the checksum field taken as zero).
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for (i, pair) in header.chunks(2).enumerate() {
        if i == 5 {
            continue;
        }
        let word = if pair.len() == 2 { u16::from_be_bytes([pair[0], pair[1]]) } else { (pair[0] as u16) << 8 };
        sum += word as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_counts_wire_bytes_like_tbf() {
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 5000, 6000, (46 << 2) | 2, 1200, 7);
        let p = Packet::parse(1, 5, d).unwrap();
        assert_eq!(p.ip_len, 1200);
        assert_eq!(p.wire_bytes, 1214);
        assert_eq!(p.dscp, 46);
        assert_eq!(p.ecn_in, 2);
        assert_eq!(p.ip_proto, 17);
        assert_eq!(p.ip_id, 7);
    }

    #[test]
    fn ce_marking_sets_bits_and_keeps_checksum_valid() {
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 1, 2, 0x02, 100, 1);
        let mut p = Packet::parse(1, 0, d).unwrap();
        assert!(p.set_ce());
        assert!(p.apply_ce_to_data());
        assert_eq!(p.data[1] & 3, 3);
        let stored = u16::from_be_bytes([p.data[10], p.data[11]]);
        assert_eq!(stored, ipv4_header_checksum(&p.data[..20]));
    }

    #[test]
    fn not_ect_is_never_marked() {
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 1, 2, 0, 100, 1);
        let mut p = Packet::parse(1, 0, d).unwrap();
        assert!(!p.set_ce());
        assert!(!p.apply_ce_to_data());
    }

    #[test]
    fn different_flows_hash_differently() {
        let a = Packet::parse(1, 0, build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 1, 2, 0, 100, 1)).unwrap();
        let b = Packet::parse(1, 0, build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 1, 3, 0, 100, 2)).unwrap();
        let a2 = Packet::parse(1, 0, build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 1, 2, 0, 300, 9)).unwrap();
        assert_ne!(a.flow_hash, b.flow_hash);
        assert_eq!(a.flow_hash, a2.flow_hash);
    }
}
