// @ts-check
// The server with real socket.io clients on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { io as connect } from 'socket.io-client';
import { startSignalingServer } from '../server.js';

/** @type {Awaited<ReturnType<typeof startSignalingServer>>} */
let server;
/** @type {Record<string, unknown>[]} */
const logEntries = [];
/** @type {import('socket.io-client').Socket[]} */
const clients = [];

before(async () => {
  server = await startSignalingServer({ host: '127.0.0.1', port: 0, log: (entry) => logEntries.push(entry) });
});
after(async () => {
  for (const c of clients) c.disconnect();
  await server.close();
});

/** @returns {Promise<import('socket.io-client').Socket>} */
async function client() {
  const socket = connect(server.url, { transports: ['websocket'], forceNew: true, reconnection: false });
  clients.push(socket);
  await new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(undefined));
    socket.once('connect_error', reject);
  });
  return socket;
}

/** @param {import('socket.io-client').Socket} socket @param {string} event @param {number} [timeout_ms] */
function next(socket, event, timeout_ms = 2000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${event}" within ${timeout_ms} ms`)), timeout_ms);
    socket.once(event, (payload) => {
      clearTimeout(timer);
      resolve(payload);
    });
  });
}

/** Resolves true if `event` arrives within `wait_ms`, false if it does not. */
function arrives(/** @type {import('socket.io-client').Socket} */ socket, /** @type {string} */ event, wait_ms = 300) {
  return next(socket, event, wait_ms).then(() => true, () => false);
}

/** @param {string} room */
async function pair(room) {
  const a = await client();
  const b = await client();
  a.emit('join', { room });
  const joinedA = await next(a, 'joined');
  const peerJoined = next(a, 'peer-joined');
  b.emit('join', { room });
  const joinedB = await next(b, 'joined');
  return { a, b, joinedA, joinedB, peerJoined: await peerJoined };
}

test('serves the test page and the socket.io client', async () => {
  const page = await fetch(server.url);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<html/i);
  const lib = await fetch(new URL('/socket.io/socket.io.esm.min.js', server.url));
  assert.equal(lib.status, 200);
});

test('frame samples: POST /frame-samples/<key> hands the bytes and the header to the sink; bad ones are refused', async () => {
  /** @type {any[]} */
  const got = [];
  const withSink = await startSignalingServer({ host: '127.0.0.1', port: 0, frameSamples: (key, meta, body) => got.push({ key, meta, body }) });
  try {
    const post = (/** @type {string} */ key, /** @type {Record<string, string>} */ headers, /** @type {Uint8Array<ArrayBuffer>} */ body) =>
      fetch(new URL(`/frame-samples/${key}`, withSink.url), { method: 'POST', headers: { 'content-type': 'application/octet-stream', ...headers }, body });
    const picture = new Uint8Array([1, 2, 3, 4, 5, 6]);
    const ok = await post('b', { 'x-rtclab-sample': JSON.stringify({ presented_frames: 10, width: 2, height: 2 }) }, picture);
    assert.equal(ok.status, 204);
    assert.equal(got.length, 1);
    assert.equal(got[0].key, 'b');
    assert.deepEqual(got[0].meta, { presented_frames: 10, width: 2, height: 2 });
    assert.deepEqual([...got[0].body], [...picture]);
    const noMeta = await post('b', {}, picture);
    assert.equal(noMeta.status, 400);
    assert.match(await noMeta.text(), /x-rtclab-sample must be a JSON object/);
    const empty = await post('b', { 'x-rtclab-sample': '{}' }, new Uint8Array(0));
    assert.equal(empty.status, 400);
    assert.equal((await post('b.c', { 'x-rtclab-sample': '{}' }, picture)).status, 400);
    assert.equal(got.length, 1, 'nothing refused reached the sink');
  } finally {
    await withSink.close();
  }
  // A server without a sink has no such route.
  const none = await fetch(new URL('/frame-samples/b', server.url), { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array([1]) });
  assert.equal(none.status, 404);
});

test('two members join: caller then callee, the first is told of the second', async () => {
  const { a, b, joinedA, joinedB, peerJoined } = await pair('roles');
  assert.deepEqual(joinedA, { room: 'roles', role: 'caller', peers: [] });
  assert.deepEqual(joinedB, { room: 'roles', role: 'callee', peers: [a.id] });
  assert.deepEqual(peerJoined, { room: 'roles', id: b.id, role: 'callee' });
  assert.ok(logEntries.some((e) => e.event === 'join' && e.room === 'roles' && e.role === 'callee'));
});

test('a third member gets an error naming the full room', async () => {
  await pair('full');
  const c = await client();
  c.emit('join', { room: 'full' });
  const error = /** @type {any} */ (await next(c, 'error'));
  assert.equal(error.event, 'join');
  assert.match(error.message, /room "full" is full/);
});

test('offer, answer, candidate and bye reach only the other member of the room', async () => {
  const { a, b } = await pair('relay');
  const other = await pair('bystanders');
  const offer = { type: 'offer', sdp: 'v=0\r\n' };
  const gotOffer = next(b, 'offer');
  const bystanderHeard = Promise.all([arrives(other.a, 'offer'), arrives(other.b, 'offer')]);
  const echoed = arrives(a, 'offer');
  a.emit('offer', offer);
  assert.deepEqual(await gotOffer, offer);
  assert.deepEqual(await bystanderHeard, [false, false]);
  assert.equal(await echoed, false);

  const answer = { type: 'answer', sdp: 'v=0\r\n' };
  const gotAnswer = next(a, 'answer');
  b.emit('answer', answer);
  assert.deepEqual(await gotAnswer, answer);

  const candidate = { candidate: 'candidate:1 1 udp 2122260223 10.0.1.2 50000 typ host', sdpMid: '0', sdpMLineIndex: 0 };
  const gotCandidate = next(b, 'candidate');
  a.emit('candidate', candidate);
  assert.deepEqual(await gotCandidate, candidate);

  const gotBye = next(a, 'bye');
  b.emit('bye');
  assert.deepEqual(await gotBye, {});
});

test('invalid messages are refused with an error and not relayed', async () => {
  const { a, b } = await pair('invalid');
  const relayed = arrives(b, 'offer');
  a.emit('offer', { type: 'offer' });
  const error = /** @type {any} */ (await next(a, 'error'));
  assert.equal(error.event, 'offer');
  assert.match(error.message, /must have required property 'sdp'/);
  assert.equal(await relayed, false);

  a.emit('offer', { type: 'offer', sdp: 'x'.repeat(70 * 1024) });
  assert.match(/** @type {any} */ (await next(a, 'error')).message, /more than the limit/);

  a.emit('hello', {});
  assert.match(/** @type {any} */ (await next(a, 'error')).message, /unknown event "hello"/);
  assert.ok(logEntries.some((e) => e.event === 'rejected' && e.message_event === 'hello'));
});

test('relaying before joining or while alone is an error', async () => {
  const lone = await client();
  lone.emit('offer', { type: 'offer', sdp: 'v=0' });
  assert.match(/** @type {any} */ (await next(lone, 'error')).message, /not in a room/);
  lone.emit('join', { room: 'alone' });
  await next(lone, 'joined');
  lone.emit('candidate', { candidate: '' });
  assert.match(/** @type {any} */ (await next(lone, 'error')).message, /no other member in room "alone"/);
});

test('leave and disconnect tell the peer and free the seat', async () => {
  const { a, b } = await pair('leaving');
  const peerLeft = next(b, 'peer-left');
  a.emit('leave');
  await next(a, 'left');
  assert.deepEqual(await peerLeft, { room: 'leaving', id: a.id });

  const c = await client();
  c.emit('join', { room: 'leaving' });
  assert.equal(/** @type {any} */ (await next(c, 'joined')).role, 'caller');

  const gone = next(b, 'peer-left');
  const cId = c.id;
  c.disconnect();
  assert.deepEqual(await gone, { room: 'leaving', id: cId });
});

test('a role can be requested, e.g. the callee joining first', async () => {
  const b = await client();
  b.emit('join', { room: 'requested', role: 'callee' });
  assert.equal(/** @type {any} */ (await next(b, 'joined')).role, 'callee');
  const a = await client();
  a.emit('join', { room: 'requested', role: 'callee' });
  assert.match(/** @type {any} */ (await next(a, 'error')).message, /role "callee" is already taken/);
  a.emit('join', { room: 'requested', role: 'caller' });
  assert.equal(/** @type {any} */ (await next(a, 'joined')).role, 'caller');
});
