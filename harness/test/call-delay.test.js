// @ts-check
// A call's own delay (harness/call-delay.js): its flow from the selected pairs, the whole table handed over each time
// a call's flow becomes known, each call ready only once its delay is in force.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callFlowDelay, applyCallDelays, delayReady, delayNotReady } from '../call-delay.js';

const pairs = (/** @type {number} */ port) => ({
  a: { local: { address: '10.0.1.2', port }, remote: { address: '10.0.2.2', port: port + 1 } },
  b: { local: { address: '10.0.2.2', port: port + 1 }, remote: { address: '', port: 0 } },
});

test('the flow is the caller\'s pair; none until it is known, none for a call without a delay of its own', () => {
  assert.deepEqual(callFlowDelay({ call: { delay_ms: 25 }, pairs: pairs(40000) }), { a: '10.0.1.2:40000', b: '10.0.2.2:40001', delay_ms: 25 });
  assert.equal(callFlowDelay({ call: { delay_ms: 25 }, pairs: { a: null, b: null } }), null);
  assert.equal(callFlowDelay({ call: { delay_ms: null }, pairs: pairs(40000) }), null);
  // A peer-reflexive remote (address hidden by Chrome): the callee's own local candidate.
  const hidden = pairs(40000);
  hidden.a.remote = { address: '', port: 0 };
  assert.deepEqual(callFlowDelay({ call: { delay_ms: 25 }, pairs: hidden }), { a: '10.0.1.2:40000', b: '10.0.2.2:40001', delay_ms: 25 });
});

test('each new flow hands the bottleneck the whole table; a call is ready once its delay is in force', async () => {
  /** @type {any[][]} */ const tables = [];
  /** @type {any[]} */ const events = [];
  const net = /** @type {any} */ ({ setFlowDelays: async (/** @type {any[]} */ t) => { tables.push(t); return 1_700_000_000_000; } });
  const run = { net, event: (/** @type {string} */ name, /** @type {any} */ f) => events.push({ name, ...f }), failWith: (/** @type {string} */ m) => assert.fail(m) };
  const calls = [{ call: { id: 's1', delay_ms: 10 }, pairs: pairs(40000), delay: null },
    { call: { id: 's2', delay_ms: 150 }, pairs: { a: null, b: null }, delay: null },
    { call: { id: 's3', delay_ms: null }, pairs: pairs(40004), delay: null }];
  applyCallDelays(calls, run);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(calls.map(delayReady), [true, false, true]);
  assert.deepEqual(calls.map(delayNotReady), ['', '; its own delay of 150 ms not in force', '']);
  calls[1].pairs = pairs(40002);
  applyCallDelays(calls, run);
  applyCallDelays(calls, run); // nothing new: nothing handed over
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(tables.map((t) => t.map((/** @type {any} */ f) => f.delay_ms)), [[10], [10, 150]]);
  assert.deepEqual(events.map((e) => [e.name, e.call, e.in_force_t]), [['call_delay', 's1', 1_700_000_000], ['call_delay', 's2', 1_700_000_000]]);
  assert.deepEqual(calls.map(delayReady), [true, true, true]);
});
