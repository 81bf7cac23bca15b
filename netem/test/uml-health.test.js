// @ts-check
// The uml guest's health probe (netem/uml/timer_probe.py) run on the host, where it behaves as in the guest: its
// timer lines see a 300 ms SIGSTOP as one wake-up 300 ms late; and the windows netem/uml/health.js sums from its files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { timerSummary, linkDrops } from '../uml/health.js';

const PROBE = fileURLToPath(new URL('../uml/timer_probe.py', import.meta.url));
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

test('timer_probe.py: a 300 ms stop of the probe is one wake-up ~300 ms late; its device lines name the host\'s devices', { timeout: 30000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-probe-'));
  const timer = join(dir, 'uml-timer.jsonl');
  const links = join(dir, 'uml-links.jsonl');
  const p = spawn('/usr/bin/python3', ['-S', '-I', PROBE, timer, links], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await sleep(1500);
    const from = Date.now() / 1000;
    process.kill(/** @type {number} */ (p.pid), 'SIGSTOP');
    await sleep(300);
    process.kill(/** @type {number} */ (p.pid), 'SIGCONT');
    await sleep(2300);
    const t = timerSummary(readFileSync(timer, 'utf8'), from);
    assert.ok(t, 'no timer line after the stop');
    assert.ok(t.max_ms >= 280 && t.max_ms < 1000, `latest wake-up ${t.max_ms} ms late after a 300 ms stop`);
    assert.equal(t.late_100ms, 1, JSON.stringify(t));
    // A 10 ms loop: about 100 wake-ups a second, fewer by the stop.
    assert.ok(t.samples >= 60 * t.seconds && t.samples <= 101 * t.seconds, JSON.stringify(t));
    const all = readFileSync(links, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(all.length >= 3, `${all.length} device lines in 4 s`);
    assert.equal(typeof all[0].softnet_dropped, 'number');
    for (const counters of Object.values(all[0].devices)) assert.equal(typeof /** @type {any} */ (counters).rx_dropped, 'number');
  } finally {
    p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('health.js: the timer lines after the network was up, summed; drop counters that moved since, by device', () => {
  const timer = [
    { t: 100, samples: 50, late_1ms: 9, late_10ms: 3, late_100ms: 1, max_ms: 400 }, // booting: before the window
    { t: 101.5, samples: 100, late_1ms: 1, late_10ms: 0, late_100ms: 0, max_ms: 2.5 },
    { t: 102.5, samples: 71, late_1ms: 2, late_10ms: 1, late_100ms: 1, max_ms: 301 },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n{"t": 103.5, "samp';
  assert.deepEqual(timerSummary(timer, 101), { seconds: 2, samples: 171, late_1ms: 3, late_10ms: 1, late_100ms: 1, max_ms: 301 });
  assert.equal(timerSummary(timer, 200), null);
  const dev = (/** @type {number} */ rx, /** @type {number} */ tx) => ({ rx_packets: 5 * rx, rx_dropped: rx, tx_dropped: tx, rx_errors: 0 });
  const links = [
    { t: 99, devices: { vec0: dev(7, 0) }, softnet_dropped: 0 },
    { t: 100.9, devices: { 'r-eth0': dev(1, 0), 'r-eth1': dev(0, 0) }, softnet_dropped: 2 },
    { t: 104, devices: { 'r-eth0': dev(1, 0), 'r-eth1': dev(0, 4) }, softnet_dropped: 5 },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n';
  assert.deepEqual(linkDrops(links, 101), { seconds: 3, drops: { 'r-eth1.tx_dropped': 4, softnet_dropped: 3 } });
  assert.deepEqual(linkDrops(links, 50)?.drops, { 'r-eth0.rx_dropped': 1, 'r-eth1.tx_dropped': 4, softnet_dropped: 5 });
  assert.equal(linkDrops('', 1), null);
});
