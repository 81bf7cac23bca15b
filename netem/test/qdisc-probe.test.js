// @ts-check
// The uml guest's qdisc statistics probe (netem/uml/qdisc_probe.py) run on the host, where it reads the host's qdiscs
// as it reads the guest's there: its lines are what `tc -s -j qdisc show` prints, in the kernel backend's format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const QDISC_PROBE = fileURLToPath(new URL('../uml/qdisc_probe.py', import.meta.url));
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));
const lines = (/** @type {string} */ file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
/** A qdisc's identity, without its counters (they move between two reads). @param {any} q */
const identity = (q) => `${q.dev} ${q.kind} ${q.handle} ${q.parent ?? 'root'}`;

test('qdisc_probe.py: a line at once and then every interval, each the qdiscs tc -s -j qdisc show lists, in one write', { timeout: 30000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-qdisc-probe-'));
  const out = join(dir, 'qdisc-stats.jsonl');
  const interval_s = 0.2;
  const p = spawn('/usr/bin/python3', ['-S', '-I', QDISC_PROBE, out, String(interval_s)], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    // Three samples, however slowly python3 and tc start here (no bound on how long that takes).
    for (let waited = 0; lines(out).length < 3; waited += 50) {
      assert.ok(waited < 25000, `${lines(out).length} samples in 25 s`);
      await sleep(50);
    }
    const tcSays = JSON.parse(execFileSync('tc', ['-s', '-j', 'qdisc', 'show'], { encoding: 'utf8' }));
    const samples = lines(out).slice(0, 3).map((l) => JSON.parse(l)); // whole lines only: each went out in one write
    for (const s of samples) {
      assert.deepEqual(Object.keys(s), ['t', 'ns', 'guest', 'qdiscs']);
      assert.equal(s.ns, 'r');
      assert.equal(s.guest, 'uml');
      assert.deepEqual(s.qdiscs.map(identity), tcSays.map(identity));
      for (const q of s.qdiscs) assert.equal(typeof q.packets, 'number', 'with -s: the counters are there');
    }
    // The probe's own schedule: the next sample is due an interval after the last, and never sooner than half of one.
    for (let k = 1; k < samples.length; k++) assert.ok(samples[k].t - samples[k - 1].t >= interval_s / 2 - 0.001, JSON.stringify(samples.map((s) => s.t)));
  } finally {
    p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
