/**
 * Stage 2 of a call: the RTCPeerConnection and what is set on it: exact codec preferences and the video sender's
 * encoding parameters.
 */
import { chooseAudioCodecs, chooseVideoCodecs, sdpCodecNames } from './codecs.js';

/**
 * One RTCPeerConnection with the video tracks added first, in the order of `call.tracks`, then the audio. No ICE
 * servers and one bundled transport, so one candidate pair carries all media. Tracks are added before any
 * description is applied: a callee that adds them later sends nothing.
 * @param {{ stream: MediaStream, video: { id: string, track: MediaStreamTrack }[] }} media
 */
export function createConnection({ stream, video }) {
  const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
  for (const { track } of video) pc.addTrack(track, stream);
  for (const track of stream.getAudioTracks()) pc.addTrack(track, stream);
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
 * The scenario's encoding parameters on every sender (after the local description is set), read back: on each video
 * sender its track's priority, networkPriority and maxBitrate and the call's degradationPreference; on the audio
 * sender the call's priority and networkPriority. `sending` false switches every encoding off (a call that joins
 * later; setSending switches it on).
 * @param {RTCPeerConnection} pc @param {import('./config.js').CallSettings} call
 * @param {{ id: string, track: MediaStreamTrack }[]} video the video tracks with their scenario ids
 * @param {boolean} sending
 * @returns {Promise<{ maxBitrate_bps: number | null, degradationPreference: string | null,
 *   tracks: { id: string, kind: string, mid: string | null, active: boolean, priority: string | null,
 *   networkPriority: string | null, maxBitrate_bps: number | null }[] }>} what Chrome kept; the first two fields
 *   are the first video track's
 */
export async function applySendParameters(pc, call, video, sending) {
  const tracks = [];
  for (const transceiver of pc.getTransceivers()) {
    const { sender } = transceiver;
    if (!sender.track) continue;
    const index = video.findIndex((v) => v.track === sender.track);
    const settings = index >= 0 ? call.tracks[index] : { id: 'audio', priority: call.priority, network_priority: call.network_priority, max_bitrate_kbps: null };
    const parameters = /** @type {any} */ (sender.getParameters());
    if (!parameters.encodings || parameters.encodings.length === 0) parameters.encodings = [{}];
    for (const encoding of parameters.encodings) {
      if (settings.max_bitrate_kbps === null) delete encoding.maxBitrate;
      else encoding.maxBitrate = Math.round(settings.max_bitrate_kbps * 1000);
      encoding.priority = settings.priority;
      encoding.networkPriority = settings.network_priority;
      encoding.active = sending;
    }
    if (sender.track.kind === 'video') parameters.degradationPreference = call.degradation_preference;
    await sender.setParameters(parameters);
    const applied = /** @type {any} */ (sender.getParameters());
    const first = applied.encodings?.[0] ?? {};
    tracks.push({ id: settings.id, kind: sender.track.kind, mid: transceiver.mid, active: first.active ?? true,
      priority: first.priority ?? null, networkPriority: first.networkPriority ?? null, maxBitrate_bps: first.maxBitrate ?? null,
      degradationPreference: applied.degradationPreference ?? null });
  }
  const firstVideo = tracks.find((t) => t.kind === 'video');
  return { maxBitrate_bps: firstVideo?.maxBitrate_bps ?? null, degradationPreference: firstVideo?.degradationPreference ?? null, tracks };
}

/**
 * Switches every encoding of every sender on or off (RTCRtpEncodingParameters.active): a call joining or leaving.
 * @param {RTCPeerConnection} pc @param {boolean} on
 */
export async function setSending(pc, on) {
  for (const sender of pc.getSenders()) {
    if (!sender.track) continue;
    const parameters = sender.getParameters();
    for (const encoding of parameters.encodings ?? []) encoding.active = on;
    await sender.setParameters(parameters);
  }
}

/**
 * The SSRCs the local description gives each m-section (media, then RTX), by mid: what the harness marks a track's
 * packets by.
 * @param {string} sdp
 * @returns {Record<string, number[]>}
 */
export function ssrcsByMid(sdp) {
  /** @type {Record<string, number[]>} */
  const out = {};
  for (const section of sdp.split(/\r?\nm=/).slice(1)) {
    const mid = /\na=mid:(\S+)/.exec(section)?.[1];
    if (mid === undefined) continue;
    const group = /\na=ssrc-group:FID (\d+) (\d+)/.exec(section);
    const ssrcs = group ? [Number(group[1]), Number(group[2])] : [];
    for (const m of section.matchAll(/\na=ssrc:(\d+) /g)) if (!ssrcs.includes(Number(m[1]))) ssrcs.push(Number(m[1]));
    out[mid] = ssrcs;
  }
  return out;
}

/** Codec names of the peer's description, per kind. @param {RTCPeerConnection} pc */
export function negotiatedCodecs(pc) {
  const sdp = pc.remoteDescription?.sdp ?? '';
  return { video_codecs: sdpCodecNames(sdp, 'video'), audio_codecs: sdpCodecNames(sdp, 'audio') };
}
