/**
 * Stage 2 of a call: the RTCPeerConnection and what is set on it: exact codec preferences and the video sender's
 * encoding parameters.
 */
import { chooseAudioCodecs, chooseVideoCodecs, sdpCodecNames } from './codecs.js';

/**
 * One RTCPeerConnection with every track of the stream added. No ICE servers and one bundled transport, so one
 * candidate pair carries all media. Tracks are added before any description is applied: a callee that adds them
 * later sends nothing.
 * @param {MediaStream} stream
 */
export function createConnection(stream) {
  const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
  for (const track of stream.getTracks()) pc.addTrack(track, stream);
  return pc;
}

/**
 * The exact codec list on every transceiver; set before the offer (caller) or before the answer (callee).
 * @param {RTCPeerConnection} pc @param {import('./config.js').CallSettings} call
 */
export function setCodecPreferences(pc, call) {
  for (const transceiver of pc.getTransceivers()) {
    const kind = transceiver.sender.track?.kind ?? transceiver.receiver.track.kind;
    const receivable = RTCRtpReceiver.getCapabilities(kind)?.codecs ?? [];
    const sendable = RTCRtpSender.getCapabilities(kind)?.codecs ?? [];
    const codecs = kind === 'video' ? chooseVideoCodecs(receivable, sendable, call.codec, call.red_fec) : chooseAudioCodecs(receivable, call.red_fec);
    transceiver.setCodecPreferences(codecs);
  }
}

/**
 * maxBitrate and degradationPreference on the video sender (after the local description is set), read back.
 * @param {RTCPeerConnection} pc @param {import('./config.js').CallSettings} call
 * @returns {Promise<{ maxBitrate_bps: number | null, degradationPreference: string | null } | null>} the values
 *   Chrome kept; null when there is no video sender
 */
export async function applySendParameters(pc, call) {
  const sender = pc.getSenders().find((s) => s.track?.kind === 'video');
  if (!sender) return null;
  const parameters = sender.getParameters();
  if (!parameters.encodings || parameters.encodings.length === 0) parameters.encodings = [{}];
  for (const encoding of parameters.encodings) {
    if (call.max_bitrate_kbps === null) delete encoding.maxBitrate;
    else encoding.maxBitrate = Math.round(call.max_bitrate_kbps * 1000);
  }
  /** @type {any} */ (parameters).degradationPreference = call.degradation_preference;
  await sender.setParameters(parameters);
  const applied = /** @type {any} */ (sender.getParameters());
  return {
    maxBitrate_bps: applied.encodings?.[0]?.maxBitrate ?? null,
    degradationPreference: applied.degradationPreference ?? null,
  };
}

/** Codec names of the peer's description, per kind. @param {RTCPeerConnection} pc */
export function negotiatedCodecs(pc) {
  const sdp = pc.remoteDescription?.sdp ?? '';
  return { video_codecs: sdpCodecNames(sdp, 'video'), audio_codecs: sdpCodecNames(sdp, 'audio') };
}
