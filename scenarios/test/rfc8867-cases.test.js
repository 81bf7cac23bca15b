// @ts-check
// What RFC 8867 5.5 and 5.7 need from a scenario: a delay per call (calls[].delay_ms) and short TCP flows
// (cross_traffic kind tcp_short); what the model accepts and what it refuses, naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeScenario, ScenarioError } from '../model.js';

/** @param {any} doc @returns {string[]} */
const problems = (doc) => {
  try {
    normalizeScenario(doc);
  } catch (err) {
    if (err instanceof ScenarioError) return err.problems;
    throw err;
  }
  return [];
};

const SHORT = { kind: 'tcp_short', flows: 10, initially_on: 2, size_bytes: [30000, 50000], idle_mean_s: 10, seed: 1 };

test('a call takes its own delay; a call that names none has null (the links\' delay)', () => {
  const s = normalizeScenario({ calls: [{ id: 'near', delay_ms: 10 }, { id: 'plain' }] });
  assert.deepEqual(s.calls.map((/** @type {any} */ c) => c.delay_ms), [10, null]);
});

test('a delay per call is refused where it cannot be applied: kernel and uml backends, a link with a delay_schedule', () => {
  for (const backend of ['kernel', 'uml']) {
    const p = problems({ backend, calls: [{ id: 'x' }, { id: 'far', delay_ms: 150 }] });
    assert.equal(p.length, 1);
    assert.match(p[0], new RegExp(`^calls\\[1\\]\\.delay_ms: the ${backend} backend cannot give a call a delay of its own`));
  }
  const p = problems({ network: { reverse: { delay_schedule: [{ at_s: 5, delay_ms: 20 }] } }, calls: [{ delay_ms: 10 }] });
  assert.deepEqual(p, ['calls[0].delay_ms: a call\'s own delay cannot be combined with network.reverse.delay_schedule (the schedule would change every flow\'s delay but the call\'s)']);
  assert.ok(problems({ calls: [{ delay_ms: -1 }] }).some((m) => m.startsWith('calls/0/delay_ms') || m.includes('delay_ms')));
});

test('short TCP flows: the model\'s four fields are needed, consistent, and only with kind tcp_short', () => {
  const s = normalizeScenario({ cross_traffic: [SHORT] });
  assert.deepEqual(s.cross_traffic[0].size_bytes, [30000, 50000]);
  const { seed, ...noSeed } = SHORT;
  assert.deepEqual(problems({ cross_traffic: [noSeed] }), ['cross_traffic[0].seed: kind tcp_short needs it (RFC 8868 5.1\'s short-flow model)']);
  assert.deepEqual(problems({ cross_traffic: [{ ...SHORT, initially_on: 11 }] }), ['cross_traffic[0].initially_on: 11 is more than its flows (10)']);
  assert.deepEqual(problems({ cross_traffic: [{ ...SHORT, size_bytes: [50000, 30000] }] }), ['cross_traffic[0].size_bytes: [50000, 30000] is not [min, max] with min <= max']);
  assert.deepEqual(problems({ cross_traffic: [{ kind: 'tcp', idle_mean_s: 10 }] }), ['cross_traffic[0].idle_mean_s: only with kind tcp_short (this item is kind tcp)']);
  assert.equal(problems({ cross_traffic: [{ ...SHORT, kind: 'udp_short' }] }).length, 1);
});
