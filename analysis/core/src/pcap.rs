//! Reads a classic pcap file (microsecond or nanosecond timestamps) and decodes each IPv4 packet into columns:
//! addresses, ports, ECN, the join key, and what the UDP payload is (packet.rs decodes each packet).

use crate::packet::{
    decode_ipv4, ipv4_of_frame, Decoded, LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
};
use std::fs::File;
use std::path::Path;

/// Largest record we believe; anything above it means the file is corrupt (tcpdump's own limit is 262144).
const MAX_RECORD_BYTES: u32 = 262_144;

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
// The Python bindings (python.rs, feature `python`) name the columns through it; without them nothing outside does.
#[cfg(feature = "python")]
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

/// What the pcap file header says: byte order, timestamp resolution, snap length and link type.
struct FileHeader {
    swap: bool,
    nanosecond: bool,
    snaplen: u32,
    linktype: u32,
}

impl FileHeader {
    fn read(data: &[u8]) -> Result<FileHeader, String> {
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
                return Err(
                    "pcapng is not supported: convert with `editcap -F pcap IN OUT` (tcpdump -w writes pcap)".into()
                )
            }
            m => return Err(format!("not a pcap file: magic {m:#010x}")),
        };
        let snaplen = read_u32(data, 16, swap);
        let linktype = read_u32(data, 20, swap) & 0x0fff_ffff;
        if !matches!(
            linktype,
            LINKTYPE_ETHERNET | LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2
        ) {
            return Err(format!(
                "unsupported link type {linktype} (Ethernet, raw IP and Linux cooked captures are read)"
            ));
        }
        Ok(FileHeader { swap, nanosecond, snaplen, linktype })
    }
}

/// The 32-bit word at byte `i` in the file's byte order.
fn read_u32(data: &[u8], i: usize, swap: bool) -> u32 {
    let v = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    if swap {
        v.swap_bytes()
    } else {
        v
    }
}

impl Columns {
    /// Empty columns with room for `rows`, on transparent huge pages: a 4 KiB page fault per few hundred packets
    /// costs more than parsing them.
    fn with_capacity(rows: usize) -> Columns {
        let mut c = Columns::default();
        macro_rules! reserve_all { ($($f:ident),*) => { $( c.$f.reserve(rows); advise_huge(&c.$f); )* } }
        for_each_column!(reserve_all);
        c
    }

    /// Appends one decoded IPv4 packet: record number `frame`, its timestamp, its IPv4 header's fields and the rest.
    fn push(
        &mut self,
        frame: u32,
        ts_ns: i64,
        (src, dst, proto, ip_len, ip_id, tos, d): (u32, u32, u8, u16, u16, u8, Decoded),
    ) {
        self.frame.push(frame);
        self.ts_ns.push(ts_ns);
        self.ip_src.push(src);
        self.ip_dst.push(dst);
        self.proto.push(proto);
        self.ip_len.push(ip_len);
        self.ip_id.push(ip_id);
        self.tos.push(tos);
        self.sport.push(d.sport);
        self.dport.push(d.dport);
        self.key.push(d.key);
        self.join_key.push(d.join_key);
        self.key_complete.push(d.key_complete);
        self.cls.push(d.cls);
        self.ssrc.push(d.ssrc);
        self.rtp_seq.push(d.rtp_seq);
        self.rtp_ts.push(d.rtp_ts);
        self.rtp_pt.push(d.rtp_pt);
        self.rtp_marker.push(d.rtp_marker);
        self.twcc_seq.push(d.twcc_seq);
        self.rtp_payload_len.push(d.rtp_payload_len);
        self.tcp_seq.push(d.tcp_seq);
        self.tcp_flags.push(d.tcp_flags);
        self.payload_len.push(d.payload_len);
    }
}

/// Decodes a whole pcap held in memory.
pub fn parse_bytes(data: &[u8], twcc_id: u8) -> Result<Capture, String> {
    let FileHeader { swap, nanosecond, snaplen, linktype } = FileHeader::read(data)?;
    let rd32 = |i: usize| read_u32(data, i, swap);
    let frac_ns: i64 = if nanosecond { 1 } else { 1000 };
    // A guess of the packet count from the file size keeps the columns from reallocating.
    let mut c = Columns::with_capacity(data.len() / (16 + snaplen.clamp(64, 1600) as usize / 2 + 1));
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
        let Some(packet) = decode_ipv4(ip, twcc_id) else {
            non_ipv4 += 1;
            continue;
        };
        c.push(records as u32, ts, packet);
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
    use crate::packet::{cls, fnv1a64, join_key};

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
