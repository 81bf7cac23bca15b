//! Decodes one captured IPv4 packet: addresses, ports, ECN, the join keys, and what the UDP payload is (RTP with its
//! cleartext SRTP header, RTCP, STUN, DTLS). Field meanings follow Wireshark's dissectors (ip, udp, tcp, rtp, rtcp,
//! stun, dtls). pcap.rs reads the file's records and stores what this returns in columns.

/// What a packet is, as stored in the `cls` column.
pub mod cls {
    pub const OTHER: u8 = 0;
    pub const RTP: u8 = 1;
    pub const RTCP: u8 = 2;
    pub const STUN: u8 = 3;
    pub const DTLS: u8 = 4;
    pub const TCP: u8 = 5;
    pub const UDP: u8 = 6;
    pub const ICMP: u8 = 7;
}

pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// The join key covers at most this many bytes after the IPv4 header (docs/bottleneck-log.md).
pub const KEY_BYTES: usize = 64;

/// FNV-1a 64 over `bytes`: the packet key shared with the bottleneck's ground-truth log.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The capture-to-capture join key: the first KEY_BYTES after the IPv4 header with the UDP/TCP checksum zeroed (with
/// transmit checksum offload on, the sender's capture sees a partial checksum that the wire never carries), hashed a
/// word at a time (several times faster than FNV-1a's byte loop, which only the ground-truth join needs).
pub fn join_key(payload: &[u8], proto: u8) -> u64 {
    let mut buf = [0u8; KEY_BYTES];
    let n = payload.len().min(KEY_BYTES);
    buf[..n].copy_from_slice(&payload[..n]);
    match proto {
        17 if n >= 8 => buf[6..8].fill(0),
        6 if n >= 18 => buf[16..18].fill(0),
        _ => {}
    }
    let mut h: u64 = 0x243F_6A88_85A3_08D3 ^ (n as u64);
    for w in buf.chunks_exact(8) {
        let v = u64::from_le_bytes(w.try_into().unwrap());
        h = (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    h ^ (h >> 32)
}

/// What a packet's transport and payload hold (the columns after the IPv4 header's).
pub struct Decoded {
    pub key: u64,
    pub join_key: u64,
    pub key_complete: bool,
    pub cls: u8,
    pub ssrc: u32,
    pub rtp_seq: u16,
    pub rtp_ts: u32,
    pub rtp_pt: u8,
    pub rtp_marker: bool,
    pub twcc_seq: i32,
    pub rtp_payload_len: i32,
    pub tcp_seq: u32,
    pub tcp_flags: u8,
    pub sport: u16,
    pub dport: u16,
    pub payload_len: u32,
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Finds the transport-wide sequence number (a 2-byte element with id `twcc_id`) in an RTP header extension block.
fn find_twcc(ext: &[u8], profile: u16, twcc_id: u8) -> i32 {
    let mut i = 0;
    if profile == 0xBEDE {
        // RFC 8285 one-byte header: id (4 bits), length - 1 (4 bits); id 0 is padding, 15 ends the block.
        while i < ext.len() {
            let b = ext[i];
            if b == 0 {
                i += 1;
                continue;
            }
            let id = b >> 4;
            let len = (b & 0x0f) as usize + 1;
            if id == 15 {
                break;
            }
            if id == twcc_id && len == 2 && i + 3 <= ext.len() {
                return be16(ext, i + 1) as i32;
            }
            i += 1 + len;
        }
    } else if profile & 0xfff0 == 0x1000 {
        // RFC 8285 two-byte header: id byte, length byte.
        while i + 1 < ext.len() {
            let id = ext[i];
            if id == 0 {
                i += 1;
                continue;
            }
            let len = ext[i + 1] as usize;
            if id == twcc_id && len == 2 && i + 4 <= ext.len() {
                return be16(ext, i + 2) as i32;
            }
            i += 2 + len;
        }
    }
    -1
}

/// Classifies a UDP payload (captured part `p`, real length `len`) and fills the RTP/RTCP fields.
fn decode_udp_payload(p: &[u8], len: usize, twcc_id: u8, d: &mut Decoded) {
    d.cls = cls::UDP;
    if p.len() < 2 || len < 2 {
        return;
    }
    let b0 = p[0];
    if b0 < 4 && p.len() >= 8 && be32(p, 4) == 0x2112_A442 {
        d.cls = cls::STUN; // RFC 5389 magic cookie; RFC 7983 demultiplexing: 0-3 STUN
        return;
    }
    if (20..=63).contains(&b0) {
        d.cls = cls::DTLS; // RFC 7983: 20-63 DTLS
        return;
    }
    if (128..=191).contains(&b0) && p.len() >= 8 {
        let pt_byte = p[1];
        if (192..=223).contains(&pt_byte) {
            // RFC 5761: RTCP packet types 192-223 cannot be RTP payload types (with or without the marker bit).
            d.cls = cls::RTCP;
            d.rtp_pt = pt_byte;
            d.ssrc = be32(p, 4);
            return;
        }
        if p.len() < 12 || len < 12 {
            return;
        }
        d.cls = cls::RTP;
        d.rtp_marker = pt_byte & 0x80 != 0;
        d.rtp_pt = pt_byte & 0x7f;
        d.rtp_seq = be16(p, 2);
        d.rtp_ts = be32(p, 4);
        d.ssrc = be32(p, 8);
        let cc = (b0 & 0x0f) as usize;
        let ext_at = 12 + 4 * cc;
        let mut header = Some(ext_at);
        if b0 & 0x10 != 0 {
            header = None; // the extension's length is in the header: unknown when the capture cut it off
            if p.len() >= ext_at + 4 {
                let profile = be16(p, ext_at);
                let words = be16(p, ext_at + 2) as usize;
                let end = (ext_at + 4 + 4 * words).min(p.len());
                d.twcc_seq = find_twcc(&p[ext_at + 4..end], profile, twcc_id);
                header = Some(ext_at + 4 + 4 * words);
            }
        }
        d.rtp_payload_len = match header {
            Some(h) if h <= len => (len - h) as i32,
            _ => -1,
        };
    }
}

/// Decodes one IPv4 packet `ip` (captured bytes from the IP header on).
pub fn decode_ipv4(ip: &[u8], twcc_id: u8) -> Option<(u32, u32, u8, u16, u16, u8, Decoded)> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    if ihl < 20 || ip.len() < ihl {
        return None;
    }
    let tos = ip[1];
    let ip_len = be16(ip, 2);
    let ip_id = be16(ip, 4);
    let frag = be16(ip, 6);
    let proto = ip[9];
    let src = be32(ip, 12);
    let dst = be32(ip, 16);
    let payload_total = (ip_len as usize).saturating_sub(ihl);
    let avail = &ip[ihl..ip.len().min(ihl + payload_total).max(ihl)];
    let key_len = KEY_BYTES.min(payload_total);
    let key_part = &avail[..key_len.min(avail.len())];
    let mut d = Decoded {
        key: fnv1a64(key_part),
        join_key: join_key(key_part, proto),
        key_complete: key_part.len() == key_len,
        cls: cls::OTHER,
        ssrc: 0,
        rtp_seq: 0,
        rtp_ts: 0,
        rtp_pt: 0,
        rtp_marker: false,
        twcc_seq: -1,
        rtp_payload_len: -1,
        tcp_seq: 0,
        tcp_flags: 0,
        sport: 0,
        dport: 0,
        payload_len: payload_total as u32,
    };
    let first_fragment = frag & 0x1fff == 0;
    if first_fragment {
        match proto {
            17 if avail.len() >= 8 => {
                d.sport = be16(avail, 0);
                d.dport = be16(avail, 2);
                d.payload_len = payload_total.saturating_sub(8) as u32;
                decode_udp_payload(&avail[8..], d.payload_len as usize, twcc_id, &mut d);
            }
            6 if avail.len() >= 20 => {
                d.cls = cls::TCP;
                d.sport = be16(avail, 0);
                d.dport = be16(avail, 2);
                d.tcp_seq = be32(avail, 4);
                d.tcp_flags = avail[13];
                let doff = ((avail[12] >> 4) as usize) * 4;
                d.payload_len = payload_total.saturating_sub(doff) as u32;
            }
            1 => d.cls = cls::ICMP,
            _ => {}
        }
    }
    Some((src, dst, proto, ip_len, ip_id, tos, d))
}

/// Returns the IPv4 packet inside a link-layer frame, or None for anything else (ARP, IPv6, ...).
pub fn ipv4_of_frame(frame: &[u8], linktype: u32) -> Option<&[u8]> {
    match linktype {
        LINKTYPE_ETHERNET => {
            if frame.len() < 14 {
                return None;
            }
            let mut et = be16(frame, 12);
            let mut off = 14;
            while (et == 0x8100 || et == 0x88a8) && frame.len() >= off + 4 {
                et = be16(frame, off + 2);
                off += 4;
            }
            (et == 0x0800).then(|| &frame[off..])
        }
        LINKTYPE_RAW | LINKTYPE_IPV4 => Some(frame),
        LINKTYPE_LINUX_SLL => (frame.len() >= 16 && be16(frame, 14) == 0x0800).then(|| &frame[16..]),
        LINKTYPE_LINUX_SLL2 => (frame.len() >= 20 && be16(frame, 0) == 0x0800).then(|| &frame[20..]),
        _ => None,
    }
}
