// @ts-check
// The uml backend: Linux's own qdiscs in a user-mode Linux guest that routes between a and b in place of r's host
// kernel. The guest takes r's two data veths (raw transport) and r's addresses; the host side of r keeps them up with
// no address and no forwarding. The kernel backend's tc plan runs unchanged in the guest (its nsExec prefix is
// netem/uml/exec.js); qdisc statistics are sampled in the guest the same way. docs/netem.md, "uml".
import { join } from 'node:path';
import { appendFileSync, readFileSync } from 'node:fs';
import { KernelBackend } from '../kernel-backend.js';
import { OFFLOADS_OFF } from '../topology.js';
import { DATA, INTERFACES } from '../names.js';
import { runPlan } from '../exec.js';
import { startGuest, stopGuest, guestExecPrefix, channelDir, guestRun } from './guest.js';
import { timerSummary, linkDrops } from './health.js';

/**
 * On the host, in r: the data veths lose their addresses and r stops forwarding (the guest does both now).
 * @param {string[]} hostNsExec prefix for r on the host
 * @returns {string[][]}
 */
export function planHostSide(hostNsExec) {
  return [
    [...hostNsExec, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=0'],
    [...hostNsExec, 'ip', 'addr', 'flush', 'dev', INTERFACES.r_a],
    [...hostNsExec, 'ip', 'addr', 'flush', 'dev', INTERFACES.r_b],
  ];
}

/**
 * In the guest: vec0/vec1 take r's interface names (so the kernel plan and its statistics name the same devices under
 * both backends) and addresses; offloads off as on the host's veths. The vector driver's raw transport turns TSO and
 * GRO on each time the device opens (vector_net_open builds its transport and sets them), which would hand the
 * qdiscs GRO-merged packets (one CE mark or one drop for several segments, a 64 KB "packet" in TBF): so offloads go
 * off after `up`, and the plan checks they are off.
 * @param {string[]} guestExec prefix that runs a command in the guest
 * @returns {string[][]}
 */
export function planGuestSide(guestExec) {
  /** @type {string[][]} */
  const plan = [];
  const devs = /** @type {const} */ ([['vec0', INTERFACES.r_a, DATA.r_a], ['vec1', INTERFACES.r_b, DATA.r_b]]);
  for (const [vec, dev, addr] of devs) {
    plan.push([...guestExec, 'ip', 'link', 'set', vec, 'name', dev]);
    plan.push([...guestExec, 'ip', 'addr', 'add', `${addr}/24`, 'dev', dev]);
    plan.push([...guestExec, 'ip', 'link', 'set', dev, 'up']);
    plan.push([...guestExec, 'ethtool', '-K', dev, ...OFFLOADS_OFF]);
    plan.push([...guestExec, 'sh', '-c', offloadsOffCheck(dev)]);
  }
  return plan;
}

/** A sh check that dev's segmentation and receive offloads are really off. @param {string} dev */
function offloadsOffCheck(dev) {
  const features = ['tcp-segmentation-offload', 'generic-segmentation-offload', 'generic-receive-offload'];
  const on = features.map((f) => `ethtool -k ${dev} | grep -q '^${f}: on' && echo '${dev}: ${f} is still on';`).join(' ');
  return `bad=$(${on} true); [ -z "$bad" ] || { echo "$bad" >&2; exit 1; }`;
}

/** @typedef {import('../backend.js').Backend} Backend */

/** @implements {Backend} */
export class UmlBackend extends KernelBackend {
  /**
   * @param {{ id: string, hostNsExec: string[], nsR: string, links: { forward: import('../../scenarios/link.js').Link, reverse: import('../../scenarios/link.js').Link },
   *   runDir: string, detached: boolean, log: (msg: string) => void, onEvent: (e: import('../backend.js').BackendEvent) => void }} o
   */
  constructor(o) {
    super({ ...o, nsExec: guestExecPrefix(o.id) });
    this.uml = o;
    /** @type {number | null} */
    this.pid = null;
    /** @type {string | null} */
    this.kernel = null;
    this.guestAlive = false;
    this.consoleLog = join(o.runDir, 'uml-console.log');
    // The guest's health probe (timer_probe.py): its timer lateness and its drops outside the qdiscs.
    this.probe = { timer: join(o.runDir, 'uml-timer.jsonl'), links: join(o.runDir, 'uml-links.jsonl') };
    /** When the network was up (epoch s): the guest's health counts from then, not from its boot. */
    this.upAt = Infinity;
  }

  async start() {
    const o = this.uml;
    await runPlan(planHostSide(o.hostNsExec), o.log);
    o.log(`uml guest: booting in ${o.nsR} on ${INTERFACES.r_a}, ${INTERFACES.r_b} (console ${this.consoleLog})`);
    const g = await startGuest({ id: o.id, nsR: o.nsR, devs: [INTERFACES.r_a, INTERFACES.r_b], consoleLog: this.consoleLog,
      detached: o.detached, probe: this.probe, onExit: (code, signal) => {
        this.guestAlive = false;
        if (!this.stopped) {
          o.onEvent({ event: 'guest_exit', code, signal, message: `the uml guest exited (${signal ?? `exit code ${code}`})`, log: this.consoleLog });
        }
      } });
    this.pid = g.pid;
    this.kernel = g.kernel;
    this.guestAlive = true;
    o.log(`uml guest: pid ${g.pid}, kernel ${g.kernel}`);
    await runPlan(planGuestSide(guestExecPrefix(o.id)), o.log);
    await super.start();
    this.upAt = Date.now() / 1000;
  }

  /**
   * The guest's timer lateness and drops outside the qdiscs since the network was up (netem/uml/health.js).
   * @returns {import('./health.js').GuestHealth}
   */
  health() {
    /** @param {string} file */
    const read = (file) => { try { return readFileSync(file, 'utf8'); } catch { return ''; } };
    return { timer: timerSummary(read(this.probe.timer), this.upAt), drops: linkDrops(read(this.probe.links), this.upAt) };
  }

  /** False once the guest has exited (nothing crosses r without it). */
  alive() {
    return this.guestAlive;
  }

  /** @returns {{ direction: string, pid: number | null, log: string }[]} */
  processes() {
    return this.pid ? [{ direction: 'both (uml guest)', pid: this.pid, log: this.consoleLog }] : [];
  }

  /** `tc -s -j qdisc show` in the guest every interval_ms, through the channel in this process (no exec.js per sample). */
  startStats(interval_ms = 500) {
    let busy = false;
    const chan = channelDir(this.uml.id);
    const sample = async () => {
      if (busy || this.stopped) return;
      busy = true;
      const r = await guestRun(chan, ['tc', '-s', '-j', 'qdisc', 'show'], { timeout_ms: 10000 });
      if (r.code === 0 && !this.stopped) {
        try {
          appendFileSync(this.statsFile, JSON.stringify({ t: Date.now() / 1000, ns: 'r', guest: 'uml', qdiscs: JSON.parse(r.stdout) }) + '\n');
        } catch { /* the run directory went away */ }
      }
      busy = false;
    };
    void sample();
    this.timers.push(setInterval(sample, interval_ms));
  }

  async stop() {
    await super.stop();
    await stopGuest(this.uml.id, this.pid);
    this.guestAlive = false;
  }
}
