// @ts-check
// The fifo + rate path through real namespaces: the userspace bottleneck's rate and DropTail buffer, the kernel
// backend's TBF + bfifo on the same scenario (conformance) on this host's kernel and on Linux's in a user-mode
// Linux guest (uml), and the ground-truth log against the captures.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withNetwork, udpFlow, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { readPcap, readGtlog, releaseLateness, joinCaptures, percentile, percentiles } from '../test-support/pcap.js';
import { umlUnavailable } from '../uml/guest.js';
import { measure } from '../test-support/measure.js';

const KBIT = 1000;
const SECONDS = 20; // with 10 s, one ~200 ms stall of a release (CI, 2026-11-23) was over 1% of the packets: p99 failed
/** 1 Mbit/s, fifo 300 ms (37500 bytes), no propagation delay: the same link under both backends. */
const scenario = (delay_ms = 0) => ({
  network: { forward: { delay_ms, rate: { kbit: KBIT }, qdisc: { kind: 'fifo', limit_ms: 300 } }, reverse: { delay_ms } },
  capture: { snaplen: 256 },
});

/**
 * UDP at twice the link rate for SECONDS; returns the received wire rate at b and the queuing delays.
 * Queuing delay of a packet = its one-way delay minus the smallest one-way delay of the flow.
 * @param {'kernel' | 'userspace' | 'uml'} backend
 */
async function overload(backend) {
  return withNetwork(scenario(), backend, async (net, runDir) => {
    await net.startCaptures({ snaplen: 256 });
    // 200-byte datagrams (242-byte frames, 1.9 ms at 1 Mbit/s): the buffer's 37500 bytes fill to within one frame,
    // so the delay of a packet that finds it full is within 2 ms of 300 ms whatever the arrival phase.
    await udpFlow(net, { kbit: 2 * KBIT, seconds: SECONDS, len: 200 });
    await new Promise((r) => setTimeout(r, 500)); // let the queue drain into the capture
    const counts = await net.stopCaptures();
    const isFlow = (/** @type {any} */ p) => p.proto === 17 && p.dport === 5301;
    const capA = join(runDir, 'capture-a.pcap'), capB = join(runDir, 'capture-b.pcap');
    const atB = readPcap(capB).filter(isFlow);
    const bytes = atB.slice(1).reduce((s, p) => s + p.frame_len, 0);
    const rate_kbit = (bytes * 8) / (Number(atB[atB.length - 1].t_ns - atB[0].t_ns) / 1e6);
    // The same rate per whole second from the first arrival, for a median that one stall of the VM cannot move.
    /** @type {number[]} */ const perSecond = [];
    for (const p of atB) {
      const s = Math.floor(Number(p.t_ns - atB[0].t_ns) / 1e9);
      perSecond[s] = (perSecond[s] ?? 0) + (p.frame_len * 8) / KBIT;
    }
    const median_rate_kbit = percentile(Array.from(perSecond.slice(0, -1), (x) => x ?? 0), 50); // the last second is partial
    // The flow's packets that left a, joined to their arrivals at b by the analyzer (rtclab.export join).
    const departures = joinCaptures(capA, capB).filter((r) => r.direction === 'forward' && r.t_send_ns !== null && isFlow(r));
    const owd = departures.filter((r) => r.owd_ms !== null).map((r) => /** @type {number} */ (r.owd_ms));
    const base_ms = Math.min(...owd); // the first packets pass a full token bucket without waiting
    const qdelay = owd.map((x) => x - base_ms);
    return { runDir, counts, rate_kbit, median_rate_kbit, p50_qdelay_ms: percentile(qdelay, 50), max_qdelay_ms: Math.max(...qdelay), p99_qdelay_ms: percentile(qdelay, 99),
      p90_qdelay_ms: percentile(qdelay, 90), isFlow,
      sent: departures.length, received: atB.length };
  });
}

/** @type {Awaited<ReturnType<typeof overload>> | null} */
let userspace = null;

// The maximum queuing delay is pinned by high percentiles, because in overload nearly every packet finds the buffer
// full: the bottleneck's own account (log: tx_end - arrival, p99.9) and the captures' (p99). The maxima hold this
// VM's worst scheduling stalls (0.5-6 ms here, more with other work on the 2 cores) and are reported, not asserted.
test('userspace: UDP at 2 Mbit/s through 1 Mbit/s fifo 300 ms: wire rate within 2%, max queuing delay 300 +- 3 ms',
  { skip: SKIP_NO_BOTTLENECK, timeout: 60000, claim: 'userspace-overload' }, async (t) => {
    userspace = await overload('userspace');
    const u = userspace;
    const { records } = readGtlog(join(u.runDir, 'bottleneck-forward.gtlog'));
    const logDelays = records.filter((r) => r.event <= 1).map((r) => Number(r.tx_end_ns - r.arrival_ns) / 1e6);
    const logMax_ms = Math.max(...logDelays), logP999_ms = percentile(logDelays, 99.9);
    t.diagnostic(`userspace: rate ${u.rate_kbit.toFixed(1)} kbit/s, queuing delay at the captures p99 ${u.p99_qdelay_ms.toFixed(2)} max ${u.max_qdelay_ms.toFixed(2)} ms, in the log p99.9 ${logP999_ms.toFixed(2)} max ${logMax_ms.toFixed(2)} ms; sent ${u.sent}, received ${u.received}, capture drops a ${u.counts.a.dropped_by_kernel} b ${u.counts.b.dropped_by_kernel}`);
    measure(t, 'fifo.userspace.rate_kbit', u.rate_kbit, 3);
    measure(t, 'fifo.userspace.log_p999_ms', logP999_ms, 3);
    measure(t, 'fifo.userspace.capture_p90_ms', u.p90_qdelay_ms, 3);
    // What the kernel's and the guest's conformance tests compare with (their _diff_pct).
    measure(t, 'fifo.userspace.median_rate_kbit', u.median_rate_kbit, 3);
    measure(t, 'fifo.userspace.p50_qdelay_ms', u.p50_qdelay_ms, 3);
    assert.ok(Math.abs(u.rate_kbit - KBIT) / KBIT < 0.02, `rate ${u.rate_kbit} kbit/s`);
    assert.ok(Math.abs(logP999_ms - 300) < 3, `p99.9 queuing delay in the log ${logP999_ms} ms`);
    // At the captures, p90: the VM stalls a release now and then by 0.1-0.2 s (CI, 2026-11-23: 1% of a 10 s flood),
    // and nearly every packet of the overload finds the buffer full, so p90 is the full buffer's delay too.
    assert.ok(Math.abs(u.p90_qdelay_ms - 300) < 3, `p90 queuing delay at the captures ${u.p90_qdelay_ms} ms`);
    assert.equal(u.counts.a.dropped_by_kernel, 0);
    assert.equal(u.counts.b.dropped_by_kernel, 0);
  });

test('userspace: the ground-truth log agrees with the captures', { skip: SKIP_NO_BOTTLENECK, timeout: 30000, claim: 'userspace-overload' }, async (t) => {
  assert.ok(userspace, 'needs the userspace overload run above');
  const { runDir, isFlow } = userspace;
  // Read once the network is down (the bottleneck has flushed its whole log): the flow's departures from a, each
  // with its arrival at b and its log record (`gt`), as the analyzer joins them.
  const gtlog = join(runDir, 'bottleneck-forward.gtlog');
  const { header, records } = readGtlog(gtlog);
  assert.equal(header.direction, 'forward');
  const departures = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'), { gtlog })
    .filter((r) => r.direction === 'forward' && r.t_send_ns !== null && isFlow(r));
  const inLog = departures.filter((d) => d.gt !== null);
  assert.ok(inLog.length >= departures.length * 0.99, `log has ${inLog.length} of the ${departures.length} packets that left a`);
  const rec = (/** @type {typeof departures[number]} */ d) => records[/** @type {number} */ (d.gt)];
  const dropped = inLog.filter((d) => rec(d).event >= 2);
  const forwarded = inLog.filter((d) => rec(d).event <= 1);
  assert.ok(dropped.length > 0, 'an overload must drop');
  for (const d of dropped) assert.notEqual(d.status, 'delivered', `dropped packet ip_id ${d.ip_id} (event ${rec(d).event}) arrived at b`);
  const delay_ns = BigInt(Math.round(header.config.delay_ms * 1e6));
  /** @type {number[]} */ const modelErr = [];
  /** @type {number[]} */ const releaseErr = [];
  for (const d of forwarded) {
    const r = rec(d);
    assert.ok(d.owd_ms !== null, `forwarded packet ip_id ${d.ip_id} (sent at ${d.t_send_ns} ns) missing at b`);
    const owd = d.owd_ms;
    // The model's time, plus the release lateness the log records (the host's scheduling: the run's validity judges
    // it from the same log), against the wire's.
    const lateness = releaseLateness(r);
    modelErr.push(Math.abs(owd - Number(r.dequeue_ns - r.arrival_ns + (r.tx_end_ns - r.dequeue_ns) + delay_ns + lateness) / 1e6));
    releaseErr.push(Math.abs(owd - Number(r.release_ns - r.arrival_ns) / 1e6));
  }
  const [modelP95] = percentiles(modelErr, [95]);
  measure(t, 'fifo.userspace.model_err_p95_ms', modelP95, 4);
  const q = (/** @type {number[]} */ xs) => {
    const [p50, p95, p99] = percentiles(xs, [50, 95, 99]);
    return `p50 ${p50.toFixed(3)} p95 ${p95.toFixed(3)} p99 ${p99.toFixed(3)} max ${Math.max(...xs).toFixed(3)} ms`;
  };
  t.diagnostic(`${forwarded.length} forwarded, ${dropped.length} dropped; |OWD - (sojourn + tx + delay + lateness)| ${q(modelErr)}; |OWD - (release - arrival)| ${q(releaseErr)}`);
  // Sojourn + transmission + delay + the logged release lateness holds within 0.2 ms for 95% of packets even with
  // other work on the 2 cores (0.07-0.12 ms without the lateness term on one machine; 0.18 on a slower one, where
  // late releases made most of it); the tail is veth/softirq scheduling on the VM (reported above, not asserted).
  assert.ok(modelP95 < 0.2, `p95 |OWD - (sojourn + tx + delay + lateness)| ${modelP95} ms`);
});

test('userspace: the stats\' release-lateness counters equal the log\'s release - due, packet for packet', { skip: SKIP_NO_BOTTLENECK, timeout: 30000, claim: 'userspace-overload' }, async (t) => {
  assert.ok(userspace, 'needs the userspace overload run above');
  const { runDir } = userspace;
  const { records } = readGtlog(join(runDir, 'bottleneck-forward.gtlog'));
  const late = records.filter((r) => r.event <= 1).map(releaseLateness);
  const over = (/** @type {bigint} */ ns) => late.filter((x) => x > ns).length;
  // The last line is written at exit, after the last verdict: it counts the whole run, as the log does.
  const stats = JSON.parse(readFileSync(join(runDir, 'bottleneck-forward.stats.jsonl'), 'utf8').trimEnd().split('\n').pop() ?? '');
  const max_ms = Number(late.reduce((m, x) => (x > m ? x : m), 0n)) / 1e6;
  t.diagnostic(`${late.length} forwarded: late > 1 ms ${over(1_000_000n)}, > 10 ms ${over(10_000_000n)}, > 100 ms ${over(100_000_000n)}, max ${max_ms.toFixed(3)} ms`);
  assert.equal(stats.forwarded, late.length);
  assert.deepEqual([stats.released_late_1ms, stats.released_late_10ms, stats.released_late_100ms],
    [over(1_000_000n), over(10_000_000n), over(100_000_000n)]);
  assert.ok(Math.abs(stats.max_lateness_ms - max_ms) < 1e-6, `max lateness ${stats.max_lateness_ms} vs ${max_ms} ms`);
});

/**
 * Linux's TBF + bfifo on the same overload, by the medians: against the userspace run above when this process ran it,
 * else (the uml lane of scripts/test.sh runs the guest's tests apart) against the model: the link's rate, and the
 * full buffer's 300 ms less at most one 242-byte frame (1.9 ms).
 * @param {import('node:test').TestContext} t @param {'kernel' | 'uml'} backend
 */
async function conformance(t, backend) {
  const k = await overload(backend);
  const u = userspace;
  const show = (/** @type {typeof k} */ r) => `rate ${r.rate_kbit.toFixed(1)} kbit/s (median second ${r.median_rate_kbit.toFixed(1)}), queuing delay p50 ${r.p50_qdelay_ms.toFixed(2)} p90 ${r.p90_qdelay_ms.toFixed(2)} p99 ${r.p99_qdelay_ms.toFixed(2)} max ${r.max_qdelay_ms.toFixed(2)} ms`;
  t.diagnostic(`${backend}: ${show(k)}; ${u ? `userspace: ${show(u)}` : 'against the model'}`);
  // Medians: this VM stalls now and then under TBF as under the userspace bottleneck. In a CI run (2026-11-24) a bad
  // spell held over 10% of the kernel run's packets past 320 ms (p99 549, max 575 ms) and cost 3% of its average
  // rate, while the userspace run beside it was steady: a comparison of the two qdiscs, not of the VM's worst
  // moments. In overload nearly every packet finds the buffer full, so the median is the full buffer's delay.
  const rate = u ? u.median_rate_kbit : KBIT, qdelay = u ? u.p50_qdelay_ms : 299;
  measure(t, `fifo.${backend}.median_rate_kbit`, k.median_rate_kbit, 3);
  measure(t, `fifo.${backend}.p50_qdelay_ms`, k.p50_qdelay_ms, 3);
  // The differences asserted, signed, against the userspace run when this process ran it, else the model.
  measure(t, `fifo.${backend}.median_rate_diff_pct`, (100 * (k.median_rate_kbit - rate)) / rate, 3);
  measure(t, `fifo.${backend}.p50_qdelay_diff_pct`, (100 * (k.p50_qdelay_ms - qdelay)) / qdelay, 3);
  assert.ok(Math.abs(k.median_rate_kbit - rate) / rate < 0.03, `median rates ${k.median_rate_kbit} vs ${rate}`);
  assert.ok(Math.abs(k.p50_qdelay_ms - qdelay) / qdelay < 0.03, `queuing delay p50 ${k.p50_qdelay_ms} vs ${qdelay}`);
  assert.equal(k.counts.b.dropped_by_kernel, 0);
}

test('kernel TBF + bfifo gives the userspace backend\'s rate and full-buffer queuing delay within 3% (medians)',
  { skip: SKIP_NO_BOTTLENECK, timeout: 60000, claim: 'userspace-overload' }, (t) => {
    assert.ok(userspace, 'needs the userspace overload run above');
    return conformance(t, 'kernel');
  });

test('uml: Linux\'s TBF + bfifo in the guest gives the userspace backend\'s (or the model\'s) rate and full-buffer queuing delay within 3% (medians)',
  { skip: umlUnavailable() ?? false, timeout: 80000 }, (t) => conformance(t, 'uml'));
