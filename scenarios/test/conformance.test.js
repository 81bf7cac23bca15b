// @ts-check
// Every consumer of a scenario reads the same thing from it. The scenario model (Node) normalises each scenario the
// project ships, and each other consumer is handed what it is handed in a run: the userspace bottleneck (Rust) each
// normalised link, printed back with --print-config; the page (client/config.js) the injected config; the analyzer
// (Python) the normalised scenario as the manifest holds it, printed back as its typed view by `python -m
// rtclab.scenario`. They must agree field by field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadScenario, normalizeScenario, plainLink } from '../model.js';
import { reverseHop } from '../chain.js';
import { readConfig } from '../../client/config.js';
import { BOTTLENECK_BIN } from '../../netem/userspace.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = path.join(repoRoot, '.venv', 'bin', 'python');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-conformance-'));

/** Every scenario file in the project: the default, the examples, the benchmarks'. */
function shippedScenarios() {
  const dirs = ['scenarios', 'scenarios/examples', 'bench/bottleneck/scenarios'];
  return dirs.flatMap((d) => fs.readdirSync(path.join(repoRoot, d)).filter((f) => f.endsWith('.yaml')).map((f) => path.join(d, f)));
}

/** Scenarios that exercise what the shipped ones may not: neutral defaults, a schedule, a trace, prio bands, sfq in ms. */
const INLINE = {
  'empty (neutral defaults)': {},
  'a trace pair from an offset': { backend: 'userspace', network: {
    forward: { delay_ms: 20, rate: { trace: 'TMobile-UMTS-driving.down', trace_offset_ms: 12345 }, qdisc: { kind: 'codel' } },
    reverse: { delay_ms: 20, rate: { trace: 'TMobile-UMTS-driving.up' } } } },
  'schedule + sfq limit_ms': { network: { forward: { delay_ms: 10, delay_schedule: [{ at_s: 3, delay_ms: 30 }], jitter_ms: 2, loss_percent: 1,
    rate: { schedule: [{ at_s: 0, kbit: 1500 }, { at_s: 20, kbit: 500 }], burst_bytes: 6000 }, qdisc: { kind: 'sfq', limit_ms: 200 } } } },
  'prio with AQM bands': { network: { forward: { rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands: [
    { dscp: [46, 34], qdisc: { kind: 'codel', target_ms: 2 } }, { dscp: [10], qdisc: { kind: 'pie', ecn: true } },
    { qdisc: { kind: 'fq_codel', quantum_bytes: 300 } }] } } },
    cross_traffic: [{ kind: 'tcp', flows: 2, direction: 'reverse', start_s: 5, stop_s: 9, dscp: 8 }], duration_s: 12 },
  'prio with a rate cap and meters': { network: { forward: { rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands: [
    { dscp: [46], qdisc: { kind: 'fifo' }, rate_cap: { kbit: 2000 } }, { dscp: [34], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fq_codel' } }],
  meters: [{ dscp: [46], limit_kbit: 2000, action: { kind: 'ce_fraction' } },
    { dscp: [46, 34], per: 'class', window_ms: 100, limit_kbit: 2500.5, action: { kind: 'demote' } },
    { dscp: [34], limit_kbit: 1000, action: { kind: 'ce_all', hold_ms: 1500 } }] } } },
    cross_traffic: [{ kind: 'tcp', dscp: 46, ecn: true }, { kind: 'tcp', flows: 2, ecn: true }] },
  'outages and Gilbert-Elliott loss': { network: { forward: { delay_ms: 20, outage: { mean_on_ms: 8000, mean_off_ms: 150.5 },
    loss_gemodel: { p_percent: 0.5, r_percent: 30, bad_loss_percent: 75.5 } }, reverse: { loss_gemodel: { p_percent: 2 } } } },
  'calls with their own delays beside short TCP flows': { network: { forward: { delay_ms: 50, rate: { kbit: 2000 } } },
    calls: [{ id: 'near', delay_ms: 10 }, { id: 'far', delay_ms: 150 }, { id: 'plain' }],
    cross_traffic: [{ kind: 'tcp_short', flows: 10, initially_on: 2, size_bytes: [30000, 50000], idle_mean_s: 10, seed: 7 }] },
  'a chain of bottlenecks': { network: { hops: [
    { delay_ms: 40, jitter_ms: 10, rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 300 } },
    { delay_ms: 20, rate: { schedule: [{ at_s: 0, kbit: 8000 }, { at_s: 5, kbit: 1000 }] }, qdisc: { kind: 'codel' } }] },
    calls: [{ id: 's1' }, { id: 's2', path: [1] }] },
};

/** The scenarios under test, normalised by the model. @returns {[string, any][]} */
function cases() {
  return [
    ...shippedScenarios().map((f) => /** @type {[string, any]} */ ([f, loadScenario(path.join(repoRoot, f))])),
    ...Object.entries(INLINE).map(([name, doc]) => /** @type {[string, any]} */ ([name, normalizeScenario(doc)])),
  ];
}

/** Numbers compared as numbers (1000 and 1000.0 are one value once parsed), keys in any order. @param {any} v */
const canonical = (v) => JSON.parse(JSON.stringify(v));

/** What the bottleneck prints back for a link. @param {any} link */
function bottleneckView(link) {
  const file = path.join(tmp, 'link.json');
  fs.writeFileSync(file, JSON.stringify(link));
  const r = spawnSync(BOTTLENECK_BIN, ['--print-config', '--config', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `rtclab-bottleneck refused ${JSON.stringify(link)}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** @type {any[] | undefined} */
let analyzerViews;
/**
 * The analyzer's typed view of the i-th normalised scenario of cases(). One `python -m rtclab.scenario` is asked about
 * them all (a line of JSON per file): an interpreter and its imports per case cost this file most of its time.
 * @param {number} i
 */
function analyzerView(i) {
  if (!analyzerViews) {
    const files = cases().map(([, scenario], k) => {
      const file = path.join(tmp, `scenario-${k}.json`);
      fs.writeFileSync(file, JSON.stringify(scenario));
      return file;
    });
    analyzerViews = execFileSync(python, ['-m', 'rtclab.scenario', ...files], { encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(analyzerViews.length, files.length, 'a view per scenario');
  }
  return analyzerViews[i];
}

/** What the analyzer should see, derived from the model's output. @param {any} s */
function expectedAnalyzerView(s) {
  /** @param {any} l */
  const link = (l) => ({
    delay_ms: l.delay_ms, delay_schedule: l.delay_schedule.map((/** @type {any} */ x) => [x.at_s, x.delay_ms]),
    jitter_ms: l.jitter_ms, loss_percent: l.loss_percent, qdisc_kind: l.qdisc.kind,
    rate: !l.rate ? null : l.rate.trace ? { trace: l.rate.trace, trace_offset_ms: l.rate.trace_offset_ms }
      : { schedule: l.rate.schedule ? l.rate.schedule.map((/** @type {any} */ st) => [st.at_s, st.kbit]) : [[0, l.rate.kbit]] },
  });
  return {
    duration_s: s.duration_s, forward: link(s.network.forward), reverse: link(s.network.reverse), hops: s.network.hops.map(link),
    cross_traffic: s.cross_traffic.map((/** @type {any} */ c) => ({ kind: c.kind, direction: c.direction, flows: c.flows, start_s: c.start_s,
      stop_s: c.stop_s, congestion_control: c.congestion_control, dscp: c.dscp })),
    first_call_delay_ms: s.calls.length ? s.calls[0].delay_ms : s.call.delay_ms,
    call_paths: s.network.hops.length ? s.calls.map((/** @type {any} */ c) => ({ id: c.id, path: c.path })) : [],
  };
}

test('the consumers are there to ask (built by scripts/setup.sh)', () => {
  assert.ok(fs.existsSync(BOTTLENECK_BIN), `${BOTTLENECK_BIN} missing: run scripts/setup.sh`);
  assert.ok(fs.existsSync(python), `${python} missing: run scripts/setup.sh`);
  assert.ok(shippedScenarios().length >= 8, 'the shipped scenarios are found');
});

for (const [i, [name, scenario]] of cases().entries()) {
  test(`${name}: the bottleneck, the page and the analyzer read what the model wrote`, () => {
    for (const direction of ['forward', 'reverse']) {
      assert.deepEqual(canonical(bottleneckView(scenario.network[direction])), canonical(scenario.network[direction]),
        `${direction} link as the userspace bottleneck reads it`);
    }
    scenario.network.hops.forEach((/** @type {any} */ hop, /** @type {number} */ i) => {
      assert.deepEqual(canonical(bottleneckView(hop)), canonical(hop), `hop ${i} as the userspace bottleneck reads it`);
      const back = reverseHop(hop, plainLink());
      assert.deepEqual(canonical(bottleneckView(back)), canonical(back), `hop ${i}'s way back as the userspace bottleneck reads it`);
    });
    const page = readConfig({ room: 'r1', role: 'caller', call: scenario.call, getstats_interval_ms: scenario.getstats.interval_ms,
      candidate_prefix: '10.0.' }, '');
    for (const used of ['audio', 'codec', 'degradation_preference', 'direction', 'local_preview', 'fps', 'height', 'max_bitrate_kbps', 'red_fec', 'width']) {
      assert.ok(used in page.call, `the page reads call.${used}`);
    }
    for (const [field, value] of Object.entries(page.call)) assert.deepEqual(value, scenario.call[field], `call.${field} as the page reads it`);
    assert.equal(page.getstats_interval_ms, scenario.getstats.interval_ms);
    assert.deepEqual(canonical(analyzerView(i)), canonical(expectedAnalyzerView(scenario)), 'the analyzer\'s view');
  });
}
