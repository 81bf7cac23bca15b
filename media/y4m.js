// @ts-check
/**
 * The Y4M clip files a run's cameras play (Chrome's fake camera): a stream header's fields, the stamp tag in it, and
 * what a clip file holds. It imports nothing of the project, so the harness (which records the clip a run played)
 * and the stamper (media/stamp.js, which also needs the page's stamp layout, client/frame-stamp.js) both read clips
 * through it without the one reaching into the other.
 */
import fs from 'node:fs';

/** The stream header's tag that carries the stamp version a clip was stamped with (Y4M's comment tag). */
export const TAG = 'XRTCLAB_STAMP=';

/**
 * The stream header's fields (`YUV4MPEG2 W1280 H720 F30:1 ... C420jpeg`).
 * @param {string} line without the newline
 */
export function parseHeader(line) {
  const words = line.split(' ');
  if (words[0] !== 'YUV4MPEG2') throw new Error('not a Y4M stream (no YUV4MPEG2 header)');
  const tag = (/** @type {string} */ c) => words.find((w) => w.startsWith(c))?.slice(c.length);
  const width = Number(tag('W'));
  const height = Number(tag('H'));
  const [num, den] = (tag('F') ?? '30:1').split(':').map(Number);
  const chroma = tag('C') ?? '420jpeg';
  if (!(width > 0 && height > 0)) throw new Error(`Y4M header without a size: ${line}`);
  if (!/^420(jpeg|paldv|mpeg2)?$/.test(chroma)) throw new Error(`Y4M colour space C${chroma}: only 4:2:0 clips can be stamped (Chrome's fake camera reads only those)`);
  const stamp = tag(TAG);
  return { width, height, fps: num / den, chroma, stamp_version: stamp === undefined ? null : Number(stamp),
    frameBytes: width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2) };
}

/**
 * What a clip file holds, from its header and size (frames assume Chrome's plain `FRAME` headers, as ffmpeg and the
 * stamper write them).
 * @param {string} file
 */
export function clipInfo(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(512);
    const n = fs.readSync(fd, head, 0, head.length, 0);
    const eol = head.subarray(0, n).indexOf(0x0a);
    if (eol < 0) throw new Error(`${file}: no Y4M header line`);
    const h = parseHeader(head.subarray(0, eol).toString('latin1'));
    const size = fs.fstatSync(fd).size;
    return { width: h.width, height: h.height, fps: h.fps, stamp_version: h.stamp_version,
      frames: Math.floor((size - eol - 1) / (h.frameBytes + 'FRAME\n'.length)) };
  } finally {
    fs.closeSync(fd);
  }
}
