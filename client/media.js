/**
 * Stage 1 of a call: camera and microphone from Chrome's fake devices (the harness launches Chrome with the clip as
 * its camera). Reports what Chrome delivered.
 */
import { report } from './report.js';

/**
 * @param {import('./config.js').CallSettings} call
 * @returns {Promise<MediaStream>}
 */
export async function acquireMedia(call) {
  const stream = await navigator.mediaDevices.getUserMedia({
    // ideal, not exact: the fake camera only downscales its clip, and a mismatch must not fail the call
    video: { width: { ideal: call.width }, height: { ideal: call.height }, frameRate: { ideal: call.fps } },
    audio: call.audio,
  });
  await report('media', {
    t_ms: Date.now(),
    video: stream.getVideoTracks()[0]?.getSettings() ?? null,
    audio: stream.getAudioTracks()[0]?.getSettings() ?? null,
  });
  return stream;
}
