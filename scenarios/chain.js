// @ts-check
// A chain of bottlenecks (network.hops, RFC 8867 6.3) after the schema: each hop normalised as a link, each call's
// path made explicit (null: every hop) and checked (consecutive hops, ascending, within the chain), and what a chain
// cannot be combined with refused by name: a forward or reverse link beside it (the hops are the path), cross traffic
// (its flows have no path), and a backend without the chain (tc's plan has one bottleneck per direction).
import { LinkError, normalizeLink } from './link.js';

/**
 * The hop's b -> a link (normalised): the plain link with the hop's delay_ms (RFC 8867 section 3: the backward path
 * has no capacity limit and no loss; the propagation delay is the wire's, the same both ways).
 * @param {import('./link.js').Link} hop normalised @param {import('./link.js').Link} plain the normalised plain link
 * @returns {import('./link.js').Link}
 */
export function reverseHop(hop, plain) {
  return { ...structuredClone(plain), delay_ms: hop.delay_ms };
}

/**
 * Normalises `scenario.network.hops` and every call's `path` in place.
 * @param {any} scenario validated (defaults filled in), links not yet normalised
 * @param {any} plain the normalised plain link (what a direction left out becomes)
 * @param {string} baseDir where relative trace files are looked for
 * @returns {string[]} problems, one sentence each
 */
export function normalizeChain(scenario, plain, baseDir) {
  const hops = scenario.network.hops;
  /** @type {string[]} */
  const problems = [];
  if (!hops.length) {
    scenario.calls.forEach((/** @type {any} */ call, /** @type {number} */ i) => {
      if (call.path !== null) problems.push(`calls[${i}].path: names hops (${JSON.stringify(call.path)}), but network.hops is empty`);
    });
    return problems;
  }
  try {
    scenario.network.hops = hops.map((/** @type {any} */ hop, /** @type {number} */ i) => normalizeLink(hop, `network.hops[${i}]`, baseDir));
  } catch (err) {
    if (err instanceof LinkError) return [err.message];
    throw err;
  }
  for (const direction of ['forward', 'reverse']) {
    if (JSON.stringify(scenario.network[direction]) !== JSON.stringify(plain)) {
      problems.push(`network.${direction}: set beside network.hops; with a chain of bottlenecks the hops are the path (leave network.${direction} out)`);
    }
  }
  if (scenario.cross_traffic.length) {
    problems.push('cross_traffic: not available with network.hops (its flows would cross no hop: a chain carries only the calls along their paths)');
  }
  if (scenario.backend === 'kernel' || scenario.backend === 'uml') {
    problems.push(`network.hops: the ${scenario.backend} backend has one bottleneck per direction; a chain of bottlenecks needs backend userspace (or auto)`);
  }
  scenario.calls.forEach((/** @type {any} */ call, /** @type {number} */ i) => {
    if (call.path === null) {
      call.path = hops.map((/** @type {any} */ _, /** @type {number} */ k) => k);
      return;
    }
    const where = `calls[${i}].path`;
    const outside = call.path.filter((/** @type {number} */ k) => k >= hops.length);
    if (outside.length) problems.push(`${where}: hop ${outside.join(', ')} is not in network.hops (hops 0 to ${hops.length - 1})`);
    else if (call.path.some((/** @type {number} */ k, /** @type {number} */ j) => j > 0 && k !== call.path[j - 1] + 1)) {
      problems.push(`${where}: ${JSON.stringify(call.path)} is not consecutive hops in ascending order (a call enters the chain at one hop and leaves after a later one, e.g. [1, 2])`);
    }
  });
  return problems;
}
