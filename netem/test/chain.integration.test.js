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
import { readGtlog, joinCaptures, percentile } from '../test-support/pcap.js';
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
  const line = (/** @type {typeof p1h0} */ s) => `${s.packets} packets, ${s.drops} dropped, sojourn p50 ${percentile(s.sojourn, 50).toFixed(1)} p95 ${percentile(s.sojourn, 95).toFixed(1)} ms`;
  t.diagnostic(`phase 1 hop 0: ${line(p1h0)}; hop 1: ${line(p1h1)}`);
  t.diagnostic(`phase 2 hop 0: ${line(p2h0)}; hop 1: ${line(p2h1)}`);
  // Phase 1: hop 0 (1 Mbit/s) binds: full queue, drops; hop 1 (2 Mbit/s, 1.2 offered) forwards at once.
  assert.ok(p1h0.drops > 0 && percentile(p1h0.sojourn, 50) > 0.8 * fill(1000), `phase 1 hop 0: ${line(p1h0)}`);
  assert.ok(p1h1.drops === 0 && percentile(p1h1.sojourn, 95) < 10, `phase 1 hop 1: ${line(p1h1)}`);
  // Phase 2: hop 0 (4 Mbit/s) forwards at once; hop 1 (2 Mbit/s, 3.3 offered) binds.
  assert.ok(p2h0.drops === 0 && percentile(p2h0.sojourn, 95) < 10, `phase 2 hop 0: ${line(p2h0)}`);
  assert.ok(p2h1.drops > 0 && percentile(p2h1.sojourn, 50) > 0.8 * fill(2000), `phase 2 hop 1: ${line(p2h1)}`);
  // Each delivered packet's release lateness on its way (release - due in the hops' logs): hop 1's own, plus hop 0's
  // when hop 1 forwarded the packet at once (its due then follows its arrival, late with hop 0's release; a packet
  // that waited in hop 1's queue leaves on hop 1's schedule whatever hop 0 did).
  /** @type {Map<number, bigint>} */
  const lateness = new Map();
  const late = (/** @type {string} */ log, /** @type {number | null} */ gt) => {
    if (gt === null) return 0n;
    const g = readAt(log, gt);
    return g.release_ns > g.due_ns ? g.release_ns - g.due_ns : 0n;
  };
  for (let i = 0; i < via0.length; i++) {
    const gt1 = via1[i].gt, g1 = gt1 === null ? null : readAt(logs[1], gt1);
    const waited = g1 !== null && g1.dequeue_ns > g1.arrival_ns;
    lateness.set(i, late(logs[1], via1[i].gt) + (waited ? 0n : late(logs[0], via0[i].gt)));
  }
  checkRates(t, via0, lateness, sec);
}

/**
 * The rate at b (capture) is the binding hop's: 1 Mbit/s of the two-hop flow, then 2 Mbit/s of both routed flows. Each
 * arrival is placed at its time less the release lateness the hops' logs record on its way (the host's scheduling, which a
 * run's validity judges from the same logs; a stall of the host shifts a window's packets into the next one): what is
 * checked is that the packets reach b at the rate the binding hop's schedule gives. The rate without that correction
 * is reported.
 * @param {import('node:test').TestContext} t @param {import('../test-support/pcap.js').Row[]} rows
 * @param {Map<number, bigint>} lateness by the row's index @param {(ns: bigint) => number} sec seconds since t0
 */
function checkRates(t, rows, lateness, sec) {
  const rateKbit = (/** @type {number[]} */ ports, /** @type {number} */ from, /** @type {number} */ to, /** @type {boolean} */ corrected) => {
    let bits = 0;
    rows.forEach((r, i) => {
      if (r.status !== 'delivered' || !ports.includes(r.dport)) return;
      const at = sec(/** @type {bigint} */ (r.t_recv_ns) - (corrected ? lateness.get(i) ?? 0n : 0n));
      if (at >= from && at < to) bits += (r.ip_len + 14) * 8; // wire bytes, as the hops count them
    });
    return bits / (to - from) / 1000;
  };
  const phase1 = [[THROUGH_BOTH.port], 1, STEP_S], phase2 = [[THROUGH_BOTH.port, HOP1_ONLY.port], STEP_S + 1, SECONDS];
  const [r1, r2] = [phase1, phase2].map(([ports, from, to]) => rateKbit(/** @type {number[]} */ (ports), /** @type {number} */ (from), /** @type {number} */ (to), true));
  const [raw1, raw2] = [phase1, phase2].map(([ports, from, to]) => rateKbit(/** @type {number[]} */ (ports), /** @type {number} */ (from), /** @type {number} */ (to), false));
  measure(t, 'chain.userspace.phase1_rate_kbit', r1, 0);
  measure(t, 'chain.userspace.phase2_rate_kbit', r2, 0);
  measure(t, 'chain.userspace.phase1_rate_uncorrected_kbit', raw1, 0);
  measure(t, 'chain.userspace.phase2_rate_uncorrected_kbit', raw2, 0);
  assert.ok(Math.abs(r1 - 1000) < 50, `phase 1: ${r1.toFixed(0)} kbit/s at b (${raw1.toFixed(0)} without the release lateness), hop 0's 1000`);
  assert.ok(Math.abs(r2 - 2000) < 100, `phase 2: ${r2.toFixed(0)} kbit/s at b (${raw2.toFixed(0)} without the release lateness), hop 1's 2000`);
}

/** @type {Map<string, import('../test-support/pcap.js').GtRecord[]>} */
const cache = new Map();
/** @param {string} file @param {number} i */
function readAt(file, i) {
  if (!cache.has(file)) cache.set(file, readGtlog(file).records);
  return /** @type {import('../test-support/pcap.js').GtRecord[]} */ (cache.get(file))[i];
}
