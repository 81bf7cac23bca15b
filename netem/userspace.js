// @ts-check
// The userspace backend: one rtclab-bottleneck process per direction in r, fed by an NFQUEUE rule
// (no --queue-bypass: while the bottleneck is not running, that direction carries nothing, and we say so); or, for a
// chain of bottlenecks (network.hops), one per hop and direction, fed by the chain's iptables rules (chain.js).
// UserspaceBackend is the backend interface (backend.js) over the two processes; UserspaceBottleneck is one process.
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { copyFileSync, existsSync, openSync, closeSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive, runChecked, run, sleep } from './exec.js';
import { INTERFACES } from './names.js';
import { linkSteps, stepEvent } from './steps.js';
import { hopName, hopQueueNum, routeCounters, routeRules, usedStages } from './chain.js';
import { reverseHop } from '../scenarios/chain.js';
import { plainLink } from '../scenarios/model.js';

/** How long after its time a step's record may take to reach the schedule log (its writer thread drains every
 * 2 ms and flushes every 500 ms: docs/bottleneck.md) before the step counts as not applied. */
const STEP_RECORD_WAIT_MS = 2000;

/** @typedef {import('./backend.js').Backend} Backend */

export const BOTTLENECK_BIN = process.env.RTCLAB_BOTTLENECK
  ?? fileURLToPath(new URL('./bottleneck/target/release/rtclab-bottleneck', import.meta.url));

/** Per direction: NFQUEUE number and the interfaces packets enter and leave r by. */
export const DIRECTIONS = Object.freeze({
  forward: { queue_num: 0, in: INTERFACES.r_a, out: INTERFACES.r_b },
  reverse: { queue_num: 1, in: INTERFACES.r_b, out: INTERFACES.r_a },
});

/**
 * The iptables rule that hands a direction's forwarded packets to the bottleneck.
 * @param {'-A' | '-D'} op @param {'forward' | 'reverse'} direction
 */
export function nfqueueRule(op, direction) {
  const d = DIRECTIONS[direction];
  return ['iptables', '-w', '-t', 'mangle', op, 'FORWARD', '-i', d.in, '-o', d.out, '-j', 'NFQUEUE', '--queue-num', String(d.queue_num)];
}

export function checkBottleneckBuilt() {
  if (!existsSync(BOTTLENECK_BIN)) {
    throw new Error(`userspace bottleneck not built: ${BOTTLENECK_BIN} is missing (cargo build --release in netem/bottleneck)`);
  }
}

/** The line the bottleneck prints once a flow table is in force. */
const FLOW_DELAYS_IN_FORCE = /^flow delays \d+ in force$/;

/**
 * A flow with a propagation delay of its own: its two endpoints ("ADDRESS:PORT", either direction), the delay.
 * @typedef {{ a: string, b: string, delay_ms: number }} FlowDelay
 */

export class UserspaceBottleneck extends EventEmitter {
  /**
   * @param {{ nsExec: string[], direction: 'forward' | 'reverse', link: import('../scenarios/link.js').Link, runDir: string,
   *   t0_ns: bigint, detached?: boolean, stats_interval_ms?: number, hop?: number }} o
   *   detached: the process outlives this Node process (the CLI's `up`); hop: this is hop `hop` of a chain (its
   *   packets come from the chain's rules of each flow, not from a rule of its own)
   */
  constructor(o) {
    super();
    this.o = o;
    /** The stem of its files: the direction, or hop<i>-<direction> in a chain. */
    this.name = o.hop === undefined ? o.direction : hopName(o.hop, o.direction);
    this.queueNum = o.hop === undefined ? DIRECTIONS[o.direction].queue_num : hopQueueNum(o.hop, o.direction);
    this.config = join(o.runDir, `bottleneck-${this.name}.json`);
    this.gtlog = join(o.runDir, `bottleneck-${this.name}.gtlog`);
    this.stats = join(o.runDir, `bottleneck-${this.name}.stats.jsonl`);
    this.logFile = join(o.runDir, `bottleneck-${this.name}.log`);
    /** When each capacity and delay step came into force (docs/bottleneck-log.md, "Schedule log"). */
    this.schedule = join(o.runDir, `bottleneck-${this.name}.schedule.jsonl`);
    /** How many times schedule time 0 was restarted (restartSchedule): the schedule log counts them too. */
    this.restarts = 0;
    /** The next time 0 (epoch ns), written before each restart's SIGUSR1 (the bottleneck's --t0-file). */
    this.t0File = join(o.runDir, `bottleneck-${this.name}.t0`);
    /** The flows with a delay of their own (the bottleneck's --flow-delays-file, read on SIGUSR2: setFlowDelays). */
    this.flowDelaysFile = join(o.runDir, `bottleneck-${this.name}.flows.json`);
    /** How many flow tables were handed over: each names itself by this number, which the bottleneck prints back. */
    this.flowDelayGeneration = 0;
    /** The meters' action log (docs/bottleneck-log.md), only when the link has meters. */
    this.actions = o.link.qdisc.kind === 'prio' && o.link.qdisc.meters?.length ? join(o.runDir, `bottleneck-${this.name}.actions.jsonl`) : null;
    /** @type {number | null} */
    this.pid = null;
    this.exited = false;
    this.stopping = false;
    this.ruleAdded = false;
  }

  log() {
    try { return readFileSync(this.logFile, 'utf8'); } catch { return ''; }
  }

  /**
   * The link as this process runs it: a trace is first copied into the run directory (`trace-<direction>`, in a
   * chain `trace-hop<i>-<direction>`) and played from there, so the run keeps the very file its capacity came from
   * (the analyzer reads it there).
   */
  runnableLink() {
    const { link, runDir } = this.o;
    if (!link.rate?.trace) return link;
    const copy = resolve(runDir, `trace-${this.name}`);
    if (resolve(link.rate.trace) !== copy) copyFileSync(link.rate.trace, copy);
    return { ...link, rate: { ...link.rate, trace: copy } };
  }

  /** Spawn, wait for `ready`, then add the NFQUEUE rule (a hop of a chain: the rules of each flow feed it). */
  async start(timeout_ms = 5000) {
    checkBottleneckBuilt();
    const { nsExec, direction, t0_ns } = this.o;
    const name = this.name;
    writeFileSync(this.config, JSON.stringify(this.runnableLink(), null, 2) + '\n');
    const argv = [...nsExec, BOTTLENECK_BIN, '--queue-num', String(this.queueNum), '--direction', direction,
      '--config', this.config, '--log', this.gtlog, '--stats', this.stats,
      '--stats-interval-ms', String(this.o.stats_interval_ms ?? 100), '--t0-ns', String(t0_ns), '--t0-file', this.t0File, '--schedule', this.schedule,
      '--flow-delays-file', this.flowDelaysFile,
      ...(this.actions ? ['--actions', this.actions] : []),
      // A hop's kernel timestamp is the packet's arrival in r, before the hops ahead of it: it takes its own clock.
      ...(this.o.hop === undefined ? [] : ['--own-clock-arrivals'])];
    // stdout+stderr to a file: works the same when the process outlives us (CLI), and keeps its messages.
    const fd = openSync(this.logFile, 'w');
    // Own process group: a Ctrl-C meant for the harness does not stop the bottleneck before the teardown does.
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    this.pid = proc.pid ?? null;
    this.proc = proc;
    proc.on('exit', (code, signal) => {
      this.exited = true;
      if (!this.stopping) this.emit('exit', { code, signal });
    });
    if (this.o.detached) proc.unref();
    const deadline = Date.now() + timeout_ms;
    while (!/^ready$/m.test(this.log())) {
      if (this.exited || (this.pid !== null && !alive(this.pid))) {
        throw new Error(`userspace bottleneck (${name}) exited before it was ready: ${this.log().trim() || '(no message)'}`);
      }
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`userspace bottleneck (${name}) did not print "ready" within ${timeout_ms} ms: ${this.log().trim() || '(no message)'}`);
      }
      await sleep(10);
    }
    if (this.o.hop !== undefined) return;
    await runChecked([...nsExec, ...nfqueueRule('-A', direction)]);
    this.ruleAdded = true;
  }

  alive() {
    return this.pid !== null && !this.exited && alive(this.pid);
  }

  /**
   * Its latest whole stats line (counts since its start, docs/run-directory.md), at most one stats interval old while
   * it runs; null before the first line or if the file is unreadable.
   * @returns {Record<string, number> | null}
   */
  lastCounters() {
    let text;
    try {
      text = readFileSync(this.stats, 'utf8');
    } catch {
      return null; // not written yet
    }
    // Only lines that end in a newline: the writer thread may be in the middle of the next one.
    const whole = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
    try {
      return whole.length ? JSON.parse(whole[whole.length - 1]) : null;
    } catch {
      return null; // a damaged line (a disk that filled): no counters to vouch for the run
    }
  }

  /** Its last line that is not the "ready" handshake: its own last word when it exits. */
  lastMessage() {
    return this.log().trimEnd().split('\n').filter((l) => l && l !== 'ready' && !FLOW_DELAYS_IN_FORCE.test(l)).pop() ?? '';
  }

  /**
   * Gives the flows of `table` a propagation delay of their own (docs/netem.md, "Delay per call"): written to its
   * --flow-delays-file, then SIGUSR2; resolves with the time (epoch ms) at which the bottleneck said the table is in
   * force, and throws when it did not say so within timeout_ms (its stderr names why).
   * @param {FlowDelay[]} table @param {number} [timeout_ms]
   */
  async setFlowDelays(table, timeout_ms = 2000) {
    if (!this.alive()) throw new Error(`userspace bottleneck (${this.name}) is not running`);
    const generation = ++this.flowDelayGeneration;
    writeFileSync(`${this.flowDelaysFile}.tmp`, JSON.stringify({ generation, flows: table }) + '\n');
    renameSync(`${this.flowDelaysFile}.tmp`, this.flowDelaysFile);
    process.kill(/** @type {number} */ (this.pid), 'SIGUSR2');
    const deadline = Date.now() + timeout_ms;
    const said = new RegExp(`^flow delays ${generation} in force$`, 'm');
    while (!said.test(this.log())) {
      if (Date.now() > deadline || !this.alive()) {
        throw new Error(`userspace bottleneck (${this.name}) did not put flow table ${generation} in force within ${timeout_ms} ms: ${this.lastMessage() || '(no message)'}`);
      }
      await sleep(5);
    }
    return Date.now();
  }

  /**
   * Time 0 of the link's rate and delay schedules or trace becomes t0_ms: written to its --t0-file, then SIGUSR1 tells
   * the bottleneck, which takes that time 0 (or the signal's arrival, were it later). Sent ahead of t0, a restart is
   * on time however late this process would have fired a timer for it. @param {number} t0_ms epoch ms
   */
  restartSchedule(t0_ms) {
    if (!this.alive()) return;
    writeFileSync(`${this.t0File}.tmp`, `${BigInt(Math.round(t0_ms * 1000)) * 1000n}\n`);
    renameSync(`${this.t0File}.tmp`, this.t0File);
    process.kill(/** @type {number} */ (this.pid), 'SIGUSR1');
    this.restarts++;
  }

  /**
   * The schedule log's record of a step since the given restart, or null (not yet, or the log is unreadable).
   * @param {'capacity' | 'delay'} kind @param {number} index @param {number} restart
   * @returns {{ in_force_ns: number, noticed_ns: number } | null}
   */
  stepRecord(kind, index, restart) {
    let text;
    try { text = readFileSync(this.schedule, 'utf8'); } catch { return null; }
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (!line) continue;
      try {
        const r = JSON.parse(line);
        if (r.kind === kind && r.index === index && r.restart === restart) return r;
      } catch { /* a damaged line: not this step's record */ }
    }
    return null;
  }

  /**
   * Remove the rule, SIGTERM, wait; SIGKILL after timeout_ms. Idempotent.
   * @returns {Promise<'not running' | 'exited' | 'killed'>} killed: its log may end early
   */
  async stop(timeout_ms = 3000) {
    this.stopping = true;
    if (this.ruleAdded) {
      await run([...this.o.nsExec, ...nfqueueRule('-D', this.o.direction)]);
      this.ruleAdded = false;
    }
    if (this.pid === null || !alive(this.pid)) return 'not running';
    try { process.kill(this.pid, 'SIGTERM'); } catch { /* gone */ }
    const deadline = Date.now() + timeout_ms;
    while (alive(this.pid) && Date.now() < deadline) await sleep(10);
    if (!alive(this.pid)) return 'exited';
    try { process.kill(this.pid, 'SIGKILL'); } catch { /* gone */ }
    return 'killed';
  }
}

/** @implements {Backend} */
export class UserspaceBackend {
  /**
   * @param {{ nsExec: string[], links: { forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link,
   *   hops?: import('../scenarios/link.js').Link[] }, runDir: string, t0_ms: number, detached: boolean, log: (msg: string) => void,
   *   onEvent: (e: import('./backend.js').BackendEvent) => void }} o
   */
  constructor(o) {
    this.o = o;
    /** @type {UserspaceBottleneck[]} */
    this.bottlenecks = [];
    /** @type {NodeJS.Timeout[]} */
    this.timers = [];
    /** Steps waiting for their record (schedulesSettled). @type {Set<Promise<void>>} */
    this.pending = new Set();
    this.stopping = false;
  }

  /** The bottlenecks to run: one per direction, or one per hop and direction for a chain (network.hops). */
  plan() {
    const hops = this.o.links.hops ?? [];
    /** @type {{ direction: 'forward' | 'reverse', link: import('../scenarios/link.js').Link, hop?: number }[]} */
    const out = [];
    if (!hops.length) {
      for (const direction of /** @type {const} */ (['forward', 'reverse'])) out.push({ direction, link: this.o.links[direction] });
      return out;
    }
    const plain = plainLink();
    hops.forEach((link, hop) => {
      out.push({ direction: 'forward', link, hop });
      out.push({ direction: 'reverse', link: reverseHop(link, plain), hop });
    });
    return out;
  }

  async start() {
    const t0_ns = BigInt(Math.round(this.o.t0_ms * 1000)) * 1000n;
    for (const { direction, link, hop } of this.plan()) {
      const b = new UserspaceBottleneck({ nsExec: this.o.nsExec, direction, link, hop, runDir: this.o.runDir, t0_ns, detached: this.o.detached });
      this.bottlenecks.push(b);
      b.on('exit', (/** @type {{code: number | null, signal: string | null}} */ { code, signal }) => {
        this.o.onEvent({ event: 'bottleneck_exit', direction, ...(hop === undefined ? {} : { hop }), code, signal, message: b.lastMessage(), log: b.logFile });
      });
      await b.start();
      this.o.log(`userspace bottleneck ${b.name} ready (pid ${b.pid})`);
    }
  }

  /**
   * Sends a flow through the hops of its path (a chain only): a rule for its 5-tuple at each hop's stage, both ways.
   * @param {import('./chain.js').FlowMatch} flow @param {number[]} path
   */
  async routeFlow(flow, path) {
    const n = this.o.links.hops?.length ?? 0;
    if (!n) throw new Error('routeFlow: the network has no chain of bottlenecks (network.hops)');
    for (const argv of routeRules(flow, path, n)) await runChecked([...this.o.nsExec, ...argv]);
  }

  /** What each hop rule has queued so far (empty without a chain). */
  async routeCounters() {
    const out = [];
    for (const stage of usedStages(this.o.links.hops?.length ?? 0)) {
      const r = await run([...this.o.nsExec, 'iptables', '-w', '-t', stage.table, '-L', stage.chain, '-v', '-x', '-n']);
      if (r.code === 0) out.push(...routeCounters(r.stdout, stage));
    }
    return out;
  }

  /**
   * Schedule time 0 is t0_ms: each bottleneck is told now (restartSchedule) and restarts its rate and delay schedules or
   * trace from t0 (or from the signal's arrival, had t0 passed by then). Each step's event follows the bottleneck's own
   * record of it (its schedule log): in force from that time 0 + at_s.
   * @param {number} t0_ms
   */
  startSchedules(t0_ms) {
    for (const b of this.bottlenecks) {
      const restart = b.restarts + 1;
      b.restartSchedule(t0_ms); // now, ahead of t0: the bottleneck waits for t0 itself
      for (const step of linkSteps(b.o.link)) {
        this.timers.push(setTimeout(() => this.settle(this.awaitStep(b, step, restart, t0_ms)),
          Math.max(0, t0_ms + step.at_s * 1000 - Date.now())));
      }
    }
  }

  /**
   * A step's event, once the bottleneck recorded it (polled from its time on), or its failure: no record within
   * STEP_RECORD_WAIT_MS of its time, or the bottleneck gone.
   * @param {UserspaceBottleneck} b @param {import('./steps.js').Step} step @param {number} restart @param {number} t0_ms
   */
  async awaitStep(b, step, restart, t0_ms) {
    const deadline = t0_ms + step.at_s * 1000 + STEP_RECORD_WAIT_MS;
    for (;;) {
      const r = b.stepRecord(step.kind, step.index, restart);
      if (r) {
        this.o.onEvent(stepEvent({ step, direction: b.o.direction, t0_ms, applied_ns: r.in_force_ns, by: 'userspace bottleneck',
          extra: { noticed_ns: r.noticed_ns, ...hopField(b) } }));
        return;
      }
      const why = this.stopping ? 'the network stopped first' : !b.alive() ? 'the bottleneck is not running'
        : Date.now() > deadline ? `no record of it in ${b.schedule} within ${STEP_RECORD_WAIT_MS} ms of its time` : null;
      if (why) {
        this.o.onEvent(stepEvent({ step, direction: b.o.direction, t0_ms, applied_ns: null, by: 'userspace bottleneck',
          extra: hopField(b), error: `${b.name}: ${step.kind} step ${step.index} (at ${step.at_s} s) not applied: ${why}` }));
        return;
      }
      await sleep(10);
    }
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

  alive() {
    return this.bottlenecks.every((b) => b.alive());
  }

  processes() {
    return this.bottlenecks.map((b) => ({ direction: b.o.direction, ...hopField(b), pid: b.pid, log: b.logFile }));
  }

  counters() {
    return Object.fromEntries(this.bottlenecks.map((b) => [b.name, b.lastCounters()]));
  }

  /**
   * Both directions' bottlenecks take the flow table (a flow's packets both ways get its delay).
   * @param {FlowDelay[]} table
   * @returns {Promise<number>} when the later of the two said it is in force (epoch ms)
   */
  async setFlowDelays(table) {
    const times = await Promise.all(this.bottlenecks.map((b) => b.setFlowDelays(table)));
    return Math.max(...times);
  }

  async stop() {
    for (const t of this.timers) clearTimeout(t);
    // As a single bottleneck's rule goes before its process: no packet is queued to a hop that is stopping.
    for (const stage of usedStages(this.o.links.hops?.length ?? 0)) {
      await run([...this.o.nsExec, 'iptables', '-w', '-t', stage.table, '-F', stage.chain]);
    }
    for (const b of this.bottlenecks) {
      if ((await b.stop()) === 'killed') this.o.log(`warning: the ${b.name} bottleneck ignored SIGTERM and was killed: its ground-truth log may end early`);
    }
    // A step still waiting for its record reads the log its bottleneck closed, once more, then fails.
    this.stopping = true;
    await this.schedulesSettled();
  }
}

/**
 * `{hop}` for a hop of a chain, else nothing: events and processes name the hop.
 * @param {UserspaceBottleneck} b @returns {Record<string, number>}
 */
function hopField(b) {
  return b.o.hop === undefined ? {} : { hop: b.o.hop };
}
