// @ts-check
// The run recorder on a full disk: the first failed write tells the run to stop (once), the reserve it kept is given
// back, and the manifest can still record how the run ended.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { RunRecorder } from '../recorder.js';

test('a full disk: one write error reported, the manifest still written, what was written kept', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-full-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status !== 0) return t.skip('cannot mount a tmpfs here (needs root)');
  try {
    /** @type {string[]} */
    const errors = [];
    const recorder = new RunRecorder(dir, { onWriteError: (m) => errors.push(m) });
    recorder.writeManifest({ status: 'running' });
    const filler = 'x'.repeat(64 * 1024);
    let written = 0;
    while (errors.length === 0 && written < 100) { recorder.event('filler', { filler }); written++; }
    assert.ok(written > 3 && written < 100, `the disk filled after ${written} events`);
    for (let i = 0; i < 5; i++) recorder.event('filler', { filler });
    assert.equal(errors.length, 1, 'reported once');
    assert.match(errors[0], /^cannot write the run directory .* \(ENOSPC\); the run stopped there, keeping what was written$/);
    recorder.writeManifest({ status: 'incomplete', error: errors[0] });
    recorder.close();
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
    assert.equal(manifest.status, 'incomplete');
    const events = fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8').trim().split('\n');
    assert.ok(events.length >= written - 1, 'the events written before the disk filled are kept');
    const unreadable = events.filter((line) => { try { JSON.parse(line); return false; } catch { return true; } });
    assert.ok(unreadable.length <= 1, `at most the line the disk cut short is lost (${unreadable.length} unreadable)`);
    assert.equal(fs.existsSync(path.join(dir, '.rtclab-reserve')), false, 'the reserve is gone');
  } finally {
    spawnSync('umount', [dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('frames: a header line first (sampling, clock, clip), then one line per frame, then what the page dropped', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-frames-'));
  try {
    const recorder = new RunRecorder(dir);
    const clip = { path: '/clips/c.y4m', frames: 150, fps: 30, stamp_version: 1 };
    const frame = (/** @type {number} */ n) => ({ kind: 'frame', presented_frames: n, clip_index: n % 150 });
    recorder.frames('b', { t_ms: 1000, read_every: 2, time_origin_ms: 999.5, dropped: 0, frames: [frame(1), frame(2)] }, clip);
    recorder.frames('b', { t_ms: 2000, read_every: 2, time_origin_ms: 999.5, dropped: 3, frames: [frame(3)] }, clip);
    recorder.close();
    const lines = fs.readFileSync(path.join(dir, 'frames-b.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], { kind: 'header', t: 1, side: 'b', read_every: 2, time_origin_ms: 999.5, clip });
    assert.deepEqual(lines.slice(1).map((l) => l.presented_frames ?? l.kind), [1, 2, 3, 'dropped']);
    assert.deepEqual(lines[4], { kind: 'dropped', t: 2, frames: 3 });
    assert.equal(recorder.frameCount.b, 3);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
