// @ts-check
// The Node tests' percentiles (test-support/percentile.js) against the analyzer's own (rtclab/stats.py, numpy): the
// same numbers to the last bit, over seeded random samples of every size from 1 to 400 (integers with ties, wide and
// narrow floats, negative ones) and percentiles at the ends, the quartiles, the tails and random points; and the
// refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { percentile, percentiles } from '../test-support/percentile.js';
import { mulberry32 } from '../seeded-random.js';

const PYTHON = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));
const ANALYZER = fileURLToPath(new URL('../../analysis', import.meta.url));

test('percentiles equal rtclab.stats.percentiles (numpy) bit for bit on random samples', () => {
  const rand = mulberry32(8867);
  const kinds = [
    () => Math.floor(rand() * 20), // integers with many ties
    () => (rand() - 0.5) * 1e6,
    () => 25 + rand() * 1e-3, // close together: the interpolation's rounding shows
    () => -rand() * 300,
  ];
  /** @type {{ xs: number[], qs: number[] }[]} */
  const cases = [];
  for (let n = 1; n <= 400; n += n < 12 ? 1 : 7) {
    for (const draw of kinds) {
      const xs = Array.from({ length: n }, draw);
      const qs = [0, 1, 5, 25, 50, 75, 95, 99, 99.9, 100, rand() * 100, rand() * 100];
      cases.push({ xs, qs });
    }
  }
  const code = 'import json, sys; from rtclab import stats; '
    + 'print(json.dumps([stats.percentiles(c["xs"], c["qs"]) for c in json.load(sys.stdin)]))';
  const want = JSON.parse(execFileSync(PYTHON, ['-c', code], {
    input: JSON.stringify(cases), encoding: 'utf8', cwd: ANALYZER, maxBuffer: 1 << 26,
  }));
  assert.equal(want.length, cases.length);
  let compared = 0;
  cases.forEach((c, i) => {
    const got = percentiles(c.xs, c.qs);
    got.forEach((g, k) => {
      assert.ok(Object.is(g, want[i][k]), `n ${c.xs.length} q ${c.qs[k]}: ${g} here, ${want[i][k]} in numpy`);
      compared++;
    });
  });
  assert.ok(compared > 2000, `${compared} percentiles compared`);
});

test('percentile: by hand; one value is every percentile; no values, a value that is not a finite number or a q outside 0..100 throws', () => {
  // By hand: q / 100 x (n - 1) = i + f, then x[i] + f (x[i + 1] - x[i]).
  const close = (/** @type {number[]} */ got, /** @type {number[]} */ want) =>
    assert.ok(got.every((g, k) => Math.abs(g - want[k]) < 1e-12), `${got} against ${want}`);
  close(percentiles([4, 1, 3, 2], [0, 50, 99, 100]), [1, 2.5, 3.97, 4]);
  close(percentiles([10, 20], [99.9]), [19.99]);
  assert.deepEqual(percentiles([7], [0, 50, 100]), [7, 7, 7]);
  assert.equal(percentile([3, 1, 2], 50), 2);
  assert.equal(percentile([1, 2, 3, 4], 50), 2.5);
  assert.throws(() => percentile([], 50), /percentiles of no values/);
  assert.throws(() => percentile([1, NaN], 50), /not a finite number: NaN/);
  // @ts-expect-error a null among the values, as a JSON reader may give
  assert.throws(() => percentile([1, null], 50), /not a finite number: null/);
  assert.throws(() => percentile([1, 2], 101), /101 is not in 0\.\.100/);
  assert.throws(() => percentile([1, 2], -1), /-1 is not in 0\.\.100/);
});
