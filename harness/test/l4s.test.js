// @ts-check
// call.l4s (docs/chrome-ecn.md): the scenario switch reaches Chromium's command line as the two L4S field trials,
// beside the scenario's own field trials, and refuses a scenario that names them itself.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromiumFlags, fieldTrials, L4S_FIELD_TRIALS } from '../browser.js';
import { loadScenario, normalizeScenario } from '../../scenarios/model.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const L4S = 'WebRTC-RFC8888CongestionControlFeedback/Enabled,offer:true/WebRTC-Bwe-ScreamV2/Enabled/';
const flagsOf = (/** @type {any} */ call) => chromiumFlags({ clip: 'c.y4m', origin: 'http://10.99.0.1:1', mgmtPrefix: '10.99.', call });
const trialsFlag = (/** @type {string[]} */ flags) => flags.filter((f) => f.startsWith('--force-fieldtrials='));

test('call.l4s is off by default and adds no field trial', () => {
  const { call } = loadScenario(path.join(repoRoot, 'scenarios', 'default.yaml'));
  assert.equal(call.l4s, false);
  assert.deepEqual(trialsFlag(flagsOf(call)), []);
});

test('l4s-codel-ecn.yaml puts both L4S trials on the command line, once', () => {
  const { call } = loadScenario(path.join(repoRoot, 'scenarios', 'examples', 'l4s-codel-ecn.yaml'));
  assert.equal(call.l4s, true);
  assert.deepEqual(trialsFlag(flagsOf(call)), [`--force-fieldtrials=${L4S}`]);
  assert.deepEqual(Object.keys(L4S_FIELD_TRIALS), ['WebRTC-RFC8888CongestionControlFeedback', 'WebRTC-Bwe-ScreamV2']);
});

test('the scenario\'s own field trials are kept before the L4S ones, with or without their closing slash', () => {
  for (const own of ['WebRTC-Foo/Enabled/', 'WebRTC-Foo/Enabled']) {
    assert.equal(fieldTrials({ field_trials: own, l4s: true }), `WebRTC-Foo/Enabled/${L4S}`);
  }
  assert.equal(fieldTrials({ field_trials: 'WebRTC-Foo/Enabled/', l4s: false }), 'WebRTC-Foo/Enabled/');
});

test('field_trials naming an L4S trial while l4s is on is refused by name', () => {
  assert.throws(() => fieldTrials({ field_trials: 'WebRTC-Bwe-ScreamV2/mode:always/', l4s: true }),
    /call\.l4s: true sets WebRTC-Bwe-ScreamV2; call\.field_trials must not name it too/);
  // Without the switch, a scenario may set the trials itself (e.g. another SCReAM mode).
  assert.equal(fieldTrials({ field_trials: 'WebRTC-Bwe-ScreamV2/mode:always/', l4s: false }), 'WebRTC-Bwe-ScreamV2/mode:always/');
});

test('a non-boolean l4s is a scenario error', () => {
  assert.throws(() => normalizeScenario({ call: { l4s: 'yes' } }), /call\.l4s: must be boolean/);
});
