// @ts-check
// The example scenarios load, validate and normalize; each is the discipline it is named after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadScenario, QDISC_KINDS } from '../model.js';
import { MADE_ON_FIRST_USE, namedClipPath } from '../../media/clips.js';

const dir = fileURLToPath(new URL('../examples/', import.meta.url));

// Every discipline the schema has has its example, named after it.
for (const kind of QDISC_KINDS) {
  test(`scenarios/examples/${kind}.yaml`, () => {
    const s = loadScenario(`${dir}${kind}.yaml`);
    const f = s.network.forward;
    assert.equal(f.qdisc.kind, kind);
    assert.equal(f.delay_ms, 25);
    assert.equal(s.network.reverse.delay_ms, 25);
    assert.equal(f.rate.kbit, kind === 'prio' ? 18000 : 1000);
  });
}

test('the examples\' parameters are the papers\'', () => {
  const q = (/** @type {string} */ k) => loadScenario(`${dir}${k}.yaml`).network.forward.qdisc;
  assert.equal(q('fifo').limit_bytes, 37500);
  assert.equal(q('codel').target_ms, 13);
  assert.deepEqual([q('pie').target_ms, q('pie').tupdate_ms], [20, 30]);
  assert.equal(q('sfq').limit_packets, 25);
  assert.equal(q('fq_codel').limit_packets, 10240);
  assert.deepEqual([q('dualpi2').target_ms, q('dualpi2').step_thresh_ms, q('dualpi2').coupling_factor], [15, 1, 2]);
  assert.deepEqual(q('prio').bands.map((/** @type {any} */ b) => b.qdisc.kind), ['fifo', 'fq_codel']);
});

test('scenarios/examples/outage-burst-loss.yaml: outages and burst loss as the file says', () => {
  const s = loadScenario(`${dir}outage-burst-loss.yaml`);
  const ge = { p_percent: 1, r_percent: 30, bad_loss_percent: 80, good_loss_percent: 0 };
  assert.deepEqual(s.network.forward.outage, { mean_on_ms: 10000, mean_off_ms: 300 });
  assert.deepEqual(s.network.forward.loss_gemodel, ge);
  assert.deepEqual([s.network.reverse.outage, s.network.reverse.loss_gemodel], [null, ge]);
  // The header's numbers: stationary loss (1-h) p / (p + r) and the mean run of losses (src/loss.rs's closed form).
  const [p, r, lb] = [0.01, 0.3, 0.8];
  const loss = (lb * p) / (p + r);
  const both = (p / (p + r)) * lb * (r * 0 + (1 - r) * lb);
  assert.ok(Math.abs(loss - 0.0258) < 0.001, `loss ${loss}`);
  assert.ok(Math.abs(1 / r - 3.3) < 0.05 && Math.abs(loss / (loss - both) - 2.3) < 0.05, `mean burst ${loss / (loss - both)}`);
});

test('scenarios/examples/pause-resume.yaml: one call paused 10-20 s, as its header says', () => {
  const s = loadScenario(`${dir}pause-resume.yaml`);
  assert.equal(s.calls.length, 1);
  assert.deepEqual(s.calls[0].pauses, [{ at_s: 10, resume_s: 20 }]);
  assert.deepEqual([s.duration_s, s.network.forward.rate.kbit, s.calls[0].direction], [40, 1000, 'forward']);
});

test('scenarios/examples/clip-60fps.yaml: the default pattern at 60 fps, a clip the harness makes on its first use', () => {
  const call = loadScenario(`${dir}clip-60fps.yaml`).call;
  assert.equal(call.fps, 60);
  assert.equal(call.video_clip, namedClipPath('default-60fps'));
  assert.match(/** @type {string} */ (call.video_clip), /media\/default-60fps\.y4m$/);
  assert.deepEqual(MADE_ON_FIRST_USE['default-60fps'], { generator: 'testsrc.js', args: ['--fps', '60'], takes: 'a few seconds' });
});
