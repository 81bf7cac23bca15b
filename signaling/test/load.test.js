// @ts-check
// A short version of bench/signaling/load.mjs: 100 real clients at once, plus misbehaving ones; nothing lost, nothing
// misrouted, every bad message answered with an error, every vanished peer announced, and the server still serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSignalingServer } from '../server.js';
import { runLoad } from '../load.js';

test('100 clients in 50 rooms exchange offers, answers and candidates beside misbehaving and vanishing ones', { timeout: 60_000 }, async () => {
  const server = await startSignalingServer({ host: '127.0.0.1', port: 0 });
  try {
    const r = await runLoad(server.url, { rooms: 45, vanishing_rooms: 5, misbehaving_clients: 10, candidates: 3, timeout_ms: 20_000 });
    assert.deepEqual(r.problems, []);
    assert.equal(r.clients, 110);
    assert.equal(r.sent, 45 * 2 * (1 + 3));
    assert.equal(r.received, r.sent);
    assert.equal(r.lost, 0);
    assert.equal(r.misrouted, 0);
    assert.equal(r.errors_answered, 30);
    assert.equal(r.peer_left_seen, 5);
    const again = await runLoad(server.url, { rooms: 2, vanishing_rooms: 0, misbehaving_clients: 0, candidates: 1, timeout_ms: 5000 });
    assert.equal(again.received, again.sent, 'the server still relays after the load');
  } finally {
    await server.close();
  }
});
