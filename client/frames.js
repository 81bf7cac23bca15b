/**
 * What the viewer saw: one record per frame the remote <video> presents, from requestVideoFrameCallback (its
 * metadata) and, on every `readEvery`-th frame, the frame's stamp (client/frame-stamp.js) read from just the stamp's
 * strip. Records go to the harness in batches (`frames` reports, about one a second), so the page holds at most a
 * second or two of them. On every `sampleEvery`-th frame the whole picture (I420, as decoded) is copied instead, its
 * stamp read from that copy, and the copy POSTed as raw bytes to the harness's upload route on the server that served
 * the page (not through the DevTools pipe: a 720p frame is 1.4 MB), for picture quality. docs/client.md, "Frames".
 */
import { CELLS, decodeLevels, lumaLevels, stripLevels, stripRect } from './frame-stamp.js';
import { report } from './report.js';
import { readStamp } from './stamp-read.js';
import { watchTrackFrames } from './track-frames.js';

/** Canvas pixels per cell side (the canvas read): the strip is drawn at CELLS * CELL_PX x CELL_PX. */
const CELL_PX = 8;
const FLUSH_MS = 1000;
/** At most this many records wait for the harness; beyond, records are counted as dropped instead of kept. */
const MAX_PENDING = 1200;

/** performance.now()-based times to epoch ms (the run's one clock), rounded to microseconds. */
const epoch = (/** @type {number | undefined} */ t) => (t === undefined ? null : Math.round((performance.timeOrigin + t) * 1000) / 1000);

/**
 * The stamp of the frame `video` presents now (stamp-read.js). Decided at once: null when the frame has no CPU-side
 * luma plane (a GPU-decoded frame), for the canvas read to take over while the element still shows this frame; else
 * the read, which holds its own reference to the frame.
 * @param {HTMLVideoElement} video
 * @returns {Promise<{ index: number | null, contrast: number }> | null}
 */
function readFromVideoFrame(video) {
  const frame = new VideoFrame(video);
  const read = readStamp(frame);
  if (!read) {
    frame.close();
    return null;
  }
  return read.finally(() => frame.close());
}

/** Samples on their way to the harness at once; a sampled frame beyond is recorded as not sampled. */
const MAX_UPLOADS = 2;

/**
 * The whole visible picture of the frame `video` presents now, tightly packed I420 (Y rows, then U, then V, no
 * padding), and its stamp read from that copy's luma. Decided at once: null when the frame is no CPU-side I420 frame
 * (a GPU-decoded frame) or has an odd size (I420's chroma rows and columns cover two pixels: a copy must start and end
 * on even ones), for the stamp-only read to take over.
 * @param {HTMLVideoElement} video
 * @returns {Promise<{ decoded: { index: number | null, contrast: number }, buffer: Uint8Array<ArrayBuffer>, width: number, height: number }> | null}
 */
function copyWholeFrame(video) {
  const frame = new VideoFrame(video);
  const visible = frame.visibleRect;
  if (frame.format !== 'I420' || !visible || visible.x !== 0 || visible.y !== 0 || visible.width % 2 || visible.height % 2) {
    frame.close();
    return null;
  }
  const [width, height] = [visible.width, visible.height];
  const [cw, ch] = [width / 2, height / 2];
  const layout = [{ offset: 0, stride: width }, { offset: width * height, stride: cw }, { offset: width * height + cw * ch, stride: cw }];
  const buffer = new Uint8Array(width * height + 2 * cw * ch);
  return frame.copyTo(buffer, { rect: { x: 0, y: 0, width, height }, layout })
    .then(() => ({ decoded: decodeLevels(lumaLevels(buffer, width, height)), buffer, width, height }))
    .finally(() => frame.close());
}

/**
 * The same from a canvas copy of the strip (drawImage with a source rectangle, getImageData of 208x8 pixels).
 * @param {HTMLVideoElement} video @param {CanvasRenderingContext2D} ctx
 */
function readFromCanvas(video, ctx) {
  const src = stripRect(video.videoWidth, video.videoHeight);
  ctx.drawImage(video, src.x, src.y, src.width, src.height, 0, 0, ctx.canvas.width, ctx.canvas.height);
  return decodeLevels(stripLevels(ctx.getImageData(0, 0, ctx.canvas.width, ctx.canvas.height).data, CELL_PX));
}

/**
 * The record of one presented frame, before its stamp is read (clip_index and the read's fields null).
 * @param {DOMHighResTimeStamp} now @param {VideoFrameCallbackMetadata} m @param {boolean} read whether it will be read
 * @param {VideoPlaybackQuality | null} quality the element's counters now: totalVideoFrames the frames decoded for it,
 *   droppedVideoFrames those of them the compositor skipped (never presented)
 */
function frameRecord(now, m, read, quality) {
  const meta = /** @type {any} */ (m);
  return {
    kind: 'frame',
    presented_frames: m.presentedFrames,
    dropped_video_frames: quality ? quality.droppedVideoFrames : null,
    total_video_frames: quality ? quality.totalVideoFrames : null,
    callback_ms: epoch(now),
    presentation_ms: epoch(m.presentationTime),
    expected_display_ms: epoch(m.expectedDisplayTime),
    capture_ms: epoch(meta.captureTime),
    receive_ms: epoch(meta.receiveTime),
    rtp_timestamp: meta.rtpTimestamp ?? null,
    processing_ms: meta.processingDuration === undefined ? null : Math.round(meta.processingDuration * 1e6) / 1000,
    width: m.width,
    height: m.height,
    read,
    sampled: false,
    clip_index: /** @type {number | null} */ (null),
    contrast: /** @type {number | null} */ (null),
    read_via: /** @type {string | null} */ (null),
    read_ms: /** @type {number | null} */ (null),
  };
}

/**
 * Watches `video` until `signal` aborts.
 * @param {HTMLVideoElement} video
 * @param {{ readEvery: number, sampleEvery?: number, samplePath?: string | null, track?: MediaStreamTrack | null,
 *   signal: AbortSignal }} o
 *   readEvery >= 1: the stamp is read on presented frames whose count (presentedFrames) is a multiple of it;
 *   sampleEvery >= 1 (and a samplePath): the whole picture is sent on those whose count is a multiple of it;
 *   track: the video track `video` plays, every frame of which is recorded too (track-frames.js)
 */
export function watchFrames(video, { readEvery, sampleEvery = 0, samplePath = null, track = null, signal }) {
  const canvas = document.createElement('canvas');
  canvas.width = CELLS * CELL_PX;
  canvas.height = CELL_PX;
  // willReadFrequently: a canvas in CPU memory, so getImageData needs no read-back from a GPU surface.
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d', { willReadFrequently: true, alpha: false }));
  const canReadFrames = typeof VideoFrame === 'function';
  /** @type {Record<string, unknown>[]} */
  let pending = [];
  let dropped = 0;
  let flushing = false;
  let uploading = 0;
  /** @param {Uint8Array<ArrayBuffer>} buffer @param {Record<string, unknown>} meta */
  const upload = (buffer, meta) => {
    uploading++;
    fetch(/** @type {string} */ (samplePath), { method: 'POST', body: buffer,
      headers: { 'content-type': 'application/octet-stream', 'x-rtclab-sample': JSON.stringify(meta) } })
      .catch(() => {}).finally(() => { uploading--; });
  };
  const keep = (/** @type {Record<string, unknown>} */ record) => {
    if (pending.length < MAX_PENDING) pending.push(record);
    else dropped++;
  };

  /** @param {DOMHighResTimeStamp} now @param {VideoFrameCallbackMetadata} m */
  const onFrame = (now, m) => {
    if (signal.aborted) return;
    video.requestVideoFrameCallback(onFrame);
    // Not before the element knows the frame's size (drawImage's source rectangle is in the video's own pixels).
    const read = m.presentedFrames % readEvery === 0 && video.videoWidth > 0;
    const sample = Boolean(samplePath) && sampleEvery > 0 && m.presentedFrames % sampleEvery === 0
      && canReadFrames && video.videoWidth > 0 && uploading < MAX_UPLOADS;
    const record = frameRecord(now, m, read || sample, video.getVideoPlaybackQuality?.() ?? null);
    if (!read && !sample) { keep(record); return; }
    const t = performance.now();
    /** @param {{ index: number | null, contrast: number }} decoded @param {string} via */
    const done = (decoded, via) => {
      Object.assign(record, { clip_index: decoded.index, contrast: decoded.contrast, read_via: via,
        read_ms: Math.round((performance.now() - t) * 1000) / 1000 });
      keep(record);
    };
    // Taken now, inside the callback, where the element's frame is the one the metadata describes.
    try {
      const whole = sample ? copyWholeFrame(video) : null;
      if (whole) {
        whole.then((copy) => {
          record.sampled = true;
          done(copy.decoded, 'videoframe');
          upload(copy.buffer, { presented_frames: m.presentedFrames, rtp_timestamp: record.rtp_timestamp,
            expected_display_ms: record.expected_display_ms, width: copy.width, height: copy.height, format: 'I420',
            clip_index: copy.decoded.index });
        }, () => done({ index: null, contrast: 0 }, 'failed'));
        return;
      }
      const fromFrame = canReadFrames ? readFromVideoFrame(video) : null;
      if (fromFrame) fromFrame.then((decoded) => done(decoded, 'videoframe'), () => done({ index: null, contrast: 0 }, 'failed'));
      else done(readFromCanvas(video, ctx), 'canvas');
    } catch {
      done({ index: null, contrast: 0 }, 'failed');
    }
  };

  const flush = async () => {
    if (flushing || (!pending.length && !dropped)) return;
    flushing = true;
    const batch = pending;
    const lost = dropped;
    pending = [];
    dropped = 0;
    try {
      await report('frames', { t_ms: Date.now(), read_every: readEvery, sample_every: samplePath ? sampleEvery : 0, time_origin_ms: performance.timeOrigin, track_frames_missing: trackFrames, dropped: lost, frames: batch });
    } finally {
      flushing = false;
    }
  };
  const trackFrames = track ? watchTrackFrames(track, { keep, signal }) : 'no track given'; // null: recorded; else why not
  const timer = setInterval(() => { flush().catch(() => {}); }, FLUSH_MS);
  signal.addEventListener('abort', () => { clearInterval(timer); flush().catch(() => {}); }, { once: true });
  video.requestVideoFrameCallback(onFrame);
}
