// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rooms } from '../rooms.js';

test('first member is the caller, second the callee, and sees the first as its peer', () => {
  const rooms = new Rooms();
  assert.deepEqual(rooms.join('a', 'r1'), { ok: true, role: 'caller', peers: [] });
  assert.deepEqual(rooms.join('b', 'r1'), { ok: true, role: 'callee', peers: ['a'] });
  assert.deepEqual(rooms.peerOf('a'), { room: 'r1', peer: 'b' });
  assert.deepEqual(rooms.peerOf('b'), { room: 'r1', peer: 'a' });
});

test('a third member is refused and the room is unchanged', () => {
  const rooms = new Rooms();
  rooms.join('a', 'r1');
  rooms.join('b', 'r1');
  const third = rooms.join('c', 'r1');
  assert.equal(third.ok, false);
  assert.match(/** @type {any} */ (third).error, /full/);
  assert.equal(rooms.members('r1').length, 2);
  assert.equal(rooms.peerOf('c'), null);
});

test('a requested role is honoured, and refused when taken', () => {
  const rooms = new Rooms();
  assert.deepEqual(rooms.join('b', 'r1', 'callee'), { ok: true, role: 'callee', peers: [] });
  const clash = rooms.join('x', 'r1', 'callee');
  assert.equal(clash.ok, false);
  assert.match(/** @type {any} */ (clash).error, /role "callee" is already taken/);
  assert.deepEqual(rooms.join('a', 'r1'), { ok: true, role: 'caller', peers: ['b'] });
});

test('rooms are isolated: a member has no peer from another room', () => {
  const rooms = new Rooms();
  rooms.join('a', 'r1');
  rooms.join('b', 'r2');
  assert.deepEqual(rooms.peerOf('a'), { room: 'r1', peer: null });
  assert.deepEqual(rooms.peerOf('b'), { room: 'r2', peer: null });
});

test('leaving frees the seat and the role; an empty room disappears', () => {
  const rooms = new Rooms();
  rooms.join('a', 'r1');
  rooms.join('b', 'r1');
  assert.deepEqual(rooms.leave('a'), { room: 'r1', peers: ['b'] });
  assert.deepEqual(rooms.join('c', 'r1'), { ok: true, role: 'caller', peers: ['b'] });
  rooms.leave('b');
  rooms.leave('c');
  assert.equal(rooms.rooms.size, 0);
  assert.equal(rooms.leave('c'), null);
});

test('a member cannot be in two rooms at once', () => {
  const rooms = new Rooms();
  rooms.join('a', 'r1');
  const second = rooms.join('a', 'r2');
  assert.equal(second.ok, false);
  assert.match(/** @type {any} */ (second).error, /already in room "r1"/);
});
