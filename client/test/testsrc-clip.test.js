// @ts-check
// The default pattern's generator (media/testsrc.js), which makes the default clip at setup and the 60 fps one on its
// first use: ffmpeg's testsrc2 at the rate asked for, stamped like every clip, the frame rate checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { STAMP_VERSION, decodeLevels, lumaLevels, stripRect } from '../frame-stamp.js';
import { HEIGHT, WIDTH, ffmpegArgs, makeClip } from '../../media/testsrc.js';
import { parseHeader } from '../../media/y4m.js';

const run = promisify(execFile);
const script = new URL('../../media/testsrc.js', import.meta.url).pathname;

/** A Y4M stream's header and frames. @param {Buffer} data */
function parseY4m(data) {
  const eol = data.indexOf(0x0a);
  const header = parseHeader(data.subarray(0, eol).toString('latin1'));
  const frames = [];
  for (let at = eol + 1; at < data.length; at += 6 + header.frameBytes) {
    assert.equal(data.subarray(at, at + 6).toString('latin1'), 'FRAME\n');
    frames.push(data.subarray(at + 6, at + 6 + header.frameBytes));
  }
  return { header, frames };
}

/** The stamped clip's bytes. @param {number} fps @param {number} seconds */
async function make(fps, seconds) {
  /** @type {Buffer[]} */
  const out = [];
  const info = await makeClip(async (c) => { out.push(Buffer.from(c)); }, { fps, seconds });
  return { info, ...parseY4m(Buffer.concat(out)) };
}

test('a clip at 60 fps: the header says 60 fps, every frame reads its index, the pattern is the 30 fps one twice as often', async () => {
  const at60 = await make(60, 0.1);
  assert.deepEqual(at60.info, { width: WIDTH, height: HEIGHT, frames: 6 });
  assert.deepEqual([at60.header.width, at60.header.height, at60.header.fps, at60.header.stamp_version], [WIDTH, HEIGHT, 60, STAMP_VERSION]);
  assert.deepEqual(at60.frames.map((f) => decodeLevels(lumaLevels(new Uint8Array(f), WIDTH, HEIGHT)).index), [0, 1, 2, 3, 4, 5]);
  // testsrc2 draws the time: frame 2k at 60 fps is frame k at 30 fps (below the stamp's strip), frame 2k + 1 is not.
  const at30 = await make(30, 0.1);
  assert.equal(at30.header.fps, 30);
  const below = WIDTH * stripRect(WIDTH, HEIGHT).height;
  const picture = (/** @type {Buffer} */ f) => f.subarray(below, WIDTH * HEIGHT);
  for (const k of [0, 1, 2]) assert.ok(picture(at60.frames[2 * k]).equals(picture(at30.frames[k])), `frame ${2 * k} at 60 fps is not frame ${k} at 30`);
  assert.ok(!picture(at60.frames[1]).equals(picture(at30.frames[0])) && !picture(at60.frames[1]).equals(picture(at30.frames[1])));
});

test('a frame rate the stamp cannot number for 5 s, or not a whole number, is refused by name', async () => {
  for (const fps of [0, 29.97, 121, Number.NaN]) assert.throws(() => ffmpegArgs({ fps }), new RegExp(`fps ${fps} is not a whole number in 1\\.\\.120`));
  await assert.rejects(run(process.execPath, [script, '--fps', '0', path.join(os.tmpdir(), 'never.y4m')]),
    (/** @type {any} */ e) => e.code === 2 && /usage: node media\/testsrc\.js --fps N OUT\.y4m/.test(e.stderr));
});

test('the command writes the clip whole, through a temporary file it renames', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testsrc-'));
  const out = path.join(dir, 'clip.y4m');
  try {
    // 5 s at 2 fps: 10 frames of 1.4 MB.
    const { stderr } = await run(process.execPath, [script, '--fps', '2', out]);
    assert.match(stderr, /made .*clip\.y4m: 10 frames of 1280x720 at 2 fps, stamped/);
    assert.deepEqual(fs.readdirSync(dir), ['clip.y4m']);
    const { header, frames } = parseY4m(fs.readFileSync(out));
    assert.deepEqual([header.fps, frames.length], [2, 10]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
