// @ts-check
// The natural clip's generator (media/natural.js): its camera stays on the photograph and loops without a seam, it is
// made by the real ffmpeg from the photograph setup installs, stamped like the default clip, the same bytes each time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { STAMP_VERSION, decodeLevels, lumaLevels } from '../frame-stamp.js';
import {
  FPS, FRAMES, HEIGHT, RECIPE, RECIPE_TAG, WIDTH, cornerExpressions, ffmpegArgs, makeClip, withRecipeTag,
} from '../../media/natural.js';
import { parseHeader } from '../../media/y4m.js';

const run = promisify(execFile);
// The photograph's part the camera films (natural.js's SOURCE_CROP).
const [W, H] = [2560, 1440];

/**
 * The camera's corners at frame n, from the very expression strings ffmpeg gets, evaluated by JavaScript.
 * @param {number} n
 */
function cornersAt(n) {
  return cornerExpressions().map(({ x, y }) => {
    const value = (/** @type {string} */ e) =>
      new Function('sin', 'cos', 'PI', 'W', 'H', 'n', `return ${e.replaceAll('{n}', 'n')};`)(Math.sin, Math.cos, Math.PI, W, H, n);
    return { x: value(x), y: value(y) };
  });
}

/** @param {Buffer} data a Y4M stream @returns {{ header: ReturnType<typeof parseHeader>, line: string, frames: Buffer[] }} */
function parseY4m(data) {
  const eol = data.indexOf(0x0a);
  const line = data.subarray(0, eol).toString('latin1');
  const header = parseHeader(line);
  const frames = [];
  for (let at = eol + 1; at < data.length; at += 6 + header.frameBytes) {
    assert.equal(data.subarray(at, at + 6).toString('latin1'), 'FRAME\n');
    frames.push(data.subarray(at + 6, at + 6 + header.frameBytes));
  }
  return { header, line, frames };
}

/** Mean absolute difference of two frames' luma. @param {Buffer} a @param {Buffer} b */
function lumaDiff(a, b) {
  let sum = 0;
  for (let i = 0; i < WIDTH * HEIGHT; i++) sum += Math.abs(a[i] - b[i]);
  return sum / (WIDTH * HEIGHT);
}

/** The unstamped clip's frames from `first` on, as ffmpeg writes them. @param {Parameters<typeof ffmpegArgs>[0]} o */
async function render(o) {
  const { stdout } = await run('ffmpeg', ffmpegArgs(o), { encoding: 'buffer', maxBuffer: 64 << 20 });
  return parseY4m(stdout).frames;
}

test('the camera window stays inside the photograph, wider than the clip (scaled down, never up), on a path periodic in the clip', () => {
  let narrowest = Infinity;
  for (let n = 0; n <= FRAMES; n += 0.5) {
    const c = cornersAt(n);
    for (const { x, y } of c) {
      assert.ok(x >= 0 && x <= W && y >= 0 && y <= H, `frame ${n}: corner (${x}, ${y}) outside the ${W}x${H} photograph`);
    }
    narrowest = Math.min(narrowest, Math.hypot(c[1].x - c[0].x, c[1].y - c[0].y));
  }
  assert.ok(narrowest > WIDTH, `the window narrows to ${narrowest} pixels, less than the clip's ${WIDTH}`);
  for (const n of [0, 1, 7.5, 123]) {
    cornersAt(n).forEach((p, i) => {
      const q = cornersAt(n + FRAMES)[i];
      assert.ok(Math.abs(p.x - q.x) < 1e-6 && Math.abs(p.y - q.y) < 1e-6, `frame ${n} and ${n + FRAMES} differ`);
    });
  }
});

test('ffmpeg films a moving camera whose loop has no seam: the last frame to the first moves as little as any two neighbours', async () => {
  const [beforeLast, last] = await render({ first: FRAMES - 2, frames: 2, noise: false });
  const [first, second] = await render({ first: 0, frames: 2, noise: false });
  const [middle] = await render({ first: FRAMES / 2, frames: 1, noise: false });
  const neighbours = [lumaDiff(beforeLast, last), lumaDiff(first, second)];
  const seam = lumaDiff(last, first);
  // Every frame moves (no still picture), the seam no more than neighbours do, far less than half a clip apart.
  for (const d of neighbours) assert.ok(d > 0.2, `neighbouring frames differ by only ${d}`);
  assert.ok(seam < 2 * Math.max(...neighbours), `the seam moves ${seam}, neighbours ${neighbours}`);
  assert.ok(lumaDiff(first, middle) > 5 * seam, `half a clip apart differs by only ${lumaDiff(first, middle)} (seam ${seam})`);
});

test('the clip is stamped like the default (every frame reads its index), tagged with its recipe, the same bytes each time', async () => {
  const make = async () => {
    /** @type {Buffer[]} */
    const out = [];
    const info = await makeClip(async (c) => { out.push(Buffer.from(c)); }, { frames: 3 });
    return { info, data: Buffer.concat(out) };
  };
  const [a, b] = [await make(), await make()];
  assert.deepEqual(a.info, { width: WIDTH, height: HEIGHT, frames: 3 });
  assert.ok(a.data.equals(b.data), 'two makings of the clip differ');
  const { header, line, frames } = parseY4m(a.data);
  assert.deepEqual([header.width, header.height, header.fps, header.stamp_version], [WIDTH, HEIGHT, FPS, STAMP_VERSION]);
  assert.ok(line.split(' ').includes(`${RECIPE_TAG}${RECIPE}`), line);
  assert.deepEqual(frames.map((f) => decodeLevels(lumaLevels(new Uint8Array(f), WIDTH, HEIGHT)).index), [0, 1, 2]);
  // The sensor noise is there: the stamped frame's picture differs from the noise-free one below the stamp's strip.
  const [clean] = await render({ frames: 1, noise: false });
  const below = WIDTH * (HEIGHT / 18 + 1);
  const noise = lumaDiff(Buffer.concat([Buffer.alloc(below), frames[0].subarray(below)]), Buffer.concat([Buffer.alloc(below), clean.subarray(below)]));
  assert.ok(noise > 1 && noise < 10, `the noise moves luma by ${noise} on average`);
});

test('the recipe tag replaces an earlier one, with the header split across chunks', async () => {
  const chunks = [Buffer.from('YUV4MPEG2 W2 H2 XRTCLAB_CLIP=old '), Buffer.from('F30:1\nFRAME\n'), Buffer.from('abcdef')];
  /** @type {Buffer[]} */
  const out = [];
  for await (const c of withRecipeTag(Readable.from(chunks))) out.push(c);
  assert.equal(Buffer.concat(out).toString('latin1'), `YUV4MPEG2 W2 H2 F30:1 ${RECIPE_TAG}${RECIPE}\nFRAME\nabcdef`);
});

test('a missing photograph is named with the package that ships it', async () => {
  await assert.rejects(makeClip(async () => {}, { photo: '/nonexistent/photo.jpg', frames: 1 }),
    /\/nonexistent\/photo\.jpg does not exist: the natural clip is made from it \(Debian's mate-backgrounds/);
});

test('the harness makes only the natural and 60 fps clips on first use, and only when their file is missing', async () => {
  const { makeOnFirstUse, namedClipPath } = await import('../../media/clips.js');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const said = [];
  const other = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'clip-')), 'natural.y4m');
  // A path that is not the named clip's (even with its file name), and the default clip (setup makes it): nothing made.
  assert.equal(makeOnFirstUse(other, (l) => said.push(l)), false);
  assert.equal(fs.existsSync(other), false);
  assert.equal(makeOnFirstUse(/** @type {string} */ (namedClipPath('default')), (l) => said.push(l)), false);
  // The natural clip when its file is there: left as it is (setup remakes a stale one).
  for (const name of ['natural', 'default-60fps']) {
    const clip = /** @type {string} */ (namedClipPath(name));
    if (fs.existsSync(clip)) assert.equal(makeOnFirstUse(clip, (l) => said.push(l)), false);
  }
  assert.deepEqual(said, []);
});
