// @ts-check
// load-tolerant: the exit, the reason and what is kept; its one bound (stopped before 55 s of 60) is the tmpfs's size.
// A disk that fills during a real call: the run stops at once with the reason, keeps what was written, and leaves
// nothing behind. The run directory is a small tmpfs, so the first of the captures, the ground-truth log or the
// harness's own records to hit the limit stops the run.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { leftovers } from '../../netem/test-support/leftovers.js';
import { measure } from '../../netem/test-support/measure.js';

const cli = fileURLToPath(new URL('../cli.js', import.meta.url));

test('the disk fills during a call: the run stops with the reason, keeps its records, leaves nothing behind', { timeout: 150_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-fill-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1500k', 'tmpfs', dir]).status !== 0) return t.skip('cannot mount a tmpfs here (needs root)');
  try {
    const out = path.join(dir, 'run');
    const started = Date.now();
    const { code, stderr } = await new Promise((resolve) => {
      const child = spawn(process.execPath, [cli, '--out', out, '--duration', '60'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d) => { text += d; });
      child.stderr.on('data', (d) => { text += d; });
      child.on('exit', (c) => resolve({ code: c, stderr: text }));
    });
    const seconds = (Date.now() - started) / 1000;
    measure(t, 'full_disk.default.stop_s', seconds, 3);
    assert.equal(code, 1, stderr);
    assert.ok(seconds < 55, `stopped after ${seconds.toFixed(0)} s of a 60 s call`);
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    assert.equal(manifest.status, 'incomplete');
    // Whichever writer hit the limit first says so in its own words.
    assert.match(manifest.error, /cannot write the run directory .*ENOSPC|capture on .* stopped during the run.*(No space|space left)|bottleneck \(\w+\) exited during the run.*(write|space)/i);
    assert.match(stderr, new RegExp(`run incomplete: ${manifest.error.slice(0, 40).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    for (const f of ['capture-a.pcap', 'capture-b.pcap', 'events.jsonl']) assert.ok(fs.statSync(path.join(out, f)).size > 0, `${f} kept`);
    assert.deepEqual(leftovers(manifest.id), []);
  } finally {
    spawnSync('umount', [dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
