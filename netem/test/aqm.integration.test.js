// @ts-check
// Each discipline's behaviour on real packets (1 Mbit/s, no propagation delay), the same assertions through the
// userspace bottleneck and through Linux's own qdiscs in a user-mode Linux guest (the uml backend): queuing delay per
// flow is measured at the captures (one-way delay minus the flow's minimum); drops and marks by reason come from the
// ground-truth log or from Linux's counters (test-support/counts.js).
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { withNetwork, udpFlow, execIn, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { joinCaptures, percentiles } from '../test-support/pcap.js';
import { forwardCounts } from '../test-support/counts.js';
import { umlUnavailable } from '../uml/guest.js';
import { measure } from '../test-support/measure.js';

/** Each backend under test and why it is skipped here, if it is. */
const BACKENDS = /** @type {const} */ ([['userspace', SKIP_NO_BOTTLENECK], ['uml', umlUnavailable() ?? false]]);

const SECONDS = 8;

/**
 * Offer UDP flows (and optionally a ping) through a 1 Mbit/s link with this discipline.
 * @param {'userspace' | 'uml'} backend
 * @param {any} qdisc
 * @param {{ kbit: number, tos?: number }[]} flows UDP flows, ports 5301, 5302, ...
 * @param {boolean} ping also a 64-byte ping every 100 ms
 */
async function offer(backend, qdisc, flows, ping) {
  const scenario = { network: { forward: { delay_ms: 0, rate: { kbit: 1000 }, qdisc }, reverse: { delay_ms: 0 } } };
  return withNetwork(scenario, backend, async (net, runDir) => {
    await net.startCaptures({ snaplen: 256 });
    /** @type {Promise<any>[]} */
    const jobs = flows.map((f, i) => udpFlow(net, { kbit: f.kbit, seconds: SECONDS, len: 1000, port: 5301 + i, tos: f.tos }));
    if (ping) jobs.push(execIn(net, 'a', ['ping', '-i', '0.1', '-c', String(SECONDS * 10), '-W', '2', '10.0.2.2']).catch(() => ''));
    await Promise.all(jobs);
    await new Promise((r) => setTimeout(r, 300));
    await net.stopCaptures();
    const counts = await forwardCounts(net, runDir);
    // The packets that left a, joined to their arrivals at b by the analyzer (rtclab.export join).
    const departures = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'))
      .filter((r) => r.direction === 'forward' && r.t_send_ns !== null);
    /** @param {(r: import('../test-support/pcap.js').Row) => boolean} filter */
    const flowStats = (filter) => {
      const m = departures.filter(filter);
      const owd = m.filter((x) => x.owd_ms !== null).map((x) => /** @type {number} */ (x.owd_ms));
      const base = Math.min(...owd);
      // Queuing delay over the second half, when the discipline has settled.
      const half = m.length ? /** @type {bigint} */ (m[0].t_send_ns) + BigInt(SECONDS * 5e8) : 0n;
      const late = m.filter((x) => x.owd_ms !== null && /** @type {bigint} */ (x.t_send_ns) > half).map((x) => /** @type {number} */ (x.owd_ms) - base);
      const [p50_ms, p95_ms] = percentiles(late, [50, 95]);
      // lost: never seen at b, including packets sent so late that b's capture had stopped (status unknown).
      return { sent: m.length, lost: m.filter((x) => x.owd_ms === null).length, p50_ms, p95_ms };
    };
    const udp = flows.map((_, i) => flowStats((p) => p.proto === 17 && p.dport === 5301 + i));
    const icmp = ping ? flowStats((p) => p.proto === 1 && p.dst === '10.0.2.2') : null;
    return { udp, icmp, counts };
  });
}

/** @param {any} s */
const fmt = (s) => `sent ${s.sent} lost ${s.lost} queuing delay p50 ${s.p50_ms?.toFixed(1)} p95 ${s.p95_ms?.toFixed(1)} ms`;

for (const [backend, skip] of BACKENDS) {
  const opts = { skip, timeout: 60000 };

  test(`${backend}: codel keeps an unresponsive overload's queuing delay near target by AQM drops`, opts, async (t) => {
    const r = await offer(backend, { kind: 'codel', target_ms: 5, interval_ms: 100 }, [{ kbit: 1300 }], false);
    t.diagnostic(`codel: ${fmt(r.udp[0])}; ${JSON.stringify(r.counts)}`);
    measure(t, `codel.${backend}.p50_ms`, r.udp[0].p50_ms, 3);
    assert.ok(r.counts.aqm > 0, 'AQM drops');
    assert.equal(r.counts.tail, 0, 'no tail drops (limit 1000 packets never reached)');
    // Unresponsive traffic: CoDel's drop rate still climbs after 8 s, so the delay sits above target; a fifo of
    // 1000 packets would be at seconds.
    assert.ok(r.udp[0].p50_ms < 60, `median queuing delay ${r.udp[0].p50_ms} ms (a fifo would grow to seconds)`);
  });

  test(`${backend}: pie drives an unresponsive overload's queuing delay towards target`, opts, async (t) => {
    const r = await offer(backend, { kind: 'pie', target_ms: 15, tupdate_ms: 15 }, [{ kbit: 1300 }], false);
    t.diagnostic(`pie: ${fmt(r.udp[0])}; ${JSON.stringify(r.counts)}`);
    measure(t, `pie.${backend}.p50_ms`, r.udp[0].p50_ms, 3);
    assert.ok(r.counts.aqm > 0, 'AQM drops');
    // What is judged is control against none: a fifo of 1000 packets would hold over a second in the second half
    // (0.3 Mbit/s of excess for 4-8 s). PIE's own value: 23-26 ms alone on two machines, 30 ms through the userspace
    // bottleneck; 71 ms once through the guest in the real tier's three lanes on a slower machine (its drop
    // probability is updated by a timer every tupdate, late when the guest is starved), so the bound leaves room.
    assert.ok(r.udp[0].p50_ms < 150, `median queuing delay ${r.udp[0].p50_ms} ms (a fifo would grow past a second)`);
  });

  test(`${backend}: fq_codel keeps a ping's delay low beside a bulk UDP flow`, opts, async (t) => {
    // target 13 ms (Carlucci et al. at 1 Mbit/s): above the 8.3 ms a ping can wait for one bulk packet's
    // transmission, so CoDel never drops the sparse flow (with 5 ms it may, as Linux's does: it counts the whole backlog).
    const r = await offer(backend, { kind: 'fq_codel', target_ms: 13, interval_ms: 100 }, [{ kbit: 2000 }], true);
    const ping = /** @type {any} */ (r.icmp);
    t.diagnostic(`fq_codel: bulk ${fmt(r.udp[0])}; ping ${fmt(ping)}; ${JSON.stringify(r.counts)}`);
    measure(t, `fq_codel.${backend}.ping_p95_ms`, ping.p95_ms, 3);
    assert.ok(ping.p95_ms < 12, `ping queuing delay p95 ${ping.p95_ms} ms`);
    assert.equal(ping.lost, 0);
    assert.ok(r.udp[0].p50_ms > ping.p50_ms, 'the bulk flow queues, the sparse flow does not');
  });

  test(`${backend}: sfq keeps a ping's delay low beside a bulk UDP flow`, opts, async (t) => {
    const r = await offer(backend, { kind: 'sfq', limit_ms: 300 }, [{ kbit: 2000 }], true);
    const ping = /** @type {any} */ (r.icmp);
    t.diagnostic(`sfq: bulk ${fmt(r.udp[0])}; ping ${fmt(ping)}; ${JSON.stringify(r.counts)}`);
    measure(t, `sfq.${backend}.ping_p95_ms`, ping.p95_ms, 3);
    measure(t, `sfq.${backend}.bulk_p50_ms`, r.udp[0].p50_ms, 3);
    assert.ok(ping.p95_ms < 25, `ping queuing delay p95 ${ping.p95_ms} ms (a few bulk packets' transmission)`);
    assert.equal(ping.lost, 0);
    assert.ok(r.udp[0].p50_ms > 100, `bulk flow queuing delay ${r.udp[0].p50_ms} ms (its own 300 ms queue)`);
  });

  test(`${backend}: prio serves the DSCP 46 class first`, opts, async (t) => {
    const qdisc = { kind: 'prio', bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo', limit_ms: 300 } }] };
    const r = await offer(backend, qdisc, [{ kbit: 300, tos: 46 << 2 }, { kbit: 1500 }], false);
    t.diagnostic(`prio: EF ${fmt(r.udp[0])}; best effort ${fmt(r.udp[1])}; ${JSON.stringify(r.counts)}`);
    assert.equal(r.udp[0].lost, 0, 'the priority class loses nothing');
    measure(t, `prio.${backend}.ef_p50_ms`, r.udp[0].p50_ms, 3);
    measure(t, `prio.${backend}.ef_p95_ms`, r.udp[0].p95_ms, 3);
    measure(t, `prio.${backend}.be_p50_ms`, r.udp[1].p50_ms, 3);
    // Served first: the priority class's median is its own bursts plus one packet in service. Its p95 also holds
    // the VM's stalls, which delay every class alike (131 ms once through the guest, on a new machine's first
    // fresh-clone CI, the real tier's three lanes loading it), so it is judged against best effort's own queue:
    // a single fifo would give both classes the same ~300 ms.
    assert.ok(r.udp[0].p50_ms < 25, `priority class queuing delay p50 ${r.udp[0].p50_ms} ms (its own bursts + one packet in service)`);
    assert.ok(r.udp[1].lost > 0 && r.udp[1].p50_ms > 200, 'best effort takes the loss and the queue');
    assert.ok(r.udp[0].p95_ms < r.udp[1].p50_ms / 2, `priority class p95 ${r.udp[0].p95_ms} ms against best effort's p50 ${r.udp[1].p50_ms} ms`);
    assert.ok(r.counts.bands[0] > 0 && r.counts.bands[1] > 0, `both bands used: ${r.counts.bands}`);
  });
}
