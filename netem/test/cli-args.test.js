// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs, UsageError } from '../cli-args.js';

test('up with and without options', () => {
  assert.deepEqual(parseArgs(['up']), { cmd: 'up' });
  assert.deepEqual(parseArgs(['up', '--scenario', 's.yaml', '--id', 'abc123', '--backend', 'kernel']), { cmd: 'up', scenario: 's.yaml', id: 'abc123', backend: 'kernel' });
  assert.deepEqual(parseArgs(['up', '--scenario=s.yaml']), { cmd: 'up', scenario: 's.yaml' });
});

test('exec keeps the command after --', () => {
  assert.deepEqual(parseArgs(['exec', 'abc123', 'a', '--', 'ping', '-c', '1', '10.0.2.2']), { cmd: 'exec', id: 'abc123', host: 'a', command: ['ping', '-c', '1', '10.0.2.2'] });
});

test('plan with and without a scenario', () => {
  assert.deepEqual(parseArgs(['plan']), { cmd: 'plan' });
  assert.deepEqual(parseArgs(['plan', '--scenario', 'x.yaml']), { cmd: 'plan', scenario: 'x.yaml' });
  assert.throws(() => parseArgs(['plan', 'x.yaml']), /plan: usage/);
});

test('show, down, clean', () => {
  assert.deepEqual(parseArgs(['show', 'abc123']), { cmd: 'show', id: 'abc123' });
  assert.deepEqual(parseArgs(['down', 'abc123']), { cmd: 'down', id: 'abc123' });
  assert.deepEqual(parseArgs(['clean']), { cmd: 'clean', ids: [] });
  assert.deepEqual(parseArgs(['clean', 'abc123', 'zz9999']), { cmd: 'clean', ids: ['abc123', 'zz9999'] });
  assert.deepEqual(parseArgs([]), { cmd: 'help' });
});

test('bad arguments are usage errors naming the problem', () => {
  const bad = (/** @type {string[]} */ argv, /** @type {RegExp} */ re) => assert.throws(() => parseArgs(argv), (e) => e instanceof UsageError && re.test(e.message));
  bad(['up', '--backend', 'tc'], /--backend "tc" is not one of auto, kernel, userspace/);
  bad(['up', '--id', 'ABC'], /run id must be 6 characters/);
  bad(['up', '--scenario'], /--scenario needs a value/);
  bad(['up', '--fast'], /unknown option --fast/);
  bad(['exec', 'abc123', 'x', '--', 'ls'], /host must be a, r or b/);
  bad(['exec', 'abc123', 'a', 'ls'], /usage: exec ID/);
  bad(['down'], /usage: down ID/);
  bad(['frobnicate'], /unknown command "frobnicate"/);
});
