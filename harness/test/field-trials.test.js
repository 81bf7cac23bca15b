// @ts-check
// Field trial keys Chrome does not hold are refused before anything is set up (harness/field-trials.js); the
// registry's keys are all in this machine's Chromium (docs/gcc-trials.md).
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromiumBinary } from '../browser.js';
import { checkTrialKeys, FieldTrialError, GCC_TRIALS_FILE, keysInBinary, parseFieldTrials } from '../field-trials.js';

const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
const registry = JSON.parse(fs.readFileSync(GCC_TRIALS_FILE, 'utf8'));

test('a --force-fieldtrials string is read as key/group pairs; a broken one is refused', () => {
  assert.deepEqual(parseFieldTrials(''), []);
  assert.deepEqual(parseFieldTrials('WebRTC-A/Enabled-0.9/WebRTC-B/x:1,y:2/'),
    [{ key: 'WebRTC-A', group: 'Enabled-0.9' }, { key: 'WebRTC-B', group: 'x:1,y:2' }]);
  assert.deepEqual(parseFieldTrials('WebRTC-A/Enabled'), [{ key: 'WebRTC-A', group: 'Enabled' }]);
  assert.throws(() => parseFieldTrials('WebRTC-A/Enabled/WebRTC-B/'), /not Key\/Group\/ pairs/);
  assert.throws(() => parseFieldTrials('WebRTC-A//'), /an empty trial name or group at pair 1/);
});

test('keys are found in a file\'s bytes, and the answer is cached by path, size and mtime', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-keys-'));
  const file = path.join(dir, 'bin');
  fs.writeFileSync(file, Buffer.concat([Buffer.from([0, 1, 2]), Buffer.from('xxWebRTC-Present\0yy')]));
  process.env.RTCLAB_TRIAL_KEY_CACHE = path.join(dir, 'cache');
  try {
    assert.deepEqual([...keysInBinary(file, ['WebRTC-Present', 'WebRTC-Absent'])], ['WebRTC-Present']);
    // Same path, new content and size: scanned again, not answered from the cache.
    fs.writeFileSync(file, 'WebRTC-Absent and more');
    assert.deepEqual([...keysInBinary(file, ['WebRTC-Present', 'WebRTC-Absent'])], ['WebRTC-Absent']);
  } finally {
    delete process.env.RTCLAB_TRIAL_KEY_CACHE;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('every key of the registry is in this machine\'s Chromium; a made-up one is refused naming it and the binary', () => {
  const binary = chromiumBinary();
  const trials = registry.trials.map((/** @type {any} */ t) => `${t.key}/${t.group}/`).join('');
  assert.doesNotThrow(() => checkTrialKeys({ calls: [{ id: 'c1', field_trials: trials }] }, binary));
  assert.throws(() => checkTrialKeys({ calls: [{ id: 'c1', field_trials: 'WebRTC-Bwe-NoSuchTrialAtAll/Enabled/' }] }, binary),
    (/** @type {any} */ e) => e instanceof FieldTrialError && e.message.includes('"WebRTC-Bwe-NoSuchTrialAtAll"')
      && e.message.includes(binary));
});

test('rtclab call refuses an unknown trial key with exit 2 before any namespace is made', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-trial-'));
  const scenario = path.join(dir, 's.yaml');
  fs.writeFileSync(scenario, 'name: unknown-trial\ncall:\n  field_trials: "WebRTC-Bwe-NoSuchTrialAtAll/Enabled/"\n');
  const nets = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').map((l) => l.split(' ')[0]).filter(Boolean);
  const before = new Set(nets());
  const r = spawnSync(process.execPath, [cli, '--scenario', scenario, '--out', path.join(dir, 'run')],
    { encoding: 'utf8', timeout: 60_000 });
  try {
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /"WebRTC-Bwe-NoSuchTrialAtAll" is not in the Chromium binary /);
    assert.ok(!fs.existsSync(path.join(dir, 'run')), 'no run directory was made');
    assert.deepEqual(nets().filter((n) => !before.has(n)), [], 'no namespace was made');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
