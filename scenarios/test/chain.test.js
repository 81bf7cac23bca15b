// @ts-check
// A chain of bottlenecks (network.hops, scenarios/chain.js) through the whole model: each hop is a normalised link,
// each call's path is explicit, and what a chain cannot be combined with is refused with the field named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadScenario, normalizeScenario, plainLink, ScenarioError } from '../model.js';
import { reverseHop } from '../chain.js';

/** RFC 8867 6.3's chain: A-B 2 Mbit/s, B-C 8, C-D 1.5; S1 over every hop, S2 over the first, S3 over the last. */
const rfc = () => ({
  network: { hops: [
    { delay_ms: 40, rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 300 } },
    { delay_ms: 20, rate: { kbit: 8000 } },
    { delay_ms: 40, rate: { kbit: 1500 } },
  ] },
  calls: [{ id: 's1' }, { id: 's2', path: [0] }, { id: 's3', path: [2] }],
});

/** @param {any} doc */
const problems = (doc) => {
  try {
    normalizeScenario(doc);
  } catch (e) {
    assert.ok(e instanceof ScenarioError, String(e));
    return e.problems;
  }
  assert.fail('no error');
};

test('each hop is a normalised link (limit_ms in bytes at its rate); a path left out is every hop; normalising twice changes nothing', () => {
  const s = normalizeScenario(rfc());
  assert.deepEqual(s.network.hops[0], { delay_ms: 40, delay_schedule: [], jitter_ms: 0, loss_percent: 0, outage: null, loss_gemodel: null,
    rate: { kbit: 2000, burst_bytes: 3028 }, qdisc: { kind: 'fifo', limit_bytes: 75000 } });
  assert.deepEqual(s.network.hops[1].qdisc, { kind: 'fifo', limit_packets: 1000 });
  assert.deepEqual(s.calls.map((/** @type {any} */ c) => c.path), [[0, 1, 2], [0], [2]]);
  assert.deepEqual(normalizeScenario(s), s);
});

test('without hops nothing changes: hops empty, every path null', () => {
  const s = normalizeScenario({});
  assert.deepEqual(s.network.hops, []);
  assert.equal(s.calls[0].path, null);
});

test('a hop\'s way back is the plain link with the hop\'s delay', () => {
  const hop = normalizeScenario(rfc()).network.hops[0];
  assert.deepEqual(reverseHop(hop, plainLink()), { ...plainLink(), delay_ms: 40 });
});

test('paths that are not consecutive ascending hops of the chain are refused naming the call', () => {
  assert.deepEqual(problems({ ...rfc(), calls: [{ path: [0, 2] }] }),
    ['calls[0].path: [0,2] is not consecutive hops in ascending order (a call enters the chain at one hop and leaves after a later one, e.g. [1, 2])']);
  assert.match(problems({ ...rfc(), calls: [{}, { path: [1, 0] }] })[0], /^calls\[1\]\.path: \[1,0\] is not consecutive/);
  assert.deepEqual(problems({ ...rfc(), calls: [{ path: [1, 3] }] }), ['calls[0].path: hop 3 is not in network.hops (hops 0 to 2)']);
  assert.match(problems({ ...rfc(), calls: [{ path: [] }] })[0], /calls\/0\/path|calls\[0\]\.path/);
  assert.deepEqual(problems({ calls: [{ path: [0] }] }), ['calls[0].path: names hops ([0]), but network.hops is empty']);
});

test('a chain refuses a forward or reverse link beside it, cross traffic, and the kernel and uml backends', () => {
  assert.deepEqual(problems({ ...rfc(), network: { ...rfc().network, reverse: { delay_ms: 5 } } }),
    ['network.reverse: set beside network.hops; with a chain of bottlenecks the hops are the path (leave network.reverse out)']);
  assert.deepEqual(problems({ ...rfc(), cross_traffic: [{ kind: 'tcp', flows: 1 }] }),
    ['cross_traffic: not available with network.hops (its flows would cross no hop: a chain carries only the calls along their paths)']);
  for (const backend of ['kernel', 'uml']) {
    assert.deepEqual(problems({ ...rfc(), backend }),
      [`network.hops: the ${backend} backend has one bottleneck per direction; a chain of bottlenecks needs backend userspace (or auto)`]);
  }
  assert.equal(normalizeScenario({ ...rfc(), backend: 'userspace' }).backend, 'userspace');
});

test('a call\'s own delay (calls[].delay_ms) beside a chain is refused naming the first delayed call; without one the chain is accepted', () => {
  const withDelay = { ...rfc(), calls: [{ id: 's1' }, { id: 's2', path: [0], delay_ms: 25 }, { id: 's3', path: [2], delay_ms: 10 }] };
  assert.deepEqual(problems(withDelay),
    ['calls[1].delay_ms: a call\'s own delay is not supported with network.hops (each hop has its delay_ms; a call\'s path delay is the sum of its hops\')']);
  assert.deepEqual(problems({ ...rfc(), call: { delay_ms: 40 } }).map((p) => p.split(':')[0]), ['calls[0].delay_ms']);
  assert.deepEqual(normalizeScenario(rfc()).calls.map((/** @type {any} */ c) => c.delay_ms), [null, null, null]);
});

test('a hop\'s own link errors name the hop', () => {
  assert.match(problems({ network: { hops: [{ rate: { kbit: 1000 } }, { qdisc: { kind: 'codel' } }] } })[0],
    /^network\.hops\[1\]\.qdisc: codel needs a rate/);
  assert.ok(problems({ network: { hops: Array.from({ length: 7 }, () => ({})) } }).some((p) => /hops/.test(p)));
});

test('scenarios/examples/chain.yaml: two hops, one call over both, one over the second', () => {
  const s = loadScenario(fileURLToPath(new URL('../examples/chain.yaml', import.meta.url)));
  assert.deepEqual(s.network.hops.map((/** @type {any} */ h) => [h.delay_ms, h.rate.kbit, h.qdisc.limit_bytes]), [[15, 1500, 37500], [10, 1000, 25000]]);
  assert.deepEqual(s.calls.map((/** @type {any} */ c) => [c.id, c.path]), [['long', [0, 1]], ['short', [1]]]);
});
