// @ts-check
// The real tier's measure helper (test-support/measure.js) and the campaign tool that reads what it reports
// (bench/reliability/spreads.mjs): a value sent to the test's diagnostics and to RTCLAB_MEASURES_FILE is counted once
// per run, a run that wrote no file is read from its output, the load's values are not the run's, and a value written
// null (not measured) is counted apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, measureLine } from '../test-support/measure.js';

const SPREADS = fileURLToPath(new URL('../../bench/reliability/spreads.mjs', import.meta.url));
const MEASURE_URL = new URL('../test-support/measure.js', import.meta.url).href;

test('measureLine: the decimals asked (all when not), null for a value not measured, a name of [A-Za-z0-9_.:-]', () => {
  assert.equal(measureLine('cross.kernel.wire_mbps', 9.98765, 3), 'measure: cross.kernel.wire_mbps=9.988');
  assert.equal(measureLine('prio.uml.ef_p50_ms', 4.25), 'measure: prio.uml.ef_p50_ms=4.25');
  for (const v of [null, undefined, NaN, Infinity]) assert.equal(measureLine('a.b.c_ms', v, 1), 'measure: a.b.c_ms=null');
  assert.throws(() => measureLine('a b.c', 1), /measure name "a b\.c"/);
});

test('measure: every line to the diagnostics; appended whole to RTCLAB_MEASURES_FILE only while it is set', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-measure-'));
  const file = join(dir, 'measures.txt');
  /** @type {string[]} */
  const seen = [];
  const context = { diagnostic: (/** @type {string} */ m) => { seen.push(m); } };
  const saved = process.env.RTCLAB_MEASURES_FILE;
  try {
    delete process.env.RTCLAB_MEASURES_FILE;
    measure(context, 'x.y.first_ms', 1.25, 1);
    process.env.RTCLAB_MEASURES_FILE = file;
    measure(context, 'x.y.second_ms', 2, 0);
    measure(context, 'x.y.third_ms', null);
    assert.deepEqual(seen, ['measure: x.y.first_ms=1.3', 'measure: x.y.second_ms=2', 'measure: x.y.third_ms=null']);
    assert.equal(readFileSync(file, 'utf8'), 'measure: x.y.second_ms=2\nmeasure: x.y.third_ms=null\n');
  } finally {
    if (saved === undefined) delete process.env.RTCLAB_MEASURES_FILE;
    else process.env.RTCLAB_MEASURES_FILE = saved;
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * Runs spreads.mjs to its end; its table (stdout).
 * @param {string} dir @param {string[]} options @param {string[]} command
 */
function spreads(dir, options, command) {
  return execFileSync(process.execPath, [SPREADS, '--keep', join(dir, 'failed'), ...options, '--', ...command], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    // The campaign's own caller may have the variable set: each run gets its own file all the same.
    env: { ...process.env, RTCLAB_MEASURES_FILE: join(dir, 'outer.txt') },
  });
}

test('spreads.mjs: a value in both the output and the measures file is counted once a run; null counted apart; the load writes none', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-spreads-test-'));
  try {
    // The "test": run n reports 10 n to both places, and a second value that run 2 could not measure.
    const script = join(dir, 'fake-test.mjs');
    writeFileSync(script, [
      `import { existsSync, readFileSync, writeFileSync } from 'node:fs';`,
      `import { measure } from ${JSON.stringify(MEASURE_URL)};`,
      `const counter = process.argv[2];`,
      `const n = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) + 1 : 1;`,
      `writeFileSync(counter, String(n));`,
      `const t = { diagnostic: (m) => console.log('# ' + m) };`,
      `measure(t, 'demo.both.value_ms', 10 * n, 1);`,
      `measure(t, 'demo.missing.value_ms', n === 2 ? null : n, 0);`,
    ].join('\n'));
    // The load: would write a value of its own if it were given the run's file.
    const load = join(dir, 'fake-load.mjs');
    writeFileSync(load, `import { appendFileSync } from 'node:fs';
const f = process.env.RTCLAB_MEASURES_FILE;
if (f) appendFileSync(f, 'measure: demo.load.value_ms=1\\n');
`);
    const table = spreads(dir, ['--runs', '3', '--load', `${process.execPath} ${load}`], [process.execPath, script, join(dir, 'counter')]);
    assert.match(table, /^3 runs of .*: 0 failed$/m);
    assert.match(table, /^\| demo\.both\.value_ms \| 3 \| 10\.00 \| 10\.00 \| 20\.00 \| 30\.00 \| 30\.00 \|$/m);
    assert.match(table, /^\| demo\.missing\.value_ms \| 2 \| 1\.000 \| 1\.000 \| 1\.000 \| 3\.000 \| 3\.000 \|$/m);
    assert.match(table, /^demo\.missing\.value_ms: not measured \(written null\) 1 time\(s\)$/m);
    assert.doesNotMatch(table, /demo\.load/);
    assert.equal(existsSync(join(dir, 'outer.txt')), false, 'the caller\'s RTCLAB_MEASURES_FILE is not the runs\'');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('spreads.mjs: a run that wrote no measures file is read from its output', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-spreads-test-'));
  try {
    const table = spreads(dir, ['--runs', '2'], [process.execPath, '-e', 'console.log("ok 1 - # measure: demo.out.only_ms=5.5")']);
    assert.match(table, /^\| demo\.out\.only_ms \| 2 \| 5\.500 \| 5\.500 \| 5\.500 \| 5\.500 \| 5\.500 \|$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
