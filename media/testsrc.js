// @ts-check
/**
 * The default clip's pattern at a frame rate: 5 s of ffmpeg's testsrc2 at 1280x720, stamped (media/stamp.js).
 * scripts/setup.sh makes the default clip with it (30 fps, media/default.y4m); the harness makes the 60 fps one
 * (`call.video_clip: default-60fps`) on its first use (media/clips.js):
 *
 *   node media/testsrc.js --fps 60 OUT.y4m
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stampFfmpeg } from './stamp.js';

export const WIDTH = 1280;
export const HEIGHT = 720;
/** Chrome loops the clip; 5 s of the pattern is what the default clip always held. */
export const SECONDS = 5;
/** A stamp numbers at most 4096 frames (client/frame-stamp.js): 5 s at up to 120 fps stays well inside. */
export const MAX_FPS = 120;

/**
 * ffmpeg's arguments writing the unstamped clip as Y4M to stdout.
 * @param {{ fps: number, seconds?: number }} o
 */
export function ffmpegArgs({ fps, seconds = SECONDS }) {
  if (!Number.isInteger(fps) || fps < 1 || fps > MAX_FPS) throw new RangeError(`fps ${fps} is not a whole number in 1..${MAX_FPS}`);
  return ['-loglevel', 'error', '-nostdin', '-f', 'lavfi', '-i', `testsrc2=size=${WIDTH}x${HEIGHT}:rate=${fps}`,
    '-t', String(seconds), '-pix_fmt', 'yuv420p', '-f', 'yuv4mpegpipe', '-'];
}

/**
 * Runs ffmpeg and stamps what it writes: the stamped stream's chunks go to `write`.
 * @param {(chunk: Buffer) => Promise<void>} write @param {Parameters<typeof ffmpegArgs>[0]} o
 */
export async function makeClip(write, o) {
  return stampFfmpeg(ffmpegArgs(o), write);
}

async function main() {
  const args = process.argv.slice(2);
  const fps = Number(args[1]);
  if (args.length !== 3 || args[0] !== '--fps' || args[2].startsWith('-') || !Number.isInteger(fps) || fps < 1 || fps > MAX_FPS) {
    console.error(`usage: node media/testsrc.js --fps N OUT.y4m   (N a whole number in 1..${MAX_FPS})`);
    process.exitCode = 2;
    return;
  }
  const out = args[2];
  const tmp = `${out}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    const info = await makeClip(async (chunk) => { fs.writeSync(fd, chunk); }, { fps });
    fs.closeSync(fd);
    fs.renameSync(tmp, out);
    console.error(`made ${out}: ${info.frames} frames of ${info.width}x${info.height} at ${fps} fps, stamped`);
  } catch (err) {
    try { fs.closeSync(fd); } catch { /* closed before the rename */ }
    fs.rmSync(tmp, { force: true });
    console.error(`testsrc clip: ${/** @type {Error} */ (err).message}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
