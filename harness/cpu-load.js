// @ts-check
// A CPU load beside the run (scenario `cpu_load`, docs/harness.md "A CPU load beside the run"): Debian's stress-ng,
// cpu workers each busy a share of the time, started once the network is up and before the browsers, stopped in the
// teardown. It stands in for a cost the run itself does not have (e.g. the uml guest's CPU, to test whether that cost
// explains a difference between backends), so what it used is measured from /proc, not assumed from what it was asked.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { CPU_LOAD_FIFO_PRIORITY } from '../scenarios/model.js';
import { CLOCK_TICKS_PER_S, parseProcStat } from './cpu-accounting.js';

/** The Debian package, and its program, that makes the load. */
export const STRESS_NG = 'stress-ng';
/** stress-ng's own messages, in the run directory; its path on the command line also names the run's load (census). */
export const CPU_LOAD_LOG = 'cpu-load.log';
/**
 * Each worker's busy slice, ms (stress-ng --cpu-load-slice): short bursts and short sleeps, like a bottleneck that
 * works per packet, rather than stress-ng's default of 64 loops of its method (tens of ms busy at a time). 5 ms: the
 * load still comes within the measured spread of what was asked (bench/cpu/RESULTS.md, "A CPU load beside the run").
 */
export const BUSY_SLICE_MS = 5;
/** The stress-ng cpu method: one fixed integer loop, so that a busy slice is the same work in every run. */
export const CPU_METHOD = 'int64';

/** Linux's scheduling policies as /proc/PID/stat field 41 gives them. */
const POLICIES = /** @type {Record<number, string>} */ ({ 0: 'other', 1: 'fifo', 2: 'rr', 3: 'batch', 5: 'idle', 6: 'deadline' });

/**
 * @typedef {{ cores: number, policy: 'fifo' | 'other', priority?: number }} CpuLoadSpec the scenario's normalised
 *   cpu_load (priority only with fifo)
 */

/**
 * How the load is made: `workers` stress-ng cpu workers (as few as can carry it: one per started core) each busy
 * `percent` of the time, so that workers x percent / 100 is `cores` to within stress-ng's whole percent.
 * @param {CpuLoadSpec} spec @returns {{ workers: number, percent: number, cores: number }} cores: what that makes
 */
export function loadShape(spec) {
  const workers = Math.ceil(spec.cores - 1e-9);
  const percent = Math.min(100, Math.max(1, Math.round((100 * spec.cores) / workers)));
  return { workers, percent, cores: (workers * percent) / 100 };
}

/**
 * The stress-ng command for a load.
 * @param {CpuLoadSpec} spec
 * @param {{ logFile: string, timeoutS: number, sliceMs?: number }} o logFile: stress-ng's log (its path marks the
 *   run's load for the census); timeoutS: when stress-ng ends on its own if nothing stopped it (a harness killed
 *   outright, and no clean); sliceMs: the busy slice (BUSY_SLICE_MS; another only for bench/cpu/cpu-load.mjs)
 * @returns {string[]}
 */
export function cpuLoadArgv(spec, { logFile, timeoutS, sliceMs = BUSY_SLICE_MS }) {
  const { workers, percent } = loadShape(spec);
  const sched = spec.policy === 'fifo' ? ['--sched', 'fifo', '--sched-prio', String(spec.priority ?? CPU_LOAD_FIFO_PRIORITY)] : [];
  // The log file's path (the run directory) first, so that a command line cut short for display still names the
  // run; --keep-name: the workers keep stress-ng's command line instead of a name of their own.
  return [STRESS_NG, '--log-file', logFile, '--cpu', String(workers), '--cpu-load', String(percent), '--cpu-load-slice',
    String(sliceMs), '--cpu-method', CPU_METHOD, ...sched, '--timeout', `${Math.ceil(timeoutS)}s`, '--keep-name'];
}

/**
 * Where stress-ng is, or an error naming the package to install.
 * @param {string} [pathVar] the PATH to search (tests)
 * @returns {string}
 */
export function findStressNg(pathVar = process.env.PATH ?? '') {
  for (const dir of pathVar.split(':').filter(Boolean)) {
    const file = `${dir}/${STRESS_NG}`;
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch { /* not here */ }
  }
  throw new Error(`the scenario's cpu_load needs ${STRESS_NG}, which is not installed (not found in PATH): ` +
    `apt-get install ${STRESS_NG} (scripts/setup.sh installs it)`);
}

/** stress-ng's version line, e.g. "stress-ng, version 0.15.06 (gcc 12.2, x86_64 Linux 6.1.0) 💻🔥", or null. */
export function stressNgVersion() {
  const r = spawnSync(STRESS_NG, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().split('\n')[0] : null;
}

/**
 * A process and its descendants from /proc: each one's CPU time (utime + stime, clock ticks), scheduling policy and
 * real-time priority.
 * @param {number} rootPid @param {string} [proc] where procfs is mounted (tests)
 * @returns {{ pid: number, ppid: number, ticks: number, policy: string, priority: number }[]}
 */
export function processTree(rootPid, proc = '/proc') {
  /** @type {Map<number, { pid: number, ppid: number, ticks: number, policy: string, priority: number }>} */
  const table = new Map();
  for (const name of fs.readdirSync(proc)) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const line = fs.readFileSync(`${proc}/${name}/stat`, 'utf8');
      const p = parseProcStat(line);
      if (!p) continue;
      // Fields after the command name: rest[0] is field 3, so rt_priority (40) is rest[37] and policy (41) rest[38].
      const rest = line.slice(line.lastIndexOf(')') + 2).split(' ');
      const policy = Number(rest[38]);
      table.set(p.pid, { pid: p.pid, ppid: p.ppid, ticks: p.ticks, policy: POLICIES[policy] ?? `policy ${policy}`, priority: Number(rest[37]) });
    } catch { /* exited while we read */ }
  }
  const out = [];
  const stack = [rootPid];
  while (stack.length) {
    const pid = /** @type {number} */ (stack.pop());
    const p = table.get(pid);
    if (!p) continue;
    out.push(p);
    for (const q of table.values()) if (q.ppid === pid) stack.push(q.pid);
  }
  return out;
}

/**
 * The load while it runs.
 *
 *   const load = new CpuLoad({ spec, logFile, timeoutS: 600, onExit: (m) => fail(m) });
 *   await load.start();                 // resolves once every worker runs under the policy asked for
 *   const t0 = load.cpuSeconds();       // its CPU time so far, from /proc
 *   ...
 *   const used = load.cpuSeconds() - t0;
 *   await load.stop();                  // SIGINT to its process group, SIGKILL after a grace
 */
export class CpuLoad {
  /**
   * @param {{ spec: CpuLoadSpec, logFile: string, timeoutS: number, nsExec?: string[], sliceMs?: number,
   *   onExit?: (message: string) => void, proc?: string }} o
   *   nsExec: a prefix that runs it in a namespace (the run's r: netem's clean kills every process there, so a load
   *   whose harness was killed outright goes with the run's network); onExit: it ended on its own while running
   */
  constructor(o) {
    this.o = o;
    this.argv = cpuLoadArgv(o.spec, { logFile: o.logFile, timeoutS: o.timeoutS, sliceMs: o.sliceMs });
    this.shape = loadShape(o.spec);
    /** @type {import('node:child_process').ChildProcess | null} */
    this.proc = null;
    this.stderr = '';
    this.stopping = false;
    /** @type {Promise<{ code: number | null, signal: string | null }> | null} */
    this.closed = null;
  }

  get pid() {
    return this.proc?.pid ?? null;
  }

  /**
   * Starts stress-ng and waits until its workers run, each under the policy and priority asked for (read back from
   * /proc: a load that could not get SCHED_FIFO is not the load asked for).
   * @param {number} [timeout_ms]
   * @returns {Promise<{ pid: number, policy: string, priority: number }[]>} the workers as /proc shows them
   */
  async start(timeout_ms = 10000) {
    findStressNg();
    const argv = [...(this.o.nsExec ?? []), ...this.argv];
    // Its own process group: a Ctrl-C meant for the harness reaches the load through the teardown, like the captures.
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.proc = proc;
    proc.stderr?.on('data', (chunk) => { this.stderr = (this.stderr + chunk).slice(-4000); });
    this.closed = new Promise((resolve) => {
      proc.on('close', (code, signal) => {
        if (!this.stopping) this.o.onExit?.(`the CPU load (${STRESS_NG}) ended during the run (${signal ? `killed by ${signal}` : `exit code ${code}`})` +
          `${this.lastWords() ? `: ${this.lastWords()}` : ''}; see ${this.o.logFile}`);
        resolve({ code, signal });
      });
      proc.on('error', () => resolve({ code: null, signal: null })); // never started: there is nothing to wait for
    });
    /** @type {Error | null} */
    const failed = await new Promise((resolve) => {
      proc.once('spawn', () => resolve(null));
      proc.once('error', (e) => resolve(e));
    });
    if (failed) throw new Error(`the CPU load (${STRESS_NG}) could not be started: ${failed.message}`);
    const want = this.o.spec.policy;
    const deadline = Date.now() + timeout_ms;
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`the CPU load (${STRESS_NG}) exited at its start (${proc.signalCode ?? `exit code ${proc.exitCode}`})` +
          `${this.lastWords() ? `: ${this.lastWords()}` : ''}: \`${argv.join(' ')}\``);
      }
      const workers = this.workers();
      const priority = this.o.spec.priority ?? CPU_LOAD_FIFO_PRIORITY;
      const right = workers.filter((w) => w.policy === want && (want !== 'fifo' || w.priority === priority));
      if (workers.length >= this.shape.workers && right.length === workers.length) return workers;
      if (Date.now() > deadline) {
        throw new Error(`the CPU load (${STRESS_NG}) did not start ${this.shape.workers} worker(s) under ${want}` +
          `${want === 'fifo' ? ` priority ${this.o.spec.priority ?? CPU_LOAD_FIFO_PRIORITY}` : ''} within ${timeout_ms} ms (seen: ` +
          `${workers.map((w) => `${w.pid} ${w.policy} ${w.priority}`).join(', ') || 'none'}): \`${argv.join(' ')}\``);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** stress-ng's workers: its processes below the one it started as. */
  workers() {
    const pid = this.pid;
    if (!pid) return [];
    return processTree(pid, this.o.proc).filter((p) => p.pid !== pid).map(({ pid: w, policy, priority }) => ({ pid: w, policy, priority }));
  }

  /** CPU seconds stress-ng and its workers have used so far (live processes, from /proc). */
  cpuSeconds() {
    const pid = this.pid;
    if (!pid) return 0;
    return processTree(pid, this.o.proc).reduce((s, p) => s + p.ticks, 0) / CLOCK_TICKS_PER_S;
  }

  /** Whether stress-ng still runs. */
  running() {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  lastWords() {
    return this.stderr.trim().split('\n').pop() ?? '';
  }

  /**
   * Stops the load: SIGINT to its process group (stress-ng ends its workers and itself), SIGKILL to the group after
   * grace_ms. Safe to call more than once, and before start.
   * @param {number} [grace_ms]
   */
  async stop(grace_ms = 3000) {
    this.stopping = true;
    const proc = this.proc;
    if (!proc?.pid || !this.closed) return;
    const group = (/** @type {NodeJS.Signals} */ sig) => { try { process.kill(-(/** @type {number} */ (proc.pid)), sig); } catch { /* gone */ } };
    if (this.running()) group('SIGINT');
    const timer = setTimeout(() => group('SIGKILL'), grace_ms);
    await this.closed; // after every worker too: they hold its stderr
    clearTimeout(timer);
  }
}
