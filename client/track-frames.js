/**
 * Every frame the remote video track delivers to the page (decoded, handed to the <video> element and to this
 * reader alike), read in a worker (track-frames-worker.js): one `track_frame` record each, with its stamp. The
 * per-frame callback of frames.js fires at most once per rendering step of the page, so at 60 fps it misses frames
 * the compositor presented; this record has them all, and the analyzer joins the two on the frame's RTP timestamp
 * (docs/client.md, "Frames").
 */

/**
 * Starts reading `track`'s frames until `signal` aborts; each record goes to `keep`. Returns why it could not start
 * (null when it started): a browser without MediaStreamTrackProcessor on the page.
 * @param {MediaStreamTrack} track
 * @param {{ keep: (record: Record<string, unknown>) => void, signal: AbortSignal }} o
 * @returns {string | null}
 */
export function watchTrackFrames(track, { keep, signal }) {
  const Processor = /** @type {any} */ (globalThis).MediaStreamTrackProcessor;
  if (typeof Processor !== 'function') return 'no MediaStreamTrackProcessor on the page';
  // A clone: ending the reader ends the clone, never the track the <video> element plays.
  const own = track.clone();
  // A few frames of slack, for a worker the scheduler keeps from running for a moment on a busy machine.
  const processor = new Processor({ track: own, maxBufferSize: 8 });
  const worker = new Worker(new URL('./track-frames-worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (/** @type {MessageEvent<Record<string, unknown>[]>} */ event) => {
    if (!signal.aborted) for (const r of event.data) keep(r);
  };
  worker.postMessage({ readable: processor.readable }, [processor.readable]);
  signal.addEventListener('abort', () => { own.stop(); }, { once: true });
  return null;
}
