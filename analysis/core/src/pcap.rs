//! Reads a classic pcap file (microsecond or nanosecond timestamps) and decodes each IPv4 packet into columns:
//! addresses, ports, ECN, the join key, and what the UDP payload is (RTP with its cleartext SRTP header, RTCP, STUN,
//! DTLS). Field meanings follow Wireshark's dissectors (ip, udp, tcp, rtp, rtcp, stun, dtls).

use std::fs::File;
use std::path::Path;

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

const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_LINUX_SLL2: u32 = 276;

/// Largest record we believe; anything above it means the file is corrupt (tcpdump's own limit is 262144).
const MAX_RECORD_BYTES: u32 = 262_144;
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

/// One column per field; row i is the i-th IPv4 packet of the file.
#[derive(Default, Debug)]
pub struct Columns {
    pub frame: Vec<u32>, // 1-based record number in the file (Wireshark's frame.number)
    pub ts_ns: Vec<i64>,
    pub ip_src: Vec<u32>,
    pub ip_dst: Vec<u32>,
    pub proto: Vec<u8>,
    pub ip_len: Vec<u16>,
    pub ip_id: Vec<u16>,
    pub tos: Vec<u8>, // DSCP << 2 | ECN
    pub sport: Vec<u16>,
    pub dport: Vec<u16>,
    pub key: Vec<u64>,           // FNV-1a 64: the ground-truth log's key
    pub join_key: Vec<u64>,      // checksum-blind key for the capture-to-capture join
    pub key_complete: Vec<bool>, // false when the capture cut the packet before the key's bytes ended
    pub cls: Vec<u8>,
    pub ssrc: Vec<u32>, // RTP SSRC, or the RTCP sender's SSRC
    pub rtp_seq: Vec<u16>,
    pub rtp_ts: Vec<u32>,
    pub rtp_pt: Vec<u8>, // RTP payload type, or the first RTCP packet type
    pub rtp_marker: Vec<bool>,
    pub twcc_seq: Vec<i32>, // transport-wide sequence number, -1 when absent
    /// RTP payload bytes after the header and its extensions (SRTP's tag and any padding included), from the UDP
    /// length: an RTX packet carries its original's payload + the 2-byte OSN (RFC 4588), which SRTP encrypts, so
    /// this length is what ties it to the packet it repairs. -1: not RTP, or the capture cut the header short.
    pub rtp_payload_len: Vec<i32>,
    pub tcp_seq: Vec<u32>,
    pub tcp_flags: Vec<u8>,
    pub payload_len: Vec<u32>, // transport payload bytes (UDP/TCP), from the IP header's lengths
}

/// Calls `$m!(field, ...)` with every field of [`Columns`], so code that treats each column alike (reserving them,
/// handing them to Python) names them in one place.
macro_rules! for_each_column {
    ($m:ident) => {
        $m!(
            frame,
            ts_ns,
            ip_src,
            ip_dst,
            proto,
            ip_len,
            ip_id,
            tos,
            sport,
            dport,
            key,
            join_key,
            key_complete,
            cls,
            ssrc,
            rtp_seq,
            rtp_ts,
            rtp_pt,
            rtp_marker,
            twcc_seq,
            rtp_payload_len,
            tcp_seq,
            tcp_flags,
            payload_len
        )
    };
}
pub(crate) use for_each_column;

/// The outcome of reading one file: the columns, plus what went wrong if the file ended badly.
#[derive(Debug)]
pub struct Capture {
    pub cols: Columns,
    pub records: u64,
    pub non_ipv4: u64,
    /// Earliest and latest timestamp of any record (IPv4 or not), ns; None for a capture without records. The
    /// receiving capture's whole span decides whether a missing packet was lost or arrived after it stopped.
    pub span_ns: Option<(i64, i64)>,
    pub linktype: u32,
    pub nanosecond: bool,
    pub snaplen: u32,
    /// Set when reading stopped early (truncated or corrupt file); the columns hold every packet before it.
    pub error: Option<String>,
}

struct Decoded {
    key: u64,
    join_key: u64,
    key_complete: bool,
    cls: u8,
    ssrc: u32,
    rtp_seq: u16,
    rtp_ts: u32,
    rtp_pt: u8,
    rtp_marker: bool,
    twcc_seq: i32,
    rtp_payload_len: i32,
    tcp_seq: u32,
    tcp_flags: u8,
    sport: u16,
    dport: u16,
    payload_len: u32,
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
fn decode_ipv4(ip: &[u8], twcc_id: u8) -> Option<(u32, u32, u8, u16, u16, u8, Decoded)> {
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
fn ipv4_of_frame(frame: &[u8], linktype: u32) -> Option<&[u8]> {
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

fn advise_huge<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let bytes = v.capacity() * std::mem::size_of::<T>();
        let start = v.as_ptr() as usize;
        let aligned = (start + 4095) & !4095;
        if bytes > (4 << 20) && start + bytes > aligned {
            // SAFETY: advice only, on memory this Vec owns; an error leaves the default paging.
            unsafe { libc::madvise(aligned as *mut libc::c_void, start + bytes - aligned, libc::MADV_HUGEPAGE) };
        }
    }
}

/// Decodes a whole pcap held in memory.
pub fn parse_bytes(data: &[u8], twcc_id: u8) -> Result<Capture, String> {
    if data.len() < 24 {
        return Err(format!("not a pcap file: {} bytes, shorter than the 24-byte pcap header", data.len()));
    }
    let magic = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let (swap, nanosecond) = match magic {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        0x0a0d_0d0a => {
            return Err("pcapng is not supported: convert with `editcap -F pcap IN OUT` (tcpdump -w writes pcap)".into())
        }
        m => return Err(format!("not a pcap file: magic {m:#010x}")),
    };
    let rd32 = |i: usize| {
        let v = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        if swap {
            v.swap_bytes()
        } else {
            v
        }
    };
    let snaplen = rd32(16);
    let linktype = rd32(20) & 0x0fff_ffff;
    if !matches!(linktype, LINKTYPE_ETHERNET | LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2)
    {
        return Err(format!("unsupported link type {linktype} (Ethernet, raw IP and Linux cooked captures are read)"));
    }
    let frac_ns: i64 = if nanosecond { 1 } else { 1000 };
    // A guess of the packet count from the file size keeps the columns from reallocating.
    let guess = data.len() / (16 + snaplen.clamp(64, 1600) as usize / 2 + 1);
    let mut c = Columns::default();
    // Transparent huge pages for the columns: a 4 KiB page fault per few hundred packets costs more than parsing them.
    macro_rules! reserve_all { ($($f:ident),*) => { $( c.$f.reserve(guess); advise_huge(&c.$f); )* } }
    for_each_column!(reserve_all);
    let mut off = 24usize;
    let mut records = 0u64;
    let mut non_ipv4 = 0u64;
    let mut span_ns: Option<(i64, i64)> = None;
    let mut error = None;
    while off < data.len() {
        if off + 16 > data.len() {
            error = Some(format!(
                "capture truncated: a partial record header at byte {off} after {records} packets (the writer was interrupted)"
            ));
            break;
        }
        let sec = rd32(off) as i64;
        let frac = rd32(off + 4) as i64;
        let incl = rd32(off + 8);
        if incl > MAX_RECORD_BYTES || (nanosecond && frac >= 1_000_000_000) || (!nanosecond && frac >= 1_000_000) {
            error = Some(format!(
                "capture corrupt: record {} at byte {off} has an impossible header (length {incl}, fraction {frac}); read stopped there",
                records + 1
            ));
            break;
        }
        let start = off + 16;
        let end = start + incl as usize;
        if end > data.len() {
            error = Some(format!(
                "capture truncated: record {} at byte {off} needs {incl} bytes but the file ends after {} (the writer was interrupted)",
                records + 1,
                data.len() - start
            ));
            break;
        }
        records += 1;
        off = end;
        let ts = sec * 1_000_000_000 + frac * frac_ns;
        span_ns = Some(span_ns.map_or((ts, ts), |(lo, hi)| (lo.min(ts), hi.max(ts))));
        let Some(ip) = ipv4_of_frame(&data[start..end], linktype) else {
            non_ipv4 += 1;
            continue;
        };
        let Some((src, dst, proto, ip_len, ip_id, tos, d)) = decode_ipv4(ip, twcc_id) else {
            non_ipv4 += 1;
            continue;
        };
        c.frame.push(records as u32);
        c.ts_ns.push(ts);
        c.ip_src.push(src);
        c.ip_dst.push(dst);
        c.proto.push(proto);
        c.ip_len.push(ip_len);
        c.ip_id.push(ip_id);
        c.tos.push(tos);
        c.sport.push(d.sport);
        c.dport.push(d.dport);
        c.key.push(d.key);
        c.join_key.push(d.join_key);
        c.key_complete.push(d.key_complete);
        c.cls.push(d.cls);
        c.ssrc.push(d.ssrc);
        c.rtp_seq.push(d.rtp_seq);
        c.rtp_ts.push(d.rtp_ts);
        c.rtp_pt.push(d.rtp_pt);
        c.rtp_marker.push(d.rtp_marker);
        c.twcc_seq.push(d.twcc_seq);
        c.rtp_payload_len.push(d.rtp_payload_len);
        c.tcp_seq.push(d.tcp_seq);
        c.tcp_flags.push(d.tcp_flags);
        c.payload_len.push(d.payload_len);
    }
    Ok(Capture { cols: c, records, non_ipv4, span_ns, linktype, nanosecond, snaplen, error })
}

/// Maps the file into memory (so its size never counts against the process) and decodes it.
pub fn parse_file(path: &Path, twcc_id: u8) -> Result<Capture, String> {
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let len = file.metadata().map_err(|e| format!("cannot stat {}: {e}", path.display()))?.len();
    if len == 0 {
        return Err(format!("{} is empty (the capture never started or was not flushed)", path.display()));
    }
    // SAFETY: the file is only read; a writer still appending to it is the harness's bug, and only makes the last
    // record look truncated.
    // populate(): fault the whole file in with one call instead of one fault per 4 KiB page while parsing.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }
        .map_err(|e| format!("cannot map {}: {e}", path.display()))?;
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    parse_bytes(&map, twcc_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap_header() -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        v.extend_from_slice(&2u16.to_le_bytes());
        v.extend_from_slice(&4u16.to_le_bytes());
        v.extend_from_slice(&[0u8; 8]);
        v.extend_from_slice(&65535u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v
    }

    fn udp_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        let ip_len = (20 + 8 + payload.len()) as u16;
        f.extend_from_slice(&[0x45, 0x02]);
        f.extend_from_slice(&ip_len.to_be_bytes());
        f.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 2, 10, 0, 2, 2]);
        f.extend_from_slice(&5000u16.to_be_bytes());
        f.extend_from_slice(&6000u16.to_be_bytes());
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
        f
    }

    fn record(ts_s: u32, ts_ns: u32, frame: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ts_s.to_le_bytes());
        v.extend_from_slice(&ts_ns.to_le_bytes());
        v.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        v.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        v.extend_from_slice(frame);
        v
    }

    fn rtp_with_twcc(seq: u16, twcc: u16) -> Vec<u8> {
        let mut p = vec![0x90, 96];
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&1234u32.to_be_bytes());
        p.extend_from_slice(&0xdead_beefu32.to_be_bytes());
        p.extend_from_slice(&[0xBE, 0xDE, 0, 2]);
        p.extend_from_slice(&[0x22, 0, 0, 1]); // id 2, 3 bytes (abs-send-time)
        p.extend_from_slice(&[0x31]); // id 3, 2 bytes
        p.extend_from_slice(&twcc.to_be_bytes());
        p.push(0);
        p.extend_from_slice(&[0xab; 100]);
        p
    }

    #[test]
    fn decodes_rtp_with_transport_wide_sequence_number() {
        let mut file = pcap_header();
        file.extend(record(1, 5, &udp_frame(&rtp_with_twcc(77, 4242))));
        let cap = parse_bytes(&file, 3).unwrap();
        assert!(cap.error.is_none());
        let c = &cap.cols;
        assert_eq!(c.cls, vec![cls::RTP]);
        assert_eq!(c.ts_ns, vec![1_000_000_005]);
        assert_eq!((c.rtp_seq[0], c.rtp_ts[0], c.ssrc[0], c.rtp_pt[0]), (77, 1234, 0xdead_beef, 96));
        assert_eq!(c.twcc_seq[0], 4242);
        assert_eq!(c.rtp_payload_len[0], 100); // 120 bytes of RTP: a 12-byte header, 8 of extensions
        assert_eq!(c.tos[0] & 3, 2);
        let payload = &udp_frame(&rtp_with_twcc(77, 4242))[34..34 + 64];
        assert_eq!(c.key[0], fnv1a64(payload));
    }

    #[test]
    fn rtp_payload_length_counts_from_the_udp_length_past_csrcs_and_extensions() {
        let mut plain = vec![0x80, 97, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7];
        plain.extend_from_slice(&[0xcd; 52]);
        let mut csrc = vec![0x82, 96, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2];
        csrc.extend_from_slice(&[0xcd; 30]);
        let mut file = pcap_header();
        file.extend(record(1, 0, &udp_frame(&plain)));
        file.extend(record(1, 1, &udp_frame(&csrc)));
        file.extend(record(1, 2, &udp_frame(&rtp_with_twcc(3, 3))[..42 + 14])); // cut before the extension's length
        file.extend(record(1, 3, &udp_frame(&[0x80, 200, 0, 6, 0, 0, 0, 9, 0, 0, 0, 0]))); // RTCP
        let cap = parse_bytes(&file, 3).unwrap();
        assert_eq!(cap.cols.rtp_payload_len, vec![52, 30, -1, -1]);
        // Cut after the extension's length: still known, from the UDP header's length.
        let mut file = pcap_header();
        file.extend(record(1, 0, &udp_frame(&rtp_with_twcc(3, 3))[..42 + 16]));
        assert_eq!(parse_bytes(&file, 3).unwrap().cols.rtp_payload_len, vec![100]);
    }

    #[test]
    fn span_covers_every_record_and_counts_non_ipv4() {
        let mut file = pcap_header();
        let mut arp = vec![0xffu8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        file.extend(record(1, 5, &arp));
        file.extend(record(2, 0, &udp_frame(&[1, 2, 3])));
        file.extend(record(3, 7, &arp));
        let cap = parse_bytes(&file, 3).unwrap();
        assert_eq!(cap.cols.ts_ns, vec![2_000_000_000]);
        assert_eq!(cap.non_ipv4, 2);
        assert_eq!(cap.span_ns, Some((1_000_000_005, 3_000_000_007)));
        assert_eq!(parse_bytes(&pcap_header(), 3).unwrap().span_ns, None);
    }

    #[test]
    fn classifies_rtcp_stun_dtls() {
        let mut file = pcap_header();
        let mut stun = vec![0, 1, 0, 0, 0x21, 0x12, 0xA4, 0x42];
        stun.extend_from_slice(&[0; 12]);
        file.extend(record(1, 0, &udp_frame(&[0x80, 200, 0, 6, 0, 0, 0, 9, 0, 0, 0, 0])));
        file.extend(record(1, 1, &udp_frame(&stun)));
        file.extend(record(1, 2, &udp_frame(&[23, 0xfe, 0xfd, 0, 0, 0, 0])));
        let cap = parse_bytes(&file, 3).unwrap();
        assert_eq!(cap.cols.cls, vec![cls::RTCP, cls::STUN, cls::DTLS]);
        assert_eq!(cap.cols.ssrc[0], 9);
    }

    #[test]
    fn truncated_file_keeps_the_packets_before_the_cut() {
        let mut file = pcap_header();
        file.extend(record(1, 0, &udp_frame(&rtp_with_twcc(1, 1))));
        let second = record(1, 1, &udp_frame(&rtp_with_twcc(2, 2)));
        file.extend_from_slice(&second[..30]);
        let cap = parse_bytes(&file, 3).unwrap();
        assert_eq!(cap.cols.ts_ns.len(), 1);
        assert!(cap.error.unwrap().contains("truncated"));
    }

    #[test]
    fn join_key_ignores_the_transport_checksum_only() {
        let a = udp_frame(&rtp_with_twcc(5, 9));
        let mut b = a.clone();
        b[34 + 6] ^= 0x5a; // UDP checksum
        let mut c = a.clone();
        c[34 + 12] ^= 1; // a byte of the RTP header
        let keys = |f: &[u8]| join_key(&f[34..34 + 64], 17);
        assert_eq!(keys(&a), keys(&b));
        assert_ne!(keys(&a), keys(&c));
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
