// @ts-check
// Captures, ground-truth logs and the packet join for the Node tests, through the analyzer's own readers (`python -m
// rtclab.export`, analysis/rtclab/export.py): one pcap reader, one ground-truth log reader and one packet join key
// for the whole project, so a test and the analyzer cannot disagree on them. Percentiles by the analyzer's rule are
// ./percentile.js's (checked against the analyzer's bit for bit), re-exported here.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export { percentile, percentiles } from './percentile.js';

const PYTHON = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));

/**
 * Runs `python -m rtclab.export ...args` and parses its JSON; throws with its message when it fails.
 * @param {string[]} args @param {string} [input] stdin
 */
function exportJson(args, input) {
  const out = execFileSync(PYTHON, ['-m', 'rtclab.export', ...args], {
    input, encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['pipe', 'pipe', 'pipe'],
  });
  return JSON.parse(out);
}

/**
 * Columnar JSON to one object per row; columns named here (decimal strings of 64-bit integers) become BigInt.
 * @param {Record<string, any[]>} columns @param {string[]} big
 * @returns {any[]}
 */
function rows(columns, big) {
  const names = Object.keys(columns);
  const n = names.length ? columns[names[0]].length : 0;
  const bigSet = new Set(big);
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    /** @type {any} */
    const r = {};
    for (const k of names) {
      const v = columns[k][i];
      r[k] = bigSet.has(k) && v !== null ? BigInt(v) : v;
    }
    out[i] = r;
  }
  return out;
}

/**
 * @typedef {{ t_ns: bigint, frame_len: number, ip_len: number, ip_id: number, proto: number, src: string,
 *   dst: string, dscp: number, ecn: number, sport: number, dport: number, cls: string,
 *   rtp: { ssrc: number, seq: number, pt: number } | null, ip_checksum_ok: boolean | null }} Packet
 */

/**
 * IPv4 packets of a capture as the analyzer decodes them (frame_len: the length on the wire; rtp: the RTP header of
 * RTP packets). A capture the analyzer reads only in part (truncated, corrupt) is an error here.
 * @param {string} file @returns {Packet[]}
 */
export function readPcap(file) {
  const doc = exportJson(['packets', file]);
  if (doc.error) throw new Error(`${file}: ${doc.error}`);
  const { rtp_ssrc, rtp_seq, rtp_pt, ...columns } = doc.columns;
  return rows(columns, ['t_ns']).map((p, i) => {
    p.rtp = rtp_ssrc[i] >= 0 ? { ssrc: rtp_ssrc[i], seq: rtp_seq[i], pt: rtp_pt[i] } : null;
    return p;
  });
}

/**
 * @typedef {{ arrival_ns: bigint, dequeue_ns: bigint, tx_end_ns: bigint, due_ns: bigint, release_ns: bigint,
 *   key: bigint, ip_len: number, ip_id: number, event: number, event_name: string, band: number, ecn_in: number,
 *   ip_proto: number, queue_packets: number, queue_bytes: number }} GtRecord
 */

const GT_NS = ['arrival_ns', 'dequeue_ns', 'tx_end_ns', 'due_ns', 'release_ns', 'key'];

/** How late the bottleneck released a packet after its due time (0 when on time), ns. @param {GtRecord} r */
export function releaseLateness(r) {
  return r.release_ns > r.due_ns ? r.release_ns - r.due_ns : 0n;
}

/** The bottleneck's ground-truth log (docs/bottleneck-log.md). @param {string} file @returns {{ header: any, records: GtRecord[] }} */
export function readGtlog(file) {
  const doc = exportJson(['gtlog', file]);
  return { header: doc.header, records: rows(doc.columns, GT_NS) };
}

/**
 * @typedef {{ direction: 'forward' | 'reverse', status: 'delivered' | 'lost' | 'duplicate' | 'unmatched' | 'unknown',
 *   t_send_ns: bigint | null, t_recv_ns: bigint | null, owd_ms: number | null, src: string, dst: string,
 *   proto: number, sport: number, dport: number, ip_len: number, ip_id: number, dscp: number,
 *   ecn_send: number | null, ecn_recv: number | null, cls: string, frame_send: number | null,
 *   frame_recv: number | null, gt: number | null }} Row
 */

/**
 * The analyzer's packet table of a call between a (10.0.1.2) and b (10.0.2.2): one row per packet that left a side
 * (status: delivered, lost, or unknown when the other capture was not running), then one per arrival that matched
 * none, each direction in send order. With gtlog, `gt` is the index in readGtlog(gtlog).records of a forward
 * departure's log record (null: not in the log).
 * @param {string} captureA @param {string} captureB @param {{ gtlog?: string }} [o] @returns {Row[]}
 */
export function joinCaptures(captureA, captureB, o = {}) {
  const doc = exportJson(['join', captureA, captureB, ...(o.gtlog ? ['--gtlog', o.gtlog] : [])]);
  for (const [name, error] of Object.entries(doc.errors)) if (error) throw new Error(`${name}: ${error}`);
  const { owd_ns, ...columns } = doc.columns;
  return rows(columns, ['t_send_ns', 't_recv_ns']).map((r, i) => {
    r.owd_ms = owd_ns[i] === null ? null : owd_ns[i] / 1e6;
    if (!('gt' in r)) r.gt = null;
    return r;
  });
}

/**
 * IPv4 packets of a capture whose header checksum does not verify (after an ECN rewrite, say); a header that cannot
 * be checked counts as bad.
 * @param {string} file @returns {number}
 */
export function badIpChecksums(file) {
  return readPcap(file).filter((p) => p.ip_checksum_ok !== true).length;
}
