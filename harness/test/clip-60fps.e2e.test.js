// @ts-check
// End-to-end: the default clip at 60 fps (scenarios/examples/clip-60fps.yaml) works as a user runs it: the harness
// makes media/default-60fps.y4m on its first use when it is missing (media/clips.js, the path every run takes), the
// camera delivers 60 fps, the run is valid, and the stamp is read on at least 99 % of the frames b presented (the
// page's callback misses some at 60 fps; the track's every frame, read in a worker, has them: docs/metrics.md,
// "Frames"). A 20 s call: about 30 s.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { namedClipPath } from '../../media/clips.js';
import { leftovers } from '../../netem/test-support/leftovers.js';
import { measure } from '../../netem/test-support/measure.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('a 60 fps call of the default clip: made on first use, 60 fps delivered, valid, stamps read on >= 99 % of the presented frames', { timeout: 180_000 }, async (t) => {
  const clip = /** @type {string} */ (namedClipPath('default-60fps'));
  const madeHere = !fs.existsSync(clip);
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-60fps-'));
  t.after(() => fs.rmSync(out, { recursive: true, force: true }));
  const { code, output } = await new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'harness', 'cli.js'), '--scenario',
      path.join(repoRoot, 'scenarios/examples/clip-60fps.yaml'), '--duration', '20', '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => { text += d; });
    child.stderr.on('data', (d) => { text += d; });
    child.on('exit', (c) => resolve({ code: c, output: text }));
  });
  const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
  const metrics = JSON.parse(fs.readFileSync(path.join(out, 'metrics.json'), 'utf8'));
  assert.equal(manifest.status, 'complete', output);
  // The clip: made through the first-use path when it was missing, said so; there now, at 60 fps, stamped.
  if (madeHere) assert.match(output, /making the default-60fps clip .* on its first use/);
  const header = fs.readFileSync(clip).subarray(0, 200).toString('latin1').split('\n')[0];
  assert.match(header, / F60:1 .*XRTCLAB_STAMP=/);
  assert.equal(code, 0, `the run is valid: ${JSON.stringify(metrics.validity.checks.filter((/** @type {any} */ c) => !c.ok))}`);
  assert.equal(metrics.validity.checks.find((/** @type {any} */ c) => c.name === 'camera_frame_rate')?.ok, true);
  const b = metrics.frames.b;
  measure(t, 'clip60.presented_per_s', b.presented_frames / 20, 1);
  measure(t, 'clip60.callbacks_missed_ratio', b.callbacks_missed / b.presented_frames, 4);
  measure(t, 'clip60.presented_read_ratio', b.presented_read_ratio, 4);
  // 60 fps end to end: the compositor presented well over 30 frames a second (this machine: about 54).
  assert.ok(b.presented_frames > 45 * 18, `b presented ${b.presented_frames} frames in 20 s`);
  assert.equal(b.track_frames_missing, null);
  assert.ok(b.presented_read_ratio >= 0.99, `stamp read on ${b.presented_read} of ${b.presented_frames} presented frames`);
  assert.deepEqual(leftovers(manifest.id), []);
});
