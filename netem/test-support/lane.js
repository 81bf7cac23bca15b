// @ts-check
// node:test's test() for scripts/test.sh's lanes: several `node --test` processes run the network's own tests at
// once, each over every file (in a rotated order, so that they start on different files), and a test runs in the
// lane that claims it first: the lane creates RTCLAB_TEST_CLAIMS/<hash of file and name> exclusively when the test
// starts, and a lane that finds it made skips the test ("ran in another lane"). So the lanes share the work as it
// comes, however long each test is, and every test runs exactly once. Unset, every test runs (one lane). Tests that
// read what an earlier test of their file left in the process name one group (`claim: 'NAME'` in their options):
// the lane that claims the group's first test runs all of them.
// Not --test-name-pattern or --test-shard: node 20 matches the pattern against the file name too, and shards by file,
// whose lengths differ tenfold here.
import { test as nodeTest } from 'node:test';
import { createHash } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Claim a test for this lane: true when this lane is the first to ask (or when there are no lanes).
 * @param {string | undefined} claimsDir @param {string} file @param {string} name
 */
export function claim(claimsDir, file, name) {
  if (!claimsDir) return true;
  const key = createHash('sha256').update(`${file}\0${name}`).digest('hex').slice(0, 32);
  try {
    closeSync(openSync(join(claimsDir, key), 'wx'));
    return true;
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code === 'EEXIST') return false;
    throw e;
  }
}

/** The groups this lane claimed (test() options' `claim`). */
const ownGroups = new Set();

/**
 * @param {string} name
 * @param {(import('node:test').TestOptions & { claim?: string }) | import('node:test').TestFn} [options]
 * @param {import('node:test').TestFn} [fn]
 */
export function test(name, options, fn) {
  if (typeof options === 'function') [fn, options] = [options, {}];
  const { claim: group, ...nodeOptions } = options ?? {};
  const body = /** @type {import('node:test').TestFn} */ (fn);
  if (body.length > 1) throw new Error(`${name}: lane.js's test() takes (t) => ..., not a done callback`);
  const file = process.argv[1] ?? '';
  const key = group ? `group ${group}` : name;
  return nodeTest(name, nodeOptions, async (t) => {
    if (!ownGroups.has(key)) {
      if (!claim(process.env.RTCLAB_TEST_CLAIMS, file, key)) {
        t.skip(group ? `ran in another lane (with group ${group})` : 'ran in another lane');
        return;
      }
      if (group) ownGroups.add(key);
    }
    return body(t, () => {});
  });
}
