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

test('a clip at 60 fps: the header says 60 fps, every frame reads its index, below the stamp ffmpeg\'s testsrc2 at 60 fps', async () => {
  const at60 = await make(60, 0.1);
  assert.deepEqual(at60.info, { width: WIDTH, height: HEIGHT, frames: 6 });
  assert.deepEqual([at60.header.width, at60.header.height, at60.header.fps, at60.header.stamp_version], [WIDTH, HEIGHT, 60, STAMP_VERSION]);
  assert.deepEqual(at60.frames.map((f) => decodeLevels(lumaLevels(new Uint8Array(f), WIDTH, HEIGHT)).index), [0, 1, 2, 3, 4, 5]);
  // The picture below the stamp's strip is the pattern itself, frame for frame: ffmpeg asked here on its own.
  const { stdout } = await run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc2=size=${WIDTH}x${HEIGHT}:rate=60`,
    '-frames:v', '6', '-pix_fmt', 'yuv420p', '-f', 'rawvideo', '-'], { encoding: 'buffer', maxBuffer: 64 << 20 });
  const bytes = at60.header.frameBytes;
  const below = WIDTH * stripRect(WIDTH, HEIGHT).height;
  at60.frames.forEach((f, i) => {
    const own = stdout.subarray(i * bytes, (i + 1) * bytes);
    assert.ok(f.subarray(below, WIDTH * HEIGHT).equals(own.subarray(below, WIDTH * HEIGHT)), `frame ${i}'s luma below the strip`);
  });
  // And the frames move: 60 fps is not a 30 fps clip with each frame twice.
  assert.ok(!at60.frames[0].subarray(below).equals(at60.frames[1].subarray(below)));
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
