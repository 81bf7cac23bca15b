// @ts-check
/**
 * A load of real socket.io clients against a signaling server: pairs of clients in their own rooms exchange an
 * offer, an answer and candidates, each message tagged with its room, sender and sequence number, so that every
 * message received can be checked (misrouted: it came from another room or from oneself) and every one sent
 * counted (lost: it never arrived). Beside them, clients that misbehave (invalid, oversized and unknown messages)
 * and pairs where one member vanishes mid-exchange. Used by bench/signaling/load.mjs (1000 clients) and by a
 * shorter test. Loopback only.
 */
import { io as connect } from 'socket.io-client';
import { MAX_MESSAGE_BYTES } from './messages.js';

/**
 * @typedef {{ rooms: number, candidates: number, vanishing_rooms: number, misbehaving_clients: number,
 *   timeout_ms: number }} LoadOptions
 *   rooms: pairs that complete the exchange; candidates: per side; vanishing_rooms: pairs whose callee disconnects
 *   right after joining; misbehaving_clients: each sends an invalid, an oversized and an unknown message
 * @typedef {{ clients: number, sent: number, received: number, lost: number, misrouted: number,
 *   errors_answered: number, errors_expected: number, peer_left_seen: number, peer_left_expected: number,
 *   seconds: number, problems: string[] }} LoadResult
 */

/** @param {string} url @returns {Promise<import('socket.io-client').Socket>} */
function open(url) {
  const socket = connect(url, { transports: ['websocket'], forceNew: true, reconnection: false, timeout: 20_000 });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', (err) => reject(new Error(`connect to ${url}: ${err.message}`)));
  });
}

/** @param {import('socket.io-client').Socket} socket @param {string} event @param {number} timeout_ms */
function next(socket, event, timeout_ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${event}" within ${timeout_ms} ms`)), timeout_ms);
    socket.once(event, (payload) => { clearTimeout(timer); resolve(payload); });
  });
}

/** A message's tag: which room, which side, which message. @param {number} room @param {string} from @param {number} seq */
const tag = (room, from, seq) => `room=${room};from=${from};seq=${seq}`;

/**
 * @param {string} url the server
 * @param {LoadOptions} o
 * @returns {Promise<LoadResult>}
 */
export async function runLoad(url, o) {
  const started = Date.now();
  /** @type {import('socket.io-client').Socket[]} */
  const sockets = [];
  const result = { clients: 0, sent: 0, received: 0, lost: 0, misrouted: 0, errors_answered: 0, errors_expected: 0,
    peer_left_seen: 0, peer_left_expected: o.vanishing_rooms, seconds: 0, problems: /** @type {string[]} */ ([]) };
  /** Every tag sent to a member that stays, waiting to be received. @type {Set<string>} */
  const pending = new Set();
  try {
    const pairs = await Promise.all(Array.from({ length: o.rooms + o.vanishing_rooms }, async (_, room) => {
      const caller = await open(url);
      const callee = await open(url);
      sockets.push(caller, callee);
      return { room, caller, callee, vanishing: room >= o.rooms };
    }));
    const misbehaving = await Promise.all(Array.from({ length: o.misbehaving_clients }, () => open(url)));
    sockets.push(...misbehaving);
    result.clients = sockets.length;

    for (const pair of pairs) checkArrivals(pair, result, pending);
    await Promise.all(pairs.map((pair) => exchange(pair, o, result, pending)));
    // Misbehaving clients, each in a room of its own: every bad message must be answered with an error, never relayed.
    await Promise.all(misbehaving.map((socket, n) => misbehave(socket, n, o, result)));

    const deadline = Date.now() + o.timeout_ms;
    while (pending.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    result.lost = pending.size;
    for (const p of [...pending].slice(0, 5)) result.problems.push(`never arrived: ${p}`);
  } finally {
    for (const s of sockets) s.disconnect();
    result.seconds = (Date.now() - started) / 1000;
  }
  return result;
}

/**
 * @typedef {{ room: number, caller: import('socket.io-client').Socket, callee: import('socket.io-client').Socket,
 *   vanishing: boolean }} Pair
 */

/**
 * Checks every message a pair's members receive against the receiver's own room and the other side's role.
 * @param {Pair} pair @param {LoadResult} result @param {Set<string>} pending the tags sent and not yet received
 */
function checkArrivals({ room, caller, callee }, result, pending) {
  for (const [socket, me, other] of /** @type {const} */ ([[caller, 'caller', 'callee'], [callee, 'callee', 'caller']])) {
    for (const event of ['offer', 'answer', 'candidate']) {
      socket.on(event, (/** @type {any} */ m) => {
        const text = event === 'candidate' ? m.candidate : m.sdp;
        const match = /^room=(\d+);from=(\w+);seq=(\d+)$/.exec(text ?? '');
        if (!match || Number(match[1]) !== room || match[2] !== other) {
          result.misrouted++;
          result.problems.push(`${me} of room ${room} got ${event} "${text}"`);
          return;
        }
        result.received++;
        pending.delete(`${text}>${me}`);
      });
    }
  }
}

/**
 * One pair's exchange: both join; then a vanishing pair's callee disconnects (the caller must hear that it left),
 * another pair sends an offer and candidates one way and an answer and candidates the other.
 * @param {Pair} pair @param {LoadOptions} o @param {LoadResult} result @param {Set<string>} pending
 */
async function exchange({ room, caller, callee, vanishing }, o, result, pending) {
  caller.emit('join', { room: `load-${room}`, role: 'caller' });
  await next(caller, 'joined', o.timeout_ms);
  const peerJoined = next(caller, 'peer-joined', o.timeout_ms);
  callee.emit('join', { room: `load-${room}`, role: 'callee' });
  await next(callee, 'joined', o.timeout_ms);
  await peerJoined;
  if (vanishing) {
    // The callee vanishes mid-exchange: the caller must hear that it left.
    const left = next(caller, 'peer-left', o.timeout_ms).then(() => { result.peer_left_seen++; });
    callee.disconnect();
    await left;
    return;
  }
  /** @param {import('socket.io-client').Socket} s @param {string} event @param {any} m @param {string} text @param {string} to */
  const send = (s, event, m, text, to) => { pending.add(`${text}>${to}`); result.sent++; s.emit(event, m); };
  const offer = tag(room, 'caller', 0);
  const answerSent = new Promise((resolve) => callee.once('offer', () => {
    const answer = tag(room, 'callee', 0);
    send(callee, 'answer', { type: 'answer', sdp: answer }, answer, 'caller');
    for (let i = 1; i <= o.candidates; i++) {
      const c = tag(room, 'callee', i);
      send(callee, 'candidate', { candidate: c, sdpMid: '0', sdpMLineIndex: 0 }, c, 'caller');
    }
    resolve(undefined);
  }));
  send(caller, 'offer', { type: 'offer', sdp: offer }, offer, 'callee');
  for (let i = 1; i <= o.candidates; i++) {
    const c = tag(room, 'caller', i);
    send(caller, 'candidate', { candidate: c, sdpMid: '0', sdpMLineIndex: 0 }, c, 'callee');
  }
  await answerSent;
}

/**
 * A misbehaving client: an invalid, an oversized and an unknown message, each of which must be answered with an error.
 * @param {import('socket.io-client').Socket} socket @param {number} n its room's number @param {LoadOptions} o
 * @param {LoadResult} result
 */
async function misbehave(socket, n, o, result) {
  const errors = [];
  socket.on('error', (/** @type {any} */ e) => errors.push(e));
  socket.emit('join', { room: `bad-${n}` });
  await next(socket, 'joined', o.timeout_ms);
  const answered = new Promise((resolve) => {
    const check = () => { if (errors.length >= 3) resolve(undefined); };
    socket.on('error', check);
  });
  socket.emit('offer', { type: 'offer' });                                        // no sdp
  socket.emit('candidate', { candidate: 'x'.repeat(MAX_MESSAGE_BYTES + 10) });      // oversized
  socket.emit('hack', { anything: true });                                          // unknown event
  result.errors_expected += 3;
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  await Promise.race([answered, new Promise((r) => { timer = setTimeout(r, o.timeout_ms); })]);
  clearTimeout(timer);
  result.errors_answered += Math.min(errors.length, 3);
}
