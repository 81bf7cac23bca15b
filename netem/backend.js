// @ts-check
// Choosing the backend: kernel if the probe finds everything the scenario needs, else userspace (auto);
// a forced kernel backend on a kernel without what it needs fails with a message naming what is missing.
import { kernelNeeds } from './kernel.js';
import { probeKernel, missingFeatures } from './probe.js';
import { checkBottleneckBuilt } from './userspace.js';

/** Why a feature is needed, for messages. */
const WHY = {
  netem: 'delay_ms/loss_percent > 0', ifb: 'delay_ms/loss_percent > 0', ingress: 'delay_ms/loss_percent > 0',
  mirred: 'delay_ms/loss_percent > 0', u32: 'delay_ms/loss_percent > 0 and prio DSCP filters', tbf: 'the rate',
};

/**
 * What the kernel backend lacks for these links: sentences, empty if it can run them.
 * @param {{ forward: import('./link.js').Link, reverse: import('./link.js').Link }} links
 * @param {Set<string>} have probed kernel features
 * @returns {string[]}
 */
export function kernelShortcomings(links, have) {
  /** @type {string[]} */
  const out = [];
  for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
    const { needs, unsupported } = kernelNeeds(links[direction]);
    const missing = missingFeatures(needs, have);
    if (missing.length) {
      const why = [...new Set(missing.map((f) => /** @type {any} */ (WHY)[f] ?? 'the qdisc'))].join(', ');
      out.push(`${direction}: needs ${missing.join(', ')} for ${why}; this kernel lacks them`);
    }
    for (const u of unsupported) out.push(`${direction}: cannot emulate ${u}`);
  }
  return out;
}

/**
 * @param {'auto' | 'kernel' | 'userspace'} requested
 * @param {{ forward: import('./link.js').Link, reverse: import('./link.js').Link }} links
 * @returns {Promise<{ requested: string, used: 'kernel' | 'userspace', reason: string }>}
 */
export async function chooseBackend(requested, links) {
  if (requested === 'userspace') {
    checkBottleneckBuilt();
    return { requested, used: 'userspace', reason: 'requested' };
  }
  const shortcomings = kernelShortcomings(links, await probeKernel());
  if (requested === 'kernel') {
    if (shortcomings.length) throw new Error(`kernel backend: ${shortcomings.join('; ')}`);
    return { requested, used: 'kernel', reason: 'requested' };
  }
  if (requested !== 'auto') throw new Error(`backend: "${requested}" is not one of auto, kernel, userspace`);
  if (!shortcomings.length) return { requested, used: 'kernel', reason: 'the kernel has every qdisc the scenario needs' };
  checkBottleneckBuilt();
  return { requested, used: 'userspace', reason: `kernel backend unusable: ${shortcomings.join('; ')}` };
}
