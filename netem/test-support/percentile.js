// @ts-check
// Percentiles for the Node tests by rtclab's one rule (analysis/rtclab/stats.py: numpy's default, "linear"
// interpolation between closest ranks, Hyndman & Fan's method 7), computed here rather than by a Python process
// per call: the real tier asked for 82 percentiles a run, 0.4 CPU-seconds of Python start-up each on a 2-core
// machine its lanes keep busy. netem/test/percentile.test.js checks every result equals the analyzer's, bit for bit.

/**
 * The percentiles qs (0..100) of xs: numpy.percentile(xs, qs) to the last bit (the same index, (n - 1) * q / 100, and
 * the same interpolation, numpy's _lerp, which computes from the upper neighbour when the weight is 0.5 or more).
 * Throws for no values (a test that has none has nothing to assert on) and for a value or q numpy would refuse.
 * @param {number[]} xs @param {number[]} qs @returns {number[]}
 */
export function percentiles(xs, qs) {
  if (!xs.length) throw new Error('percentiles of no values');
  const bad = xs.find((x) => typeof x !== 'number' || !Number.isFinite(x));
  if (bad !== undefined) throw new Error(`percentiles of a value that is not a finite number: ${bad}`);
  const v = Float64Array.from(xs).sort();
  const last = v.length - 1;
  return qs.map((q) => {
    if (!(q >= 0 && q <= 100)) throw new Error(`percentile ${q} is not in 0..100`);
    const h = last * (q / 100);
    if (h >= last) return v[last];
    const i = Math.floor(h), t = h - i, a = v[i], b = v[i + 1], d = b - a;
    return t >= 0.5 ? b - d * (1 - t) : a + d * t;
  });
}

/** @param {number[]} xs @param {number} q 0..100 */
export function percentile(xs, q) {
  return percentiles(xs, [q])[0];
}
