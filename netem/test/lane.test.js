// @ts-check
// The real tier's lanes (netem/test-support/lane.js): a test runs in the first lane that claims it and is reported
// skipped in the others, as the JUnit totals of scripts/test.sh count it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { claim } from '../test-support/lane.js';

const LANE = fileURLToPath(new URL('../test-support/lane.js', import.meta.url));
const TOTALS = fileURLToPath(new URL('../../scripts/junit-totals.py', import.meta.url));
// Without NODE_TEST_CONTEXT, which makes a node --test started from a test report to its parent, not to its xml.
const { NODE_TEST_CONTEXT: _, ...laneEnv } = process.env;

/** One lane: node --test over file with the claims directory, its JUnit report to xml. */
const runLane = (/** @type {string} */ file, /** @type {string} */ claims, /** @type {string} */ xml) =>
  execFileSync(process.execPath, ['--test', '--test-reporter=junit', `--test-reporter-destination=${xml}`, file],
    { env: { ...laneEnv, RTCLAB_TEST_CLAIMS: claims } });
/** "PASSED FAILED" of JUnit reports, as scripts/test.sh totals them. */
const totals = (/** @type {string[]} */ ...xml) => execFileSync('python3', [TOTALS, ...xml]).toString().trim();

test('claim: the first lane to ask gets a test, the next do not; without lanes every test runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-claims-'));
  try {
    assert.equal(claim(dir, '/f.js', 'one'), true);
    assert.equal(claim(dir, '/f.js', 'one'), false);
    assert.equal(claim(dir, '/f.js', 'two'), true);
    assert.equal(claim(dir, '/g.js', 'one'), true, 'the same name in another file is another test');
    assert.equal(claim(undefined, '/f.js', 'one'), true);
    assert.throws(() => claim(join(dir, 'missing'), '/f.js', 'one'), /ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two lanes over one file: each test passes in one lane and is skipped in the other, by the JUnit totals', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-lanes-'));
  try {
    const file = join(dir, 'two.test.mjs');
    writeFileSync(file, `import { test } from ${JSON.stringify(LANE)};\n` +
      "test('a', () => {});\ntest('b', async () => {});\n");
    const claims = join(dir, 'claims');
    execFileSync('mkdir', [claims]);
    runLane(file, claims, join(dir, '1.xml'));
    runLane(file, claims, join(dir, '2.xml'));
    assert.equal(totals(join(dir, '1.xml')), '2 0');
    assert.equal(totals(join(dir, '2.xml')), '0 0', readFileSync(join(dir, '2.xml'), 'utf8'));
    assert.equal(totals(join(dir, '1.xml'), join(dir, '2.xml')), '2 0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a group of tests runs whole in the lane that claims its first test; a lane that cannot claim it skips them all', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-lanes-'));
  try {
    const file = join(dir, 'group.test.mjs');
    writeFileSync(file, `import { test } from ${JSON.stringify(LANE)};\nimport assert from 'node:assert';\nlet seen = null;\n` +
      "test('a', { claim: 'g' }, () => { seen = 'a'; });\ntest('b', { claim: 'g' }, () => { assert.equal(seen, 'a'); });\n" +
      "test('c', () => {});\n");
    const first = join(dir, 'first');
    execFileSync('mkdir', [first]);
    runLane(file, first, join(dir, '1.xml'));
    assert.equal(totals(join(dir, '1.xml')), '3 0', 'a, b (which needs a) and c in one lane');
    // Another lane got to the group first: this one runs c only.
    const other = join(dir, 'other');
    execFileSync('mkdir', [other]);
    assert.equal(claim(other, file, 'group g'), true);
    runLane(file, other, join(dir, '2.xml'));
    assert.equal(totals(join(dir, '2.xml')), '1 0', readFileSync(join(dir, '2.xml'), 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
