// @ts-check
// netem's public API: bring a run's network up (topology + bottleneck per backend), capture, play schedules,
// tear down. See docs/netem.md.
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { names, newId, checkId, DATA, INTERFACES, mgmtAddresses } from './names.js';
import { normalizeScenario } from '../scenarios/model.js';
import { planTopology, applyTopology, setDefaultCongestionControl } from './topology.js';
import { reserveMgmtSubnet, saveState, loadState, removeState } from './state.js';
import { makeWritableDirectory } from './dirs.js';
import { teardown } from './cleanup.js';
import { chooseBackend } from './backend.js';
import { KernelBackend } from './kernel-backend.js';
import { UserspaceBackend } from './userspace.js';
import { UmlBackend } from './uml/backend.js';
import { umlBinary } from './uml/guest.js';
import { LATENESS_LINK } from './uml/lateness.js';
import { hostKernelHz, umlKernelHz } from './kernel-hz.js';
import { Capture } from './captures.js';
import { CrossTraffic, crossTrafficEndpoints } from './cross.js';
import { markRuleLine, markTableRuleset, ruleCounters, MARK_TABLE } from './marking.js';
import { run, runChecked } from './exec.js';

export { cleanAll, teardown } from './cleanup.js';
export { chooseBackend } from './backend.js';
export { newId, DATA_PREFIX, MGMT_PREFIX } from './names.js';

/**
 * The steps of a network's set-up, in order; createNetwork reports each as it begins (`onPhase`).
 * @typedef {'claim' | 'mgmt-subnet' | 'topology' | 'congestion-control' | 'backend' | 'state'} SetupPhase
 */
/** @type {readonly SetupPhase[]} */
export const SETUP_PHASES = Object.freeze(['claim', 'mgmt-subnet', 'topology', 'congestion-control', 'backend', 'state']);

/** createNetwork's error when its `signal` stopped the set-up (everything it had made is removed by then). */
export class SetupInterrupted extends Error {}

/**
 * @typedef {{ id?: string, scenario: any, runDir: string, log?: (msg: string) => void, t0_ms?: number,
 *   backend?: 'auto' | 'kernel' | 'userspace' | 'uml', detached?: boolean, signal?: AbortSignal,
 *   onPhase?: (phase: SetupPhase) => void | Promise<void> }} CreateOptions
 *   scenario: a scenario (normalised here again through the scenario model, which also validates it);
 *   t0_ms: wall clock of schedule time 0 (the planned call start; default now): the userspace bottleneck gets it
 *   at spawn; backend: overrides scenario.backend; detached: processes outlive this Node process (the CLI);
 *   signal: interrupts the set-up (Ctrl-C): no step starts once it is aborted, the step in flight settles, then
 *   everything made so far is removed and createNetwork throws SetupInterrupted; onPhase: told as each step begins
 *   (awaited before the step runs).
 */

/**
 * Events a Network emits: 'event' for everything that happened to the network (capacity changes, cross traffic
 * started or stopped, a bottleneck that exited), as {event: name, ...fields}; 'failure' when something the run
 * depends on died while the network is up (a bottleneck, a capture), as {component, message}: a sentence with the
 * component's own last word.
 */

/**
 * Bring up a run's network. Everything is checked before anything is set up; on any failure during setup,
 * whatever was set up is removed again before the error is thrown.
 * @param {CreateOptions} o
 */
export async function createNetwork(o) {
  // Set-up stops between steps once interrupted, and removes what it made itself, after the step in flight has
  // settled: a teardown running beside the set-up would miss what that step still starts (an orphaned bottleneck).
  const interrupted = () => {
    if (o.signal?.aborted) throw new SetupInterrupted(`interrupted by ${o.signal.reason ?? 'a signal'} while the network was being set up`);
  };
  const phase = async (/** @type {SetupPhase} */ name) => {
    interrupted();
    await o.onPhase?.(name);
  };
  interrupted();
  const id = checkId(o.id ?? newId());
  // An id in use must fail here: the cleanup after a failed setup would tear the other run down.
  const taken = Object.values(names(id).namespaces).filter((ns) => existsSync(`/run/netns/${ns}`));
  if (taken.length) throw new Error(`run id ${id} is in use (${taken.join(', ')} exist${taken.length === 1 ? 's' : ''})`);
  const log = o.log ?? (() => {});
  const scenario = normalizeScenario(o.scenario ?? {});
  const links = scenario.network;
  const backend = await chooseBackend(o.backend ?? scenario.backend, links, id, { callDelays: scenario.calls.some((/** @type {any} */ c) => c.delay_ms !== null) });
  const runDir = makeWritableDirectory(o.runDir);
  const net = new Network({ id, scenario, links, runDir, log, backend, t0_ms: o.t0_ms ?? Date.now(), detached: !!o.detached });
  await phase('claim');
  claimRun(id, runDir, { detached: !!o.detached });
  try {
    await net.up(phase);
    await phase('state');
    saveState(id, { ...loadState(id), info: net.info, bottlenecks: net.backend.processes() });
    interrupted();
  } catch (e) {
    await net.down();
    // Ctrl-C also reaches the commands of the step in flight: their failure is the interrupt's.
    if (o.signal?.aborted && !(e instanceof SetupInterrupted)) {
      throw new SetupInterrupted(`interrupted by ${o.signal.reason ?? 'a signal'} while the network was being set up (${/** @type {Error} */ (e).message})`);
    }
    throw e;
  }
  return net;
}

/**
 * Records who owns run `id` and where its run directory is, before anything of it exists: `show` and `clean` find
 * it again (and the harness's clean, harness/leftovers.js, the manifest of a run whose owner was killed). `teardown(id)` (and
 * so `down()` and `clean`) removes the record; `releaseRun` does for a run that never brought a network up.
 * @param {string} id @param {string} runDir @param {{ detached?: boolean }} [o] detached: the network outlives its owner
 */
export function claimRun(id, runDir, o = {}) {
  saveState(id, { ...loadState(id), id, created: new Date().toISOString(), runDir, owner_pid: process.pid, detached: !!o.detached });
}

/** @param {string} id */
export function releaseRun(id) {
  removeState(id);
}

export class Network extends EventEmitter {
  /**
   * @param {{ id: string, scenario: any, links: { forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link, hops?: import('../scenarios/link.js').Link[] },
   *   runDir: string, log: (msg: string) => void, backend: { requested: string, used: 'kernel' | 'userspace' | 'uml', reason: string, kernel?: string },
   *   t0_ms: number, detached: boolean }} o
   */
  constructor(o) {
    super();
    this.o = o;
    this.id = o.id;
    this.links = o.links;
    this.runDir = o.runDir;
    this.t0_ms = o.t0_ms;
    const n = names(o.id);
    this.namespaces = n.namespaces;
    /** @type {any} */
    this.info = { id: o.id, namespaces: n.namespaces, data: { ...DATA }, interfaces: { ...INTERFACES }, mgmt: null, backend: o.backend,
      cross_traffic: crossTrafficEndpoints(o.scenario.cross_traffic) };
    const common = { nsExec: this.nsExec('r'), links: this.links, runDir: this.runDir, log: o.log, detached: o.detached,
      onEvent: (/** @type {import('./backend.js').BackendEvent} */ e) => this.backendEvent(e) };
    /** @type {import('./backend.js').Backend} */
    this.backend = o.backend.used === 'kernel' ? new KernelBackend(common)
      : o.backend.used === 'uml' ? new UmlBackend({ ...common, id: o.id, hostNsExec: common.nsExec, nsR: n.namespaces.r })
        : new UserspaceBackend({ ...common, t0_ms: o.t0_ms });
    /** @type {{ a?: Capture, b?: Capture }} */
    this.captures = {};
    /** @type {CrossTraffic | null} */
    this.cross = null;
    /** Set when down() begins: from then on nothing of the run starts. */
    this.isDown = false;
    /** @type {Promise<void> | null} */
    this.downDone = null;
    /** The start in flight (captures, schedules): down() lets it settle first, so it stops what that start made. */
    this.starting = Promise.resolve();
  }

  /** @param {import('./backend.js').BackendEvent} e */
  backendEvent(e) {
    if (this.isDown) return;
    this.emit('event', e);
    if (e.event === 'guest_exit') {
      this.emit('failure', { component: 'uml guest', message: `${e.message} during the run; its console: ${e.log}` });
    }
    if (e.event === 'bottleneck_exit') {
      const how = e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
      const which = e.hop === undefined ? e.direction : `hop ${e.hop} ${e.direction}`;
      this.emit('failure', { component: `userspace bottleneck (${which})`,
        message: `the userspace bottleneck (${which}) exited during the run (${how})` +
          (e.message ? `: ${e.message}` : `, with no message of its own; its log: ${e.log}`) });
    }
  }

  /** @param {'a'|'r'|'b'} host @returns {string[]} prefix to run a command in that host's namespace */
  nsExec(host) {
    const ns = this.namespaces[host];
    if (!ns) throw new Error(`host "${host}" is not one of a, r, b`);
    return ['ip', 'netns', 'exec', ns];
  }

  /**
   * The set-up's steps; `phase` is called (and awaited) before each: createNetwork's check for an interrupt.
   * @param {(name: SetupPhase) => Promise<void>} [phase]
   */
  async up(phase = async () => {}) {
    const { log, scenario } = this.o;
    await phase('mgmt-subnet');
    const mgmtN = await reserveMgmtSubnet(this.id);
    this.info.mgmt = mgmtAddresses(mgmtN);
    const cc = scenario.cross_traffic[0]?.congestion_control ?? 'cubic';
    await phase('topology');
    await applyTopology(planTopology(this.id, mgmtN), log);
    await phase('congestion-control');
    this.info.sysctl = await setDefaultCongestionControl(this.id, cc);
    if (!this.info.sysctl.set) log(`note: default congestion control ${cc} not set in a/b (${this.info.sysctl.error}); iperf3 sets it per flow with -C`);
    await phase('backend');
    await this.backend.start();
    // The kernel that ran Linux's qdiscs, for the manifest: the uml guest's (uname -r inside it) and its tick rate.
    if (this.backend instanceof UmlBackend) {
      // probe: how the guest's timer lateness is sampled (netem/uml/lateness.js): its checks are judged against it.
      this.info.backend = { ...this.info.backend, kernel: this.backend.kernel, kernel_hz: umlKernelHz(umlBinary() ?? ''),
        probe: { interval_ms: LATENESS_LINK.interval_ms, delay_ms: LATENESS_LINK.delay_ms } };
    } else if (this.info.backend.used === 'kernel') {
      this.info.backend = { ...this.info.backend, kernel_hz: hostKernelHz() };
    }
  }

  /**
   * tcpdump on a-eth0 (in a) and b-eth0 (in b); resolves when both are capturing.
   * @param {{ snaplen?: number }} [o]
   */
  async startCaptures(o = {}) {
    return this.startUnlessDown(() => this.doStartCaptures(o));
  }

  /**
   * Runs a start unless the network is going down (then it throws); down() waits for it to settle.
   * @param {() => Promise<void>} fn
   */
  async startUnlessDown(fn) {
    if (this.isDown) throw new Error(`network ${this.id} is being torn down: nothing more of it starts`);
    const p = fn();
    this.starting = p.catch(() => {});
    await p;
  }

  /** @param {{ snaplen?: number }} o */
  async doStartCaptures(o) {
    const snaplen = o.snaplen ?? this.o.scenario.capture.snaplen;
    for (const host of /** @type {const} */ (['a', 'b'])) {
      const c = new Capture({ nsExec: this.nsExec(host), dev: INTERFACES[host], snaplen,
        file: join(this.runDir, `capture-${host}.pcap`), logFile: join(this.runDir, `capture-${host}.log`),
        onExit: (message) => { if (!this.isDown) this.emit('failure', { component: `capture ${host}`, message }); } });
      this.captures[host] = c;
    }
    await Promise.all(Object.values(this.captures).map((c) => c.start()));
  }

  /** @returns {Promise<{ a: { packets: number | null, dropped_by_kernel: number | null }, b: { packets: number | null, dropped_by_kernel: number | null } }>} */
  async stopCaptures() {
    const none = { packets: null, dropped_by_kernel: null };
    const [a, b] = await Promise.all([this.captures.a?.stop() ?? none, this.captures.b?.stop() ?? none]);
    return { a, b };
  }

  /**
   * Start the capacity schedules and the cross traffic, counted from t0_ms (wall clock).
   * @param {number} [t0_ms]
   */
  async startSchedules(t0_ms = this.t0_ms) {
    return this.startUnlessDown(() => this.doStartSchedules(t0_ms));
  }

  /** @param {number} t0_ms */
  async doStartSchedules(t0_ms) {
    this.t0_ms = t0_ms;
    this.backend.startSchedules(t0_ms);
    const items = this.o.scenario.cross_traffic;
    if (items.length) {
      this.cross = new CrossTraffic({ items, duration_s: this.o.scenario.duration_s, runDir: this.runDir,
        nsExec: (h) => this.nsExec(h), onEvent: (e) => { if (!this.isDown) this.emit('event', e); } });
      await this.cross.start(t0_ms);
    }
  }

  /**
   * Sets the DSCP of a UDP flow's packets as they leave host a or b (nftables in its namespace, docs/netem.md).
   * @param {'a' | 'b'} host @param {import('./marking.js').MarkRule} rule
   */
  async markFlow(host, rule) {
    if (this.isDown) return;
    // `add` of an existing table or chain changes nothing: every batch can carry them.
    await runChecked([...this.nsExec(host), 'nft', '-f', '-'], { input: markTableRuleset() + markRuleLine(rule) });
  }

  /**
   * Gives each flow of `table` a propagation delay of its own, in both directions, instead of the links' (the userspace
   * bottleneck's delay line, after the shared queue: docs/netem.md, "Delay per call"). The whole table each time.
   * @param {import('./userspace.js').FlowDelay[]} table
   * @returns {Promise<number>} when both bottlenecks had it in force (epoch ms)
   */
  async setFlowDelays(table) {
    if (!(this.backend instanceof UserspaceBackend)) {
      throw new Error(`the ${this.info.backend.used} backend cannot give a flow a delay of its own (the userspace bottleneck can)`);
    }
    return this.backend.setFlowDelays(table);
  }

  /**
   * What each marking rule of a host has marked so far (empty when the host has none).
   * @param {'a' | 'b'} host
   */
  async markCounters(host) {
    const r = await run([...this.nsExec(host), 'nft', '-j', 'list', 'table', 'ip', MARK_TABLE]);
    return r.code === 0 ? ruleCounters(r.stdout) : [];
  }

  /**
   * Sends a flow a -> b (and its packets back) through the hops of its path: a chain of bottlenecks only
   * (network.hops; docs/netem.md, "A chain of bottlenecks"). Until then r forwards its packets through no hop.
   * @param {import('./chain.js').FlowMatch} flow @param {number[]} path
   */
  async routeFlow(flow, path) {
    if (this.isDown) return;
    if (!(this.backend instanceof UserspaceBackend)) throw new Error(`routeFlow: the ${this.info.backend.used} backend has no chain of bottlenecks`);
    await this.backend.routeFlow(flow, path);
  }

  /** What each rule of the chain has queued so far (empty without a chain). */
  async routeCounters() {
    return this.backend instanceof UserspaceBackend ? this.backend.routeCounters() : [];
  }

  /** Resolves once every capacity and delay step whose time has come has its event (applied or failed). */
  async schedulesSettled() {
    await this.backend.schedulesSettled();
  }

  /** False once a process the bottleneck needs has died (traffic in its direction has stopped). */
  bottleneckAlive() {
    return this.backend.alive();
  }

  /**
   * Per direction, the userspace bottleneck's latest counters (its stats line: packets forwarded, released late, ...);
   * null under the kernel backend.
   */
  bottleneckCounters() {
    return this.backend.counters();
  }

  /**
   * The uml backend's guest: its timer lateness and drops outside the qdiscs since the network was up, and its
   * lateness probe's coverage of `span` when given; else null.
   * @param {{ fromS: number, toS: number }} [span] epoch s
   */
  guestHealth(span) {
    return this.backend instanceof UmlBackend ? this.backend.health(span) : null;
  }

  /**
   * Kill every process of the run, delete namespaces, root veths and the nft table. Idempotent: a second call waits
   * for the first.
   */
  down() {
    this.downDone ??= this.stopEverything();
    return this.downDone;
  }

  async stopEverything() {
    this.isDown = true;
    await this.starting;
    await this.cross?.stop();
    await this.stopCaptures();
    await this.backend.stop();
    await teardown(this.id);
  }
}
