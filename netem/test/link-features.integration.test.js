// @ts-check
// Link features on real packets: capacity schedule under every backend, ECN marking with valid checksums, random
// loss and jitter, through the userspace bottleneck and through Linux's own qdiscs in a user-mode Linux guest (uml);
// and the kernel backend's qdisc statistics.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createNetwork } from '../index.js';
import { udpFlow, udpPaced, newRunDir, withNetwork, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { readPcap, readGtlog, joinCaptures, percentiles, badIpChecksums } from '../test-support/pcap.js';
import { forwardCounts } from '../test-support/counts.js';
import { umlUnavailable } from '../uml/guest.js';
import { MAX_STEP_LATE_MS, scheduleApplied } from '../../harness/validity.js';
import { measure } from '../test-support/measure.js';

const SKIP_UML = umlUnavailable() ?? false;
/** Each backend that emulates the whole link (delay, jitter, loss, rate, discipline) and why it is skipped here. */
const BACKENDS = /** @type {const} */ ([['userspace', SKIP_NO_BOTTLENECK], ['uml', SKIP_UML]]);

/**
 * Received wire rate at b (kbit/s) of UDP port 5301 between from_s and to_s after t0.
 * @param {any[]} packets @param {number} t0_ms @param {number} from_s @param {number} to_s
 */
function rateKbit(packets, t0_ms, from_s, to_s) {
  const t0 = BigInt(Math.round(t0_ms * 1e6));
  const inWindow = packets.filter((p) => p.proto === 17 && p.dport === 5301
    && p.t_ns >= t0 + BigInt(Math.round(from_s * 1e9)) && p.t_ns < t0 + BigInt(Math.round(to_s * 1e9)));
  return (inWindow.reduce((s, p) => s + p.frame_len, 0) * 8) / ((to_s - from_s) * 1000);
}

/**
 * The link's service rate at b (kbit/s) of UDP port 5301 between from_s and to_s after t0, over its busy periods:
 * each packet's bytes over the gap since the one before it, gaps longer than `maxGap_ms` (the link idle because the
 * sender on this busy VM stalled and let the queue drain: 1917 kbit/s of a 2000 kbit/s link by rateKbit once, on a
 * new machine's first fresh-clone CI) left out. What the link did, not what the sender offered.
 * @param {any[]} packets @param {number} t0_ms @param {number} from_s @param {number} to_s @param {number} maxGap_ms
 */
function busyRateKbit(packets, t0_ms, from_s, to_s, maxGap_ms) {
  const t0 = BigInt(Math.round(t0_ms * 1e6));
  const xs = packets.filter((p) => p.proto === 17 && p.dport === 5301
    && p.t_ns >= t0 + BigInt(Math.round(from_s * 1e9)) && p.t_ns < t0 + BigInt(Math.round(to_s * 1e9)));
  let bits = 0, ns = 0;
  for (let i = 1; i < xs.length; i++) {
    const gap = Number(xs[i].t_ns - xs[i - 1].t_ns);
    if (gap > maxGap_ms * 1e6) continue;
    bits += xs[i].frame_len * 8;
    ns += gap;
  }
  return ns > 0 ? bits / (ns / 1e9) / 1000 : NaN;
}

/**
 * A 3 Mbit/s UDP flow for 8 s through a link whose capacity steps from 1 to 2 Mbit/s at 4 s, captured at b.
 * @param {'kernel' | 'userspace' | 'uml'} backend
 */
async function playCapacityStep(backend) {
  const scenario = { network: { forward: { delay_ms: 0, rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 4, kbit: 2000 }] }, qdisc: { kind: 'fifo', limit_ms: 100 } }, reverse: { delay_ms: 0 } } };
  // The userspace bottleneck takes its time 0 when it starts, so t0 leaves room for the set-up (it took 6.8 s once
  // under the real tier's three lanes); the kernel and uml backends take theirs when their schedules start, set
  // after the set-up below.
  let t0_ms = Date.now() + 5000;
  const runDir = newRunDir(`sched-${backend}`);
  const net = await createNetwork({ scenario, runDir, backend, t0_ms });
  /** @type {any[]} */
  const events = [];
  let changedAt_s = NaN; // when the backend measured the step to 2 Mbit/s applied (after t0)
  net.on('event', (e) => {
    events.push(e);
    if (e.event === 'capacity_change' && e.kbit === 2000 && typeof e.applied_ns === 'number') changedAt_s = (e.applied_ns / 1e6 - t0_ms) / 1000;
  });
  let flowStart_s = 0; // after t0 when setup on a busy machine overran it
  let toldAhead = false; // startSchedules ran before t0
  try {
    await net.startCaptures({ snaplen: 128 });
    if (backend !== 'userspace') t0_ms = Math.max(t0_ms, Date.now() + (backend === 'uml' ? 3000 : 1000)); // uml stages its steps ahead
    toldAhead = Date.now() < t0_ms;
    await net.startSchedules(t0_ms);
    await new Promise((r) => setTimeout(r, Math.max(0, t0_ms - Date.now())));
    flowStart_s = (Date.now() - t0_ms) / 1000;
    await udpFlow(net, { kbit: 3000, seconds: 8, len: 1000 });
    await net.schedulesSettled();
    await net.stopCaptures();
  } finally {
    await net.down();
  }
  return { runDir, t0_ms, events, changedAt_s, flowStart_s, toldAhead };
}

/**
 * The step's rates before and after, its time on the wire and as the backend measured it applied.
 * @param {import('node:test').TestContext} t @param {'kernel' | 'userspace' | 'uml'} backend
 * @param {Awaited<ReturnType<typeof playCapacityStep>>} played
 */
function checkStepOnTime(t, backend, { runDir, t0_ms, events, changedAt_s, flowStart_s, toldAhead }) {
  const b = readPcap(join(runDir, 'capture-b.pcap'));
  // The rate before 4 s from the second after the flow started (the queue full by then), so a set-up that overran
  // t0 on a busy machine shortens the window instead of counting time before the flow as no traffic.
  const from_s = Math.max(1, flowStart_s + 1);
  measure(t, `step.${backend}.flow_start_s`, flowStart_s, 3);
  assert.ok(from_s <= 3, `set-up overran the schedule's start by ${flowStart_s.toFixed(1)} s: no window before 4 s`);
  // The step is in force when the backend measured it applied (kernel and uml: when its staged tc had applied it; the
  // userspace bottleneck: from its time 0 + 4 s, its own record): the rate after it is measured from a second
  // after 4 s, or half a second after the step was applied when that is later.
  const late_s = changedAt_s - 4;
  const after_from = Math.max(5, changedAt_s + 0.5);
  // 1042-byte frames: 8.3 ms apart at 1 Mbit/s, 4.2 at 2. A gap over 50 ms is the link idle (the sender stalled
  // past the 100 ms queue); a shorter one, a stall of the bottleneck with the packets it held released after it,
  // keeps its time, so the bunch that follows does not read as a faster link (1078 kbit/s with a 25 ms cut once).
  const before = busyRateKbit(b, t0_ms, from_s, 3.8, 50), after = busyRateKbit(b, t0_ms, after_from, 7.5, 50);
  measure(t, `step.${backend}.before_kbit`, before, 1);
  measure(t, `step.${backend}.after_kbit`, after, 1);
  measure(t, `step.${backend}.offered_after_kbit`, rateKbit(b, t0_ms, after_from, 7.5), 1);
  measure(t, `step.${backend}.late_s`, changedAt_s - 4, 3);
  // The step on the wire, from the capture alone: the centre of the first 300 ms window after 3 s with over 1.5 Mbit/s
  // at b (the queue is full, so the rate at b is the link's); a step at 4.0 s crosses it at 4.0. 300 ms, not 100: a
  // 100 ms window after a stall of the VM holds the packets released late too (the step read at 3.00 s once).
  let wire_s = 3;
  while (wire_s < 7.5 && rateKbit(b, t0_ms, wire_s - 0.15, wire_s + 0.15) <= 1500) wire_s += 0.025;
  measure(t, `step.${backend}.wire_s`, wire_s, 3);
  t.diagnostic(`${backend}: ${before.toFixed(0)} kbit/s in ${from_s.toFixed(1)}-3.8 s; the step applied ${late_s.toFixed(3)} s after 4 s, ` +
    `on the wire at ${wire_s.toFixed(2)} s; ${after.toFixed(0)} kbit/s in ${after_from.toFixed(1)}-7.5 s`);
  // On the wire within a quarter second of its time, for every backend (uml: staged ahead, UmlBackend.startSchedules;
  // before that it landed 0.14-0.9 s late).
  // (uml: where the guest applied it, asserted below against the step's measured time, 50-500 ms late here).
  if (backend !== 'uml') assert.ok(wire_s >= 3.9 && wire_s <= 4.25, `the step on the wire at ${wire_s.toFixed(2)} s`);
  assert.ok(Math.abs(before - 1000) < 30, `before: ${before}`);
  assert.ok(Math.abs(after - 2000) < 60, `after: ${after}`);
  assert.ok(events.some((e) => e.event === 'capacity_change' && e.kbit === 2000 && e.ok), 'capacity_change event');
  // The step's applied time, measured by the backend (tc's answer after the change; the bottleneck's own record), within the bound
  // that makes a run invalid (harness/validity.js schedule_applied), and on the same clock as the wire's step.
  const step = events.find((e) => e.event === 'capacity_change' && e.kbit === 2000);
  t.diagnostic(`${backend}: applied ${step.late_ms} ms after its time (scheduled_ns ${step.scheduled_ns}, applied_ns ${step.applied_ns})`);
  measure(t, `step.${backend}.wire_minus_applied_s`, typeof step?.late_ms === 'number' ? wire_s - (4 + step.late_ms / 1000) : null, 3);
  assert.equal(typeof step.applied_ns, 'number', 'applied_ns measured');
  assert.equal(step.scheduled_ns, Math.round((t0_ms + 4000) * 1e6));
  assert.ok(Math.abs(wire_s - (4 + step.late_ms / 1000)) <= 0.15, `on the wire at ${wire_s.toFixed(2)} s, applied at ${4 + step.late_ms / 1000} s`);
  // The userspace bottleneck told its time 0 ahead (its --t0-file) puts the step in force at t0 + 4 s exactly,
  // however late this process's timers fire (a SIGUSR1 sent at t0 by a timer was 120 ms late once under the real
  // tier's three lanes): its own loop's delay, if any, is in its release lateness, not here.
  if (backend === 'userspace' && toldAhead) assert.equal(step.late_ms, 0, `told ahead of t0, the step was ${step.late_ms} ms late`);
  if (backend !== 'uml') {
    assert.ok(step.late_ms >= 0 && step.late_ms <= MAX_STEP_LATE_MS, `late_ms ${step.late_ms}, bound ${MAX_STEP_LATE_MS}`);
  } else {
    // The guest applies a step 50-500 ms late on this machine (bench/bottleneck/RESULTS.md, "Scheduled changes"; the
    // wire agrees): the bound is not met reliably, so what is asserted is that the validity check judges the
    // measured lateness, naming the step when it is over.
    const [, ok, detail] = scheduleApplied([{ direction: 'forward', event: 'capacity_change', at_s: 4, value: 2000 }], events);
    assert.equal(ok, step.late_ms >= 0 && step.late_ms <= MAX_STEP_LATE_MS, detail);
    if (!ok) assert.match(detail, /the forward capacity step to 2000 kbit\/s at 4 s was applied \d+\.\d ms late/);
  }
}

/**
 * The kernel qdiscs' statistics sampled over the run (kernel and uml backends).
 * @param {import('node:test').TestContext} t @param {'kernel' | 'uml'} backend @param {string} runDir
 */
function checkQdiscStats(t, backend, runDir) {
  const stats = readFileSync(join(runDir, 'qdisc-stats.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const last = stats[stats.length - 1].qdiscs;
  const tbf = last.find((/** @type {any} */ q) => q.kind === 'tbf' && q.dev === 'r-eth1');
  const child = last.find((/** @type {any} */ q) => q.kind === 'bfifo' && q.dev === 'r-eth1');
  t.diagnostic(`${stats.length} qdisc samples; bfifo drops ${child?.drops}, tbf rate ${tbf?.options?.rate} bytes/s`);
  measure(t, `step.${backend}.qdisc_samples`, stats.length);
  assert.ok(stats.length >= 10, 'sampled every 500 ms');
  assert.ok(child.drops > 0, 'drops counted');
  assert.equal(tbf.options.rate, 250000, 'TBF changed to 2 Mbit/s');
}

for (const backend of /** @type {const} */ (['kernel', 'userspace', 'uml'])) {
  const skip = backend === 'userspace' ? SKIP_NO_BOTTLENECK : backend === 'uml' ? SKIP_UML : false;
  test(`${backend}: a capacity schedule 1 -> 2 Mbit/s at 4 s is played on time`, { skip, timeout: 60000 }, async (t) => {
    const played = await playCapacityStep(backend);
    checkStepOnTime(t, backend, played);
    if (backend !== 'userspace') checkQdiscStats(t, backend, played.runDir);
  });
}

/**
 * ECT(0) UDP at 1.1x a 1 Mbit/s fq_codel (target 5 ms, ecn): marks do not slow UDP down, so the queue grows (as in
 * Linux); the flow stops early enough for the queue to drain before the captures stop.
 * @param {'userspace' | 'uml'} backend
 */
async function ecnOverload(backend) {
  const scenario = { network: { forward: { delay_ms: 0, rate: { kbit: 1000 }, qdisc: { kind: 'fq_codel', target_ms: 5, ecn: true } }, reverse: { delay_ms: 0 } } };
  return withNetwork(scenario, backend, async (net, runDir) => {
    await net.startCaptures({ snaplen: 128 });
    await udpFlow(net, { kbit: 1100, seconds: 4, len: 1000, tos: 0x02 });
    await new Promise((r) => setTimeout(r, 1500));
    await net.stopCaptures();
    const counts = await forwardCounts(net, runDir);
    const flow = (/** @type {any} */ p) => p.proto === 17 && p.dport === 5301;
    const ceAtB = readPcap(join(runDir, 'capture-b.pcap')).filter((p) => flow(p) && p.ecn === 3).length;
    return { runDir, counts, ceAtB, badA: badIpChecksums(join(runDir, 'capture-a.pcap')), badB: badIpChecksums(join(runDir, 'capture-b.pcap')) };
  });
}

for (const [backend, skip] of BACKENDS) {
  test(`${backend}: fq_codel with ecn marks ECT packets CE instead of dropping them, checksums valid`, { skip, timeout: 60000 }, async (t) => {
    const r = await ecnOverload(backend);
    t.diagnostic(`${backend}: ${JSON.stringify(r.counts)}; ${r.ceAtB} with CE at b; bad IP checksums a ${r.badA} b ${r.badB}`);
    assert.ok(r.counts.ce > 0, 'CE marks');
    assert.equal(r.ceAtB, r.counts.ce, 'every mark the discipline counts arrives at b, and no other');
    assert.equal(r.counts.aqm, 0, 'ECT packets are marked, not dropped');
    assert.equal(r.badB, 0, 'marked packets carry a fixed checksum');
    if (backend === 'userspace') ecnAgreesWithLog(t, r.runDir);
  });
}

/**
 * The userspace bottleneck's own account of the same run: every CE packet at b is a mark in its log, and no ECT
 * packet was dropped by the AQM.
 * @param {import('node:test').TestContext} t @param {string} runDir
 */
function ecnAgreesWithLog(t, runDir) {
  const gtlog = join(runDir, 'bottleneck-forward.gtlog');
  const { records } = readGtlog(gtlog);
  const udp = records.filter((x) => x.ip_proto === 17 && x.ecn_in === 2);
  // The flow's packets that arrive at b with CE, each with its log record (`gt`) as the analyzer joins them; an
  // arrival that left no departure at a has none, and counts as not marked.
  const ceAtB = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'), { gtlog })
    .filter((x) => x.direction === 'forward' && x.proto === 17 && x.dport === 5301 && x.ecn_recv === 3);
  const notInLog = ceAtB.filter((x) => x.gt === null || records[x.gt].event !== 1);
  if (notInLog.length) {
    t.diagnostic(`CE at b but not marked in the log: ${notInLog.length}; their log records: ${JSON.stringify(notInLog.slice(0, 3).map((x) => (x.gt === null ? null : records[x.gt])), (_, v) => typeof v === 'bigint' ? String(v) : v)}`);
  }
  t.diagnostic(`log: ${udp.length} ECT UDP packets, ${udp.filter((x) => x.event === 1).length} CE-marked, ${udp.filter((x) => x.event === 3).length} AQM drops`);
  assert.equal(notInLog.length, 0, 'every CE packet at b was marked by the bottleneck');
  assert.equal(udp.filter((x) => x.event === 3).length, 0, 'ECT packets are marked, not dropped');
}

for (const [backend, skip] of BACKENDS) {
  test(`${backend}: random loss drops about loss_percent`, { skip, timeout: 60000 }, async (t) => {
    const scenario = { network: { forward: { delay_ms: 5, loss_percent: 10 }, reverse: { delay_ms: 5 } } };
    const runDir = await withNetwork(scenario, backend, async (net, dir) => {
      await net.startCaptures({ snaplen: 128 });
      // Not iperf3: its TCP control connection crosses the same 10% loss and can stall past the test's timeout.
      await udpPaced(net, { count: 2000, interval_ms: 2, len: 500 });
      await new Promise((r) => setTimeout(r, 300));
      await net.stopCaptures();
      return dir;
    });
    const flow = (/** @type {any} */ p) => p.proto === 17 && p.dst === '10.0.2.2';
    const sent = readPcap(join(runDir, 'capture-a.pcap')).filter(flow).length;
    const lost = 1 - readPcap(join(runDir, 'capture-b.pcap')).filter(flow).length / sent;
    t.diagnostic(`${backend}: ${sent} UDP packets sent, ${(100 * lost).toFixed(1)}% lost`);
    assert.equal(sent, 2000);
    // 10% of 2000 has a standard deviation of 0.67%: these bounds are 4.5 of them.
    assert.ok(lost > 0.07 && lost < 0.13, `loss ${lost}`);
    if (backend === 'userspace') {
      // The bottleneck's own account: every loss the captures show is a random loss in its log.
      const { records } = readGtlog(join(runDir, 'bottleneck-forward.gtlog'));
      const udp = records.filter((r) => r.ip_proto === 17);
      assert.equal(udp.filter((r) => r.event === 4).length, Math.round(lost * sent), 'log\'s random losses = the captures\'');
    }
  });
}

for (const [backend, skip] of BACKENDS) {
  test(`${backend}: jitter spreads one-way delay over [delay, delay + jitter] and keeps packet order`, { skip, timeout: 60000 }, async (t) => {
    const scenario = { network: { forward: { delay_ms: 10, jitter_ms: 10 }, reverse: { delay_ms: 0 } } };
    await withNetwork(scenario, backend, async (net, runDir) => {
      await net.startCaptures({ snaplen: 128 });
      await udpFlow(net, { kbit: 1000, seconds: 3, len: 500 });
      await new Promise((r) => setTimeout(r, 300));
      await net.stopCaptures();
      const flow = (/** @type {any} */ p) => p.proto === 17 && p.dport === 5301;
      const a = readPcap(join(runDir, 'capture-a.pcap')).filter(flow);
      const b = readPcap(join(runDir, 'capture-b.pcap')).filter(flow);
      // The flow's rows of the analyzer's join, in send order; arrivals that matched no departure are rows too.
      const joined = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'))
        .filter((r) => r.direction === 'forward' && flow(r));
      const delivered = joined.filter((r) => r.status === 'delivered');
      const owd = delivered.map((r) => /** @type {number} */ (r.owd_ms));
      // Reordering: in b's capture order (frame_recv), a packet sent before the one that arrived just before it.
      const rank = new Map(delivered.map((r, i) => [r, i]));
      const arrivals = [...delivered].sort((x, y) => /** @type {number} */ (x.frame_recv) - /** @type {number} */ (y.frame_recv));
      const reordered = arrivals.filter((r, i) => i > 0 && /** @type {number} */ (rank.get(r)) < /** @type {number} */ (rank.get(arrivals[i - 1]))).length;
      const [p50, p90, p99] = percentiles(owd, [50, 90, 99]);
      t.diagnostic(`${b.length} packets: one-way delay min ${Math.min(...owd).toFixed(2)} p50 ${p50.toFixed(2)} p90 ${p90.toFixed(2)} p99 ${p99.toFixed(2)} max ${Math.max(...owd).toFixed(2)} ms, ${reordered} reordered`);
      measure(t, `jitter.${backend}.min_owd_ms`, Math.min(...owd), 3);
      measure(t, `jitter.${backend}.p90_owd_ms`, p90, 3);
      assert.equal(b.length, a.length);
      assert.equal(delivered.length, joined.length, 'every packet that left a arrived at b, and nothing else did');
      assert.ok(Math.min(...owd) >= 10 && Math.min(...owd) < 11, `min ${Math.min(...owd)}`);
      // The top is delay + jitter. Judged at p90: this VM stalls a release by 0.1-0.2 s now and then (CI runs of
      // 2026-11-23/24), which would hold more than 1% of this 3 s flow above it; p99 and the maximum are reported.
      assert.ok(p90 > 16 && p90 < 21, `p90 ${p90}`);
      assert.equal(reordered, 0);
    });
  });
}

for (const [backend, skip] of BACKENDS) {
  test(`${backend}: a delay schedule 25 -> 75 -> 10 ms steps the one-way delay on time and keeps packet order`, { skip, timeout: 60000 }, async (t) => {
    const scenario = { network: { forward: { delay_ms: 25, delay_schedule: [{ at_s: 2, delay_ms: 75 }, { at_s: 4, delay_ms: 10 }] },
      reverse: { delay_ms: 0 } } };
    let t0_ms = Date.now() + (backend === 'uml' ? 9000 : 2500); // schedules start after setup (a guest boots in 5-6 s)
    const runDir = newRunDir(`delay-sched-${backend}`);
    const net = await createNetwork({ scenario, runDir, backend, t0_ms });
    /** @type {any[]} */
    const events = [];
    net.on('event', (e) => events.push(e));
    let toldAhead = false; // startSchedules ran before t0
    try {
      await net.startCaptures({ snaplen: 128 });
      if (backend !== 'userspace') t0_ms = Math.max(t0_ms, Date.now() + (backend === 'uml' ? 3000 : 1000)); // uml stages its steps ahead
      toldAhead = Date.now() < t0_ms;
      await net.startSchedules(t0_ms);
      await new Promise((r) => setTimeout(r, Math.max(0, t0_ms - Date.now())));
      await udpFlow(net, { kbit: 400, seconds: 6, len: 500 }); // 100 packets a second
      await new Promise((r) => setTimeout(r, 300));
      await net.schedulesSettled();
      await net.stopCaptures();
    } finally {
      await net.down();
    }
    const flow = (/** @type {any} */ p) => p.proto === 17 && p.dport === 5301;
    const delivered = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'))
      .filter((r) => r.direction === 'forward' && flow(r) && r.status === 'delivered');
    const t0 = BigInt(Math.round(t0_ms * 1e6));
    const sentAt = (/** @type {any} */ r) => Number(BigInt(r.t_send_ns) - t0) / 1e9;
    const owdIn = (/** @type {number} */ lo, /** @type {number} */ hi) =>
      delivered.filter((r) => sentAt(r) >= lo && sentAt(r) < hi).map((r) => /** @type {number} */ (r.owd_ms));
    // Away from the steps by a quarter second: the step may land that late on the wire (as the rate's, above).
    const [before, during, after] = [owdIn(0.5, 1.75), owdIn(2.25, 3.75), owdIn(4.25, 5.5)];
    const range = (/** @type {number[]} */ xs) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)} ms (${xs.length})`;
    t.diagnostic(`${backend}: one-way delay ${range(before)} before 2 s, ${range(during)} in 2-4 s, ${range(after)} after 4 s`);
    for (const [name, xs] of /** @type {const} */ ([['before', before], ['during', during], ['after', after]])) {
      measure(t, `delay_step.${backend}.${name}_p50_ms`, xs.length ? percentiles(xs, [50])[0] : null, 3);
    }
    for (const [xs, want] of /** @type {const} */ ([[before, 25], [during, 75], [after, 10]])) {
      assert.ok(xs.length > 50, `packets in the window: ${xs.length}`);
      assert.ok(percentiles(xs, [50])[0] >= want && percentiles(xs, [50])[0] < want + 2, `median ${percentiles(xs, [50])[0]}, want ${want}`);
    }
    // After the step down, no packet overtakes the one ahead of it: arrivals at b in send order.
    const recv = delivered.map((r) => BigInt(/** @type {bigint} */ (r.t_recv_ns)));
    assert.ok(recv.every((x, i) => i === 0 || x >= recv[i - 1]), 'reordered after the lower step');
    for (const ms of [75, 10]) {
      const e = events.find((x) => x.event === 'delay_change' && x.delay_ms === ms);
      measure(t, `delay_step.${backend}.to${ms}_late_ms`, e?.late_ms, 3);
      assert.ok(e?.ok, `delay_change to ${ms} ms`);
      assert.ok(typeof e.applied_ns === 'number' && e.late_ms >= 0, `delay_change to ${ms} ms applied ${e.late_ms} ms late`);
      // userspace, told ahead of t0: exactly on time (see the capacity schedule's test); uml: see that test too.
      if (backend === 'userspace' && toldAhead) assert.equal(e.late_ms, 0, `told ahead of t0, delay_change to ${ms} ms was ${e.late_ms} ms late`);
      if (backend !== 'uml') assert.ok(e.late_ms <= MAX_STEP_LATE_MS, `delay_change to ${ms} ms applied ${e.late_ms} ms late`);
    }
  });
}
