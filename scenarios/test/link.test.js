// @ts-check
// Links through the whole model (schema defaults, then link.js): the defaults are the schema's, limits in ms are
// converted, and what a schema cannot express is refused with the field named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { normalizeScenario, QDISC_KINDS, ScenarioError } from '../model.js';
import { qdiscKinds, TRACES_DIR } from '../link.js';

/** @param {any} forward */
const forward = (forward) => normalizeScenario({ network: { forward } }).network.forward;

test('defaults are neutral: a link left out has no delay, no rate limit and a 1000-packet FIFO', () => {
  const n = normalizeScenario({}).network;
  const plain = { delay_ms: 0, delay_schedule: [], jitter_ms: 0, loss_percent: 0, outage: null, loss_gemodel: null, rate: null,
    qdisc: { kind: 'fifo', limit_packets: 1000 } };
  assert.deepEqual(n.forward, plain);
  assert.deepEqual(n.reverse, plain);
});

test('every discipline gets Linux\'s defaults, from the schema', () => {
  const q = (/** @type {any} */ qdisc) => forward({ rate: { kbit: 1000 }, qdisc }).qdisc;
  assert.deepEqual(q({ kind: 'codel' }), { kind: 'codel', target_ms: 5, interval_ms: 100, limit_packets: 1000, ecn: false });
  assert.deepEqual(q({ kind: 'pie' }), { kind: 'pie', target_ms: 15, tupdate_ms: 15, alpha: 2, beta: 20, limit_packets: 1000, ecn: false, timer_hz: 250 });
  assert.deepEqual(q({ kind: 'sfq' }), { kind: 'sfq', limit_packets: 127, quantum_bytes: 1514, perturb_s: 0, divisor: 1024 });
  assert.deepEqual(q({ kind: 'fq_codel' }), { kind: 'fq_codel', target_ms: 5, interval_ms: 100, limit_packets: 10240, quantum_bytes: 1514, flows: 1024, ecn: true });
  assert.deepEqual(q({ kind: 'dualpi2' }), { kind: 'dualpi2', limit_packets: 10000, target_ms: 15, tupdate_ms: 16, alpha: 0.16,
    beta: 3.2, coupling_factor: 2, step_thresh_ms: 1, min_qlen_step: 0, drop_on_overload: true, tshift_ms: 50 });
  // Its limit is in packets, as Linux's: a limit in ms (which link.js would convert as sfq's) is refused.
  assert.throws(() => q({ kind: 'dualpi2', limit_ms: 300 }), /network\.forward\.qdisc: unknown field "limit_ms"/);
  assert.deepEqual(q({ kind: 'fifo' }), { kind: 'fifo', limit_packets: 1000 });
  assert.deepEqual(q(undefined), { kind: 'fifo', limit_packets: 1000 });
  assert.equal(forward({ rate: { kbit: 1000 } }).rate?.burst_bytes, 3028);
});

test('fifo limit_ms becomes bytes at the first rate; sfq limit_ms becomes 1514-byte packets', () => {
  assert.deepEqual(forward({ rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 300 } }).qdisc, { kind: 'fifo', limit_bytes: 75000 });
  const sched = { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 10, kbit: 3000 }] };
  assert.equal(forward({ rate: sched, qdisc: { kind: 'fifo', limit_ms: 300 } }).qdisc.limit_bytes, 37500);
  assert.deepEqual(forward({ rate: { kbit: 1000 }, qdisc: { kind: 'sfq', limit_ms: 300 } }).qdisc,
    { kind: 'sfq', limit_packets: 25, quantum_bytes: 1514, perturb_s: 0, divisor: 1024 });
  assert.deepEqual(forward({ rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_bytes: 5000 } }).qdisc, { kind: 'fifo', limit_bytes: 5000 });
});

test('normalising twice changes nothing, and the normalised scenario is still valid against the schema', () => {
  const once = normalizeScenario({ network: { forward: { rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands: [
    { dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'sfq', limit_ms: 100 } }] } } } });
  assert.deepEqual(normalizeScenario(once), once);
});

test('what the schema cannot express is refused with the field named', () => {
  /** @param {any} link @param {RegExp} re */
  const bad = (link, re) => assert.throws(() => forward(link), (e) => e instanceof ScenarioError && e.problems.some((p) => re.test(p)));
  bad({ qdisc: { kind: 'fifo', limit_ms: 300 } }, /^network\.forward\.qdisc\.limit_ms: needs a constant or scheduled rate/);
  bad({ rate: { schedule: [{ at_s: 1, kbit: 1000 }] } }, /^network\.forward\.rate\.schedule\[0\]\.at_s: the schedule must start at 0/);
  bad({ rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 5, kbit: 10 }, { at_s: 5, kbit: 20 }] } }, /rate\.schedule\[2\]\.at_s: must be later/);
  bad({ rate: { trace: 'no-such-trace.txt' } }, /rate\.trace: file .*no-such-trace\.txt does not exist/);
  bad({ qdisc: { kind: 'codel' } }, /^network\.forward\.qdisc: codel needs a rate: without a rate limit nothing ever queues$/);
});

test('the schema refuses bad fields, naming them', () => {
  /** @param {any} link @param {RegExp} re */
  const bad = (link, re) => assert.throws(() => forward(link), (e) => e instanceof ScenarioError && e.problems.some((p) => re.test(p)));
  const kinds = QDISC_KINDS.join(', ');
  bad({ qdisc: { kind: 'codle' } }, new RegExp(`^network\\.forward\\.qdisc\\.kind: "codle" is not one of ${kinds}$`));
  bad({ qdisc: { kind: 'codel', targt_ms: 5 } }, /unknown field "targt_ms" \(allowed: kind, target_ms, interval_ms, limit_packets, ecn\)/);
  bad({ rate: { kbit: 1000 }, qdisc: { kind: 'codel', target_ms: -1 } }, /qdisc\.target_ms: must be > 0/);
  bad({ rate: { kbit: 1000, schedule: [{ at_s: 0, kbit: 1 }] } }, /rate: give exactly one of kbit, schedule, trace/);
  bad({ rate: { kbit: 1000, burst_bytes: 100 } }, /rate\.burst_bytes: must be >= 1514/);
  bad({ delay_ms: 'x' }, /delay_ms: must be number/);
});

test('prio: only the last band without dscp, no DSCP twice, no prio inside prio', () => {
  const prio = (/** @type {any} */ bands) => forward({ rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands } });
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'fifo' } }, { dscp: [0], qdisc: { kind: 'fifo' } }]), /bands\[1\]\.dscp: the last band takes every packet/);
  assert.throws(() => prio([{ qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }]), /bands\[0\]\.dscp: every band but the last needs/);
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'fifo' } }, { dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }]), /bands\[1\]\.dscp\[0\]: DSCP 46 is already in band 0/);
  const bandKinds = QDISC_KINDS.filter((k) => k !== 'prio' && k !== 'dualpi2').join(', ');
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'prio', bands: [] } }, { qdisc: { kind: 'fifo' } }]), new RegExp(`bands\\[0\\]\\.qdisc\\.kind: "prio" is not one of ${bandKinds}`));
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'dualpi2' } }, { qdisc: { kind: 'fifo' } }]), new RegExp(`bands\\[0\\]\\.qdisc\\.kind: "dualpi2" is not one of ${bandKinds}`));
  assert.throws(() => prio([{ qdisc: { kind: 'fifo' } }]), /bands: must NOT have fewer than 2 items/);
  const ok = prio([{ dscp: [46, 34], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fq_codel', quantum_bytes: 300, limit_packets: 800, target_ms: 2, interval_ms: 50, ecn: false } }]);
  assert.deepEqual(qdiscKinds(ok.qdisc), ['prio', 'fifo', 'fq_codel']);
  assert.deepEqual(ok.qdisc.bands[1].qdisc, { kind: 'fq_codel', target_ms: 2, interval_ms: 50, limit_packets: 800, quantum_bytes: 300, flows: 1024, ecn: false });
});

test('prio meters and band rate caps: the schema fills them in, a demote goes to the last band unless it says', () => {
  const prio = (/** @type {any} */ q) => forward({ rate: { kbit: 18000 }, qdisc: { kind: 'prio', ...q } });
  const bands = [{ dscp: [46], qdisc: { kind: 'fifo' }, rate_cap: { kbit: 2000 } }, { qdisc: { kind: 'fifo' } }];
  const plain = prio({ bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }] });
  assert.deepEqual(plain.qdisc.meters, []);
  assert.deepEqual(plain.qdisc.bands.map((/** @type {any} */ b) => b.rate_cap), [null, null]);
  const q = prio({ bands, meters: [
    { dscp: [46], limit_kbit: 2000, action: { kind: 'ce_fraction' } },
    { dscp: [46], limit_kbit: 2000, action: { kind: 'demote' } },
    { dscp: [46], per: 'class', window_ms: 100, limit_kbit: 1000, action: { kind: 'ce_all', hold_ms: 500 } }] }).qdisc;
  assert.deepEqual(q.bands[0].rate_cap, { kbit: 2000, burst_bytes: 3028 });
  assert.deepEqual(q.meters, [
    { dscp: [46], per: 'flow', window_ms: 150, limit_kbit: 2000, action: { kind: 'ce_fraction', gain: 0.5, initial_fraction: 0 } },
    { dscp: [46], per: 'flow', window_ms: 150, limit_kbit: 2000, action: { kind: 'demote', to_band: 1, hold_ms: 2000 } },
    { dscp: [46], per: 'class', window_ms: 100, limit_kbit: 1000, action: { kind: 'ce_all', hold_ms: 500 } }]);
  assert.throws(() => prio({ bands, meters: [{ dscp: [46], limit_kbit: 2000, action: { kind: 'demote', to_band: 2 } }] }), /meters\[0\]\.action\.to_band: is 2, but the prio has bands 0 to 1/);
  assert.throws(() => prio({ bands, meters: [{ dscp: [46], limit_kbit: 2000, action: { kind: 'ce_all', gain: 1 } }] }), /meters\/0\/action|meters\[0\]\.action/);
  assert.throws(() => prio({ bands, meters: [{ dscp: [46], action: { kind: 'ce_all' } }] }), /limit_kbit/);
});

test('a trace is a shipped one by its short name or a file by its path, with its offset (0 unless given)', () => {
  const shipped = path.join(TRACES_DIR, 'Verizon-LTE-short.down');
  assert.deepEqual(forward({ rate: { trace: 'Verizon-LTE-short.down' } }).rate,
    { trace: shipped, trace_offset_ms: 0, burst_bytes: 3028 });
  assert.equal(forward({ rate: { trace: 'Verizon-LTE-short.down', trace_offset_ms: 139999 } }).rate?.trace_offset_ms, 139999);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-trace-'));
  try {
    fs.writeFileSync(path.join(dir, 'mine'), '1\n1\n3\n');
    const own = normalizeScenario({ network: { forward: { rate: { trace: 'mine', trace_offset_ms: 2 } } } }, { baseDir: dir });
    assert.deepEqual(own.network.forward.rate, { trace: path.join(dir, 'mine'), trace_offset_ms: 2, burst_bytes: 3028 });
    assert.deepEqual(normalizeScenario(own), own);
    // Beside the scenario, a file with a shipped trace's name makes the bare name ambiguous; ./ names the file.
    fs.writeFileSync(path.join(dir, 'Verizon-LTE-short.up'), '5\n');
    const at = (/** @type {string} */ trace) => normalizeScenario({ network: { reverse: { rate: { trace } } } }, { baseDir: dir }).network.reverse.rate.trace;
    assert.throws(() => at('Verizon-LTE-short.up'), /network\.reverse\.rate\.trace: Verizon-LTE-short\.up names both the shipped trace .* write \.\/Verizon-LTE-short\.up for the file/);
    assert.equal(at('./Verizon-LTE-short.up'), path.join(dir, 'Verizon-LTE-short.up'));
    fs.writeFileSync(path.join(dir, 'empty'), '\n');
    assert.throws(() => at('empty'), /network\.reverse\.rate\.trace: .*empty must end in a timestamp > 0 ms/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test('a trace offset lies within the trace, and belongs to a trace only', () => {
  /** @param {any} link @param {RegExp} re */
  const bad = (link, re) => assert.throws(() => forward(link), (e) => e instanceof ScenarioError && e.problems.some((p) => re.test(p)));
  bad({ rate: { trace: 'Verizon-LTE-short.down', trace_offset_ms: 140000 } },
    /^network\.forward\.rate\.trace_offset_ms: 140000 is not less than the trace's period, its last timestamp \(140000 ms in .*Verizon-LTE-short\.down\)$/);
  bad({ rate: { kbit: 1000, trace_offset_ms: 5 } }, /^network\.forward\.rate: give exactly one of kbit, schedule, trace \(trace_offset_ms only with trace\)$/);
  bad({ rate: { trace: 'Verizon-LTE-short.down', trace_offset_ms: 1.5 } }, /trace_offset_ms: must be integer/);
  bad({ rate: { trace: 'Verizon-LTE-driving.down' } }, /rate\.trace: file .*Verizon-LTE-driving\.down does not exist and Verizon-LTE-driving\.down is not a shipped trace/);
});

test('the kernel and uml backends cannot play a trace: the scenario is refused, naming the backend', () => {
  for (const backend of ['kernel', 'uml']) {
    assert.throws(() => normalizeScenario({ backend, network: { reverse: { rate: { trace: 'ATT-LTE-driving.up' } } } }),
      (e) => e instanceof ScenarioError && e.problems.length === 1 && e.problems[0]
        === `network.reverse.rate.trace: the ${backend} backend cannot play a trace (tc has no trace player); use backend userspace (or auto)`);
  }
  for (const backend of ['userspace', 'auto']) {
    assert.equal(normalizeScenario({ backend, network: { forward: { rate: { trace: 'ATT-LTE-driving.down' } } } }).network.forward.rate.trace,
      path.join(TRACES_DIR, 'ATT-LTE-driving.down'));
  }
});

test('outages: both means required and > 0, passed through as given', () => {
  assert.deepEqual(forward({ outage: { mean_on_ms: 5000, mean_off_ms: 250.5 } }).outage, { mean_on_ms: 5000, mean_off_ms: 250.5 });
  /** @param {any} outage @param {RegExp} re */
  const bad = (outage, re) => assert.throws(() => forward({ outage }), (e) => e instanceof ScenarioError && e.problems.some((p) => re.test(p)));
  bad({ mean_on_ms: 5000 }, /network\.forward\.outage: .*mean_off_ms/);
  bad({ mean_on_ms: 0, mean_off_ms: 100 }, /outage\.mean_on_ms: must be > 0/);
  bad({ mean_on_ms: 100, mean_off_ms: -1 }, /outage\.mean_off_ms: must be > 0/);
  bad({ mean_on_ms: 100, mean_off_ms: 100, mean_ms: 1 }, /unknown field "mean_ms"/);
});

test('Gilbert-Elliott: netem\'s defaults for what is left out (r = 100 - p, 1-h = 100, 1-k = 0), one loss model per link', () => {
  assert.deepEqual(forward({ loss_gemodel: { p_percent: 1.5 } }).loss_gemodel,
    { p_percent: 1.5, r_percent: 98.5, bad_loss_percent: 100, good_loss_percent: 0 });
  const full = { p_percent: 1, r_percent: 25, bad_loss_percent: 80, good_loss_percent: 0.1 };
  assert.deepEqual(forward({ loss_gemodel: full }).loss_gemodel, full);
  const once = normalizeScenario({ network: { forward: { loss_gemodel: { p_percent: 3 } } } });
  assert.deepEqual(normalizeScenario(once), once, 'normalising twice changes nothing');
  /** @param {any} link @param {RegExp} re */
  const bad = (link, re) => assert.throws(() => forward(link), (e) => e instanceof ScenarioError && e.problems.some((p) => re.test(p)));
  bad({ loss_gemodel: { r_percent: 20 } }, /network\.forward\.loss_gemodel: .*p_percent/);
  bad({ loss_gemodel: { p_percent: 101 } }, /loss_gemodel\.p_percent: must be <= 100/);
  bad({ loss_gemodel: { p_percent: 1, bad_loss_percent: -1 } }, /loss_gemodel\.bad_loss_percent: must be >= 0/);
  bad({ loss_percent: 1, loss_gemodel: { p_percent: 1 } }, /^network\.forward\.loss_gemodel: cannot be combined with loss_percent 1/);
});
