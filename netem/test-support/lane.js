// @ts-check
// node:test's test() with scripts/test.sh's two lanes for the network's own tests: RTCLAB_TEST_LANE=uml runs only the
// tests named "uml: ..." (the user-mode Linux guest's), RTCLAB_TEST_LANE=other only the rest, unset runs all. The
// lanes run at once (scripts/test.sh says why that is safe). Not --test-name-pattern: node 20 matches it against the
// test file's name too, so a pattern cannot leave tests out.
import { test as nodeTest } from 'node:test';

/**
 * @param {string} name
 * @param {import('node:test').TestOptions | import('node:test').TestFn} [options]
 * @param {import('node:test').TestFn} [fn]
 */
export function test(name, options, fn) {
  if (typeof options === 'function') [fn, options] = [options, {}];
  const lane = process.env.RTCLAB_TEST_LANE;
  const mine = name.startsWith('uml') ? 'uml' : 'other';
  const skip = lane && lane !== mine ? `runs in the ${mine} lane` : false;
  return nodeTest(name, { ...options, skip: options?.skip || skip }, fn);
}
