// @ts-check
// The uml backend: Linux's own qdiscs in a user-mode Linux guest that routes between a and b in place of r's host
// kernel. The guest takes r's two data veths (raw transport) and r's addresses; the host side of r keeps them up with
// no address and no forwarding. The kernel backend's tc plan runs unchanged in the guest, as one script through the
// channel (guestRunPlan); qdisc statistics are sampled there too. A third device, on a veth pair of its own, carries
// the host's probe of the guest kernel's timers (lateness.js). docs/netem.md, "uml".
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { KernelBackend, KERNEL_DEVICES, planKernelNetwork } from '../kernel-backend.js';
import { planScheduleSteps } from '../kernel.js';
import { OFFLOADS_OFF } from '../topology.js';
import { DATA, INTERFACES } from '../names.js';
import { runPlan, sleep } from '../exec.js';
import { startGuest, stopGuest, guestExecPrefix, channelDir, guestRunPlan, guestScript, readOr, shQuote, stepOutput } from './guest.js';
import { timerSummary, linkDrops, probeCoverage } from './health.js';
import { LATENESS_LINK, startLatenessProbe } from './lateness.js';
import { readStepResult, stepArgs, stepEvent } from '../steps.js';

const L = LATENESS_LINK;

/**
 * On the host, in r: the data veths lose their addresses and r stops forwarding (the guest does both now); the
 * lateness probe's veth pair (r's IPv6 is off, so nothing but the probe's pings crosses it), the host's end
 * addressed, with the guest's MAC known (no ARP).
 * @param {string[]} hostNsExec prefix for r on the host
 * @returns {string[][]}
 */
export function planHostSide(hostNsExec) {
  return [
    [...hostNsExec, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=0'],
    [...hostNsExec, 'ip', 'addr', 'flush', 'dev', INTERFACES.r_a],
    [...hostNsExec, 'ip', 'addr', 'flush', 'dev', INTERFACES.r_b],
    [...hostNsExec, 'ip', 'link', 'add', L.hostDev, 'address', L.hostMac, 'type', 'veth', 'peer', 'name', L.peerDev],
    [...hostNsExec, 'ip', 'addr', 'add', `${L.host}/${L.prefix}`, 'dev', L.hostDev],
    [...hostNsExec, 'ip', 'link', 'set', L.hostDev, 'up'],
    [...hostNsExec, 'ip', 'link', 'set', L.peerDev, 'up'],
    [...hostNsExec, 'ip', 'neigh', 'replace', L.guest, 'lladdr', L.guestMac, 'dev', L.hostDev, 'nud', 'permanent'],
  ];
}

/** The host's devices in r that the guest takes, in order: its vec0, vec1, vec2. */
export const GUEST_DEVICES = [INTERFACES.r_a, INTERFACES.r_b, L.peerDev];

/**
 * In the guest: vec0/vec1 take r's interface names (so the kernel plan and its statistics name the same devices under
 * both backends) and addresses; offloads off as on the host's veths. The vector driver's raw transport turns TSO and
 * GRO on each time the device opens (vector_net_open builds its transport and sets them), which would hand the
 * qdiscs GRO-merged packets (one CE mark or one drop for several segments, a 64 KB "packet" in TBF): so offloads go
 * off after `up`, and the plan checks they are off. vec2 becomes the lateness probe's device: its egress a netem
 * delay, through which the guest kernel's echo replies leave (lateness.js).
 * @returns {string[][]} commands as run in the guest
 */
export function planGuestSide() {
  const devs = /** @type {const} */ ([['vec0', INTERFACES.r_a, DATA.r_a], ['vec1', INTERFACES.r_b, DATA.r_b]]);
  // The ip commands first, together: one `ip -batch` in the guest (planSteps in guest.js).
  return [
    ...devs.flatMap(([vec, dev, addr]) => [
      ['ip', 'link', 'set', vec, 'name', dev],
      ['ip', 'addr', 'add', `${addr}/24`, 'dev', dev],
      ['ip', 'link', 'set', dev, 'up'],
    ]),
    ['ip', 'link', 'set', 'vec2', 'name', L.guestDev, 'address', L.guestMac],
    ['ip', 'addr', 'add', `${L.guest}/${L.prefix}`, 'dev', L.guestDev],
    ['ip', 'link', 'set', L.guestDev, 'up'],
    ['ip', 'neigh', 'replace', L.host, 'lladdr', L.hostMac, 'dev', L.guestDev, 'nud', 'permanent'],
    ...devs.map(([, dev]) => ['ethtool', '-K', dev, ...OFFLOADS_OFF]),
    ...devs.map(([, dev]) => ['ethtool', '-k', dev]), // read back: offloadsStillOn
    ['tc', 'qdisc', 'add', 'dev', L.guestDev, 'root', 'netem', 'delay', `${L.delay_ms}ms`],
  ];
}

/**
 * The guest's whole set-up, its interfaces (planGuestSide) and the kernel backend's plan, as one plan ordered so that
 * the guest starts as few processes as it can (each costs it about 150 ms over hostfs, and a tool's consecutive
 * commands are one batch: planSteps): every `ip` command first (its interfaces, then the kernel plan's ifb devices,
 * which none of the kernel plan's tc commands needs before they exist), the offloads, then every `tc` command.
 * @param {{ forward: import('../../scenarios/link.js').Link, reverse: import('../../scenarios/link.js').Link }} links
 * @returns {string[][]}
 */
export function planGuestSetup(links) {
  const guest = planGuestSide(), kernel = planKernelNetwork(links, []);
  const other = kernel.find((c) => c[0] !== 'ip' && c[0] !== 'tc');
  if (other) throw new Error(`uml backend: the kernel plan has a command the guest set-up cannot reorder: ${other.join(' ')}`);
  const tool = (/** @type {string} */ name) => (/** @type {string[]} */ c) => c[0] === name;
  return [...guest.filter(tool('ip')), ...kernel.filter(tool('ip')), ...guest.filter((c) => c[0] !== 'ip' && c[0] !== 'tc'),
    ...guest.filter(tool('tc')), ...kernel.filter(tool('tc'))];
}

/** The segmentation and receive offloads `ethtool -k` still reports on (the vector driver turns them on at open).
 * @param {string[][]} plan @param {import('../exec.js').RunResult} r the plan's result (guestRunPlan) @returns {string[]} */
export function offloadsStillOn(plan, r) {
  const features = /^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload): on/gm;
  return plan.flatMap((c, i) => (c[0] === 'ethtool' && c[1] === '-k'
    ? [...stepOutput(r.stdout, i).matchAll(features)].map((m) => `${c[2]}: ${m[1]} is still on`) : []));
}

/** @typedef {import('../backend.js').Backend} Backend */

/** How long before its time a capacity step goes to the guest (startSchedules): more than a busy guest's channel
 * round trip plus tc's start over hostfs. */
const STAGE_AHEAD_MS = 1500;

/** How often qdisc-stats.jsonl is sampled in the guest (qdisc_probe.py: one long-lived tc there). */
const STATS_INTERVAL_MS = 500;
const QDISC_PROBE = fileURLToPath(new URL('./qdisc_probe.py', import.meta.url));

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
    // The guest's health: its kernel's timer lateness (lateness.js, from the host) and its drops outside the qdiscs
    // (links_probe.py, in the guest).
    this.probe = { timer: join(o.runDir, 'uml-timer.jsonl'), links: join(o.runDir, 'uml-links.jsonl') };
    /** @type {{ pid: number | undefined, stop: () => void } | null} */
    this.lateness = null;
    /** When the network was up (epoch s): the guest's health counts from then, not from its boot. */
    this.upAt = Infinity;
  }

  async start() {
    const o = this.uml;
    await runPlan(planHostSide(o.hostNsExec), o.log);
    o.log(`uml guest: booting in ${o.nsR} on ${INTERFACES.r_a}, ${INTERFACES.r_b} (console ${this.consoleLog})`);
    const g = await startGuest({ id: o.id, nsR: o.nsR, devs: GUEST_DEVICES, consoleLog: this.consoleLog,
      detached: o.detached, links: this.probe.links, onExit: (code, signal) => {
        this.guestAlive = false;
        if (!this.stopped) {
          o.onEvent({ event: 'guest_exit', code, signal, message: `the uml guest exited (${signal ?? `exit code ${code}`})`, log: this.consoleLog });
        }
      } });
    this.pid = g.pid;
    this.kernel = g.kernel;
    this.guestAlive = true;
    o.log(`uml guest: pid ${g.pid}, kernel ${g.kernel}`);
    // One round trip for the guest's interfaces and the kernel backend's plan (KernelBackend.start would send each
    // command through exec.js, a Node process and a round trip apiece).
    const chan = channelDir(o.id);
    const setup = planGuestSetup(o.links);
    const still = offloadsStillOn(setup, await guestRunPlan(chan, setup, o.log));
    if (still.length) throw new Error(`uml guest: offloads could not be turned off: ${still.join('; ')}`);
    this.lateness = startLatenessProbe({ hostNsExec: o.hostNsExec, outFile: this.probe.timer, detached: o.detached, log: o.log });
    if (!o.detached) await this.startGuestStats(chan);
    this.upAt = Date.now() / 1000;
  }

  /**
   * The guest's timer lateness and drops outside the qdiscs since the network was up, and, over `span` (the call), the
   * lateness probe's coverage (netem/uml/health.js).
   * @param {{ fromS: number, toS: number }} [span] epoch s
   * @returns {import('./health.js').GuestHealth}
   */
  health(span) {
    const timer = readOr(this.probe.timer);
    return { timer: timerSummary(timer, this.upAt), drops: linkDrops(readOr(this.probe.links), this.upAt),
      ...(span ? { coverage: probeCoverage(timer, span.fromS, span.toS) } : {}) };
  }

  /** False once the guest has exited (nothing crosses r without it). */
  alive() {
    return this.guestAlive;
  }

  /** @returns {{ direction: string, pid: number | null, log: string }[]} */
  processes() {
    return this.pid ? [{ direction: 'both (uml guest)', pid: this.pid, log: this.consoleLog }] : [];
  }

  /**
   * qdisc-stats.jsonl sampled in the guest every STATS_INTERVAL_MS by qdisc_probe.py (one tc in batch mode for the whole
   * run), started through the channel; it ends with the guest. Sampled from here, each sample started sh and tc in the
   * guest over hostfs: two process starts a second, half of the guest's CPU in a call (bench/uml/RESULTS.md). Its
   * errors go to the guest's console log (the host's file, appended to through hostfs).
   * @param {string} chan
   */
  async startGuestStats(chan) {
    const argv = ['python3', '-S', '-I', QDISC_PROBE, this.statsFile, String(STATS_INTERVAL_MS / 1000)];
    const script = `${argv.map(shQuote).join(' ')} < /dev/null > /dev/null 2>> ${shQuote(this.consoleLog)} &\n`;
    const r = await guestScript(chan, script, { timeout_ms: 10000 });
    if (r.code !== 0) throw new Error(`uml guest: the qdisc statistics probe did not start (exit ${r.code}): ${r.stderr.trim()}`);
  }

  /**
   * Capacity and delay schedules through the guest, staged: each step goes to the guest STAGE_AHEAD_MS before its time as a
   * background job there (netem/step.sh) that starts `tc -batch` at once, waits in bash until the step's time on the guest's clock
   * (the host's: UML reads it), and then hands tc the change. Sent at its time instead, a step landed 0.14-0.39 s late
   * here (a Node process for exec.js, then sh and tc started over hostfs in the guest), 0.5-0.9 s on a busy machine.
   * The job leaves tc's exit status and its own times (handed to tc, applied, tc returned) in the channel; the
   * capacity_change or delay_change event follows with them.
   * @param {number} t0_ms wall clock of schedule time 0
   */
  startSchedules(t0_ms) {
    const chan = channelDir(this.uml.id);
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      planScheduleSteps(this.uml.links[direction], KERNEL_DEVICES[direction], []).forEach((step, i) => {
        const due_ms = t0_ms + step.at_s * 1000;
        const timer = setTimeout(() => this.settle(this.playStep(chan, `step-${direction}-${i}`, step.argv, due_ms).then((r) => {
          if (this.stopped) return;
          this.uml.onEvent(stepEvent({ step, direction, t0_ms, applied_ns: r.code === 0 ? r.applied_ns : null, by: 'tc in the uml guest',
            extra: r.handed_ns === null ? {} : { started_ns: r.handed_ns, returned_ns: /** @type {number} */ (r.returned_ns) },
            ...(r.code ? { error: `\`${step.argv.join(' ')}\` in the uml guest: exit ${r.code}: ${r.stderr.trim()}` }
              : r.applied_ns === null ? { error: `\`${step.argv.join(' ')}\` in the uml guest: tc exited without answering after the change` } : {}) }));
        })), Math.max(0, due_ms - STAGE_AHEAD_MS - Date.now()));
        this.timers.push(timer);
      });
    }
  }

  /**
   * One staged step (startSchedules): resolves when tc has applied it, with its exit status, stderr, and the guest's
   * times (epoch ns) of handing tc the change, of tc's answer after it (applied) and of tc's return (null when the job
   * did not run).
   * @param {string} chan @param {string} name @param {string[]} argv `tc ...` @param {number} due_ms wall clock
   * @returns {Promise<import('../exec.js').RunResult & { handed_ns: number | null, applied_ns: number | null, returned_ns: number | null }>}
   */
  async playStep(chan, name, argv, due_ms) {
    const out = join(chan, name);
    const none = { handed_ns: null, applied_ns: null, returned_ns: null };
    const quote = (/** @type {string} */ a) => `'${a}'`;
    const script = `${stepArgs(join(chan, '..', 'scratch', 'tick'), due_ms, argv, out).map(quote).join(' ')} < /dev/null > /dev/null 2>&1 &\n`;
    const sent = await guestScript(chan, script, { timeout_ms: 10000 });
    if (sent.code !== 0) return { ...sent, ...none };
    try {
      while (!this.stopped && Date.now() < due_ms + 10000) {
        const done = readStepResult(out); // step.sh writes it in one write, last
        if (done) return { code: done.code, stdout: '', stderr: done.stderr, handed_ns: done.handed_ns, applied_ns: done.applied_ns, returned_ns: done.returned_ns };
        await sleep(Date.now() < due_ms - 50 ? 20 : 5);
      }
      return { code: 124, stdout: '', stderr: `the uml guest did not apply \`${argv.join(' ')}\` within 10 s of its time`, ...none };
    } finally {
      for (const f of [out, `${out}.err`]) rmSync(f, { force: true });
    }
  }

  async stop() {
    this.lateness?.stop();
    await super.stop();
    await stopGuest(this.uml.id, this.pid);
    this.guestAlive = false;
  }
}
