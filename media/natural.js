// @ts-check
/**
 * The natural-looking clip (`call.video_clip: natural`): a photograph filmed as by a hand-held camera, so an encoder
 * sees what it sees in a call (a textured subject over a soft background, slow camera motion, a little shake, sensor
 * noise) instead of the default clip's synthetic pattern. scripts/setup.sh makes it, like the default clip:
 *
 *   node media/natural.js OUT.y4m       # makes the clip (ffmpeg, then the frame stamp of media/stamp.js)
 *   node media/natural.js --recipe      # the recipe tag this code writes into the clip's header (XRTCLAB_CLIP=...)
 *
 * The photograph is LadyBird.jpg of Debian's mate-backgrounds (2560x1600, Charles Barbin 2008, GPL-2+), which setup
 * installs. The camera's window over it moves on a path that is periodic in the clip's length (every term a whole
 * number of cycles per clip), so Chrome's loop of the clip has no seam; the noise is ffmpeg's `noise` filter with a
 * fixed seed. Same ffmpeg, same photograph: the same bytes (the scaler in its bit-exact mode; tested).
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stampFfmpeg } from './stamp.js';

export const PHOTO = '/usr/share/backgrounds/mate/nature/LadyBird.jpg';
export const PHOTO_PACKAGE = 'mate-backgrounds';
/** Written into the clip's header as XRTCLAB_CLIP=<this>: a changed recipe makes setup make the clip again. */
export const RECIPE = 'natural.1';
export const RECIPE_TAG = 'XRTCLAB_CLIP=';
export const WIDTH = 1280;
export const HEIGHT = 720;
export const FPS = 30;
/** 20 s: long enough that a call does not see the same few seconds again and again (the default clip loops every 5). */
export const FRAMES = 600;
/** The photograph's 16:9 part the camera films (2560x1440 of 2560x1600: the top and bottom 80 rows cut). */
const SOURCE_CROP = 'crop=2560:1440:0:80';

/**
 * The camera's path, in the syntax of ffmpeg's expressions: each value a function of the frame number `{n}`, W and H
 * (the photograph's size), with sin, cos and PI only, so a test evaluates the very strings ffmpeg gets.
 * Whole cycles per clip (1, 2, 29, 37, ...) keep the path periodic in FRAMES.
 */
const A = `(2*PI*{n}/${FRAMES})`;
export const PATH = {
  // The window's size, a fraction of the photograph's: a slow zoom in and out once a clip (0.55 - 0.70: the window
  // is 1408 - 1792 pixels wide, always more than the clip's 1280, so the photograph is scaled down, never up).
  zoom: `(0.625+0.075*sin(${A}))`,
  // A slow pan (once a clip across, twice up and down) and a hand's shake: three incommensurate tremors of 1.8 -
  // 3.6 Hz, about 2 pixels of the clip each way.
  cx: `(W/2+0.12*W*sin(${A}+1)+0.0015*W*(sin(37*${A})+0.6*sin(53*${A}+2)+0.4*sin(71*${A}+4)))`,
  cy: `(H/2+0.10*H*sin(2*${A})+0.0015*W*(sin(41*${A}+1)+0.6*sin(59*${A}+3)+0.4*sin(67*${A}+5)))`,
  // A slight roll (+-0.17 degrees).
  roll: `(0.003*sin(29*${A}+0.5))`,
};

/** The four corners of the window (top left, top right, bottom left, bottom right) as x and y expressions. */
export function cornerExpressions() {
  const hw = `(${PATH.zoom}*W/2)`;
  const hh = `(${PATH.zoom}*H/2)`;
  return /** @type {const} */ ([[-1, -1], [1, -1], [-1, 1], [1, 1]]).map(([sx, sy]) => ({
    x: `${PATH.cx}+(${sx}*${hw})*cos(${PATH.roll})-(${sy}*${hh})*sin(${PATH.roll})`,
    y: `${PATH.cy}+(${sx}*${hw})*sin(${PATH.roll})+(${sy}*${hh})*cos(${PATH.roll})`,
  }));
}

/**
 * ffmpeg's filter graph from the photograph to the unstamped clip.
 * @param {{ first?: number, noise?: boolean }} [o] first: the clip's frame the output starts at (a test renders the
 *   loop's seam); noise: false leaves out the sensor noise (a test compares the motion alone)
 */
export function filterGraph({ first = 0, noise = true } = {}) {
  // perspective's `in` counts the frames it has seen.
  const n = first ? `(in+${first})` : 'in';
  const corners = cornerExpressions()
    .map((c, i) => `x${i}='${c.x.replaceAll('{n}', n)}':y${i}='${c.y.replaceAll('{n}', n)}'`);
  return [
    // Bit-exact scaling: the same bytes on any CPU with the same ffmpeg.
    'sws_flags=bicubic+accurate_rnd+bitexact;',
    `[0:v]${SOURCE_CROP},format=yuv444p`,
    // The window's corners in the photograph are mapped to the frame's corners (sense=source), with sub-pixel
    // interpolation, so a slow pan moves smoothly instead of a pixel at a time (zoompan rounds to whole pixels).
    `perspective=${corners.join(':')}:sense=source:eval=frame:interpolation=linear`,
    `scale=${WIDTH}:${HEIGHT}`,
    // Sensor noise: gaussian, changing every frame (t), stronger in luma than chroma, from a fixed seed.
    ...(noise ? ['noise=c0s=7:c1s=4:c2s=4:allf=t:all_seed=20261128'] : []),
    'format=yuv420p',
  ].join(',').replace(';,', ';');
}

/**
 * ffmpeg's arguments writing the unstamped clip (or `frames` of it from `first`) as Y4M to stdout.
 * @param {{ first?: number, frames?: number, noise?: boolean, photo?: string }} [o]
 */
export function ffmpegArgs({ first = 0, frames = FRAMES, noise = true, photo = PHOTO } = {}) {
  return ['-loglevel', 'error', '-nostdin', '-loop', '1', '-framerate', String(FPS), '-i', photo,
    '-filter_complex', filterGraph({ first, noise }), '-frames:v', String(frames), '-f', 'yuv4mpegpipe', '-'];
}

/**
 * The stream with the recipe tag added to its Y4M header line.
 * @param {AsyncIterable<Buffer>} input
 */
export async function* withRecipeTag(input) {
  let head = /** @type {Buffer | null} */ (Buffer.alloc(0));
  for await (const chunk of input) {
    if (!head) { yield chunk; continue; }
    head = Buffer.concat([head, chunk]);
    const eol = head.indexOf(0x0a);
    if (eol < 0) continue;
    const words = head.subarray(0, eol).toString('latin1').split(' ').filter((w) => !w.startsWith(RECIPE_TAG));
    yield Buffer.concat([Buffer.from(`${[...words, RECIPE_TAG + RECIPE].join(' ')}\n`, 'latin1'), head.subarray(eol + 1)]);
    head = null;
  }
  if (head?.length) yield head;
}

/**
 * Runs ffmpeg and stamps what it writes: the stamped stream's chunks go to `write`.
 * @param {(chunk: Buffer) => Promise<void>} write @param {Parameters<typeof ffmpegArgs>[0]} [o]
 */
export async function makeClip(write, o = {}) {
  const photo = o.photo ?? PHOTO;
  if (!fs.existsSync(photo)) {
    throw new Error(`${photo} does not exist: the natural clip is made from it (Debian's ${PHOTO_PACKAGE}; scripts/setup.sh installs it)`);
  }
  return stampFfmpeg(ffmpegArgs(o), write, withRecipeTag);
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--recipe') { console.log(RECIPE); return; }
  if (args.length !== 1 || args[0].startsWith('-')) {
    console.error('usage: node media/natural.js OUT.y4m | --recipe');
    process.exitCode = 2;
    return;
  }
  const out = args[0];
  const tmp = `${out}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    const info = await makeClip(async (chunk) => { fs.writeSync(fd, chunk); });
    fs.closeSync(fd);
    fs.renameSync(tmp, out);
    console.error(`made ${out}: ${info.frames} frames of ${info.width}x${info.height}, stamped (recipe ${RECIPE})`);
  } catch (err) {
    try { fs.closeSync(fd); } catch { /* closed before the rename */ }
    fs.rmSync(tmp, { force: true });
    console.error(`natural clip: ${/** @type {Error} */ (err).message}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
