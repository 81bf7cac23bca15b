// @ts-check
// Cross traffic on its schedule: iperf3 TCP flows a -> b with the congestion control set explicitly, through this
// host's kernel and through Linux's qdiscs in a user-mode Linux guest (uml).
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withNetwork } from '../test-support/net.js';
import { readPcap } from '../test-support/pcap.js';
import { planCrossTraffic } from '../cross.js';
import { umlUnavailable } from '../uml/guest.js';
import { measure } from '../test-support/measure.js';

test('cross traffic plan: server in the receiver, client with -C, -P, --dscp, JSON log', () => {
  const p = planCrossTraffic({ kind: 'tcp', flows: 3, congestion_control: 'reno', direction: 'reverse', start_s: 10, stop_s: null, dscp: 10 }, 2, 60, '/r');
  assert.deepEqual([p.serverHost, p.clientHost, p.length_s], ['a', 'b', 50]);
  assert.deepEqual(p.server, ['iperf3', '-s', '-1', '-B', '10.0.1.2', '-p', '5203']);
  assert.deepEqual(p.client, ['iperf3', '-c', '10.0.1.2', '-p', '5203', '-t', '50', '-P', '3', '-C', 'reno', '--dscp', '10', '--json', '--logfile', '/r/iperf3-2.json']);
});

for (const backend of /** @type {const} */ (['kernel', 'uml'])) {
  test(`${backend}: two CUBIC flows start at 1 s and stop at 4 s through a 10 Mbit/s link, filling it`, { skip: backend === 'uml' && (umlUnavailable() ?? false), timeout: 40000 }, async (t) => {
    const scenario = {
      duration_s: 5,
      network: { forward: { delay_ms: 0, rate: { kbit: 10000 }, qdisc: { kind: 'fifo', limit_ms: 50 } }, reverse: { delay_ms: 0 } },
      cross_traffic: [{ kind: 'tcp', flows: 2, congestion_control: 'cubic', direction: 'forward', start_s: 1, stop_s: 4, dscp: 10 }],
    };
    await withNetwork(scenario, backend, async (net, runDir) => {
      /** @type {any[]} */
      const events = [];
      /** @type {(value?: unknown) => void} */
      let clientExited = () => {};
      const exited = new Promise((r) => { clientExited = r; });
      net.on('event', (e) => {
        events.push({ ...e, t_ms: Date.now() });
        if (e.event === 'cross_traffic_stopped') clientExited();
      });
      await net.startCaptures({ snaplen: 128 });
      const t0 = Date.now();
      await net.startSchedules(t0);
      // Until the iperf3 client has exited (its 3 s from 1 s, then its results exchange), not a fixed 5 s; after 15 s
      // the assertions below say what is missing.
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15000).unref())]);
      await net.stopCaptures();
      const started = events.find((e) => e.event === 'cross_traffic_started');
      assert.ok(started, 'started event');
      const startLate_ms = started.t_ms - t0 - 1000;
      measure(t, `cross.${backend}.start_late_ms`, startLate_ms);
      // A Node timer: on this 2-vCPU VM under a second test's load it fired up to ... ms late (bench/reliability/RESULTS.md).
      assert.ok(startLate_ms > -5 && startLate_ms < 250, `started ${started.t_ms - t0} ms after t0`);
      assert.ok(events.some((e) => e.event === 'cross_traffic_stopped' && e.exit_code === 0), 'client finished');
      const result = JSON.parse(readFileSync(join(runDir, 'iperf3-0.json'), 'utf8'));
      const mbps = result.end.sum_received.bits_per_second / 1e6;
      t.diagnostic(`iperf3: ${mbps.toFixed(2)} Mbit/s goodput, congestion ${result.end.sender_tcp_congestion}, ${result.start.connected.length} streams`);
      measure(t, `cross.${backend}.goodput_mbps`, mbps, 3);
      assert.equal(result.end.sender_tcp_congestion, 'cubic');
      assert.equal(result.start.connected.length, 2);
      // Through the link, from the packets that reached b (not iperf3's per-second figures, which are the sender's
      // writes into its socket and may exceed the link: 10.52 Mbit/s once). Upper bound, by TBF's own rule: over the
      // flows' whole span at b the bytes on the wire (frame_len, as TBF counts them) are at most rate x span + burst;
      // 2 % more allows the capture's timestamps to bunch after a stall of the VM (60 ms over the 3 s).
      const atB = readPcap(join(runDir, 'capture-b.pcap')).filter((p) => p.proto === 6 && p.dst === '10.0.2.2');
      const ns = atB.map((p) => Number(p.t_ns - atB[0].t_ns));
      const span_s = ns[ns.length - 1] / 1e9;
      const wire_mbps = atB.slice(1).reduce((sum, p) => sum + p.frame_len * 8, 0) / span_s / 1e6;
      measure(t, `cross.${backend}.wire_mbps`, wire_mbps, 3);
      assert.ok(wire_mbps <= 10 * 1.02 + (3028 * 8) / span_s / 1e6, `${wire_mbps} Mbit/s on the wire at b over ${span_s} s, above the link's 10`);
      // Filling it: the median of the whole seconds at b, so one second lost to a stall of this VM (CI, 2026-11-24:
      // 3.36 Mbit/s over the 3 s, against 9.3-9.5 in other runs) is not read as TCP failing to fill the link. The
      // bound from the spread of 30 runs beside a second test (bench/reliability/RESULTS.md).
      const perSecond = [0, 1, 2].filter((i) => (i + 1) * 1e9 <= ns[ns.length - 1])
        .map((i) => atB.filter((_, j) => ns[j] >= i * 1e9 && ns[j] < (i + 1) * 1e9).reduce((sum, p) => sum + p.frame_len * 8, 0) / 1e6)
        .sort((a, b) => a - b);
      const median = perSecond[Math.floor(perSecond.length / 2)];
      measure(t, `cross.${backend}.median_second_mbps`, median, 3);
      t.diagnostic(`at b per second (Mbit/s, sorted): ${perSecond.map((x) => x.toFixed(2)).join(' ')}`);
      assert.ok(mbps < 10, `goodput ${mbps} Mbit/s, above the link's 10`);
      assert.ok(perSecond.length >= 2 && median > 8.5, `median of the whole seconds at b ${median} Mbit/s`);
      const data = readPcap(join(runDir, 'capture-a.pcap')).filter((p) => p.proto === 6 && p.dport === 5201 && p.ip_len > 1000);
      assert.ok(data.length > 1000 && data.every((p) => p.dscp === 10), 'data packets carry DSCP 10');
    });
  });
}
