// @ts-check
// A Mahimahi trace played by the userspace bottleneck through real namespaces, checked packet by packet: a saturating
// UDP sender of full-size packets (1500 IP bytes, one delivery opportunity each) crosses a short trace started at an
// offset and looping; from the ground-truth log every departure is at an opportunity of the trace, none is used
// twice, none is skipped while a packet waits, and the captures at a and b agree (each packet that left a arrived at b
// at its opportunity + the propagation delay, or was dropped by the queue). The reverse direction plays its own trace.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withNetwork, udpPaced, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { readGtlog, releaseLateness, joinCaptures, percentile } from '../test-support/pcap.js';
import { measure } from '../test-support/measure.js';

const DELAY_MS = 5;
const FULL_SIZE_PAYLOAD = 1472; // + 8 UDP + 20 IP = 1500 IP bytes = 1514 link-layer bytes: one opportunity
/**
 * A 1 s trace with what a cellular trace has: a steady stretch (one opportunity every 2 ms), bursts of three in one
 * ms every 5 ms, a slower stretch, then 200 ms without any opportunity; the last timestamp (1000) is the period.
 */
const FORWARD_TRACE = [
  ...Array.from({ length: 150 }, (_, i) => 2 + 2 * i),
  ...Array.from({ length: 40 }, (_, i) => [305 + 5 * i, 305 + 5 * i, 305 + 5 * i]).flat(),
  ...Array.from({ length: 75 }, (_, i) => 504 + 4 * i),
  1000,
];
const FORWARD_OFFSET_MS = 250;
const REVERSE_TRACE = Array.from({ length: 20 }, (_, i) => 1 + i); // one a ms, period 20
const REVERSE_OFFSET_MS = 7;

/**
 * Mahimahi's LinkQueue walk (src/frontend/link_queue.cc): the next delivery is schedule[i] + base, base growing by
 * the last timestamp at each wraparound; the link's opportunities from the offset on (link time 0 = that trace time)
 * up to until_ms, as absolute ns from t0_ns, with how many fall at each time.
 * @param {number[]} schedule @param {number} offset_ms @param {number} until_ms @param {bigint} t0_ns
 * @returns {Map<bigint, number>}
 */
function opportunities(schedule, offset_ms, until_ms, t0_ns) {
  /** @type {Map<bigint, number>} */
  const at = new Map();
  for (let i = 0, base = 0; ;) {
    const t = schedule[i] + base;
    if (t - offset_ms >= until_ms) return at;
    if (t >= offset_ms) {
      const ns = t0_ns + BigInt(t - offset_ms) * 1_000_000n;
      at.set(ns, (at.get(ns) ?? 0) + 1);
    }
    i = (i + 1) % schedule.length;
    if (i === 0) base += schedule[schedule.length - 1];
  }
}

test('userspace: a trace from an offset, looping, saturated by UDP: every departure on an opportunity, none used twice, none skipped',
  { skip: SKIP_NO_BOTTLENECK, timeout: 60000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rtclab-trace-test-'));
    try {
      const forwardTrace = join(dir, 'forward'), reverseTrace = join(dir, 'reverse');
      writeFileSync(forwardTrace, FORWARD_TRACE.join('\n') + '\n');
      writeFileSync(reverseTrace, REVERSE_TRACE.join('\n') + '\n');
      const scenario = { backend: 'userspace', network: {
        forward: { delay_ms: DELAY_MS, rate: { trace: forwardTrace, trace_offset_ms: FORWARD_OFFSET_MS }, qdisc: { kind: 'fifo', limit_packets: 100 } },
        reverse: { delay_ms: DELAY_MS, rate: { trace: reverseTrace, trace_offset_ms: REVERSE_OFFSET_MS } } } };
      await withNetwork(scenario, 'userspace', async (net, runDir) => {
        await net.startCaptures({ snaplen: 256 });
        // Time 0 of both traces a moment ahead, as at a call's start; the sender starts after it.
        const t0_ms = Date.now() + 300;
        await net.startSchedules(t0_ms);
        while (Date.now() < t0_ms + 50) await new Promise((r) => setTimeout(r, 10));
        // 850 packets/s (10.3 Mbit/s): more than the trace's busiest stretch (600/s), so its queue never empties.
        await udpPaced(net, { count: 2550, interval_ms: 1000 / 850, len: FULL_SIZE_PAYLOAD });
        await new Promise((r) => setTimeout(r, 600)); // the queue drains through the 200 ms gaps into the capture
        await net.stopCaptures();
        await net.down(); // the logs are whole once the bottlenecks exited
        // The trace each bottleneck played is the run directory's copy (docs/run-directory.md).
        assert.equal(readFileSync(join(runDir, 'trace-forward'), 'utf8'), readFileSync(forwardTrace, 'utf8'));
        const t0_ns = BigInt(readFileSync(join(runDir, 'bottleneck-forward.t0'), 'utf8').trim());
        check(t, runDir, t0_ns);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

/** @param {import('node:test').TestContext} t @param {string} runDir @param {bigint} t0_ns */
function check(t, runDir, t0_ns) {
  const until_ms = 10_000;
  const fwd = opportunities(FORWARD_TRACE, FORWARD_OFFSET_MS, until_ms, t0_ns);
  const gtlog = join(runDir, 'bottleneck-forward.gtlog');
  const { records } = readGtlog(gtlog);
  const sent = records.filter((r) => r.arrival_ns >= t0_ns);
  assert.ok(sent.every((r) => r.ip_proto === 17 && r.ip_len === 1500), 'only the sender\'s full-size packets cross forward');
  const forwarded = sent.filter((r) => r.event <= 1);
  const dropped = sent.filter((r) => r.event >= 2);
  assert.ok(forwarded.length > 900, `${forwarded.length} forwarded`); // 346 opportunities a second for 3 s
  assert.ok(dropped.every((r) => r.event === 2), 'drops only at the queue\'s limit');
  // Each departure at an opportunity; no opportunity carries more full-size packets than it offers.
  /** @type {Map<bigint, number>} */
  const used = new Map();
  for (const r of forwarded) {
    assert.ok(fwd.has(r.tx_end_ns), `departure at ${Number(r.tx_end_ns - t0_ns) / 1e6} ms after t0 is no opportunity of the trace`);
    used.set(r.tx_end_ns, (used.get(r.tx_end_ns) ?? 0) + 1);
  }
  for (const [ns, n] of used) assert.ok(n <= /** @type {number} */ (fwd.get(ns)), `${n} packets at ${Number(ns - t0_ns) / 1e6} ms, which offers ${fwd.get(ns)}`);
  // None skipped while a packet waited: no opportunity left unused between a packet's dequeue and its departure.
  const times = [...fwd.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
  for (const r of forwarded) {
    const skipped = times.filter((ns) => ns >= r.dequeue_ns && ns < r.tx_end_ns && (used.get(ns) ?? 0) < /** @type {number} */ (fwd.get(ns)));
    assert.deepEqual(skipped, [], `a packet dequeued at ${Number(r.dequeue_ns - t0_ns) / 1e6} ms waited past unused opportunities`);
  }
  // Saturated: from the first departure to the last, the sender kept the queue busy, so (nearly) every opportunity went.
  const first = forwarded[0].tx_end_ns, last = forwarded[forwarded.length - 1].tx_end_ns;
  const offered = times.filter((ns) => ns >= first && ns <= last).reduce((s, ns) => s + /** @type {number} */ (fwd.get(ns)), 0);
  const usedShare = forwarded.length / offered;
  measure(t, 'trace.userspace.opportunities_used_share', usedShare, 4);
  assert.ok(usedShare > 0.98, `${forwarded.length} of ${offered} opportunities used`);

  // The captures: each packet that left a is the log's; delivered at b at its opportunity + the delay, or dropped.
  const rows = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'), { gtlog })
    .filter((r) => r.direction === 'forward' && r.t_send_ns !== null && r.dport === 5301);
  assert.ok(rows.length >= sent.length * 0.99, `${rows.length} departures at a, ${sent.length} in the log`);
  const delay_ns = BigInt(DELAY_MS) * 1_000_000n;
  /** @type {number[]} */ const late = [], raw = [];
  let onOpportunity = 0, releasedLate = 0;
  for (const row of rows) {
    assert.ok(row.gt !== null, `departure ip_id ${row.ip_id} is not in the log`);
    const r = records[row.gt];
    if (row.status !== 'delivered') {
      assert.equal(r.event, 2, `undelivered departure ip_id ${row.ip_id} was not dropped by the queue`);
      continue;
    }
    assert.ok(r.event <= 1, `delivered departure ip_id ${row.ip_id} was dropped in the log`);
    const atB = /** @type {bigint} */ (row.t_recv_ns);
    assert.ok(atB >= r.tx_end_ns + delay_ns - 10_000n, `ip_id ${row.ip_id} reached b ${Number(r.tx_end_ns + delay_ns - atB) / 1e6} ms before its opportunity + delay`);
    raw.push(Number(atB - r.tx_end_ns - delay_ns) / 1e6);
    // From b's capture, less the release lateness the log itself records (release - due: the host's scheduling, which
    // the run's validity judges from the same log, and no fault of the schedule), the latest opportunity at or before
    // (arrival - delay) is the one the log names.
    const lateness = releaseLateness(r);
    if (lateness > 1_000_000n) releasedLate++;
    const latest = times.filter((ns) => ns <= atB - lateness - delay_ns).pop();
    if (latest === r.tx_end_ns) onOpportunity++;
    late.push(Number(atB - lateness - r.tx_end_ns - delay_ns) / 1e6);
  }
  const delivered = late.length;
  const p95 = percentile(late, 95), rawP95 = percentile(raw, 95);
  t.diagnostic(`${forwarded.length} forwarded, ${dropped.length} dropped; at b: ${onOpportunity} of ${delivered} on their opportunity, arrival - (opportunity + delay + release lateness) p95 ${p95.toFixed(3)} ms (without the lateness ${rawP95.toFixed(3)} ms); ${releasedLate} released over 1 ms late`);
  measure(t, 'trace.userspace.arrival_after_release_p95_ms', p95, 3);
  measure(t, 'trace.userspace.arrival_after_opportunity_p95_ms', rawP95, 3);
  measure(t, 'trace.userspace.released_late_1ms_share', releasedLate / delivered, 4);
  assert.ok(p95 < 1, `p95 arrival - (opportunity + delay + release lateness) ${p95} ms`);
  assert.ok(onOpportunity >= delivered * 0.99, `${onOpportunity} of ${delivered} arrivals at b fall on their opportunity`);

  // The reverse direction (b's ICMP answers to the unanswered datagrams) leaves on its own trace's opportunities.
  const rev = opportunities(REVERSE_TRACE, REVERSE_OFFSET_MS, until_ms, t0_ns);
  const reverse = readGtlog(join(runDir, 'bottleneck-reverse.gtlog')).records.filter((r) => r.arrival_ns >= t0_ns && r.event <= 1);
  assert.ok(reverse.length > 0, 'b answered some datagrams (ICMP port unreachable) through the reverse bottleneck');
  for (const r of reverse) assert.ok(rev.has(r.tx_end_ns), `reverse departure at ${Number(r.tx_end_ns - t0_ns) / 1e6} ms is no opportunity of its trace`);
}
