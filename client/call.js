/**
 * One side of the call: camera and microphone from Chrome's fake devices, one RTCPeerConnection (no ICE servers,
 * one bundled transport), exact codec list, send parameters, trickle ICE over the signaling server, and the
 * getStats loop that streams every full report to the harness.
 */
import { chooseAudioCodecs, chooseVideoCodecs, sdpCodecNames } from './codecs.js';
import { isCandidateAllowed } from './candidates.js';
import { liveNumbers, pairKey, selectedCandidatePair } from './stats.js';
import { report, reportError } from './report.js';

/**
 * @param {ReturnType<typeof import('./config.js').readConfig>} config
 * @param {import('socket.io-client').Socket} socket connected or connecting to the signaling server
 * @param {{ onLocalStream: (s: MediaStream) => void, onRemoteStream: (s: MediaStream) => void,
 *   onNumbers: (n: ReturnType<typeof liveNumbers>) => void, onStatus: (text: string) => void }} view
 */
export async function startCall(config, socket, view) {
  const { call } = config;
  /** @type {'caller' | 'callee' | null} */
  let role = config.role;
  let closed = false;
  let offerStarted = false;
  let descriptionSent = false;

  const stream = await navigator.mediaDevices.getUserMedia({
    // ideal, not exact: the fake camera only downscales its clip, and a mismatch must not fail the call
    video: { width: { ideal: call.width }, height: { ideal: call.height }, frameRate: { ideal: call.fps } },
    audio: call.audio,
  });
  view.onLocalStream(stream);
  const videoTrack = stream.getVideoTracks()[0];
  await report('media', {
    t_ms: Date.now(),
    video: videoTrack?.getSettings() ?? null,
    audio: stream.getAudioTracks()[0]?.getSettings() ?? null,
  });

  const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
  // Tracks are added before any description is applied: a callee that adds them later sends nothing.
  for (const track of stream.getTracks()) pc.addTrack(track, stream);

  const state = (/** @type {string} */ event, /** @type {Record<string, unknown>} */ extra = {}) => {
    view.onStatus(`${role ?? '?'}: ${event}, connection ${pc.connectionState}, ice ${pc.iceConnectionState}`);
    return report('state', {
      t_ms: Date.now(),
      event,
      role,
      connectionState: pc.connectionState,
      iceConnectionState: pc.iceConnectionState,
      iceGatheringState: pc.iceGatheringState,
      signalingState: pc.signalingState,
      ...extra,
    });
  };
  for (const event of ['connectionstatechange', 'iceconnectionstatechange', 'icegatheringstatechange', 'signalingstatechange']) {
    pc.addEventListener(event, () => {
      state(event);
      if (event === 'connectionstatechange' || event === 'iceconnectionstatechange') checkSelectedPair().catch(reportError);
    });
  }
  pc.addEventListener('track', (event) => view.onRemoteStream(event.streams[0] ?? new MediaStream([event.track])));

  /** Codec preferences go on the transceivers before the offer (caller) or before the answer (callee). */
  const setCodecPreferences = () => {
    for (const transceiver of pc.getTransceivers()) {
      const kind = transceiver.sender.track?.kind ?? transceiver.receiver.track.kind;
      const receivable = RTCRtpReceiver.getCapabilities(kind)?.codecs ?? [];
      const sendable = RTCRtpSender.getCapabilities(kind)?.codecs ?? [];
      const codecs = kind === 'video' ? chooseVideoCodecs(receivable, sendable, call.codec, call.red_fec) : chooseAudioCodecs(receivable, call.red_fec);
      transceiver.setCodecPreferences(codecs);
    }
  };

  /** maxBitrate and degradationPreference, read back to report what Chrome kept. */
  const applySendParameters = async () => {
    const sender = pc.getSenders().find((s) => s.track?.kind === 'video');
    if (!sender) return;
    const parameters = sender.getParameters();
    if (!parameters.encodings || parameters.encodings.length === 0) parameters.encodings = [{}];
    for (const encoding of parameters.encodings) {
      if (call.max_bitrate_kbps === null) delete encoding.maxBitrate;
      else encoding.maxBitrate = Math.round(call.max_bitrate_kbps * 1000);
    }
    /** @type {any} */ (parameters).degradationPreference = call.degradation_preference;
    await sender.setParameters(parameters);
    const applied = /** @type {any} */ (sender.getParameters());
    await state('send-parameters', {
      maxBitrate_bps: applied.encodings?.[0]?.maxBitrate ?? null,
      degradationPreference: applied.degradationPreference ?? null,
    });
  };

  const negotiated = () => {
    const sdp = pc.remoteDescription?.sdp ?? '';
    return { video_codecs: sdpCodecNames(sdp, 'video'), audio_codecs: sdpCodecNames(sdp, 'audio') };
  };

  // Local candidates wait until our description has gone out, so the peer never gets them before it.
  /** @type {RTCIceCandidateInit[]} */
  const pendingLocal = [];
  let candidatesSent = 0;
  let candidatesFiltered = 0;
  const sendCandidate = (/** @type {RTCIceCandidateInit} */ c) => {
    socket.emit('candidate', { candidate: c.candidate ?? '', sdpMid: c.sdpMid ?? null, sdpMLineIndex: c.sdpMLineIndex ?? null, usernameFragment: c.usernameFragment ?? null });
  };
  pc.addEventListener('icecandidate', (event) => {
    if (!event.candidate || !event.candidate.candidate) return; // end of gathering: nothing to tell
    const line = event.candidate.candidate;
    if (!isCandidateAllowed(line, config.candidate_prefix)) {
      candidatesFiltered += 1;
      console.log(`rtclab candidate filtered (not ${config.candidate_prefix}*): ${line}`);
      return;
    }
    candidatesSent += 1;
    if (descriptionSent) sendCandidate(event.candidate.toJSON());
    else pendingLocal.push(event.candidate.toJSON());
  });
  const flushLocal = () => {
    descriptionSent = true;
    for (const c of pendingLocal.splice(0)) sendCandidate(c);
  };

  const makeOffer = async () => {
    if (offerStarted || closed) return;
    offerStarted = true;
    setCodecPreferences();
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    socket.emit('offer', { type: 'offer', sdp: pc.localDescription?.sdp ?? offer.sdp });
    flushLocal();
    await state('offer-sent');
    await applySendParameters();
  };

  const onOffer = async (/** @type {{ sdp: string }} */ message) => {
    await pc.setRemoteDescription({ type: 'offer', sdp: message.sdp });
    setCodecPreferences();
    const answer = await pc.createAnswer();
    await pc.setLocalDescription(answer);
    socket.emit('answer', { type: 'answer', sdp: pc.localDescription?.sdp ?? answer.sdp });
    flushLocal();
    await state('answer-sent', negotiated());
    await applySendParameters();
  };

  const onAnswer = async (/** @type {{ sdp: string }} */ message) => {
    await pc.setRemoteDescription({ type: 'answer', sdp: message.sdp });
    await state('answer-received', negotiated());
  };

  const onCandidate = async (/** @type {RTCIceCandidateInit} */ message) => {
    if (!message.candidate) return;
    if (!isCandidateAllowed(message.candidate, config.candidate_prefix)) {
      console.log(`rtclab remote candidate ignored (not ${config.candidate_prefix}*): ${message.candidate}`);
      return;
    }
    await pc.addIceCandidate(message);
  };

  const close = async (/** @type {string} */ why) => {
    if (closed) return;
    closed = true;
    pc.close();
    for (const track of stream.getTracks()) track.stop();
    await state('closed', { reason: why, candidates_sent: candidatesSent, candidates_filtered: candidatesFiltered });
  };

  // Signaling messages are handled one at a time, in arrival order: a candidate never meets a missing description.
  let chain = Promise.resolve();
  const serially = (/** @type {(m: any) => Promise<void>} */ handler) => (/** @type {any} */ message) => {
    chain = chain.then(() => (closed ? undefined : handler(message))).catch(reportError);
  };
  socket.on('joined', serially(async (message) => {
    role = message.role;
    await state('joined', { room: message.room, peers: message.peers.length });
    if (role === 'caller' && message.peers.length > 0) await makeOffer();
  }));
  socket.on('peer-joined', serially(async (message) => {
    await state('peer-joined', { peer_role: message.role });
    if (role === 'caller') await makeOffer();
  }));
  socket.on('offer', serially(onOffer));
  socket.on('answer', serially(onAnswer));
  socket.on('candidate', serially(onCandidate));
  socket.on('peer-left', serially(async () => { await state('peer-left'); }));
  socket.on('bye', serially(async (message) => close(`peer said bye${message.reason ? `: ${message.reason}` : ''}`)));
  socket.on('error', (message) => reportError(new Error(`signaling refused ${message.event}: ${message.message}`)));
  socket.on('disconnect', (reason) => { if (!closed) state('signaling-disconnected', { reason }); });
  const join = () => socket.emit('join', role ? { room: config.room, role } : { room: config.room });
  if (socket.connected) join();
  socket.on('connect', join);

  // getStats on a fixed cadence; a slow sample delays the next one instead of overlapping it.
  let lastPairKey = '';
  let mediaFlowing = false;
  /** @type {any[] | null} */
  let previous = null;
  /** @param {any[]} [stats] one sample already taken; without it a new one is taken */
  const checkSelectedPair = async (stats) => {
    const sample = stats ?? [...(await pc.getStats()).values()];
    const pair = selectedCandidatePair(sample);
    const key = pairKey(pair);
    if (pair && key !== lastPairKey) {
      lastPairKey = key;
      await report('selected-pair', { t_ms: Date.now(), ...pair });
    }
  };
  const statsLoop = async () => {
    let due_ms = performance.now();
    while (!closed) {
      const stats = [...(await pc.getStats()).values()];
      const t_ms = Date.now();
      if (closed) break;
      await report('stats', { t_ms, report: stats });
      await checkSelectedPair(stats);
      view.onNumbers(liveNumbers(previous, stats));
      previous = stats;
      due_ms = Math.max(due_ms + config.getstats_interval_ms, performance.now());
      await new Promise((resolve) => setTimeout(resolve, due_ms - performance.now()));
    }
  };
  statsLoop().catch(reportError);
  // The moment remote video is first decoded, to within 20 ms (the stats interval may be a second): the harness's
  // call setup time and its t = 0 depend on it.
  const watchMediaFlowing = async () => {
    while (!closed && !mediaFlowing) {
      const stats = [...(await pc.getStats()).values()];
      const framesDecoded = stats.find((s) => s.type === 'inbound-rtp' && s.kind === 'video')?.framesDecoded ?? 0;
      if (framesDecoded > 0) {
        mediaFlowing = true;
        await state('media-flowing', { framesDecoded });
      } else {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  watchMediaFlowing().catch(reportError);

  return {
    pc,
    get role() { return role; },
    hangup: async (/** @type {string} */ reason = 'hangup') => {
      if (!closed) socket.emit('bye', { reason });
      await close(reason);
    },
  };
}
