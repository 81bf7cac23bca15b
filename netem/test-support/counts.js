// @ts-check
// What the forward discipline did, the same record under every backend: packets it dropped by AQM and by overflow,
// CE marks, packets each prio band sent. The userspace bottleneck says it packet by packet in its ground-truth log; Linux's
// qdiscs (kernel, uml) in their own counters, read with `tc -s -j qdisc show` in r after the traffic.
import { join } from 'node:path';
import { readGtlog } from './pcap.js';
import { KERNEL_DEVICES } from '../kernel-backend.js';

/** @typedef {{ aqm: number, tail: number, ce: number, bands: number[] }} Counts */

/** The log's event codes (docs/bottleneck.md, "Ground-truth log"). */
const EVENT = { ce: 1, tail: 2, aqm: 3 };

/**
 * Overflow drops of one Linux leaf qdisc, from its own statistics: a fifo and SFQ drop only on overflow; CoDel and
 * FQ-CoDel count theirs as drop_overlimit, PIE as overlimit; every other drop of theirs is the AQM's.
 * @param {any} q one entry of `tc -s -j qdisc show`
 */
function overflowDrops(q) {
  switch (q.kind) {
    case 'pfifo': case 'bfifo': case 'sfq': return q.drops;
    case 'codel': case 'fq_codel': return q.drop_overlimit;
    case 'pie': return q.overlimit;
    default: throw new Error(`no overflow counter known for qdisc ${q.kind}`);
  }
}

/**
 * @param {import('../index.js').Network} net after the traffic, before down
 * @param {string} runDir
 * @returns {Promise<Counts>}
 */
export async function forwardCounts(net, runDir) {
  if (net.info.backend.used === 'userspace') {
    const { header, records } = readGtlog(join(runDir, 'bottleneck-forward.gtlog'));
    const count = (/** @type {number} */ e) => records.filter((r) => r.event === e).length;
    /** @type {number[]} */
    const bands = [];
    // A record's band is its prio band under prio (and its flow queue under the fair-queueing disciplines); Linux
    // counts the packets a band sent, so do we: forwarded and CE-marked ones.
    if (header.config?.qdisc?.kind === 'prio') {
      for (const r of records) if (r.event <= EVENT.ce) bands[r.band] = (bands[r.band] ?? 0) + 1;
    }
    return { aqm: count(EVENT.aqm), tail: count(EVENT.tail), ce: count(EVENT.ce), bands: Array.from(bands, (n) => n ?? 0) };
  }
  const backend = /** @type {import('../kernel-backend.js').KernelBackend} */ (/** @type {unknown} */ (net.backend));
  const dev = KERNEL_DEVICES.forward.dev;
  // The discipline sits under TBF (handle 1:) as 10:, a prio's bands as 20:, 21:, ... (netem/kernel.js).
  // (The device's ingress qdisc feeds the other direction's delay line.)
  const leaves = (await backend.qdiscStats()).filter((q) => q.dev === dev && !['tbf', 'prio', 'ingress'].includes(q.kind));
  const band = (/** @type {any} */ q) => Number.parseInt(q.handle, 16) - 0x20;
  /** @type {number[]} */
  const bands = [];
  for (const q of leaves) if (band(q) >= 0) bands[band(q)] = q.packets;
  const sum = (/** @type {(q: any) => number} */ f) => leaves.reduce((s, q) => s + f(q), 0);
  return {
    aqm: sum((q) => q.drops - overflowDrops(q)),
    tail: sum(overflowDrops),
    ce: sum((q) => q.ecn_mark ?? 0),
    bands: Array.from(bands, (n) => n ?? 0),
  };
}
