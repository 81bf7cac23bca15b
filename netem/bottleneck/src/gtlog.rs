//! The ground-truth log (docs/bottleneck-log.md): magic, JSON header, then one 64-byte little-endian record a
//! packet, written by a background thread (writer.rs).

use crate::packet::{Event, Packet};
use crate::writer::{Log, LogRecord};
use std::io;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"RTCGTLG1";
pub const RECORD_BYTES: usize = 64;

/// One record, laid out as the table in docs/bottleneck-log.md says.
pub fn encode_record(p: &Packet, event: Event, release_ns: u64) -> [u8; RECORD_BYTES] {
    let forwarded = matches!(event, Event::Forwarded | Event::ForwardedCe);
    let mut r = [0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&p.arrival_ns.to_le_bytes());
    r[8..16].copy_from_slice(&p.dequeue_ns.to_le_bytes());
    r[16..24].copy_from_slice(&(if forwarded { p.tx_end_ns } else { 0 }).to_le_bytes());
    r[24..32].copy_from_slice(&(if forwarded { p.due_ns } else { 0 }).to_le_bytes());
    r[32..40].copy_from_slice(&release_ns.to_le_bytes());
    r[40..48].copy_from_slice(&p.key.to_le_bytes());
    r[48..50].copy_from_slice(&p.ip_len.to_le_bytes());
    r[50..52].copy_from_slice(&p.ip_id.to_le_bytes());
    r[52] = event as u8;
    r[53] = p.band;
    r[54] = p.ecn_in;
    r[55] = p.ip_proto;
    r[56..60].copy_from_slice(&p.queue_packets_at_arrival.to_le_bytes());
    r[60..64].copy_from_slice(&p.queue_bytes_at_arrival.to_le_bytes());
    r
}

pub fn encode_header(direction: &str, config: &serde_json::Value) -> Vec<u8> {
    let json = serde_json::json!({
        "version": 1, "direction": direction, "record_size": RECORD_BYTES, "clock": "CLOCK_REALTIME", "config": config,
    })
    .to_string();
    let mut out = Vec::with_capacity(12 + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

/// Room for this many records between the real-time loop and the writer thread: 8 MiB, 2.6 s at 50k packets/s.
const RING_RECORDS: usize = 1 << 17;

/// One encoded record: encoded on the real-time loop (64 bytes, no allocation), copied out by the writer thread.
#[derive(Clone, Copy)]
pub struct Record(pub [u8; RECORD_BYTES]);

impl Default for Record {
    fn default() -> Record {
        Record([0; RECORD_BYTES])
    }
}

impl LogRecord for Record {
    const RING: usize = RING_RECORDS;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

pub type GroundTruthLog = Log<Record>;

/// The log file of one direction, its header written at once.
pub fn create(path: &Path, direction: &str, config: &serde_json::Value) -> io::Result<GroundTruthLog> {
    Log::with_header(path, &encode_header(direction, config))
}

impl Log<Record> {
    pub fn write_packet(&mut self, p: &Packet, event: Event, release_ns: u64) {
        self.write(Record(encode_record(p, event, release_ns)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::build_udp_packet;

    /// FNV-1a 64 written out from its definition, independent of the fnv crate the product uses.
    fn fnv1a64_by_hand(bytes: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf29ce484222325;
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h
    }

    #[test]
    fn fnv_key_matches_the_published_vectors_and_an_independent_implementation() {
        // Published FNV-1a 64 test vectors (Fowler/Noll/Vo): "" and "a".
        assert_eq!(crate::packet::packet_key(b""), 0xcbf29ce484222325);
        assert_eq!(crate::packet::packet_key(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(crate::packet::packet_key(b"foobar"), 0x85944171f73967e8);
        // The key covers the first 64 bytes after the IP header, no more.
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 4000, 5000, 0, 300, 77);
        let p = Packet::parse(1, 0, d.clone()).unwrap();
        assert_eq!(p.key, fnv1a64_by_hand(&d[20..84]));
        // A short payload: all of it, and not the bytes past the IP total length.
        let mut short = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 4000, 5000, 0, 40, 3);
        let want = fnv1a64_by_hand(&short[20..40]);
        short.extend_from_slice(&[0xee; 6]);
        assert_eq!(Packet::parse(1, 0, short).unwrap().key, want);
    }

    #[test]
    fn record_layout_matches_the_documented_offsets() {
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 4000, 5000, 0x02, 1200, 0xabcd);
        let mut p = Packet::parse(7, 1_000, d).unwrap();
        p.dequeue_ns = 2_000;
        p.tx_end_ns = 3_000;
        p.due_ns = 4_000;
        p.band = 9;
        p.queue_packets_at_arrival = 11;
        p.queue_bytes_at_arrival = 12_345;
        let r = encode_record(&p, Event::ForwardedCe, 4_100);
        let u64_at = |o: usize| u64::from_le_bytes(r[o..o + 8].try_into().unwrap());
        assert_eq!((u64_at(0), u64_at(8), u64_at(16), u64_at(24), u64_at(32)), (1_000, 2_000, 3_000, 4_000, 4_100));
        assert_eq!(u64_at(40), p.key);
        assert_eq!(u16::from_le_bytes([r[48], r[49]]), 1200);
        assert_eq!(u16::from_le_bytes([r[50], r[51]]), 0xabcd);
        assert_eq!((r[52], r[53], r[54], r[55]), (1, 9, 2, 17));
        assert_eq!(u32::from_le_bytes(r[56..60].try_into().unwrap()), 11);
        assert_eq!(u32::from_le_bytes(r[60..64].try_into().unwrap()), 12_345);
        // A drop carries no transmission or due time.
        let r = encode_record(&p, Event::DroppedTail, 1_000);
        assert_eq!(&r[16..32], &[0u8; 16]);
        assert_eq!(r[52], 2);
    }

    #[test]
    fn the_file_holds_the_header_then_every_record_in_order() {
        let path = std::env::temp_dir().join(format!("rtclab-gtlog-test-{}.gtlog", std::process::id()));
        let config = serde_json::json!({"delay_ms": 25});
        let mut log = create(&path, "forward", &config).unwrap();
        let d = build_udp_packet([10, 0, 1, 2], [10, 0, 2, 2], 4000, 5000, 0, 200, 1);
        let p = Packet::parse(1, 0, d).unwrap();
        for i in 0..100_000u64 {
            log.write_packet(&p, Event::Forwarded, i);
        }
        log.close().unwrap();
        assert_eq!(log.lost(), 0);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let header = encode_header("forward", &config);
        assert_eq!(&bytes[..header.len()], &header[..]);
        let records = &bytes[header.len()..];
        assert_eq!(records.len(), 100_000 * RECORD_BYTES);
        for (i, r) in records.chunks(RECORD_BYTES).enumerate() {
            assert_eq!(r, &encode_record(&p, Event::Forwarded, i as u64)[..]);
        }
    }

    #[test]
    fn header_is_magic_length_json() {
        let h = encode_header("forward", &serde_json::json!({"delay_ms": 25}));
        assert_eq!(&h[..8], b"RTCGTLG1");
        let n = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
        assert_eq!(h.len(), 12 + n);
        let v: serde_json::Value = serde_json::from_slice(&h[12..]).unwrap();
        assert_eq!(v["record_size"], 64);
        assert_eq!(v["direction"], "forward");
        assert_eq!(v["clock"], "CLOCK_REALTIME");
        assert_eq!(v["config"]["delay_ms"], 25);
    }
}
