// @ts-check
// Several calls and tracks in the scenario model: `call` alone is one call; `calls` items take what they leave out
// from `call`; ids are derived and unique; each track is complete; start and stop are checked against the run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadScenario, normalizeScenario, ScenarioError } from '../model.js';

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

test('a scenario with `call` only has that one call, c1, with one video track v1 of the call\'s values', () => {
  const s = normalizeScenario({ call: { width: 640, dscp: 46, priority: 'medium', max_bitrate_kbps: 900 } });
  assert.equal(s.calls.length, 1);
  const [c] = s.calls;
  assert.deepEqual([c.id, c.width, c.dscp, c.start_s, c.stop_s], ['c1', 640, 46, 0, null]);
  assert.deepEqual(c.tracks, [{ id: 'v1', priority: 'medium', network_priority: 'low', max_bitrate_kbps: 900, dscp: 46 }]);
  assert.equal(s.call.width, 640, '`call` stays as it was given, complete');
});

test('`calls` items take the fields they leave out from `call`, then from the schema', () => {
  const s = normalizeScenario({ duration_s: 30, call: { codec: 'VP9', fps: 15 },
    calls: [{ id: 'one' }, { id: 'two', fps: 30, start_s: 10, stop_s: 20, dscp: 34 }] });
  assert.deepEqual(s.calls.map((/** @type {any} */ c) => [c.id, c.codec, c.fps, c.start_s, c.stop_s, c.dscp, c.width]),
    [['one', 'VP9', 15, 0, null, 0, 1280], ['two', 'VP9', 30, 10, 20, 34, 1280]]);
});

test('tracks: ids v1.. where null, null fields from the call, own values kept', () => {
  const s = normalizeScenario({ call: { priority: 'low', dscp: 46, tracks: [{ priority: 'high', dscp: 10 }, {}, { id: 'x', max_bitrate_kbps: 300 }] } });
  assert.deepEqual(s.calls[0].tracks, [
    { id: 'v1', priority: 'high', network_priority: 'low', max_bitrate_kbps: null, dscp: 10 },
    { id: 'v2', priority: 'low', network_priority: 'low', max_bitrate_kbps: null, dscp: 46 },
    { id: 'x', priority: 'low', network_priority: 'low', max_bitrate_kbps: 300, dscp: 46 },
  ]);
});

test('normalising a multi-call scenario twice changes nothing', () => {
  const once = normalizeScenario({ duration_s: 20, calls: [{ tracks: [{ priority: 'high' }, {}] }, { start_s: 5 }] });
  assert.deepEqual(normalizeScenario(once), once);
});

test('bad calls are refused naming the field', () => {
  assert.deepEqual(problems({ duration_s: 10, calls: [{ id: 'x' }, { id: 'x', start_s: 12 }, { stop_s: 0.5, start_s: 1 }] }), [
    'calls[1].id: "x" names two calls (each call needs its own id)',
    'calls[1].start_s: 12 is not before the end of the run (duration_s 10)',
    'calls[2].stop_s: 0.5 must be after start_s (1)',
  ]);
  assert.deepEqual(problems({ call: { tracks: [{ id: 'a' }, { id: 'a' }] } }),
    ['call.tracks[1].id: "a" names two tracks of the call', 'calls[0].tracks[1].id: "a" names two tracks of the call']);
  assert.match(problems({ calls: [] })[0], /^calls: /);
  assert.match(problems({ calls: [{ priority: 'urgent' }] })[0], /^calls\[0\]\.priority: "urgent" is not one of very-low, low, medium, high/);
  assert.match(problems({ call: { dscp: 64 } })[0], /^call\.dscp: /);
  assert.match(problems({ call: { tracks: [{ colour: 1 }] } })[0], /^call\.tracks\[0\]: unknown field "colour"/);
});

test('the multi-flow examples and the thesis scenarios are what their names say', () => {
  const load = (/** @type {string} */ f) => loadScenario(fileURLToPath(new URL(`../${f}`, import.meta.url)));
  const calls = load('examples/two-calls.yaml').calls;
  assert.deepEqual(calls.map((/** @type {any} */ c) => [c.id, c.start_s, c.width, c.height]), [['first', 0, 640, 360], ['second', 4, 640, 360]]);
  const tracks = load('examples/two-tracks.yaml').calls[0].tracks;
  assert.deepEqual(tracks.map((/** @type {any} */ t) => [t.id, t.priority]), [['low', 'low'], ['high', 'high']]);
  const q1 = load('repro/thesis-q1.yaml');
  const q2 = load('repro/thesis-q2.yaml');
  assert.equal(q1.calls[0].dscp, 46);
  assert.equal(q2.calls[0].dscp, 0);
  assert.deepEqual(q1.network, q2.network, 'q-1 and q-2 differ only in the marking');
  assert.deepEqual(q1.network.forward.qdisc.bands[0].dscp, [46]);
  assert.deepEqual(q1.cross_traffic.map((/** @type {any} */ c) => [c.flows, c.congestion_control, c.dscp]), [[5, 'cubic', 0]]);
  assert.equal(load('examples/prio.yaml').calls[0].dscp, 46);
});

test('pauses: kept in order on each call, taken from `call` by the calls that leave them out; none by default', () => {
  const s = normalizeScenario({ duration_s: 120, call: { pauses: [{ at_s: 40, resume_s: 60 }] },
    calls: [{ id: 's1', pauses: [] }, { id: 's2' }, { id: 's3', start_s: 10, pauses: [{ at_s: 20, resume_s: 30 }, { at_s: 50, resume_s: 70 }] }] });
  assert.deepEqual(s.calls.map((/** @type {any} */ c) => c.pauses),
    [[], [{ at_s: 40, resume_s: 60 }], [{ at_s: 20, resume_s: 30 }, { at_s: 50, resume_s: 70 }]]);
  assert.deepEqual(normalizeScenario({}).calls[0].pauses, []);
});

test('pauses outside the call, resumed before they pause, or overlapping are refused naming the pause', () => {
  assert.deepEqual(problems({ duration_s: 60, calls: [
    { start_s: 10, pauses: [{ at_s: 10, resume_s: 20 }] },
    { pauses: [{ at_s: 30, resume_s: 30 }] },
    { stop_s: 50, pauses: [{ at_s: 40, resume_s: 50 }] },
    { pauses: [{ at_s: 40, resume_s: 60 }] },
    { pauses: [{ at_s: 10, resume_s: 20 }, { at_s: 15, resume_s: 25 }] },
  ] }), [
    "calls[0].pauses[0].at_s: 10 must be after the call's start_s (10)",
    'calls[1].pauses[0].resume_s: 30 must be after at_s (30)',
    'calls[2].pauses[0].resume_s: 50 must be before stop_s (50)',
    'calls[3].pauses[0].resume_s: 60 must be before the end of the run (duration_s 60)',
    "calls[4].pauses[1].at_s: 15 must be after the previous pause's resume_s (20): pauses in order, not overlapping",
  ]);
  assert.match(problems({ call: { pauses: [{ at_s: 5 }] } })[0], /^call\.pauses\[0\]/);
  assert.match(problems({ call: { pauses: [{ at_s: 5, resume_s: 8, kind: 'video' }] } })[0], /^call\.pauses\[0\]/);
});
