/**
 * Stage 1 of a call: camera and microphone from Chrome's fake devices (the harness launches Chrome with the clip as
 * its camera). One video track per entry of `call.tracks`: Chromium's fake device is one camera, so the second and
 * later tracks are clones of the first (the same frames, each sent by its own encoder). Reports what Chrome
 * delivered.
 */
import { report } from './report.js';

/**
 * @param {import('./config.js').CallSettings} call
 * @returns {Promise<{ stream: MediaStream, video: { id: string, track: MediaStreamTrack }[] }>} the stream (every
 *   track) and its video tracks in the order of `call.tracks`, each with the track's id from the scenario
 */
export async function acquireMedia(call) {
  const stream = await navigator.mediaDevices.getUserMedia({
    // ideal, not exact: the fake camera only downscales its clip, and a mismatch must not fail the call
    video: { width: { ideal: call.width }, height: { ideal: call.height }, frameRate: { ideal: call.fps } },
    audio: call.audio,
  });
  const camera = stream.getVideoTracks()[0];
  const video = call.tracks.map((t, i) => ({ id: t.id, track: i === 0 ? camera : camera.clone() }));
  for (const { track } of video.slice(1)) stream.addTrack(track);
  await report('media', {
    t_ms: Date.now(),
    video: camera?.getSettings() ?? null,
    video_tracks: video.length,
    audio: stream.getAudioTracks()[0]?.getSettings() ?? null,
  });
  return { stream, video };
}
