/**
 * Entry point of the test page: reads the config, connects to the signaling server that served the page,
 * starts the call and keeps a few live numbers on screen. `window.rtclab` gives the harness a handle on the call.
 */
import { io } from '/socket.io/socket.io.esm.min.js';
import { readConfig } from './config.js';
import { startCall } from './call.js';
import { watchFrames } from './frames.js';
import { reportError } from './report.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

const showError = (/** @type {unknown} */ error) => {
  $('error').textContent += `${error instanceof Error ? error.message : String(error)}\n`;
  return reportError(error);
};
window.addEventListener('error', (event) => showError(event.error ?? event.message));
window.addEventListener('unhandledrejection', (event) => showError(event.reason));

const format = (/** @type {number | null} */ value, /** @type {string} */ unit, digits = 0) =>
  value === null || value === undefined ? '-' : `${value.toFixed(digits)} ${unit}`;

const framesWatched = new AbortController();
let watching = false;
const view = {
  // Only when asked (call.local_preview): drawing 720p frames 30 times a second costs the renderer and the GPU
  // process CPU that the call needs, and nobody looks at a run's page (docs/harness.md, "A run's CPU").
  onLocalStream: (/** @type {MediaStream} */ stream) => {
    if (/** @type {any} */ (window).rtclab.config.call.local_preview) /** @type {HTMLVideoElement} */ ($('local')).srcObject = stream;
  },
  onRemoteStream: (/** @type {MediaStream} */ stream) => {
    const video = /** @type {HTMLVideoElement} */ ($('remote'));
    video.srcObject = stream;
    // What the viewer saw, frame by frame (client/frames.js), once per page: the element stays the same.
    const readEvery = /** @type {any} */ (window).rtclab.config.frames_read_every;
    if (readEvery > 0 && !framesWatched.signal.aborted && !watching) {
      watching = true;
      const { frames_sample_every: sampleEvery, frames_sample_path: samplePath } = /** @type {any} */ (window).rtclab.config;
      const track = stream.getVideoTracks()[0] ?? null;
      watchFrames(video, { readEvery, sampleEvery, samplePath, track, signal: framesWatched.signal });
    }
  },
  onStatus: (/** @type {string} */ text) => { $('status').textContent = text; },
  onNumbers: (/** @type {any} */ n) => {
    const rows = [
      ['send', `${format(n.send_kbps, 'kbit/s')}  ${n.send_resolution ?? '-'} @ ${format(n.send_fps, 'fps')}  ${n.send_codec ?? ''}`],
      ['receive', `${format(n.receive_kbps, 'kbit/s')}  ${n.receive_resolution ?? '-'} @ ${format(n.receive_fps, 'fps')}  ${n.receive_codec ?? ''}`],
      ['RTT', format(n.rtt_ms, 'ms', 1)],
      ['limited by', n.quality_limitation ?? '-'],
    ];
    $('numbers').replaceChildren(...rows.flatMap(([name, value]) => {
      const dt = document.createElement('dt');
      dt.textContent = name;
      const dd = document.createElement('dd');
      dd.textContent = value;
      return [dt, dd];
    }));
  },
};

async function main() {
  const config = readConfig(/** @type {any} */ (window).rtclabConfig, location.search);
  const socket = io({ transports: ['websocket'] });
  /** @type {any} */ (window).rtclab = { config, socket, call: null };
  const call = await startCall(config, socket, view);
  /** @type {any} */ (window).rtclab.call = call;
  window.addEventListener('pagehide', () => { framesWatched.abort(); call.hangup('page closed'); });
}

main().catch(showError);
