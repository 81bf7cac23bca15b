// @ts-check
// Runs the kernel backend's plan in r, samples `tc -s -j qdisc show` into qdisc-stats.jsonl, and plays a capacity
// schedule with `tc qdisc change` on time.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { planKernel, planScheduleSteps } from './kernel.js';
import { run, runPlan } from './exec.js';
import { INTERFACES } from './names.js';

/** @typedef {import('./backend.js').Backend} Backend */

/** Per direction: egress device (TBF + discipline), ingress device (feeds the delay IFB) and the IFB's name. */
export const KERNEL_DEVICES = Object.freeze({
  forward: { dev: INTERFACES.r_b, ingressDev: INTERFACES.r_a, ifb: 'ifb-fwd' },
  reverse: { dev: INTERFACES.r_a, ingressDev: INTERFACES.r_b, ifb: 'ifb-rev' },
});

/**
 * The whole plan for both directions in r.
 * @param {{ forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link }} links @param {string[]} nsExec
 */
export function planKernelNetwork(links, nsExec) {
  return [
    ...planKernel(links.forward, KERNEL_DEVICES.forward.dev, { ...KERNEL_DEVICES.forward, nsExec }),
    ...planKernel(links.reverse, KERNEL_DEVICES.reverse.dev, { ...KERNEL_DEVICES.reverse, nsExec }),
  ];
}

/** @implements {Backend} */
export class KernelBackend {
  /**
   * @param {{ nsExec: string[], links: { forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link },
   *   runDir: string, detached: boolean, log: (msg: string) => void, onEvent: (e: import('./backend.js').BackendEvent) => void }} o
   *   detached: nothing of this process stays to sample statistics (the CLI's `up`)
   */
  constructor(o) {
    this.o = o;
    /** @type {NodeJS.Timeout[]} */
    this.timers = [];
    this.statsFile = join(o.runDir, 'qdisc-stats.jsonl');
    this.stopped = false;
  }

  async start() {
    await runPlan(planKernelNetwork(this.o.links, this.o.nsExec), this.o.log);
    if (!this.o.detached) this.startStats(500);
  }

  /** The qdiscs live as long as the namespace: no process of ours can die under them. */
  alive() {
    return true;
  }

  /** @returns {{ direction: string, pid: number | null, log: string }[]} */
  processes() {
    return [];
  }

  /** The kernel's qdiscs do not say when each packet was due (qdisc-stats.jsonl has their own counters). */
  counters() {
    return null;
  }

  /**
   * `tc -s -j qdisc show` in r now: the kernel's own counters, parsed.
   * @returns {Promise<any[]>}
   */
  async qdiscStats() {
    const r = await run([...this.o.nsExec, 'tc', '-s', '-j', 'qdisc', 'show']);
    if (r.code !== 0) throw new Error(`tc -s qdisc show in r failed (exit ${r.code}): ${r.stderr.trim()}`);
    return JSON.parse(r.stdout);
  }

  /** Sample qdisc statistics every interval_ms (a slow `tc` never overlaps the next sample). */
  startStats(interval_ms = 500) {
    let busy = false;
    const sample = async () => {
      if (busy) return;
      busy = true;
      const r = await run([...this.o.nsExec, 'tc', '-s', '-j', 'qdisc', 'show']);
      if (r.code === 0 && !this.stopped) {
        try {
          appendFileSync(this.statsFile, JSON.stringify({ t: Date.now() / 1000, ns: 'r', qdiscs: JSON.parse(r.stdout) }) + '\n');
        } catch { /* the run directory went away */ }
      }
      busy = false;
    };
    void sample();
    this.timers.push(setInterval(sample, interval_ms));
  }

  /**
   * Capacity and delay schedules: each step's `tc qdisc change` at t0_ms + at_s.
   * @param {number} t0_ms wall clock of schedule time 0
   */
  startSchedules(t0_ms) {
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      for (const step of planScheduleSteps(this.o.links[direction], KERNEL_DEVICES[direction], this.o.nsExec)) {
        const timer = setTimeout(async () => {
          const r = await run(step.argv);
          this.o.onEvent({ ...step.event, direction, at_s: step.at_s, ok: r.code === 0, by: 'tc',
            ...(r.code ? { error: r.stderr.trim() } : {}) });
        }, Math.max(0, t0_ms + step.at_s * 1000 - Date.now()));
        this.timers.push(timer);
      }
    }
  }

  /** Stop timers; the qdiscs go with the namespace. */
  async stop() {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
  }
}
