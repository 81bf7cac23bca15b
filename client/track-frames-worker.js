/**
 * The worker of track-frames.js: reads every frame the remote video track delivers (a MediaStreamTrackProcessor's
 * stream, transferred here), reads its stamp (stamp-read.js) and posts a record per frame to the page, in batches.
 * Off the page's main thread, so neither the page's rendering steps nor its callbacks decide which frames are read.
 */
import { readStamp } from './stamp-read.js';

const POST_MS = 250;

/** performance.now()-based times to epoch ms (the run's one clock), rounded to microseconds. */
const epoch = (/** @type {number} */ t) => Math.round((performance.timeOrigin + t) * 1000) / 1000;

/**
 * One record of a delivered frame: its RTP timestamp (VideoFrame.metadata(); null when Chrome gives none), its
 * media timestamp, and its stamp.
 * @param {VideoFrame} frame
 */
async function record(frame) {
  const t = performance.now();
  const meta = /** @type {any} */ (frame).metadata?.() ?? {};
  const out = {
    kind: 'track_frame',
    delivered_ms: epoch(t),
    timestamp_us: frame.timestamp,
    rtp_timestamp: typeof meta.rtpTimestamp === 'number' ? meta.rtpTimestamp : null,
    width: frame.visibleRect?.width ?? frame.displayWidth,
    height: frame.visibleRect?.height ?? frame.displayHeight,
    clip_index: /** @type {number | null} */ (null),
    contrast: /** @type {number | null} */ (null),
    read_via: 'videoframe',
    read_ms: /** @type {number | null} */ (null),
  };
  try {
    const read = readStamp(frame);
    if (!read) return { ...out, read_via: 'unreadable-format' };
    const decoded = await read;
    return { ...out, clip_index: decoded.index, contrast: decoded.contrast, read_ms: Math.round((performance.now() - t) * 1000) / 1000 };
  } catch {
    return { ...out, read_via: 'failed' };
  } finally {
    frame.close();
  }
}

self.onmessage = async (/** @type {MessageEvent<{ readable: ReadableStream<VideoFrame> }>} */ event) => {
  const reader = event.data.readable.getReader();
  /** @type {Record<string, unknown>[]} */
  let batch = [];
  const timer = setInterval(() => {
    if (batch.length) self.postMessage(batch);
    batch = [];
  }, POST_MS);
  try {
    for (;;) {
      const { value: frame, done } = await reader.read();
      if (done) break;
      batch.push(await record(frame));
    }
  } finally {
    clearInterval(timer);
    if (batch.length) self.postMessage(batch);
  }
};
