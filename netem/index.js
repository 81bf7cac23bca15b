// @ts-check
// netem's public API: bring a run's network up (topology + bottleneck per backend), capture, play schedules,
// tear down. See docs/netem.md.
import { EventEmitter } from 'node:events';
import { mkdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { names, newId, checkId, DATA, INTERFACES, mgmtAddresses } from './names.js';
import { normalizeNetwork } from './link.js';
import { planTopology, applyTopology, setDefaultCongestionControl } from './topology.js';
import { reserveMgmtSubnet } from './state.js';
import { teardown } from './cleanup.js';
import { chooseBackend } from './backend.js';
import { KernelBackend } from './kernel-backend.js';
import { UserspaceBottleneck } from './userspace.js';
import { Capture } from './captures.js';
import { CrossTraffic } from './cross.js';

export { cleanAll, teardown } from './cleanup.js';
export { loadScenarioNetwork } from './scenario.js';
export { normalizeLink, normalizeNetwork } from './link.js';

/**
 * @typedef {{ id?: string, scenario: any, runDir: string, log?: (msg: string) => void, t0_ms?: number,
 *   backend?: 'auto' | 'kernel' | 'userspace', detached?: boolean }} CreateOptions
 *   scenario: normalized scenario (its network is normalized again here, which also validates it);
 *   t0_ms: wall clock of schedule time 0 (the planned call start; default now): the userspace bottleneck gets it
 *   at spawn; backend: overrides scenario.backend; detached: processes outlive this Node process (the CLI).
 */

/**
 * Bring up a run's network. Everything is checked before anything is set up; on any failure during setup,
 * whatever was set up is removed again before the error is thrown.
 * @param {CreateOptions} o
 */
export async function createNetwork(o) {
  const id = checkId(o.id ?? newId());
  // An id in use must fail here: the cleanup after a failed setup would tear the other run down.
  const taken = Object.values(names(id).namespaces).filter((ns) => existsSync(`/run/netns/${ns}`));
  if (taken.length) throw new Error(`run id ${id} is in use (${taken.join(', ')} exist${taken.length === 1 ? 's' : ''})`);
  const log = o.log ?? (() => {});
  const scenario = o.scenario ?? {};
  const links = normalizeNetwork(scenario.network);
  const backend = await chooseBackend(o.backend ?? scenario.backend ?? 'auto', links);
  const runDir = resolve(o.runDir);
  mkdirSync(runDir, { recursive: true });
  const net = new Network({ id, scenario, links, runDir, log, backend, t0_ms: o.t0_ms ?? Date.now(), detached: !!o.detached });
  try {
    await net.up();
  } catch (e) {
    await net.down();
    throw e;
  }
  return net;
}

export class Network extends EventEmitter {
  /**
   * @param {{ id: string, scenario: any, links: { forward: import('./link.js').Link, reverse: import('./link.js').Link },
   *   runDir: string, log: (msg: string) => void, backend: { requested: string, used: 'kernel' | 'userspace', reason: string },
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
    this.info = { id: o.id, namespaces: n.namespaces, data: { ...DATA }, interfaces: { ...INTERFACES }, mgmt: null, backend: o.backend };
    /** @type {UserspaceBottleneck[]} */
    this.bottlenecks = [];
    /** @type {KernelBackend | null} */
    this.kernel = null;
    /** @type {{ a?: Capture, b?: Capture }} */
    this.captures = {};
    /** @type {CrossTraffic | null} */
    this.cross = null;
    this.isDown = false;
    /** @type {NodeJS.Timeout[]} */
    this.timers = [];
  }

  /** @param {'a'|'r'|'b'} host @returns {string[]} prefix to run a command in that host's namespace */
  nsExec(host) {
    const ns = this.namespaces[host];
    if (!ns) throw new Error(`host "${host}" is not one of a, r, b`);
    return ['ip', 'netns', 'exec', ns];
  }

  async up() {
    const { log, scenario } = this.o;
    const mgmtN = await reserveMgmtSubnet(this.id);
    this.info.mgmt = mgmtAddresses(mgmtN);
    const cc = scenario.cross_traffic?.[0]?.congestion_control ?? 'cubic';
    await applyTopology(planTopology(this.id, mgmtN), log);
    this.info.sysctl = await setDefaultCongestionControl(this.id, cc);
    if (!this.info.sysctl.set) log(`note: default congestion control ${cc} not set in a/b (${this.info.sysctl.error}); iperf3 sets it per flow with -C`);
    if (this.info.backend.used === 'kernel') {
      this.kernel = new KernelBackend({ nsExec: this.nsExec('r'), links: this.links, runDir: this.runDir, log,
        onEvent: (e) => this.emit('event', e) });
      await this.kernel.start();
      if (!this.o.detached) this.kernel.startStats(500);
    } else {
      const t0_ns = BigInt(Math.round(this.t0_ms * 1000)) * 1000n;
      for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
        const b = new UserspaceBottleneck({ nsExec: this.nsExec('r'), direction, link: this.links[direction],
          runDir: this.runDir, t0_ns, detached: this.o.detached });
        this.bottlenecks.push(b);
        b.on('exit', (info) => { if (!this.isDown) this.emit('bottleneck-exit', info); });
        await b.start();
        log(`userspace bottleneck ${direction} ready (pid ${b.pid})`);
      }
    }
  }

  /**
   * tcpdump on a-eth0 (in a) and b-eth0 (in b); resolves when both are capturing.
   * @param {{ snaplen?: number }} [o]
   */
  async startCaptures(o = {}) {
    const snaplen = o.snaplen ?? this.o.scenario.capture?.snaplen ?? 256;
    for (const host of /** @type {const} */ (['a', 'b'])) {
      const c = new Capture({ nsExec: this.nsExec(host), dev: INTERFACES[host], snaplen,
        file: join(this.runDir, `capture-${host}.pcap`), logFile: join(this.runDir, `capture-${host}.log`) });
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
   * Start cross traffic and (kernel backend) the capacity schedule, relative to t0_ms.
   * The userspace bottleneck plays its capacity schedule from the t0 it got at createNetwork.
   * @param {number} [t0_ms]
   */
  async startSchedules(t0_ms = this.t0_ms) {
    // The userspace bottlenecks count their rate schedule from the moment they get SIGUSR1 ("schedule time 0 is
    // now"), so it is sent at t0 itself, which may still be ahead.
    const untilT0 = t0_ms - Date.now();
    for (const b of this.bottlenecks) {
      if (untilT0 > 0) this.timers.push(setTimeout(() => b.restartSchedule(), untilT0));
      else b.restartSchedule();
    }
    this.t0_ms = t0_ms;
    this.kernel?.startSchedule(t0_ms);
    // The userspace bottleneck plays its schedule itself (from createNetwork's t0): the same events, for the record.
    for (const b of this.bottlenecks) {
      for (const step of b.o.link.rate?.schedule?.slice(1) ?? []) {
        this.timers.push(setTimeout(() => this.emit('event', { event: 'capacity_change', direction: b.o.direction, kbit: step.kbit,
          at_s: step.at_s, ok: b.alive(), by: 'userspace bottleneck' }), Math.max(0, this.t0_ms + step.at_s * 1000 - Date.now())));
      }
    }
    const items = this.o.scenario.cross_traffic ?? [];
    if (items.length) {
      this.cross = new CrossTraffic({ items, duration_s: this.o.scenario.duration_s ?? 60, runDir: this.runDir,
        nsExec: (h) => this.nsExec(h), onEvent: (e) => this.emit('event', e) });
      await this.cross.start(t0_ms);
    }
  }

  /** False if a userspace bottleneck exited while the run is up (traffic in its direction has stopped). */
  bottleneckAlive() {
    return this.bottlenecks.every((b) => b.alive());
  }

  /** Kill every process of the run, delete namespaces, root veths and the nft table. Idempotent. */
  async down() {
    if (this.isDown) return;
    this.isDown = true;
    for (const t of this.timers) clearTimeout(t);
    await this.cross?.stop();
    await this.stopCaptures();
    await this.kernel?.stop();
    for (const b of this.bottlenecks) {
      if ((await b.stop()) === 'killed') this.o.log(`warning: the ${b.o.direction} bottleneck ignored SIGTERM and was killed: its ground-truth log may end early`);
    }
    await teardown(this.id);
  }
}

export { chooseBackend } from './backend.js';
