/**
 * Stage 3 of a call: the signaling session. Joins the room, makes the offer (caller) or answers it (callee) with the
 * codec preferences and send parameters, and trickles ICE candidates both ways, keeping only the data network's.
 * Signaling messages are handled one at a time, in arrival order: a candidate never meets a missing description.
 */
import { isCandidateAllowed } from './candidates.js';
import { applySendParameters, negotiatedCodecs, setCodecPreferences, ssrcsByMid } from './connection.js';
import { reportError } from './report.js';

/**
 * Our ICE candidates on their way to the peer: those outside the data network are dropped, the others wait until our
 * description has gone out (so the peer never gets a candidate before the description).
 */
class CandidateOutbox {
  /** @type {RTCIceCandidateInit[]} */
  #waiting = [];
  #descriptionSent = false;
  sent = 0;
  filtered = 0;

  /** @param {import('socket.io-client').Socket} socket @param {string | null} prefix */
  constructor(socket, prefix) {
    this.socket = socket;
    this.prefix = prefix;
  }

  /** @param {RTCIceCandidate} candidate a local candidate Chrome gathered */
  add(candidate) {
    const line = candidate.candidate;
    if (!isCandidateAllowed(line, this.prefix)) {
      this.filtered += 1;
      console.log(`rtclab candidate filtered (not ${this.prefix}*): ${line}`);
      return;
    }
    this.sent += 1;
    if (this.#descriptionSent) this.#send(candidate.toJSON());
    else this.#waiting.push(candidate.toJSON());
  }

  /** Our description has gone out: send what waited, and from now on send at once. */
  descriptionSent() {
    this.#descriptionSent = true;
    for (const c of this.#waiting.splice(0)) this.#send(c);
  }

  /** @param {RTCIceCandidateInit} c */
  #send(c) {
    this.socket.emit('candidate', { candidate: c.candidate ?? '', sdpMid: c.sdpMid ?? null, sdpMLineIndex: c.sdpMLineIndex ?? null, usernameFragment: c.usernameFragment ?? null });
  }
}

export class Negotiation {
  #offerStarted = false;
  /** @type {Promise<void>} the message being handled; the next one waits for it */
  #chain = Promise.resolve();

  /**
   * @param {{ pc: RTCPeerConnection, socket: import('socket.io-client').Socket,
   *   config: import('./config.js').PageConfig, state: import('./call-state.js').CallState,
   *   video: { id: string, track: MediaStreamTrack }[], signal: AbortSignal, onBye: (reason: string) => void }} o
   *   video: the video tracks with their scenario ids
   *   state: its role is set here once the server assigns it; signal: aborted when the call ends (messages after
   *   that are ignored); onBye: the peer hung up
   */
  constructor({ pc, socket, config, state, video, signal, onBye }) {
    this.video = video;
    this.pc = pc;
    this.socket = socket;
    this.config = config;
    this.state = state;
    this.signal = signal;
    this.onBye = onBye;
    this.outbox = new CandidateOutbox(socket, config.candidate_prefix);
  }

  /** Listens to the connection's candidates and the server's messages, and joins the room. */
  start() {
    const { pc, socket, config, state } = this;
    pc.addEventListener('icecandidate', (event) => {
      if (event.candidate?.candidate) this.outbox.add(event.candidate); // none: end of gathering, nothing to tell
    });
    socket.on('joined', this.#serially(async (message) => {
      state.role = message.role;
      await state.report('joined', { room: message.room, peers: message.peers.length });
      if (state.role === 'caller' && message.peers.length > 0) await this.#offer();
    }));
    socket.on('peer-joined', this.#serially(async (message) => {
      await state.report('peer-joined', { peer_role: message.role });
      if (state.role === 'caller') await this.#offer();
    }));
    socket.on('offer', this.#serially((message) => this.#answer(message)));
    socket.on('answer', this.#serially((message) => this.#acceptAnswer(message)));
    socket.on('candidate', this.#serially((message) => this.#addRemoteCandidate(message)));
    socket.on('peer-left', this.#serially(async () => { await state.report('peer-left'); }));
    socket.on('bye', this.#serially(async (message) => this.onBye(`peer said bye${message.reason ? `: ${message.reason}` : ''}`)));
    socket.on('error', (message) => reportError(new Error(`signaling refused ${message.event}: ${message.message}`)));
    socket.on('disconnect', (reason) => { if (!this.signal.aborted) state.report('signaling-disconnected', { reason }); });
    // A rejoin after a reconnect asks for the role the server gave the first time.
    const join = () => socket.emit('join', state.role ? { room: config.room, role: state.role } : { room: config.room });
    if (socket.connected) join();
    socket.on('connect', join);
  }

  /** @param {(message: any) => Promise<void>} handler */
  #serially(handler) {
    return (/** @type {any} */ message) => {
      this.#chain = this.#chain.then(() => (this.signal.aborted ? undefined : handler(message))).catch(reportError);
    };
  }

  /** Caller: codec preferences, offer, then send parameters. Once, however many times the peer is seen. */
  async #offer() {
    if (this.#offerStarted || this.signal.aborted) return;
    this.#offerStarted = true;
    const { pc } = this;
    setCodecPreferences(pc, this.config.call);
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    this.socket.emit('offer', { type: 'offer', sdp: pc.localDescription?.sdp ?? offer.sdp });
    this.outbox.descriptionSent();
    await this.state.report('offer-sent');
    await this.#applySendParameters();
  }

  /** Callee: the offer, codec preferences, answer, then send parameters. @param {{ sdp: string }} message */
  async #answer(message) {
    const { pc } = this;
    await pc.setRemoteDescription({ type: 'offer', sdp: message.sdp });
    // Media only from caller to callee: every m-section answered recvonly, whatever this page captured.
    if (this.config.call.direction === 'forward') for (const t of pc.getTransceivers()) t.direction = 'recvonly';
    setCodecPreferences(pc, this.config.call);
    const answer = await pc.createAnswer();
    await pc.setLocalDescription(answer);
    this.socket.emit('answer', { type: 'answer', sdp: pc.localDescription?.sdp ?? answer.sdp });
    this.outbox.descriptionSent();
    await this.state.report('answer-sent', negotiatedCodecs(pc));
    await this.#applySendParameters();
  }

  /** @param {{ sdp: string }} message */
  async #acceptAnswer(message) {
    await this.pc.setRemoteDescription({ type: 'answer', sdp: message.sdp });
    await this.state.report('answer-received', negotiatedCodecs(this.pc));
  }

  async #applySendParameters() {
    const applied = await applySendParameters(this.pc, this.config.call, this.video, this.config.call.start_s === 0);
    const ssrcs = ssrcsByMid(this.pc.localDescription?.sdp ?? '');
    // Each track's SSRCs (media, RTX) from our description: how the harness and the analyzer find its packets.
    const tracks = applied.tracks.map((t) => ({ ...t, ssrcs: t.mid === null ? [] : (ssrcs[t.mid] ?? []) }));
    await this.state.report('send-parameters', { ...applied, tracks });
  }

  /** @param {RTCIceCandidateInit} message */
  async #addRemoteCandidate(message) {
    if (!message.candidate) return;
    const prefix = this.config.candidate_prefix;
    if (!isCandidateAllowed(message.candidate, prefix)) {
      console.log(`rtclab remote candidate ignored (not ${prefix}*): ${message.candidate}`);
      return;
    }
    await this.pc.addIceCandidate(message);
  }
}
