/**
 * The stamp of one decoded frame (a VideoFrame), read from its own luma plane: only the strip's rows and columns are
 * copied (VideoFrame.copyTo with a rectangle), nothing is converted to RGB or scaled. Used by the page's record of
 * the presented frames (frames.js) and by the worker that reads every frame the track delivers (track-frames-worker.js).
 */
import { decodeLevels, lumaLevels, stripRect } from './frame-stamp.js';

/** Pixel formats whose first plane is luma (what VideoFrame.copyTo gives for a software-decoded frame). */
const LUMA_FIRST = new Set(['I420', 'I420A', 'I422', 'I444', 'NV12']);

/**
 * Decided at once: null when the frame has no CPU-side luma plane (a GPU-decoded frame) or its visible picture does
 * not start at the top left; else the read. The caller keeps the frame open until the read settles, then closes it.
 * @param {VideoFrame} frame
 * @returns {Promise<{ index: number | null, contrast: number }> | null}
 */
export function readStamp(frame) {
  const visible = frame.visibleRect;
  if (!frame.format || !LUMA_FIRST.has(frame.format) || !visible || visible.x !== 0 || visible.y !== 0) return null;
  const strip = stripRect(visible.width, visible.height);
  // I420's chroma is subsampled: the rectangle must start and end on even pixels.
  const rect = { x: 0, y: 0, width: Math.min(frame.codedWidth, strip.width + (strip.width % 2)),
    height: Math.min(frame.codedHeight, strip.height + (strip.height % 2)) };
  const buffer = new Uint8Array(frame.allocationSize({ rect }));
  return frame.copyTo(buffer, { rect })
    .then((layout) => decodeLevels(lumaLevels(buffer.subarray(layout[0].offset), visible.width, visible.height, layout[0].stride)));
}
