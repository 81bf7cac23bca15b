/**
 * One side of the call, in stages: media (media.js), the connection (connection.js), the signaling session that
 * negotiates it (negotiation.js), the watchers that stream what it does (monitor.js), and the end of the call.
 * Each stage gets what it needs as arguments; the end of the call is one AbortSignal that every loop watches.
 */
import { CallState } from './call-state.js';
import { createConnection, setSending } from './connection.js';
import { acquireMedia } from './media.js';
import { mediaFlowing, runStatsLoop, SelectedPairWatcher } from './monitor.js';
import { Negotiation } from './negotiation.js';
import { reportError } from './report.js';
import { liveNumbers } from './stats.js';

/**
 * @typedef {{ onLocalStream: (s: MediaStream) => void, onRemoteStream: (s: MediaStream) => void,
 *   onNumbers: (n: ReturnType<typeof liveNumbers>) => void, onStatus: (text: string) => void }} CallView
 */

/**
 * @param {import('./config.js').PageConfig} config
 * @param {import('socket.io-client').Socket} socket connected or connecting to the signaling server
 * @param {CallView} view
 * @returns {Promise<{ pc: RTCPeerConnection, readonly role: 'caller' | 'callee' | null,
 *   hangup: (reason?: string) => Promise<void>, setSending: (on: boolean) => Promise<void> }>}
 */
export async function startCall(config, socket, view) {
  // The callee sends its first video track only: the tracks under study go caller -> callee, and every extra track
  // the callee sent back would cost an encoder and a decoder on this machine's CPUs (docs/multiflow.md). With
  // direction `forward` it sends nothing at all: no camera, no microphone, no encoder (its transceivers answer
  // recvonly, negotiation.js).
  const forwardOnly = config.call.direction === 'forward';
  const media = config.role === 'callee' && forwardOnly ? { stream: new MediaStream(), video: [] }
    : await acquireMedia(config.role === 'callee' ? { ...config.call, tracks: config.call.tracks.slice(0, 1) } : config.call);
  const { stream } = media;
  view.onLocalStream(stream);

  const pc = createConnection(media);
  const ended = new AbortController();
  const state = new CallState(pc, view.onStatus, config.role);
  const pairs = new SelectedPairWatcher(pc);
  state.watch((event) => {
    if (event === 'connectionstatechange' || event === 'iceconnectionstatechange') pairs.check().catch(reportError);
  });
  pc.addEventListener('track', (event) => view.onRemoteStream(event.streams[0] ?? new MediaStream([event.track])));

  const negotiation = new Negotiation({
    pc, socket, config, state, video: media.video, signal: ended.signal, onBye: (reason) => endCall(reason),
  });
  /** Ends the call once: stops every loop, closes the connection and the tracks, reports `closed`. */
  const endCall = async (/** @type {string} */ reason) => {
    if (ended.signal.aborted) return;
    ended.abort();
    pc.close();
    for (const track of stream.getTracks()) track.stop();
    await state.report('closed', { reason, candidates_sent: negotiation.outbox.sent, candidates_filtered: negotiation.outbox.filtered });
  };
  negotiation.start();

  runStatsLoop({
    pc, interval_ms: config.getstats_interval_ms, signal: ended.signal,
    onSample: async (stats, previous) => {
      await pairs.check(stats);
      view.onNumbers(liveNumbers(previous, stats));
    },
  }).catch(reportError);
  // Polled every 20 ms until video is decoded: a call that joins later starts polling when it joins, not before.
  let watchingMedia = false;
  const watchMedia = () => {
    if (watchingMedia) return;
    watchingMedia = true;
    mediaFlowing({ pc, signal: ended.signal })
      .then((framesDecoded) => (framesDecoded === null ? undefined : state.report('media-flowing', { framesDecoded })))
      .catch(reportError);
  };
  // A caller that receives nothing (direction forward) has no remote video to wait for.
  const receivesVideo = !(forwardOnly && config.role === 'caller');
  if (config.call.start_s === 0 && receivesVideo) watchMedia();

  return {
    pc,
    get role() { return state.role; },
    /** A call joining (true) or leaving (false): every encoding switched on or off, then a `sending` state. */
    setSending: async (on) => {
      await setSending(pc, on);
      if (on && receivesVideo) watchMedia();
      await state.report('sending', { on });
    },
    hangup: async (reason = 'hangup') => {
      if (!ended.signal.aborted) socket.emit('bye', { reason });
      await endCall(reason);
    },
  };
}
