// @ts-check
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadScenario, normalizeScenario, QDISC_KINDS, ScenarioError, validateScenario } from '../model.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-scenario-test-'));
const write = (/** @type {string} */ name, /** @type {string} */ text) => {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
};
/** @param {() => any} fn @returns {string[]} */
const problemsOf = (fn) => {
  try { fn(); } catch (err) { assert.ok(err instanceof ScenarioError, String(err)); return err.problems; }
  assert.fail('expected a ScenarioError');
};

test('the default scenario is the Carlucci et al. base case with every default filled in', () => {
  const s = loadScenario();
  assert.equal(s.duration_s, 60);
  assert.equal(s.network.forward.rate.kbit, 1000);
  // DT/300: 300 ms worth of bytes at 1 Mbit/s.
  assert.deepEqual(s.network.forward.qdisc, { kind: 'fifo', limit_bytes: 37500 });
  assert.equal(s.network.reverse.rate, null);
  assert.equal(s.network.forward.delay_ms, 25);
  assert.equal(s.network.reverse.delay_ms, 25);
  assert.equal(s.call.codec, 'VP8');
  assert.equal(s.call.red_fec, false);
  assert.equal(s.getstats.interval_ms, 1000);
  assert.equal(s.capture.snaplen, 256);
  assert.deepEqual(s.cross_traffic, []);
});

test('command-line overrides replace the file\'s values and are validated too', () => {
  assert.equal(loadScenario(undefined, { duration_s: 30 }).duration_s, 30);
  assert.deepEqual(problemsOf(() => loadScenario(undefined, { backend: 'magic' })),
    ['backend: "magic" is not one of auto, kernel, userspace, uml']);
});

test('an unknown discipline is named with the allowed values', () => {
  const file = write('codle.yaml', 'network:\n  forward:\n    qdisc: {kind: codle}\n');
  assert.deepEqual(problemsOf(() => loadScenario(file)),
    [`network.forward.qdisc.kind: "codle" is not one of ${QDISC_KINDS.join(', ')}`]);
});

test('a misspelt parameter names the field and the parameters the discipline has', () => {
  const file = write('targt.yaml', 'network:\n  forward:\n    qdisc: {kind: codel, targt_ms: 5}\n');
  assert.deepEqual(problemsOf(() => loadScenario(file)),
    ['network.forward.qdisc: unknown field "targt_ms" (allowed: kind, target_ms, interval_ms, limit_packets, ecn)']);
});

test('a rate with two kinds of capacity is refused', () => {
  const file = write('rate.yaml', 'network:\n  forward:\n    rate: {kbit: 1000, trace: x.trace}\n');
  assert.deepEqual(problemsOf(() => loadScenario(file)), ['network.forward.rate: give exactly one of kbit, schedule, trace (trace_offset_ms only with trace)']);
});

test('fifo limits exclude each other', () => {
  const file = write('fifo.yaml', 'network:\n  forward:\n    qdisc: {kind: fifo, limit_ms: 300, limit_packets: 10}\n');
  assert.deepEqual(problemsOf(() => loadScenario(file)), ['network.forward.qdisc: these fields exclude each other: limit_ms, limit_packets']);
});

test('wrong types, unknown top-level fields and cross-traffic items are each reported', () => {
  const file = write('many.yaml', 'duration_s: soon\ncal: {}\ncross_traffic:\n  - {kind: tcp, congestion_control: vegas}\n');
  assert.deepEqual(problemsOf(() => loadScenario(file)).sort(), [
    'cross_traffic[0].congestion_control: "vegas" is not one of cubic, reno, bbr',
    'duration_s: must be number (got "soon")',
    'the scenario: unknown field "cal" (allowed: name, description, duration_s, backend, network, call, calls, cross_traffic, getstats, capture, cpu_load)',
  ]);
});

test('a file that is not YAML, not a mapping, or missing gets a clear error', () => {
  assert.match(problemsOf(() => loadScenario(write('bad.yaml', 'a: [1, 2\n')))[0], /^not valid YAML/);
  assert.deepEqual(problemsOf(() => validateScenario(['x'], 'list.yaml')), ['the file must hold a YAML mapping (key: value lines)']);
  assert.match(problemsOf(() => loadScenario(path.join(tmp, 'nope.yaml')))[0], /^cannot read the file: ENOENT/);
});

test('a relative video clip is found next to the scenario file', () => {
  const file = write('clip.yaml', 'call: {video_clip: my.y4m}\n');
  assert.equal(loadScenario(file).call.video_clip, path.join(tmp, 'my.y4m'));
});

test('a clip named by its short name is the file setup makes in media/, and stays so when normalised again', () => {
  const media = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'media');
  for (const [name, file] of [['natural', 'natural.y4m'], ['default', 'default.y4m']]) {
    const s = loadScenario(write(`${name}-clip.yaml`, `call: {video_clip: ${name}}\n`));
    assert.equal(s.call.video_clip, path.resolve(media, file));
    assert.equal(normalizeScenario(s).call.video_clip, path.resolve(media, file));
  }
  // Not a name: a path next to the scenario, as before.
  assert.equal(loadScenario(write('near-name.yaml', 'call: {video_clip: naturals}\n')).call.video_clip, path.join(tmp, 'naturals'));
});

test('scenarios/examples/tcp-competition.yaml: the video call beside 3 CUBIC flows of Carlucci et al. 2016 (c)', () => {
  const s = loadScenario(path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'examples', 'tcp-competition.yaml'));
  assert.equal(s.duration_s, 400);
  assert.equal(s.network.forward.rate.kbit, 10000);
  assert.deepEqual(s.network.forward.qdisc, { kind: 'fifo', limit_bytes: 375000 });
  assert.deepEqual(s.cross_traffic, [{ kind: 'tcp', flows: 3, congestion_control: 'cubic', direction: 'forward', start_s: 100, stop_s: 300, dscp: 0, ecn: false,
    initially_on: null, size_bytes: null, idle_mean_s: null, seed: null }]);
});
