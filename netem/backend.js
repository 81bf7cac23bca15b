// @ts-check
// The backend interface, and choosing the backend: kernel if the probe finds everything the scenario needs, else
// userspace (auto); a forced kernel backend on a kernel without what it needs fails with a message naming what is
// missing. uml (the kernel plan in a user-mode Linux guest) only when asked for: auto never picks it.
import { kernelNeeds } from './kernel.js';
import { FEATURES, probeKernel, missingFeatures } from './probe.js';
import { checkBottleneckBuilt } from './userspace.js';
import { umlUnavailable } from './uml/guest.js';

/**
 * What both backends (kernel-backend.js, userspace.js) do. Each reports what it does itself, as typed events.
 * @typedef {{
 *   start(): Promise<void>,
 *   startSchedules(t0_ms: number): void,
 *   schedulesSettled(): Promise<void>,
 *   alive(): boolean,
 *   processes(): { direction: string, hop?: number, pid: number | null, log: string }[],
 *   counters(): Record<string, Record<string, number> | null> | null,
 *   stop(): Promise<void>,
 * }} Backend
 *   start: the bottleneck is in place when it resolves; startSchedules: capacity and delay schedules count from t0_ms (wall
 *   clock); schedulesSettled: resolves once every step whose time has come has its event (applied or failed); alive: false once a process the bottleneck needs has died; counters: per direction the bottleneck's
 *   latest stats line (userspace: counts since its start), null where there is no such process (kernel); stop:
 *   idempotent.
 * @typedef {{ direction: 'forward' | 'reverse', at_s: number, scheduled_ns: number, applied_ns: number | null,
 *   late_ms: number | null, ok: boolean, by: string, error?: string, started_ns?: number, returned_ns?: number,
 *   noticed_ns?: number, hop?: number }} StepTimes
 *   a scheduled change once the backend applied it (netem/steps.js stepEvent; docs/netem.md, "Scheduled changes"):
 *   scheduled_ns the call's t0 + at_s, applied_ns when the backend measured it in force (null: not applied, with
 *   the error), late_ms their difference; tc's start and return (kernel), the loop's notice (userspace)
 * @typedef {{ event: 'capacity_change', kbit: number } & StepTimes} CapacityChange
 * @typedef {{ event: 'bottleneck_exit', direction: 'forward' | 'reverse', hop?: number, code: number | null, signal: string | null,
 *   message: string, log: string }} BottleneckExit  message: the process's own last line (may be empty); hop: which hop
 *   of a chain (network.hops)
 * @typedef {{ event: 'guest_exit', code: number | null, signal: string | null, message: string, log: string }} GuestExit
 *   the uml backend's guest ended while the network was up; log: its console
 * @typedef {{ event: 'delay_change', delay_ms: number } & StepTimes} DelayChange  a step of the link's delay_schedule
 * @typedef {CapacityChange | DelayChange | BottleneckExit | GuestExit} BackendEvent
 */

/** Why a feature is needed, for messages. */
const WHY = {
  netem: 'delay_ms/jitter_ms/loss_percent > 0', ifb: 'delay_ms/jitter_ms/loss_percent > 0', ingress: 'delay_ms/jitter_ms/loss_percent > 0',
  mirred: 'delay_ms/jitter_ms/loss_percent > 0', u32: 'delay_ms/jitter_ms/loss_percent > 0 and prio DSCP filters', tbf: 'the rate',
};

/**
 * What the kernel backend lacks for these links: sentences, empty if it can run them.
 * @param {{ forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link, hops?: import('../scenarios/link.js').Link[] }} links
 * @param {Set<string>} have probed kernel features
 * @returns {string[]}
 */
export function kernelShortcomings(links, have) {
  /** @type {string[]} */
  const out = [];
  if (links.hops?.length) out.push('network.hops: a chain of bottlenecks is played by the userspace backend only (tc\'s plan has one bottleneck per direction)');
  for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
    const { needs, unsupported } = kernelNeeds(links[direction]);
    const missing = missingFeatures(needs, have);
    if (missing.length) {
      const reasons = missing.map((f) => /** @type {any} */ (WHY)[f] ?? 'the qdisc');
      if (missing.includes('netem') && links[direction].loss_gemodel) reasons.push('loss_gemodel (netem\'s loss gemodel)');
      const why = [...new Set(reasons)].join(', ');
      out.push(`${direction}: needs ${missing.join(', ')} for ${why}; this kernel lacks them`);
    }
    for (const u of unsupported) out.push(`${direction}: cannot emulate ${u}`);
  }
  return out;
}

/** Every feature the uml guest has (init.sh loads them all): only what no tc plan can do stays out of reach. */
const UML_FEATURES = new Set(FEATURES);

/**
 * @param {'auto' | 'kernel' | 'userspace' | 'uml'} requested
 * @param {{ forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link }} links
 * @param {string} [id] the run it is for (names the kernel probe's scratch namespace)
 * @param {{ callDelays?: boolean }} [needs] callDelays: a call has a delay of its own (`calls[].delay_ms`), which only
 *   the userspace bottleneck's delay line applies
 * @returns {Promise<{ requested: string, used: 'kernel' | 'userspace' | 'uml', reason: string }>}
 */
export async function chooseBackend(requested, links, id, needs = {}) {
  if (needs.callDelays && (requested === 'kernel' || requested === 'uml')) {
    throw new Error(`${requested} backend: cannot give a call a delay of its own (calls[].delay_ms: tc has no delay keyed by a call's 5-tuple); use the userspace backend`);
  }
  if (needs.callDelays && requested === 'auto') {
    checkBottleneckBuilt();
    return { requested, used: 'userspace', reason: 'calls[].delay_ms: a delay per call needs the userspace bottleneck' };
  }
  if (requested === 'userspace') {
    checkBottleneckBuilt();
    return { requested, used: 'userspace', reason: 'requested' };
  }
  if (requested === 'uml') {
    const why = umlUnavailable();
    if (why) throw new Error(`uml backend: ${why}`);
    const shortcomings = kernelShortcomings(links, UML_FEATURES).map((s) => s.replace('this kernel lacks them', 'the guest lacks them'));
    if (shortcomings.length) throw new Error(`uml backend: ${shortcomings.join('; ')}`);
    const stepped = [links.forward, links.reverse].some((l) => (l.rate?.schedule?.length ?? 0) > 1 || l.delay_schedule.length > 0);
    // Said up front: the run will most likely fail schedule_applied (bench/bottleneck/RESULTS.md, "Scheduled changes":
    // 38-140 ms late on a quiet machine, up to 500 ms beside other jobs).
    return { requested, used: 'uml', reason: stepped ? 'requested; its capacity or delay steps are usually applied 40-140 ms '
      + 'late in the guest (500 on a busy machine), over the 50 ms schedule_applied allows: such a run is INVALID (the userspace backend plays them on time)' : 'requested' };
  }
  const shortcomings = kernelShortcomings(links, await probeKernel(id));
  if (requested === 'kernel') {
    if (shortcomings.length) throw new Error(`kernel backend: ${shortcomings.join('; ')}`);
    return { requested, used: 'kernel', reason: 'requested' };
  }
  if (requested !== 'auto') throw new Error(`backend: "${requested}" is not one of auto, kernel, userspace, uml`);
  if (!shortcomings.length) return { requested, used: 'kernel', reason: 'the kernel has every qdisc the scenario needs' };
  checkBottleneckBuilt();
  return { requested, used: 'userspace', reason: `kernel backend unusable: ${shortcomings.join('; ')}` };
}
