// @ts-check
// The frame stamp (client/frame-stamp.js) and the clip stamper (media/stamp.js): the layout reads back after the
// scaling and quantisation a congested call applies, encoded and decoded by a real VP8 codec (ffmpeg's libvpx).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import {
  BITS, CELLS, COLUMNS, MAX_FRAMES, MIN_CONTRAST, ROWS, STAMP_VERSION, cellRect, decodeLevels, grayDecode, grayEncode,
  lumaLevels, stampCells, stripLevels, stripRect,
} from '../frame-stamp.js';
import { stampFrame, stampStream } from '../../media/stamp.js';
import { clipInfo, parseHeader } from '../../media/y4m.js';
import { readConfig } from '../config.js';
import { scenarioCall } from '../test-support/scenario.js';

const run = promisify(execFile);

/** An I420 frame of mid-grey luma and neutral chroma. @param {number} w @param {number} h */
const greyFrame = (w, h) => {
  const f = new Uint8Array(w * h + 2 * Math.ceil(w / 2) * Math.ceil(h / 2));
  f.fill(128);
  return f;
};

/** Box-filter downscale of a luma plane by an integer factor: what a scaler's area average does. */
function downscale(/** @type {Uint8Array} */ luma, /** @type {number} */ w, /** @type {number} */ h, /** @type {number} */ k) {
  const [ow, oh] = [Math.floor(w / k), Math.floor(h / k)];
  const out = new Uint8Array(ow * oh);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      let sum = 0;
      for (let dy = 0; dy < k; dy++) for (let dx = 0; dx < k; dx++) sum += luma[(y * k + dy) * w + x * k + dx];
      out[y * ow + x] = Math.round(sum / (k * k));
    }
  }
  return out;
}

/** A Y4M stream of `n` grey frames. @param {number} w @param {number} h @param {number} n @param {string} [tags] */
function y4m(w, h, n, tags = 'F30:1 Ip A1:1 C420jpeg') {
  const frame = Buffer.from(greyFrame(w, h));
  return Buffer.concat([Buffer.from(`YUV4MPEG2 W${w} H${h} ${tags}\n`), ...Array.from({ length: n }, () => Buffer.concat([Buffer.from('FRAME\n'), frame]))]);
}

/** Stamps `input` in memory. @param {Buffer} input */
async function stampBuffer(input) {
  /** @type {Buffer[]} */
  const out = [];
  // Chunks of an odd size, so frames and headers straddle them.
  const chunks = [];
  for (let i = 0; i < input.length; i += 7777) chunks.push(input.subarray(i, i + 7777));
  const info = await stampStream(Readable.from(chunks), async (c) => { out.push(Buffer.from(c)); });
  return { info, data: Buffer.concat(out) };
}

test('Gray code: every index round-trips, and consecutive indexes differ in one bit', () => {
  for (let n = 0; n < MAX_FRAMES; n++) {
    assert.equal(grayDecode(grayEncode(n)), n);
    if (n) assert.equal((grayEncode(n) ^ grayEncode(n - 1)).toString(2).replace(/0/g, '').length, 1);
  }
});

test('cells: pairs of opposite colours, even parity, and consecutive frames change two pairs at most', () => {
  for (const n of [0, 1, 2, 149, 150, MAX_FRAMES - 1]) {
    const cells = stampCells(n);
    assert.equal(cells.length, CELLS);
    for (let k = 0; k < BITS; k++) assert.notEqual(cells[2 * k], cells[2 * k + 1]);
    assert.equal(cells.filter((c, i) => i % 2 === 0 && c).length % 2, 0, 'even parity');
    if (n) assert.ok(cells.filter((c, i) => c !== stampCells(n - 1)[i]).length <= 4);
  }
  assert.throws(() => stampCells(MAX_FRAMES), RangeError);
  assert.throws(() => stampCells(-1), RangeError);
});

test('the layout: 40x40 cells at 720p, 10x10 at 320x180, in the top-left strip', () => {
  assert.deepEqual(cellRect(0, 1280, 720), { x0: 0, x1: 40, y0: 0, y1: 40 });
  assert.deepEqual(cellRect(CELLS - 1, 320, 180), { x0: (CELLS - 1) * 10, x1: CELLS * 10, y0: 0, y1: 10 });
  assert.deepEqual(stripRect(1280, 720), { x: 0, y: 0, width: CELLS * 40, height: 40 });
  assert.ok(CELLS <= COLUMNS && ROWS > 1);
});

test('a stamped frame reads back at full size and box-filtered to 1/2, 1/4 and 1/8 (160x90)', () => {
  for (const n of [0, 1, 77, 149, 2047, MAX_FRAMES - 1]) {
    const f = greyFrame(1280, 720);
    stampFrame(f, 1280, 720, n);
    const luma = f.subarray(0, 1280 * 720);
    assert.equal(decodeLevels(lumaLevels(luma, 1280, 720)).index, n);
    for (const k of [2, 4, 8]) {
      const small = downscale(luma, 1280, 720, k);
      assert.equal(decodeLevels(lumaLevels(small, 1280 / k, 720 / k)).index, n, `1/${k}`);
    }
  }
});

test('a picture without a stamp, or a pair blurred to grey, or a wrong parity, reads as no index', () => {
  assert.equal(decodeLevels(new Array(CELLS).fill(128)).index, null);
  /** @type {number[]} */
  const levels = stampCells(5).map((white) => (white ? 255 : 0));
  assert.equal(decodeLevels(levels).index, 5);
  const grey = [...levels];
  grey[0] = grey[1] = 128;
  const r = decodeLevels(grey);
  assert.equal(r.index, null);
  assert.ok(r.contrast < MIN_CONTRAST);
  const flipped = [...levels];
  [flipped[0], flipped[1]] = [flipped[1], flipped[0]]; // one bit wrong: the parity no longer holds
  assert.equal(decodeLevels(flipped).index, null);
});

test('stripLevels reads each cell centre of an RGBA strip as a canvas returns it', () => {
  const cellPx = 8;
  const rgba = new Uint8ClampedArray(CELLS * cellPx * cellPx * 4);
  const cells = stampCells(1234);
  for (let y = 0; y < cellPx; y++) {
    for (let x = 0; x < CELLS * cellPx; x++) {
      // A 1-pixel dark border around each cell (as a scaler's blur would leave) must not matter.
      const edge = x % cellPx === 0 || y === 0;
      const v = edge ? 0 : cells[Math.floor(x / cellPx)] ? 250 : 5;
      rgba.set([v, v, v, 255], (y * CELLS * cellPx + x) * 4);
    }
  }
  assert.equal(decodeLevels(stripLevels(rgba, cellPx)).index, 1234);
});

test('stampStream numbers every frame, tags the header, and refuses what Chrome cannot play or a stamp cannot number', async () => {
  const { info, data } = await stampBuffer(y4m(320, 180, 5));
  assert.deepEqual(info, { width: 320, height: 180, frames: 5 });
  const eol = data.indexOf(0x0a);
  const header = parseHeader(data.subarray(0, eol).toString('latin1'));
  assert.equal(header.stamp_version, STAMP_VERSION);
  for (let i = 0; i < 5; i++) {
    const start = eol + 1 + i * (header.frameBytes + 6) + 6;
    assert.equal(decodeLevels(lumaLevels(data.subarray(start, start + 320 * 180), 320, 180)).index, i);
  }
  // Stamping again replaces the tag instead of adding a second one.
  const again = (await stampBuffer(data)).data;
  assert.equal(again.subarray(0, again.indexOf(0x0a)).toString().match(/XRTCLAB_STAMP=/g)?.length, 1);
  await assert.rejects(stampBuffer(y4m(320, 180, 1, 'F30:1 C422')), /only 4:2:0/);
  await assert.rejects(stampBuffer(y4m(32, 18, MAX_FRAMES + 1)), /more than 4096 frames/);
  await assert.rejects(stampBuffer(y4m(320, 180, 2).subarray(0, 1000)), /ends inside frame 0/);
});

test('a stamped clip survives VP8 at its worst quantiser, scaled to 320x180 and to 160x90 (ffmpeg libvpx)', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'rtclab-stamp-test-'));
  try {
    const raw = path.join(dir, 'raw.y4m');
    const clip = path.join(dir, 'clip.y4m');
    await run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30', '-t', '1', '-pix_fmt', 'yuv420p', raw]);
    fs.writeFileSync(clip, (await stampBuffer(fs.readFileSync(raw))).data);
    assert.deepEqual(clipInfo(clip), { width: 1280, height: 720, fps: 30, stamp_version: STAMP_VERSION, frames: 30 });
    for (const size of ['320x180', '160x90']) {
      const webm = path.join(dir, `${size}.webm`);
      const decoded = path.join(dir, `${size}.y4m`);
      await run('ffmpeg', ['-loglevel', 'error', '-i', clip, '-vf', `scale=${size}`, '-c:v', 'libvpx', '-qmin', '63', '-qmax', '63',
        '-b:v', '20k', '-deadline', 'realtime', '-cpu-used', '8', webm]);
      await run('ffmpeg', ['-loglevel', 'error', '-i', webm, '-pix_fmt', 'yuv420p', decoded]);
      const data = fs.readFileSync(decoded);
      const eol = data.indexOf(0x0a);
      const h = parseHeader(data.subarray(0, eol).toString('latin1'));
      const read = [];
      for (let pos = eol + 1; pos < data.length; pos += 6 + h.frameBytes) {
        read.push(decodeLevels(lumaLevels(data.subarray(pos + 6, pos + 6 + h.width * h.height), h.width, h.height)).index);
      }
      assert.deepEqual(read, Array.from({ length: 30 }, (_, i) => i), size);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the page config: frames_read_every absent is 0 (nothing recorded), else an integer 0..1000', () => {
  const complete = { room: 'x', role: 'callee', call: scenarioCall({}), getstats_interval_ms: 1000, candidate_prefix: null };
  assert.equal(readConfig(complete, '').frames_read_every, 0);
  assert.equal(readConfig({ ...complete, frames_read_every: 3 }, '').frames_read_every, 3);
  assert.throws(() => readConfig({ ...complete, frames_read_every: 1.5 }, ''), /frames_read_every must be an integer >= 0 and <= 1000, got 1.5/);
  assert.throws(() => readConfig({ ...complete, frames_read_every: -1 }, ''), /frames_read_every/);
});

test('the page config: frame samples absent are none (0, null), else every N-th frame to an absolute path', () => {
  const complete = { room: 'x', role: 'callee', call: scenarioCall({}), getstats_interval_ms: 1000, candidate_prefix: null };
  const none = readConfig(complete, '');
  assert.deepEqual([none.frames_sample_every, none.frames_sample_path], [0, null]);
  const some = readConfig({ ...complete, frames_sample_every: 10, frames_sample_path: '/frame-samples/b' }, '');
  assert.deepEqual([some.frames_sample_every, some.frames_sample_path], [10, '/frame-samples/b']);
  assert.throws(() => readConfig({ ...complete, frames_sample_every: 2000 }, ''), /frames_sample_every must be an integer >= 0 and <= 1000, got 2000/);
  assert.throws(() => readConfig({ ...complete, frames_sample_path: 'http://elsewhere/x' }, ''), /frames_sample_path must be null or an absolute path/);
});
