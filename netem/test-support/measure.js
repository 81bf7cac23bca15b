// @ts-check
// How a real-tier test reports a value one of its assertions bounds, so that bench/reliability/spreads.mjs can gather
// its spread over many runs: a line `measure: NAME=VALUE` in the test's diagnostics and, when RTCLAB_MEASURES_FILE is
// set, appended to that file too (inside scripts/test.sh the reporters' output is not what spreads.mjs reads).
// NAME is `<area>.<backend-or-case>.<what>` with its unit last (`cross.kernel.wire_mbps`); a value that could not be
// measured is written `null`, never a number. analysis/test-support/measures.py is the same for pytest.
import { appendFileSync } from 'node:fs';

/**
 * The line for one value. @param {string} name @param {number | null | undefined} value
 * @param {number} [digits] decimals to keep (all of them when not given)
 */
export function measureLine(name, value, digits) {
  if (!/^[\w.:-]+$/.test(name)) throw new Error(`measure name ${JSON.stringify(name)}: only letters, digits, _ . : -`);
  const text = typeof value === 'number' && Number.isFinite(value)
    ? (digits === undefined ? String(value) : value.toFixed(digits))
    : 'null';
  return `measure: ${name}=${text}`;
}

/**
 * Reports one value: in the test's diagnostics, and one whole line appended to RTCLAB_MEASURES_FILE when it is set
 * (one write per line, so tests in parallel never interleave parts of lines).
 * @param {{ diagnostic: (message: string) => void }} t the test's context
 * @param {string} name @param {number | null | undefined} value @param {number} [digits]
 */
export function measure(t, name, value, digits) {
  const line = measureLine(name, value, digits);
  t.diagnostic(line);
  const file = process.env.RTCLAB_MEASURES_FILE;
  if (file) appendFileSync(file, `${line}\n`);
}
