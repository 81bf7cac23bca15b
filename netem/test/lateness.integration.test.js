// @ts-check
// The validity check bottleneck_lateness_bounded tripped for real: a UDP flow crosses the network while the
// bottleneck is stopped (SIGSTOP) for 300 ms; its own counters (userspace: release lateness; uml: the host's pings of
// the guest kernel through a netem delay) must show the stall, and the validity checks must fail the run naming it.
// docs/harness.md, "Validity checks".
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNetwork } from '../index.js';
import { newId } from '../names.js';
import { newRunDir, udpFlow, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { umlUnavailable } from '../uml/guest.js';
import { LATENESS_LINK } from '../uml/lateness.js';
import { validityChecks } from '../../harness/validity.js';
import { measure } from '../test-support/measure.js';

const STOP_MS = 300;
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
// 25 ms each way; the bound is 20 ms on every path (harness/validity-bounds.json): far under the stall, far over this VM's usual scheduling noise.
const scenario = { network: {
  forward: { delay_ms: 25, rate: { kbit: 4000 }, qdisc: { kind: 'fifo', limit_ms: 300 } },
  reverse: { delay_ms: 25, rate: { kbit: 4000 }, qdisc: { kind: 'fifo', limit_ms: 300 } },
} };

/**
 * A run without a call, as the harness judges it: the network's checks alone, on what the network reported, the uml
 * probe's coverage over `span` (the run's measured period; default: from 1.5 s after the network was up to 0.5 s ago).
 * @param {import('../index.js').Network} net @param {{ fromS: number, toS: number }} [span] epoch s
 */
function judge(net, span) {
  return validityChecks({ dataPrefix: '10.0.', selectedPairs: [], calls: [], connectTimeoutS: 0, connectSeconds: null,
    cpuLimited: {}, samples: {}, bottleneckAlive: net.info.backend.used === 'userspace' ? net.bottleneckAlive() : null,
    bottleneckCounters: net.bottleneckCounters(), captures: null, captureEnabled: false, backend: net.info.backend.used,
    guestHealth: net.guestHealth(span ?? { fromS: (upAt.get(net) ?? 0) + 1.5, toS: Date.now() / 1000 - 0.5 }),
    probeIntervalMs: net.info.backend.probe?.interval_ms });
}

/** When each network of this file was up (epoch s). @type {Map<any, number>} */
const upAt = new Map();
/** @param {any} o createNetwork's options */
async function network(o) {
  const net = await createNetwork(o);
  upAt.set(net, Date.now() / 1000);
  return net;
}

/**
 * A 2 Mbit/s UDP flow for 4 s; 1.5 s in, every pid is stopped for STOP_MS, then continued.
 * @param {import('../index.js').Network} net @param {number[]} pids
 */
async function flowWithStall(net, pids) {
  const flow = udpFlow(net, { kbit: 2000, seconds: 4, len: 1000 });
  await sleep(1500);
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  await sleep(STOP_MS);
  for (const pid of pids) process.kill(pid, 'SIGCONT');
  return flow;
}

test('userspace: a 300 ms SIGSTOP of the forward bottleneck shows in its release lateness and fails the run', { skip: SKIP_NO_BOTTLENECK, timeout: 60000 }, async (t) => {
  const net = await network({ id: newId(), scenario, runDir: newRunDir('lateness-userspace'), backend: 'userspace' });
  try {
    // Before the stall: on time, and the check passes.
    await udpFlow(net, { kbit: 2000, seconds: 1, len: 1000 });
    await sleep(300); // the next stats line
    // Before the stall no release is anywhere near its length (the check's verdict then depends on the host's load).
    const before = judge(net).checks.find((c) => c.name === 'bottleneck_lateness_bounded');
    t.diagnostic(`before: ${before?.ok}: ${before?.detail}`);
    const early = /** @type {Record<string, number>} */ (net.bottleneckCounters()?.forward);
    measure(t, 'lateness.userspace.before_max_ms', early?.max_lateness_ms, 3);
    assert.ok(early.max_lateness_ms < STOP_MS / 3, `max lateness ${early.max_lateness_ms} ms before any stall`);

    const forward = net.backend.processes().find((p) => p.direction === 'forward');
    assert.ok(forward?.pid, 'no forward bottleneck process');
    const out = await flowWithStall(net, [forward.pid]);
    assert.match(out, /receiver/);
    await sleep(300);
    const c = /** @type {Record<string, number>} */ (net.bottleneckCounters()?.forward);
    t.diagnostic(`forward counters after the stall: ${JSON.stringify(c)}`);
    measure(t, 'lateness.userspace.after_max_ms', c?.max_lateness_ms, 3);
    assert.ok(c.max_lateness_ms >= STOP_MS * 0.8 && c.max_lateness_ms < STOP_MS * 3, `max lateness ${c.max_lateness_ms} ms after a ${STOP_MS} ms stop`);
    // Late by the stall: the packets already inside the bottleneck (its 25 ms delay line holds about 6 at 250 packets/s).
    // Those that waited in the kernel's queue are timed from when it read them unless the kernel stamps them
    // (kernel_timestamped), so they do not count as late: the counters see a stall through the packets it caught inside.
    assert.ok(c.released_late_100ms >= 1, `${c.released_late_100ms} packets released over 100 ms late`);

    const v = judge(net);
    const check = v.checks.find((x) => x.name === 'bottleneck_lateness_bounded');
    t.diagnostic(`after: ${check?.detail}`);
    assert.equal(v.valid, false);
    assert.equal(check?.ok, false);
    assert.match(check?.detail ?? '', /^forward: a packet was released \d+\.\d ms after its due time, over the bound of 20 ms/);
    // Nothing else fails but bottleneck_on_time, which the stall may fail too: when the kernel stamped the packets
    // that waited in its queue (kernel_timestamped), all of them count late, over 1 % of this flow's.
    assert.ok(v.checks.filter((x) => x.ok === false)
      .every((x) => x.name === 'bottleneck_lateness_bounded' || x.name === 'bottleneck_on_time'), JSON.stringify(v.checks));
  } finally {
    await net.down();
  }
});

test('uml: a 300 ms SIGSTOP of the guest shows in its lateness probe (uml-timer.jsonl) and fails the run', { skip: umlUnavailable() ?? false, timeout: 120000 }, async (t) => {
  const runDir = newRunDir('lateness-uml');
  const net = await network({ id: newId(), scenario, runDir, backend: 'uml' });
  try {
    await udpFlow(net, { kbit: 2000, seconds: 2, len: 1000 });
    await sleep(1200); // the probe's next line
    const before = judge(net);
    t.diagnostic(`before: ${before.checks.filter((c) => /lateness|uml_/.test(c.name)).map((c) => `${c.name} ${c.ok}: ${c.detail}`).join(' | ')}`);
    const early = net.guestHealth()?.timer;
    measure(t, 'lateness.uml.before_answers_per_s', early && early.seconds ? early.samples / early.seconds : null, 3);
    measure(t, 'lateness.uml.before_max_ms', early?.max_ms, 3);
    const drops = net.guestHealth()?.drops?.drops;
    measure(t, 'lateness.uml.before_drops_outside_qdisc', drops ? Object.values(drops).reduce((a, b) => a + b, 0) : null);
    // One request every interval_ms: 1000 / interval_ms answers a second.
    assert.ok(early && early.samples >= 0.7 * (1000 / LATENESS_LINK.interval_ms) * early.seconds && early.max_ms < STOP_MS / 3,
      `guest timer before any stall: ${JSON.stringify(early)}`);
    assert.equal(before.checks.find((c) => c.name === 'uml_lossless_outside_qdisc')?.ok, true);

    // The guest's kernel is one host process (its threads stop with it): while it is stopped nothing in the guest runs.
    const guest = net.backend.processes()[0];
    assert.ok(guest?.pid, 'no guest process');
    const out = await flowWithStall(net, [guest.pid]);
    assert.match(out, /receiver/);
    await sleep(1200);
    const health = net.guestHealth();
    t.diagnostic(`guest health after the stall: ${JSON.stringify(health)}`);
    const timer = health?.timer;
    measure(t, 'lateness.uml.after_max_ms', timer?.max_ms, 3);
    measure(t, 'lateness.uml.late_100ms', timer?.late_100ms);
    assert.ok(timer && timer.max_ms >= STOP_MS * 0.8 && timer.max_ms < STOP_MS * 3, `guest timer max ${timer?.max_ms} ms after a ${STOP_MS} ms stop`);
    // Every ping sent during the stop is answered late, from the stop's length down: several over 100 ms.
    assert.ok(timer.late_100ms >= 5, `${timer.late_100ms} answers more than 100 ms late`);

    const v = judge(net);
    const check = v.checks.find((x) => x.name === 'bottleneck_lateness_bounded');
    t.diagnostic(`after: ${check?.detail}; ${v.checks.find((x) => x.name === 'uml_lossless_outside_qdisc')?.detail}`);
    assert.equal(v.valid, false);
    assert.equal(check?.ok, false);
    assert.match(check?.detail ?? '', /the uml guest's timers .*: one fired \d+\.\d ms late in the second ending \d+ s (into|before) the call, over the bound of 20 ms/);

    // The files the run directory keeps: one timer line a second, the counters of the guest's devices (r-eth0, r-eth1,
    // the IFBs, lat0).
    const lines = readFileSync(join(runDir, 'uml-timer.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(Object.keys(lines[0]), ['t', 'samples', 'late_1ms', 'late_10ms', 'late_100ms', 'max_ms', 'gap_ms', 'gap_from_t', 'last_line_t']);
    assert.ok(existsSync(join(runDir, 'uml-links.jsonl')));
    const last = readFileSync(join(runDir, 'uml-links.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).pop();
    assert.ok(['r-eth0', 'r-eth1', 'lat0'].every((d) => d in last.devices), `devices ${Object.keys(last.devices)}`);
    // 2 s and 4 s at 250 packets/s left through r-eth1 (1500 packets), besides ARP.
    measure(t, 'lateness.uml.r_eth1_tx_packets', last.devices['r-eth1']?.tx_packets);
    assert.ok(last.devices['r-eth1'].tx_packets >= 1400, `r-eth1 sent ${last.devices['r-eth1'].tx_packets} packets`);
  } finally {
    await net.down();
  }
});

test('uml: the lateness probe stopped half way (SIGSTOP of its ping) is a run that is not valid, naming the gap', { skip: umlUnavailable() ?? false, timeout: 120000 }, async (t) => {
  const net = await network({ id: newId(), scenario, runDir: newRunDir('probe-gap-uml'), backend: 'uml' });
  try {
    const fromS = Date.now() / 1000 + 1;
    await udpFlow(net, { kbit: 1000, seconds: 3, len: 1000 });
    const calmSpan = { fromS, toS: Date.now() / 1000 - 0.2 };
    const calm = judge(net, calmSpan).checks.find((c) => c.name === 'uml_probe_covered');
    measure(t, 'probe.uml.before_max_silence_ms', net.guestHealth(calmSpan)?.coverage?.max_gap_ms, 1);
    t.diagnostic(`before: ${calm?.ok}: ${calm?.detail}`);
    assert.equal(calm?.ok, true, calm?.detail);
    // The probe's ping, which this process started (netem/uml/lateness.js), stopped for 2 s while the flow goes on.
    const ping = /** @type {any} */ (net.backend).lateness?.pid;
    assert.ok(ping, 'no probe process');
    const flow = udpFlow(net, { kbit: 1000, seconds: 5, len: 1000 });
    await sleep(1500);
    const stoppedAt = Date.now() / 1000;
    process.kill(ping, 'SIGSTOP');
    await sleep(2000);
    process.kill(ping, 'SIGCONT');
    await flow;
    await sleep(1200); // the probe's next summary
    const v = judge(net, { fromS, toS: Date.now() / 1000 - 0.2 });
    const check = v.checks.find((c) => c.name === 'uml_probe_covered');
    t.diagnostic(`after: ${check?.detail}`);
    assert.equal(v.valid, false);
    assert.equal(check?.ok, false);
    const m = /silent for (\d+) ms from .* \((\d+\.\d) s into the call\), over the bound of 50 ms/.exec(check?.detail ?? '');
    measure(t, 'probe.uml.silent_ms', m ? Number(m[1]) : null);
    measure(t, 'probe.uml.gap_start_offset_s', m ? Number(m[2]) - (stoppedAt - fromS) : null, 3);
    assert.ok(m, check?.detail);
    assert.ok(Number(m[1]) >= 1900 && Number(m[1]) < 3000, `silent ${m[1]} ms for a 2 s stop`);
    assert.ok(Math.abs(Number(m[2]) - (stoppedAt - fromS)) < 0.3, `the gap from ${m[2]} s, stopped at ${(stoppedAt - fromS).toFixed(1)} s`);
    // Stopped until the end: the silence still going when the call ends.
    process.kill(ping, 'SIGSTOP');
    try {
      await sleep(1500);
      const end = judge(net, { fromS, toS: Date.now() / 1000 }).checks.find((c) => c.name === 'uml_probe_covered');
      t.diagnostic(`stopped at the end: ${end?.detail}`);
      assert.equal(end?.ok, false);
    } finally {
      process.kill(ping, 'SIGCONT');
    }
  } finally {
    await net.down();
  }
});
