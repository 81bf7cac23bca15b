// @ts-check
// A chain of two bottlenecks (network.hops) through real namespaces, checked packet by packet from the captures and
// each hop's ground-truth log: a UDP flow routed through both hops at 3.1 Mbit/s meets hop 0 at 1 Mbit/s and hop 1 at
// 2 Mbit/s, then hop 0 steps up to 4 Mbit/s: first hop 0 binds (it queues and drops, hop 1 forwards what it gets at
// once), then hop 1 (hop 0 forwards at once). A second flow routed through hop 1 only appears in hop 1's log alone,
// and a flow routed through no hop in neither, reaching b without delay.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withNetwork, udpPaced, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { readGtlog, releaseLateness, joinCaptures, percentile } from '../test-support/pcap.js';
import { measure } from '../test-support/measure.js';

const HOP_DELAY_MS = 5;
const LIMIT_PACKETS = 50;
const STEP_S = 3; // hop 0 goes from 1 to 4 Mbit/s
const SECONDS = 6;
/** Three flows told apart in the logs (which hold no ports) by their IP length. */
const THROUGH_BOTH = { port: 5301, len: 1000, ip_len: 1028, kbit: 3000 }; // 1042-byte frames: 3.13 Mbit/s on the wire
const HOP1_ONLY = { port: 5302, len: 500, ip_len: 528, kbit: 200 };
const NO_HOP = { port: 5303, len: 300, ip_len: 328, kbit: 100 };

const scenario = {
  backend: 'userspace', capture: { snaplen: 256 },
  network: { hops: [
    { delay_ms: HOP_DELAY_MS, rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: STEP_S, kbit: 4000 }] }, qdisc: { kind: 'fifo', limit_packets: LIMIT_PACKETS } },
    { delay_ms: HOP_DELAY_MS, rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_packets: LIMIT_PACKETS } },
  ] },
};

/** @param {{ len: number, kbit: number }} f */
const intervalMs = (f) => (f.len * 8) / f.kbit;

test('userspace: a chain of two hops, each binding in turn; flows cross only the hops of their path',
  { skip: SKIP_NO_BOTTLENECK, timeout: 60000 }, async (t) => {
    await withNetwork(scenario, 'userspace', async (net, runDir) => {
      const route = (/** @type {number} */ dport, /** @type {number[]} */ path) =>
        net.routeFlow({ proto: 'udp', src: '10.0.1.2', dst: '10.0.2.2', dport }, path);
      await route(THROUGH_BOTH.port, [0, 1]);
      await route(HOP1_ONLY.port, [1]);
      await net.startCaptures({ snaplen: 256 });
      const t0_ms = Date.now() + 300;
      await net.startSchedules(t0_ms);
      while (Date.now() < t0_ms) await new Promise((r) => setTimeout(r, 10));
      await Promise.all([THROUGH_BOTH, HOP1_ONLY, NO_HOP].map((f) =>
        udpPaced(net, { count: Math.round((SECONDS * 1000) / intervalMs(f)), interval_ms: intervalMs(f), len: f.len, port: f.port })));
      await new Promise((r) => setTimeout(r, 1000)); // hop 1's queue drains into the capture
      const counters = await net.routeCounters();
      await net.stopCaptures();
      await net.down(); // the logs are whole once the bottlenecks exited
      assert.equal(counters.length, 6, 'one rule per hop and direction of each routed flow (2 + 1 hops, both ways)');
      assert.ok(counters.find((c) => c.queue_num === 10 && c.packets > 1000), `hop 0 queued the two-hop flow: ${JSON.stringify(counters)}`);
      const t0_ns = BigInt(readFileSync(join(runDir, 'bottleneck-hop0-forward.t0'), 'utf8').trim());
      check(t, runDir, t0_ns);
    });
  });

/** @param {import('node:test').TestContext} t @param {string} runDir @param {bigint} t0_ns */
function check(t, runDir, t0_ns) {
  const capA = join(runDir, 'capture-a.pcap'), capB = join(runDir, 'capture-b.pcap');
  const logs = [0, 1].map((hop) => join(runDir, `bottleneck-hop${hop}-forward.gtlog`));
  const hops = logs.map((f) => readGtlog(f).records.filter((r) => r.ip_proto === 17));
  // Only the routed flows, each in the logs of its path's hops.
  assert.deepEqual([...new Set(hops[0].map((r) => r.ip_len))], [THROUGH_BOTH.ip_len], 'hop 0 saw the two-hop flow only');
  assert.deepEqual([...new Set(hops[1].map((r) => r.ip_len))].sort((x, y) => x - y), [HOP1_ONLY.ip_len, THROUGH_BOTH.ip_len], 'hop 1 saw both routed flows and nothing else');
  // The same packets joined to each hop's log (the analyzer's join): gt = the record's index in that log.
  const joined = logs.map((gtlog) => joinCaptures(capA, capB, { gtlog }).filter((r) => r.direction === 'forward' && r.t_send_ns !== null && r.proto === 17));
  const [via0, via1] = joined;
  assert.equal(via0.length, via1.length);
  const sec = (/** @type {bigint} */ ns) => Number(ns - t0_ns) / 1e9;
  const phase = (/** @type {bigint} */ ns) => (sec(ns) >= 1 && sec(ns) < STEP_S ? 1 : sec(ns) >= STEP_S + 1 && sec(ns) < SECONDS ? 2 : 0);
  /** Per phase and hop: sojourns (ms) and drops of the two-hop flow's packets, by their arrival at that hop. */
  const seen = [1, 2].map(() => [0, 1].map(() => ({ sojourn: /** @type {number[]} */ ([]), drops: 0, packets: 0 })));
  let delivered = 0;
  for (let i = 0; i < via0.length; i++) {
    const [r0, r1] = [via0[i], via1[i]];
    assert.equal(r0.ip_id, r1.ip_id);
    if (r0.dport === NO_HOP.port) {
      assert.ok(r0.gt === null && r1.gt === null, `unrouted ip_id ${r0.ip_id} is in a hop's log`);
      if (r0.owd_ms !== null) assert.ok(r0.owd_ms < 2, `unrouted ip_id ${r0.ip_id} took ${r0.owd_ms} ms`);
      continue;
    }
    if (r0.dport === HOP1_ONLY.port) {
      assert.ok(r0.gt === null && r1.gt !== null, `hop-1-only ip_id ${r0.ip_id}: hop 0 ${r0.gt}, hop 1 ${r1.gt}`);
      continue;
    }
    if (r0.dport !== THROUGH_BOTH.port) continue;
    assert.ok(r0.gt !== null, `two-hop ip_id ${r0.ip_id} is not in hop 0's log`);
    const g0 = readAt(logs[0], r0.gt);
    const g1 = r1.gt === null ? null : readAt(logs[1], r1.gt);
    const forwarded0 = g0.event <= 1;
    // A packet hop 0 dropped never reaches hop 1; one it forwarded reaches hop 1 after its release.
    assert.equal(g1 !== null, forwarded0, `ip_id ${r0.ip_id}: hop 0 event ${g0.event}, in hop 1's log: ${g1 !== null}`);
    if (g1) {
      assert.ok(g1.arrival_ns >= g0.due_ns, `ip_id ${r0.ip_id} reached hop 1 ${Number(g0.due_ns - g1.arrival_ns) / 1e6} ms before hop 0 released it`);
      if (r0.status === 'delivered') {
        assert.ok(g1.event <= 1, `delivered ip_id ${r0.ip_id} was dropped by hop 1`);
        assert.ok(/** @type {bigint} */ (r0.t_recv_ns) >= g1.tx_end_ns + BigInt(HOP_DELAY_MS) * 1_000_000n - 10_000n, `ip_id ${r0.ip_id} reached b before hop 1's departure + delay`);
        delivered++;
      } else {
        assert.ok(g1.event >= 2, `lost ip_id ${r0.ip_id} was forwarded by both hops`);
      }
    }
    // Each hop's phase by the packet's arrival at that hop: what hop 0 queued before its step drains into hop 1 after
    // it, at hop 0's new 4 Mbit/s (in the second phase of hop 1, not its first).
    for (const [hop, g] of /** @type {const} */ ([[0, g0], [1, g1]])) {
      const p = g && phase(g.arrival_ns);
      if (!g || !p) continue;
      const s = seen[p - 1][hop];
      s.packets++;
      if (g.event >= 2) s.drops++;
      else s.sojourn.push(Number(g.dequeue_ns - g.arrival_ns) / 1e6);
    }
  }
  assert.ok(delivered > 1000, `${delivered} two-hop packets delivered`);
  const fill = (/** @type {number} */ kbit) => (LIMIT_PACKETS * 1042 * 8) / kbit; // ms to drain a full queue
  const [[p1h0, p1h1], [p2h0, p2h1]] = seen;
  // NaN when no packet of the phase left the hop (all dropped, or none sent): its bound then fails with its line.
  const sojourn = (/** @type {typeof p1h0} */ s, /** @type {number} */ q) => (s.sojourn.length ? percentile(s.sojourn, q) : NaN);
  const line = (/** @type {typeof p1h0} */ s) => `${s.packets} packets, ${s.drops} dropped, sojourn p50 ${sojourn(s, 50).toFixed(1)} p95 ${sojourn(s, 95).toFixed(1)} ms`;
  t.diagnostic(`phase 1 hop 0: ${line(p1h0)}; hop 1: ${line(p1h1)}`);
  t.diagnostic(`phase 2 hop 0: ${line(p2h0)}; hop 1: ${line(p2h1)}`);
  // Phase 1: hop 0 (1 Mbit/s) binds: its queue fills, it drops; hop 1 (2 Mbit/s, 1.2 offered) forwards at once. The
  // queue full is read at p95, not p50: the sender is a normal process beside the other lanes' SCHED_FIFO guests, and
  // each of its stalls lets the queue drain; it comes back as a burst that fills it again (then the packets of the
  // burst wait from nothing to a full queue, and the p50 of one run read 0.77 of a full queue's wait). The median is
  // reported (measure), not bounded.
  measure(t, 'chain.userspace.phase1_hop0_sojourn_p50_of_full', sojourn(p1h0, 50) / fill(1000), 3);
  assert.ok(p1h0.drops > 0 && sojourn(p1h0, 95) > 0.8 * fill(1000), `phase 1 hop 0: ${line(p1h0)}`);
  assert.ok(p1h1.drops === 0 && sojourn(p1h1, 95) < 10, `phase 1 hop 1: ${line(p1h1)}`);
  // Phase 2: hop 0 (4 Mbit/s) forwards at once; hop 1 (2 Mbit/s, 3.3 offered) binds.
  assert.ok(p2h0.drops === 0 && sojourn(p2h0, 95) < 10, `phase 2 hop 0: ${line(p2h0)}`);
  measure(t, 'chain.userspace.phase2_hop1_sojourn_p50_of_full', sojourn(p2h1, 50) / fill(2000), 3);
  assert.ok(p2h1.drops > 0 && sojourn(p2h1, 95) > 0.8 * fill(2000), `phase 2 hop 1: ${line(p2h1)}`);
  checkRates(t, { via0, via1, logs, hops, t0_ns });
}

/**
 * Each delivered packet's release lateness on its way (release - due in the hops' logs), by its index in the joins:
 * hop 1's own, plus hop 0's when hop 1 forwarded the packet at once (its due then follows its arrival, late with hop
 * 0's release; a packet that waited in hop 1's queue leaves on hop 1's schedule whatever hop 0 did).
 * @param {import('../test-support/pcap.js').Row[]} via0 @param {import('../test-support/pcap.js').Row[]} via1
 * @param {string[]} logs
 */
function pathLateness(via0, via1, logs) {
  const late = (/** @type {string} */ log, /** @type {number | null} */ gt) => (gt === null ? 0n : releaseLateness(readAt(log, gt)));
  return via0.map((r0, i) => {
    const gt1 = via1[i].gt, g1 = gt1 === null ? null : readAt(logs[1], gt1);
    const waited = g1 !== null && g1.dequeue_ns > g1.arrival_ns;
    return late(logs[1], gt1) + (waited ? 0n : late(logs[0], r0.gt));
  });
}

/**
 * The rate at b is the binding hop's (hop 0's 1 Mbit/s in phase 1, hop 1's 2 Mbit/s in phase 2), in three parts, each
 * what the code controls:
 * - the hop transmits at its rate: back-to-back departures in its log are (IP length + 14) x 8 / rate apart (the
 *   schedule's own computation), and its departures over the window carry no more than the rate;
 * - b's capture agrees with those departures: the bits reaching b in the window (each arrival less the release
 *   lateness the logs record on its way: the host's scheduling, judged by a run's validity from the same logs) are
 *   the hop's departures in the window shifted by the path after it;
 * - how busy the hop was (its departures / its rate) is the sender's doing, not the hop's: the sender is a
 *   normal-priority process beside the other lanes' SCHED_FIFO guests and bottlenecks, starved at times on a slow
 *   machine (its queue of 50 packets covers 0.42 s at 1 Mbit/s): reported, not bounded (0.76-1.0 seen).
 * @param {import('node:test').TestContext} t
 * @param {{ via0: import('../test-support/pcap.js').Row[], via1: import('../test-support/pcap.js').Row[], logs: string[],
 *   hops: import('../test-support/pcap.js').GtRecord[][], t0_ns: bigint }} c
 */
function checkRates(t, c) {
  const lateness = pathLateness(c.via0, c.via1, c.logs);
  const sec = (/** @type {bigint} */ ns) => Number(ns - c.t0_ns) / 1e9;
  const wireBits = (/** @type {number} */ ipLen) => (ipLen + 14) * 8; // as the hops count them
  const tx1ms = wireBits(THROUGH_BOTH.ip_len) / 2000; // hop 1's transmission of a two-hop packet, at once in phase 1
  const phases = [
    { n: 1, hop: 0, kbit: 1000, ports: [THROUGH_BOTH.port], from: 1, to: STEP_S, after_ms: HOP_DELAY_MS + tx1ms + HOP_DELAY_MS, tol: 50 },
    { n: 2, hop: 1, kbit: 2000, ports: [THROUGH_BOTH.port, HOP1_ONLY.port], from: STEP_S + 1, to: SECONDS, after_ms: HOP_DELAY_MS, tol: 100 },
  ];
  for (const p of phases) {
    const span = p.to - p.from;
    const forwarded = c.hops[p.hop].filter((g) => g.event <= 1).sort((x, y) => (x.tx_end_ns < y.tx_end_ns ? -1 : 1));
    // Back to back (a packet's transmission starting as the one before it ends: the link busy, its token bucket
    // empty), departures are one packet's wire time at the rate apart, to the nanosecond (not across the step at
    // STEP_S, whose rate changes during a transmission).
    let backToBack = 0;
    for (let i = 1; i < forwarded.length; i++) {
      const [prev, g] = [forwarded[i - 1], forwarded[i]];
      if (g.dequeue_ns !== prev.tx_end_ns || sec(g.dequeue_ns) < p.from - 1 || sec(g.dequeue_ns) >= p.to - 0.1) continue;
      backToBack++;
      const gap_ns = Number(g.tx_end_ns - prev.tx_end_ns), want_ns = (wireBits(g.ip_len) / p.kbit) * 1e6;
      assert.ok(Math.abs(gap_ns - want_ns) <= 1000, `phase ${p.n} hop ${p.hop}: ${g.ip_len} bytes left ${gap_ns} ns after the packet before, ${want_ns} at ${p.kbit} kbit/s`);
    }
    assert.ok(backToBack > 50, `phase ${p.n} hop ${p.hop}: ${backToBack} departures back to back (the hop binds, so most are)`);
    const shift = p.after_ms / 1000;
    const departed = forwarded.filter((g) => sec(g.tx_end_ns) + shift >= p.from && sec(g.tx_end_ns) + shift < p.to)
      .reduce((bits, g) => bits + wireBits(g.ip_len), 0) / span / 1000;
    let atB = 0, raw = 0;
    c.via0.forEach((r, i) => {
      if (r.status !== 'delivered' || !p.ports.includes(r.dport)) return;
      const at = sec(/** @type {bigint} */ (r.t_recv_ns) - lateness[i]), rawAt = sec(/** @type {bigint} */ (r.t_recv_ns));
      if (at >= p.from && at < p.to) atB += wireBits(r.ip_len);
      if (rawAt >= p.from && rawAt < p.to) raw += wireBits(r.ip_len);
    });
    const [rate, rawRate] = [atB / span / 1000, raw / span / 1000];
    measure(t, `chain.userspace.phase${p.n}_rate_kbit`, rate, 0);
    measure(t, `chain.userspace.phase${p.n}_rate_uncorrected_kbit`, rawRate, 0);
    measure(t, `chain.userspace.phase${p.n}_busy_share`, departed / p.kbit, 3);
    assert.ok(departed <= p.kbit * 1.01, `phase ${p.n}: hop ${p.hop} departed ${departed.toFixed(0)} kbit/s, over its ${p.kbit}`);
    assert.ok(Math.abs(rate - departed) < p.tol, `phase ${p.n}: ${rate.toFixed(0)} kbit/s at b (${rawRate.toFixed(0)} without the release lateness), hop ${p.hop} departed ${departed.toFixed(0)} kbit/s of its ${p.kbit}`);
  }
}

/** @type {Map<string, import('../test-support/pcap.js').GtRecord[]>} */
const cache = new Map();
/** @param {string} file @param {number} i */
function readAt(file, i) {
  if (!cache.has(file)) cache.set(file, readGtlog(file).records);
  return /** @type {import('../test-support/pcap.js').GtRecord[]} */ (cache.get(file))[i];
}
