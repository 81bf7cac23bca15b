// @ts-check
// Runs the kernel backend's plan in r, samples `tc -s -j qdisc show` into qdisc-stats.jsonl, and plays a capacity
// schedule with `tc qdisc change` on time, each step's times measured (netem/steps.js).
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planKernel, planScheduleSteps } from './kernel.js';
import { run, runPlan } from './exec.js';
import { readStepResult, stepArgs, stepEvent } from './steps.js';
import { INTERFACES } from './names.js';

/** @typedef {import('./backend.js').Backend} Backend */

/** How long before its time a scheduled step is staged (startSchedules): more than a busy machine's start of a
 * process in r (`ip netns exec`, bash, tc). */
const STAGE_AHEAD_MS = 1000;

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
    /** Steps under way (schedulesSettled). @type {Set<Promise<void>>} */
    this.pending = new Set();
    /** @type {string | null} the staged steps' directory (stepDir) */
    this.steps = null;
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
   * Capacity and delay schedules: each step staged STAGE_AHEAD_MS before its time as step.sh in r (netem/steps.js), which
   * starts `tc -batch` at once and hands it the change at t0_ms + at_s on bash's own clock; its event says when tc was
   * handed the change (started_ns), when tc had applied it (applied_ns: it answered the next command) and when it
   * returned, or why it failed. Run at its time
   * instead, a step waited for Node's timer and a tc process's start (tens of ms on a busy machine).
   * @param {number} t0_ms wall clock of schedule time 0
   */
  startSchedules(t0_ms) {
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      planScheduleSteps(this.o.links[direction], KERNEL_DEVICES[direction], []).forEach((step, i) => {
        const due_ms = t0_ms + step.at_s * 1000;
        const timer = setTimeout(() => this.settle(this.applyStep(step, `${direction}-${i}`, direction, t0_ms)),
          Math.max(0, due_ms - STAGE_AHEAD_MS - Date.now()));
        this.timers.push(timer);
      });
    }
  }

  /**
   * One staged step (startSchedules) in r; its event once step.sh has written its result.
   * @param {{ at_s: number, argv: string[], event: import('./steps.js').Step['event'] }} step argv: `tc ...`
   * @param {string} name @param {'forward' | 'reverse'} direction @param {number} t0_ms
   */
  async applyStep(step, name, direction, t0_ms) {
    const command = `\`${step.argv.join(' ')}\` in r`;
    /** @type {ReturnType<typeof readStepResult>} */
    let done = null;
    let error;
    try {
      const dir = this.stepDir();
      const out = join(dir, `step-${name}`);
      const r = await run([...this.o.nsExec, ...stepArgs(join(dir, 'tick'), t0_ms + step.at_s * 1000, step.argv, out)],
        { timeout_ms: STAGE_AHEAD_MS + 20000 });
      done = readStepResult(out);
      error = !done ? `${command} did not run (exit ${r.code}): ${r.stderr.trim()}`
        : done.code ? `${command} exited with ${done.code}: ${done.stderr.trim()}`
          : done.applied_ns === null ? `${command}: tc exited without answering after the change` : undefined;
    } catch (err) {
      error = `${command} could not be staged: ${/** @type {Error} */ (err).message}`;
    }
    this.o.onEvent(stepEvent({ step, direction, t0_ms, applied_ns: done && !done.code ? done.applied_ns : null, by: 'tc',
      extra: done ? { started_ns: done.handed_ns, returned_ns: done.returned_ns } : {}, ...(error ? { error } : {}) }));
  }

  /** A directory of this backend's for the staged steps' results, with the FIFO step.sh waits on (made once). */
  stepDir() {
    if (!this.steps) {
      this.steps = mkdtempSync(join(tmpdir(), 'rtclab-steps-'));
      const made = spawnSync('mkfifo', [join(this.steps, 'tick')], { encoding: 'utf8' });
      if (made.status !== 0) throw new Error(`cannot make the scheduled steps' FIFO in ${this.steps}: ${made.stderr}`);
    }
    return this.steps;
  }

  /** Keeps a step under way until schedulesSettled. @param {Promise<void>} p */
  settle(p) {
    const tracked = p.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Every step under way has its event (applied or failed). */
  async schedulesSettled() {
    await Promise.all([...this.pending]);
  }

  /** Stop timers; the qdiscs go with the namespace (and a step still staged with r's processes). */
  async stop() {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    if (this.steps) rmSync(this.steps, { recursive: true, force: true });
  }
}
