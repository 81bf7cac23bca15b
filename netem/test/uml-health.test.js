// @ts-check
// The uml guest's health probes run on the host, where they behave as against the guest: the lateness probe's
// summary of ping's output (netem/uml/lateness.js), on fixed lines and on a real ping whose silence counts as late;
// the device counter probe (netem/uml/links_probe.py); and the windows netem/uml/health.js sums from their files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { timerSummary, linkDrops, probeCoverage, DROP_COUNTERS } from '../uml/health.js';
import { latenessCounter, startLatenessProbe } from '../uml/lateness.js';

const LINKS_PROBE = fileURLToPath(new URL('../uml/links_probe.py', import.meta.url));
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
const lines = (/** @type {string} */ file) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

/** Lines without ping -D's stamps (as above): no gap and no time of ping's own. */
const NO_STAMPS = { gap_ms: null, gap_from_t: null, last_line_t: null };

test('lateness.js: RTT minus the guest\'s delay per answer; a request unanswered for 1 s counts once, as late as it waited', () => {
  const c = latenessCounter(5);
  c.line('PING 10.98.0.2 (10.98.0.2) 16(44) bytes of data.', 0);
  c.line('24 bytes from 10.98.0.2: icmp_seq=1 ttl=64 time=5.31 ms', 10);
  c.line('24 bytes from 10.98.0.2: icmp_seq=2 ttl=64 time=17.2 ms', 30);
  c.line('no answer yet for icmp_seq=3', 70);
  c.line('24 bytes from 10.98.0.2: icmp_seq=3 ttl=64 time=305 ms', 330); // a stall: answered late
  c.line('no answer yet for icmp_seq=4', 90);
  c.line('no answer yet for icmp_seq=4', 110); // ping says it again: counted from the first time
  assert.deepEqual(c.second(1000), { t: 1, samples: 3, late_1ms: 2, late_10ms: 2, late_100ms: 1, max_ms: 300, ...NO_STAMPS });
  // seq 4 never answered: in the first summary a second after ping said so, as late as it has waited.
  assert.deepEqual(c.second(2000), { t: 2, samples: 1, late_1ms: 1, late_10ms: 1, late_100ms: 1, max_ms: 1910, ...NO_STAMPS });
  c.line('24 bytes from 10.98.0.2: icmp_seq=4 ttl=64 time=2500 ms', 2600); // already counted
  c.line('24 bytes from 10.98.0.2: icmp_seq=5 ttl=64 time=4.2 ms', 2700); // earlier than the delay: 0 late
  assert.deepEqual(c.second(3000), { t: 3, samples: 1, late_1ms: 0, late_10ms: 0, late_100ms: 0, max_ms: 0, ...NO_STAMPS });
  // ping itself silent for 1.5 s (stopped, or its reader was): one sample that late when its next line comes; when a
  // summary already counted that silence, only its length.
  c.silence(1500, false);
  assert.deepEqual(c.second(4000), { t: 4, samples: 1, late_1ms: 1, late_10ms: 1, late_100ms: 1, max_ms: 1500, ...NO_STAMPS });
  c.silence(2200, true);
  assert.deepEqual(c.second(5000), { t: 5, samples: 0, late_1ms: 0, late_10ms: 0, late_100ms: 0, max_ms: 2200, ...NO_STAMPS });
});

test('lateness.js: a real ping, summarised once a second; stopping it for 1.5 s counts as late, not as nothing', { timeout: 30000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-probe-'));
  const out = join(dir, 'uml-timer.jsonl');
  // Loopback answers at once (no netem on the way): every answer counts 0 ms late. Every 20 ms, not the guest's 5:
  // with nothing in flight and the next request within a clock tick, ping would spin (startLatenessProbe).
  const intervalMs = 20;
  const probe = startLatenessProbe({ hostNsExec: [], outFile: out, target: '127.0.0.1', intervalMs });
  try {
    await sleep(2500);
    const from = Date.now() / 1000;
    const calm = lines(out);
    assert.ok(calm.length >= 2, `${calm.length} lines in 2.5 s`);
    assert.deepEqual(Object.keys(calm[0]), ['t', 'samples', 'late_1ms', 'late_10ms', 'late_100ms', 'max_ms', 'gap_ms', 'gap_from_t', 'last_line_t']);
    // One request every intervalMs: 1000 / intervalMs answers a second (the first second has ping's start; a loaded
    // machine delays the summary's timer, so a "second" may be shorter or longer).
    const perSecond = 1000 / intervalMs;
    assert.ok(calm.slice(1).every((l) => l.samples >= 0.4 * perSecond && l.samples <= 1.6 * perSecond && l.late_10ms === 0), JSON.stringify(calm));
    const stoppedAt = Date.now() / 1000;
    process.kill(/** @type {number} */ (probe.pid), 'SIGSTOP');
    await sleep(1500);
    process.kill(/** @type {number} */ (probe.pid), 'SIGCONT');
    await sleep(1500);
    const t = timerSummary(readFileSync(out, 'utf8'), from);
    assert.ok(t && t.late_100ms >= 1 && t.max_ms >= 1000 && t.max_ms < 2500, JSON.stringify(t));
    // ping's own stamps (-D) show the silence where it was: one gap of about 1.5 s, beginning when it was stopped.
    const c = probeCoverage(readFileSync(out, 'utf8'), from, Date.now() / 1000 - 0.5);
    assert.ok(c && c.max_gap_ms !== null && c.max_gap_ms >= 1400 && c.max_gap_ms < 2500, JSON.stringify(c));
    assert.ok(c.gap_from_t !== null && Math.abs(c.gap_from_t - stoppedAt) < 0.1, `gap from ${c.gap_from_t}, stopped at ${stoppedAt}`);
  } finally {
    probe.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('links_probe.py: a line at once and one a second, with the host\'s devices\' counters', { timeout: 30000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-probe-'));
  const links = join(dir, 'uml-links.jsonl');
  const p = spawn('/usr/bin/python3', ['-S', '-I', LINKS_PROBE, links], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await sleep(3500);
    const all = lines(links);
    // At once, then once a second (python3's start takes a while on a loaded machine).
    assert.ok(all.length >= 3 && all.length <= 5, `${all.length} device lines in 3.5 s`);
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
  assert.deepEqual(timerSummary(timer, 101), { seconds: 2, samples: 171, late_1ms: 3, late_10ms: 1, late_100ms: 1, max_ms: 301, max_t: 102.5 });
  assert.equal(timerSummary(timer, 200), null);
  const dev = (/** @type {number} */ rx, /** @type {number} */ tx) => ({ rx_packets: 5 * rx, ...Object.fromEntries(DROP_COUNTERS.map((c) => [c, 0])),
    rx_dropped: rx, tx_dropped: tx });
  const links = [
    { t: 99, devices: { vec0: dev(7, 0) }, softnet_dropped: 0 },
    { t: 100.9, devices: { 'r-eth0': dev(1, 0), 'r-eth1': dev(0, 0) }, softnet_dropped: 2 },
    { t: 104, devices: { 'r-eth0': dev(1, 0), 'r-eth1': dev(0, 4) }, softnet_dropped: 5 },
  ].map((l) => JSON.stringify(l)).join('\n') + '\n';
  assert.deepEqual(linkDrops(links, 101), { seconds: 3, drops: { 'r-eth1.tx_dropped': 4, softnet_dropped: 3 }, unreadable: [] });
  assert.deepEqual(linkDrops(links, 50)?.drops, { 'r-eth0.rx_dropped': 1, 'r-eth1.tx_dropped': 4, softnet_dropped: 5 });
  assert.equal(linkDrops('', 1), null);
});

test('health.js: a counter the probe could not read (null) is unreadable at the window\'s start or end, never a 0', () => {
  const dev = (/** @type {number | null} */ rx) => ({ ...Object.fromEntries(DROP_COUNTERS.map((c) => [c, 0])), rx_dropped: rx });
  const links = (/** @type {any} */ a, /** @type {any} */ b) => [{ t: 100, ...a }, { t: 110, ...b }].map((l) => JSON.stringify(l)).join('\n') + '\n';
  const end = linkDrops(links({ devices: { 'r-eth0': dev(3) }, softnet_dropped: 0 }, { devices: { 'r-eth0': dev(null) }, softnet_dropped: null }), 100);
  assert.deepEqual(end, { seconds: 10, drops: {}, unreadable: ['r-eth0.rx_dropped', 'softnet_dropped'] });
  const start = linkDrops(links({ devices: { 'r-eth0': dev(null) }, softnet_dropped: 1 }, { devices: { 'r-eth0': dev(9) }, softnet_dropped: 1 }), 100);
  assert.deepEqual(start?.unreadable, ['r-eth0.rx_dropped']);
});

test('health.js probeCoverage: ping\'s longest silence in the call, between two of its lines or still going at a summary, and when it began', () => {
  const interval = 0.005;
  /** Summaries of a probe that answered every 5 ms from 99 s, was stopped at 130.2 s and never resumed. */
  const summaries = [];
  for (let t = 100; t <= 162; t++) {
    const last = Math.min(t - interval / 2, 130.2);
    summaries.push({ t, samples: t <= 130 ? 200 : 0, late_1ms: 0, late_10ms: 0, late_100ms: 0, max_ms: 0, gap_ms: t <= 131 ? 5.1 : null,
      gap_from_t: t <= 131 ? last - 0.0051 : null, last_line_t: last });
  }
  const text = summaries.map((l) => JSON.stringify(l)).join('\n') + '\n';
  const c = probeCoverage(text, 100, 160);
  assert.ok(c);
  assert.equal(c.summaries, 61);
  assert.equal(c.max_gap_ms, 29800); // from 130.2 s to the call's end, 160 s
  assert.equal(c.gap_from_t, 130.2);
  // A probe that ran throughout: its longest silence is its own interval.
  const calm = probeCoverage(text, 100, 125);
  assert.equal(calm?.max_gap_ms, 5.1);
  // Resumed after a silence: the gap its next line closed.
  const resumed = text.replace(/"gap_ms":5.1,"gap_from_t":[\d.]+,"last_line_t":120.9975/, '"gap_ms":842,"gap_from_t":120.1,"last_line_t":120.9975');
  assert.equal(probeCoverage(resumed, 100, 125)?.max_gap_ms, 842);
  assert.equal(probeCoverage(resumed, 100, 125)?.gap_from_t, 120.1);
  // The summaries themselves stopped (its reader stalled): the time between two.
  const stalled = summaries.filter((l) => l.t < 110 || l.t > 114).map((l) => JSON.stringify(l)).join('\n') + '\n';
  assert.equal(probeCoverage(stalled, 100, 125)?.max_summary_gap_s, 6);
  assert.equal(probeCoverage(text, 200, 210), null, 'no summary in the window');
  // Older summaries (no stamps of ping's own): its silences are not measured.
  const old = summaries.map((l) => JSON.stringify(l, ['t', 'samples', 'late_1ms', 'late_10ms', 'late_100ms', 'max_ms'])).join('\n') + '\n';
  assert.equal(probeCoverage(old, 100, 125)?.max_gap_ms, null);
});
