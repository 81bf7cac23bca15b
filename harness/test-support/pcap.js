// @ts-check
// A minimal pcap reader for tests: an independent view of a capture (no code shared with the analyzer).
import fs from 'node:fs';

/**
 * Yields {t_s, wireLength, src, dst, proto, srcPort, dstPort, udpPayload} for each IPv4 packet of an Ethernet pcap.
 * @param {string} file
 */
export function* readPcap(file) {
  const buf = fs.readFileSync(file);
  const magic = buf.readUInt32LE(0);
  const nano = magic === 0xa1b23c4d;
  if (!nano && magic !== 0xa1b2c3d4) throw new Error(`${file}: not a little-endian pcap (magic ${magic.toString(16)})`);
  let off = 24;
  while (off + 16 <= buf.length) {
    const sec = buf.readUInt32LE(off);
    const frac = buf.readUInt32LE(off + 4);
    const incl = buf.readUInt32LE(off + 8);
    const orig = buf.readUInt32LE(off + 12);
    const pkt = buf.subarray(off + 16, off + 16 + incl);
    off += 16 + incl;
    if (pkt.length < 34 || pkt.readUInt16BE(12) !== 0x0800) continue;
    const ihl = (pkt[14] & 0x0f) * 4;
    const proto = pkt[23];
    const ip = (/** @type {number} */ o) => `${pkt[o]}.${pkt[o + 1]}.${pkt[o + 2]}.${pkt[o + 3]}`;
    const l4 = 14 + ihl;
    const hasPorts = (proto === 6 || proto === 17) && pkt.length >= l4 + 4;
    yield {
      t_s: sec + frac / (nano ? 1e9 : 1e6), wireLength: orig, src: ip(26), dst: ip(30), proto,
      srcPort: hasPorts ? pkt.readUInt16BE(l4) : null, dstPort: hasPorts ? pkt.readUInt16BE(l4 + 2) : null,
      udpPayload: proto === 17 ? pkt.subarray(l4 + 8) : null,
    };
  }
}

/** RTP (RFC 3550 version 2, not RTCP's payload types 200-206) inside a UDP payload. @param {Buffer | null} p */
export function rtpHeader(p) {
  if (!p || p.length < 12 || (p[0] >> 6) !== 2) return null;
  const pt = p[1] & 0x7f;
  if (p[1] >= 192 && p[1] <= 223) return null; // RTCP
  return { pt, seq: p.readUInt16BE(2), ssrc: p.readUInt32BE(8) };
}
