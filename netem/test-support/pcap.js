// @ts-check
// Minimal readers for the tests: nanosecond pcap (tcpdump's) and the bottleneck's ground-truth log
// (docs/bottleneck-log.md), joined on the packet key (FNV-1a 64 over the first 64 bytes after the IP header).
import { readFileSync } from 'node:fs';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** @param {Uint8Array} bytes */
export function fnv1a64(bytes) {
  let h = FNV_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK;
  return h;
}

/**
 * @typedef {{ t_ns: bigint, frame_len: number, ip_len: number, ip_id: number, proto: number, src: string,
 *   dst: string, dscp: number, ecn: number, key: bigint, sport: number, dport: number }} Packet
 */

/**
 * IPv4 packets of a nanosecond pcap (Ethernet link type).
 * @param {string} file @returns {Packet[]}
 */
export function readPcap(file) {
  const buf = readFileSync(file);
  if (buf.readUInt32LE(0) !== 0xa1b23c4d) throw new Error(`${file}: not a nanosecond pcap (magic ${buf.readUInt32LE(0).toString(16)})`);
  /** @type {Packet[]} */
  const out = [];
  let off = 24;
  while (off + 16 <= buf.length) {
    const sec = buf.readUInt32LE(off), nsec = buf.readUInt32LE(off + 4), incl = buf.readUInt32LE(off + 8), orig = buf.readUInt32LE(off + 12);
    const data = buf.subarray(off + 16, off + 16 + incl);
    off += 16 + incl;
    if (data.length < 34 || data.readUInt16BE(12) !== 0x0800) continue;
    const ip = data.subarray(14);
    const ihl = (ip[0] & 0x0f) * 4;
    const ip_len = ip.readUInt16BE(2);
    const payload = ip.subarray(ihl, ihl + Math.min(64, ip_len - ihl));
    out.push({
      t_ns: BigInt(sec) * 1000000000n + BigInt(nsec), frame_len: orig, ip_len, ip_id: ip.readUInt16BE(4), proto: ip[9],
      src: ip.subarray(12, 16).join('.'), dst: ip.subarray(16, 20).join('.'), dscp: ip[1] >> 2, ecn: ip[1] & 3,
      key: fnv1a64(payload), sport: payload.length >= 4 ? payload.readUInt16BE(0) : 0, dport: payload.length >= 4 ? payload.readUInt16BE(2) : 0,
    });
  }
  return out;
}

/**
 * @typedef {{ arrival_ns: bigint, dequeue_ns: bigint, tx_end_ns: bigint, due_ns: bigint, release_ns: bigint,
 *   key: bigint, ip_len: number, ip_id: number, event: number, band: number, ecn_in: number, ip_proto: number,
 *   queue_packets: number, queue_bytes: number }} GtRecord
 */

/** @param {string} file @returns {{ header: any, records: GtRecord[] }} */
export function readGtlog(file) {
  const buf = readFileSync(file);
  if (buf.subarray(0, 8).toString('latin1') !== 'RTCGTLG1') throw new Error(`${file}: not a ground-truth log`);
  const n = buf.readUInt32LE(8);
  const header = JSON.parse(buf.subarray(12, 12 + n).toString('utf8'));
  const size = header.record_size ?? 64;
  /** @type {GtRecord[]} */
  const records = [];
  for (let off = 12 + n; off + size <= buf.length; off += size) {
    records.push({
      arrival_ns: buf.readBigUInt64LE(off), dequeue_ns: buf.readBigUInt64LE(off + 8), tx_end_ns: buf.readBigUInt64LE(off + 16),
      due_ns: buf.readBigUInt64LE(off + 24), release_ns: buf.readBigUInt64LE(off + 32), key: buf.readBigUInt64LE(off + 40),
      ip_len: buf.readUInt16LE(off + 48), ip_id: buf.readUInt16LE(off + 50), event: buf[off + 52], band: buf[off + 53],
      ecn_in: buf[off + 54], ip_proto: buf[off + 55], queue_packets: buf.readUInt32LE(off + 56), queue_bytes: buf.readUInt32LE(off + 60),
    });
  }
  return { header, records };
}

/**
 * One-way delays of packets from a to b, matched on (key, ip_id): one entry per packet seen leaving a.
 * @param {Packet[]} a @param {Packet[]} b @param {(p: Packet) => boolean} filter
 */
export function matchOneWay(a, b, filter) {
  /** @type {Map<string, Packet>} */
  const atB = new Map();
  for (const p of b) if (filter(p)) atB.set(`${p.key}:${p.ip_id}`, p);
  return a.filter(filter).map((p) => {
    const q = atB.get(`${p.key}:${p.ip_id}`);
    return { sent: p, received: q ?? null, owd_ms: q ? Number(q.t_ns - p.t_ns) / 1e6 : null };
  });
}

/** @param {number[]} xs @param {number} p in [0, 1] */
export function quantile(xs, p) {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(p * (s.length - 1))))];
}

/**
 * IPv4 header checksums of a pcap's packets: the ones that do not verify (after an ECN rewrite, say).
 * @param {string} file @returns {number} count of IPv4 packets whose header checksum is wrong
 */
export function badIpChecksums(file) {
  const buf = readFileSync(file);
  let bad = 0;
  for (let off = 24; off + 16 <= buf.length;) {
    const incl = buf.readUInt32LE(off + 8);
    const data = buf.subarray(off + 16, off + 16 + incl);
    off += 16 + incl;
    if (data.length < 34 || data.readUInt16BE(12) !== 0x0800) continue;
    const ihl = (data[14] & 0x0f) * 4;
    let sum = 0;
    for (let i = 0; i < ihl; i += 2) sum += data.readUInt16BE(14 + i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    if (sum !== 0xffff) bad++;
  }
  return bad;
}
