// @ts-check
// The run recorder on a full disk: the first failed write tells the run to stop (once), the reserve it kept is given
// back, and the manifest can still record how the run ended.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import zlib from 'node:zlib';
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
    // A page that does not say whether it read the track's frames read none.
    assert.deepEqual(lines[0], { kind: 'header', t: 1, side: 'b', read_every: 2, sample_every: 0, time_origin_ms: 999.5,
      track_frames_missing: 'the page recorded no track frames', clip });
    assert.deepEqual(lines.slice(1).map((l) => l.presented_frames ?? l.kind), [1, 2, 3, 'dropped']);
    assert.deepEqual(lines[4], { kind: 'dropped', t: 2, frames: 3 });
    assert.equal(recorder.frameCount.b, 3);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('frames: the track\'s frames in the same file, and the header says whether the page read them', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-frames-'));
  try {
    const recorder = new RunRecorder(dir);
    const track = { kind: 'track_frame', rtp_timestamp: 3000, clip_index: 7 };
    recorder.frames('b', { t_ms: 1000, read_every: 1, time_origin_ms: 1, track_frames_missing: null, dropped: 0,
      frames: [{ kind: 'frame', presented_frames: 1 }, track] }, {});
    recorder.frames('a', { t_ms: 1000, read_every: 1, time_origin_ms: 1, track_frames_missing: 'no MediaStreamTrackProcessor on the page',
      dropped: 0, frames: [] }, {});
    recorder.close();
    const read = (/** @type {string} */ side) => fs.readFileSync(path.join(dir, `frames-${side}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const [header, , trackLine] = read('b');
    assert.equal(header.track_frames_missing, null);
    assert.deepEqual(trackLine, track);
    assert.equal(read('a')[0].track_frames_missing, 'no MediaStreamTrackProcessor on the page');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('frame samples: one gzip member per sample, a JSON line (what the page said, bytes) then the picture', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-samples-'));
  try {
    const recorder = new RunRecorder(dir);
    const pictures = [Buffer.alloc(4 * 2 * 1.5, 7), Buffer.from(Array.from({ length: 6 * 4 * 1.5 }, (_, i) => i))];
    recorder.frameSample('b', { presented_frames: 10, width: 4, height: 2, format: 'I420', clip_index: 3 }, pictures[0]);
    recorder.frameSample('b', { presented_frames: 20, width: 6, height: 4, format: 'I420', clip_index: 4 }, pictures[1]);
    recorder.close();
    const file = fs.readFileSync(path.join(dir, 'frame-samples-b.i420.gz'));
    const all = zlib.gunzipSync(file); // every member, in order
    /** @type {any[]} */
    const got = [];
    for (let pos = 0; pos < all.length;) {
      const eol = all.indexOf(0x0a, pos);
      const meta = JSON.parse(all.subarray(pos, eol).toString());
      got.push({ meta, picture: all.subarray(eol + 1, eol + 1 + meta.bytes) });
      pos = eol + 1 + meta.bytes;
    }
    assert.deepEqual(got.map((g) => [g.meta.kind, g.meta.presented_frames, g.meta.clip_index, g.meta.bytes]), [['sample', 10, 3, 12], ['sample', 20, 4, 36]]);
    assert.ok(got[0].picture.equals(pictures[0]) && got[1].picture.equals(pictures[1]));
    assert.equal(typeof got[0].meta.t, 'number');
    assert.equal(recorder.frameSampleCount.b, 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
