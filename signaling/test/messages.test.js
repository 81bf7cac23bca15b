// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_MESSAGE_BYTES, validateMessage } from '../messages.js';

test('well-formed messages pass', () => {
  assert.equal(validateMessage('join', { room: 'call-1' }).ok, true);
  assert.equal(validateMessage('join', { room: 'call-1', role: 'callee' }).ok, true);
  assert.equal(validateMessage('offer', { type: 'offer', sdp: 'v=0\r\n' }).ok, true);
  assert.equal(validateMessage('answer', { type: 'answer', sdp: 'v=0\r\n' }).ok, true);
  assert.equal(validateMessage('candidate', { candidate: 'candidate:1 1 udp 1 10.0.1.2 5000 typ host', sdpMid: '0', sdpMLineIndex: 0 }).ok, true);
  assert.equal(validateMessage('leave', undefined).ok, true);
  assert.equal(validateMessage('bye', undefined).ok, true);
});

test('errors name the event and the field', () => {
  const noRoom = validateMessage('join', {});
  assert.equal(noRoom.ok, false);
  assert.match(/** @type {any} */ (noRoom).error, /^join: .*room/);
  const badRole = validateMessage('join', { room: 'r', role: 'boss' });
  assert.match(/** @type {any} */ (badRole).error, /\/role/);
  const badRoom = validateMessage('join', { room: 'has space' });
  assert.match(/** @type {any} */ (badRoom).error, /\/room must match pattern/);
  const wrongType = validateMessage('offer', { type: 'answer', sdp: 'v=0' });
  assert.match(/** @type {any} */ (wrongType).error, /^offer: \/type/);
  const extra = validateMessage('candidate', { candidate: 'c', evil: 1 });
  assert.match(/** @type {any} */ (extra).error, /additional properties/);
});

test('unknown events are refused', () => {
  const result = validateMessage('shutdown', {});
  assert.equal(result.ok, false);
  assert.match(/** @type {any} */ (result).error, /unknown event "shutdown"/);
});

test('oversized messages are refused before schema checks', () => {
  const result = validateMessage('offer', { type: 'offer', sdp: 'a'.repeat(MAX_MESSAGE_BYTES + 1) });
  assert.equal(result.ok, false);
  assert.match(/** @type {any} */ (result).error, /bytes, more than the limit/);
});
