// @ts-check
/**
 * Stamps a Y4M clip's frame index into every frame (the layout: client/frame-stamp.js) so the receiving page can
 * tell which frame it shows. scripts/setup.sh stamps the default clip with it; a user's own clip the same way:
 *
 *   node media/stamp.js IN.y4m OUT.y4m      # IN may be - (stdin): ffmpeg ... -f yuv4mpegpipe - | node media/stamp.js - OUT.y4m
 *   node media/stamp.js --version           # the stamp version this code writes
 *   node media/stamp.js --info CLIP.y4m     # what a clip holds: size, frames, its stamp version (JSON)
 *
 * 4:2:0 clips only (what Chrome's fake camera reads), at most MAX_FRAMES frames. The stream header gets the tag
 * `XRTCLAB_STAMP=<version>` (Y4M's comment tag; Chrome ignores it), so setup knows when a clip must be made again.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BLACK_Y, CELLS, MAX_FRAMES, STAMP_VERSION, WHITE_Y, cellRect, decodeLevels, lumaLevels, stampCells } from '../client/frame-stamp.js';
import { TAG, clipInfo, parseHeader } from './y4m.js';

/** The header line with this code's stamp tag (any earlier one replaced). @param {string} line */
export const stampedHeader = (line) => [...line.split(' ').filter((w) => !w.startsWith(TAG)), `${TAG}${STAMP_VERSION}`].join(' ');

/**
 * Draws frame `index`'s stamp into one I420 frame in place: black and white cells in luma, neutral chroma under them.
 * @param {Uint8Array} frame @param {number} width @param {number} height @param {number} index
 */
export function stampFrame(frame, width, height, index) {
  const cw = Math.ceil(width / 2);
  const ch = Math.ceil(height / 2);
  const cells = stampCells(index);
  for (let i = 0; i < CELLS; i++) {
    const r = cellRect(i, width, height);
    const y = cells[i] ? WHITE_Y : BLACK_Y;
    for (let row = r.y0; row < r.y1; row++) frame.fill(y, row * width + r.x0, row * width + r.x1);
    for (const plane of [width * height, width * height + cw * ch]) {
      for (let row = 0; row < Math.ceil(r.y1 / 2); row++) frame.fill(128, plane + row * cw + Math.floor(r.x0 / 2), plane + row * cw + Math.ceil(r.x1 / 2));
    }
  }
}

/**
 * Stamps a Y4M stream: every frame gets its index (0, 1, ...) and the header the stamp tag. Reads and writes in
 * frame-sized pieces (a 720p clip is 200 MB).
 * @param {AsyncIterable<Buffer>} input @param {(chunk: Buffer) => Promise<void>} write
 * @returns {Promise<{ width: number, height: number, frames: number }>}
 */
export async function stampStream(input, write) {
  let pending = /** @type {Buffer} */ (Buffer.alloc(0));
  /** @type {ReturnType<typeof parseHeader> | null} */
  let header = null;
  let frames = 0;
  for await (const chunk of input) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    for (;;) {
      const eol = pending.indexOf(0x0a);
      if (eol < 0) break;
      if (!header) {
        const line = pending.subarray(0, eol).toString('latin1');
        header = parseHeader(line);
        await write(Buffer.from(`${stampedHeader(line)}\n`, 'latin1'));
        pending = pending.subarray(eol + 1);
        continue;
      }
      if (!pending.subarray(0, 5).equals(Buffer.from('FRAME'))) throw new Error(`Y4M frame ${frames} does not start with FRAME`);
      if (pending.length < eol + 1 + header.frameBytes) break;
      if (frames >= MAX_FRAMES) throw new Error(`the clip holds more than ${MAX_FRAMES} frames, the most a stamp can number`);
      const frame = new Uint8Array(pending.subarray(eol + 1, eol + 1 + header.frameBytes));
      stampFrame(frame, header.width, header.height, frames);
      // The stamper's own check: what it drew reads back as the index.
      const read = decodeLevels(lumaLevels(frame, header.width, header.height)).index;
      if (read !== frames) throw new Error(`frame ${frames}: the stamp reads back as ${read}`);
      await write(Buffer.concat([pending.subarray(0, eol + 1), frame]));
      frames++;
      pending = pending.subarray(eol + 1 + header.frameBytes);
    }
  }
  if (!header) throw new Error('empty input: no Y4M header');
  if (pending.length) throw new Error(`the clip ends inside frame ${frames} (${pending.length} bytes left over)`);
  return { width: header.width, height: header.height, frames };
}


/**
 * Runs ffmpeg with `args` (writing Y4M to stdout) and stamps what it writes: the stamped stream's chunks go to
 * `write`; `transform` may rewrite the stream first (a clip's own header tag). ffmpeg is killed if stamping fails.
 * @param {string[]} args @param {(chunk: Buffer) => Promise<void>} write
 * @param {(input: AsyncIterable<Buffer>) => AsyncIterable<Buffer>} [transform]
 */
export async function stampFfmpeg(args, write, transform = (input) => input) {
  const ffmpeg = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  ffmpeg.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve, reject) => {
    ffmpeg.on('error', reject);
    ffmpeg.on('close', (code, signal) => resolve({ code, signal }));
  });
  let info;
  try {
    info = await stampStream(transform(ffmpeg.stdout), write);
  } finally {
    if (ffmpeg.exitCode === null) ffmpeg.kill();
  }
  const { code, signal } = /** @type {{ code: number | null, signal: string | null }} */ (await exited);
  if (code !== 0) throw new Error(`ffmpeg failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
  return info;
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--version') { console.log(STAMP_VERSION); return; }
  if (args[0] === '--info' && args.length === 2) { console.log(JSON.stringify(clipInfo(args[1]))); return; }
  if (args.length !== 2) {
    console.error('usage: node media/stamp.js IN.y4m|- OUT.y4m | --version | --info CLIP.y4m');
    process.exitCode = 2;
    return;
  }
  const [inFile, outFile] = args;
  const input = inFile === '-' ? process.stdin : fs.createReadStream(inFile, { highWaterMark: 4 << 20 });
  const tmp = `${outFile}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    const info = await stampStream(input, async (chunk) => { fs.writeSync(fd, chunk); });
    fs.closeSync(fd);
    fs.renameSync(tmp, outFile);
    console.error(`stamped ${info.frames} frames of ${info.width}x${info.height} into ${outFile} (stamp version ${STAMP_VERSION})`);
  } catch (err) {
    try { fs.closeSync(fd); } catch { /* closed before the rename */ }
    fs.rmSync(tmp, { force: true });
    console.error(`stamp: ${/** @type {Error} */ (err).message}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
