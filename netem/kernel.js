// @ts-check
// The kernel backend (Mininet style): a link becomes a plain list of tc/ip commands (planKernel, pure and
// golden-tested), which a thin executor runs and checks.
//   rate + discipline: TBF root on the egress device, the discipline as its child (prio: prio + u32 DSCP filters + a
//   child per band);
//   delay/jitter/loss (random or Gilbert-Elliott): netem on an IFB fed from the ingress of the other r interface, so the discipline never sees
//   the propagation delay as queueing.
import { firstKbit, maxDelayMs } from '../scenarios/link.js';

/**
 * tc's argument list for a leaf discipline (names and units as tc takes them).
 * @param {import('../scenarios/link.js').Qdisc} q
 * @returns {string[]}
 */
export function tcLeafArgs(q) {
  const ms = (/** @type {number} */ v) => `${Math.round(v * 1000)}us`;
  const ecn = (/** @type {boolean} */ on) => (on ? 'ecn' : 'noecn');
  switch (q.kind) {
    case 'fifo':
      return q.limit_bytes !== undefined ? ['bfifo', 'limit', String(q.limit_bytes)] : ['pfifo', 'limit', String(q.limit_packets)];
    case 'codel':
      return ['codel', 'limit', String(q.limit_packets), 'target', ms(q.target_ms), 'interval', ms(q.interval_ms), ecn(q.ecn)];
    case 'pie':
      return ['pie', 'limit', String(q.limit_packets), 'target', ms(q.target_ms), 'tupdate', ms(q.tupdate_ms),
        'alpha', String(q.alpha), 'beta', String(q.beta), ecn(q.ecn)];
    case 'sfq':
      return ['sfq', 'limit', String(q.limit_packets), 'quantum', String(q.quantum_bytes), 'perturb', String(q.perturb_s),
        'divisor', String(q.divisor)];
    case 'fq_codel':
      return ['fq_codel', 'limit', String(q.limit_packets), 'flows', String(q.flows), 'quantum', String(q.quantum_bytes),
        'target', ms(q.target_ms), 'interval', ms(q.interval_ms), ecn(q.ecn)];
    case 'dualpi2':
      // tc-dualpi2(8). tshift_ms has no tc form: Linux schedules the two queues by WRR (classic_protection), not
      // by RFC 9332's time-shifted FIFO; kernelNeeds refuses the kind anyway while no kernel here has it.
      return ['dualpi2', 'limit', String(q.limit_packets), 'target', ms(q.target_ms), 'tupdate', ms(q.tupdate_ms),
        'alpha', String(q.alpha), 'beta', String(q.beta), 'coupling_factor', String(q.coupling_factor),
        'step_thresh', ms(q.step_thresh_ms), 'min_qlen_step', String(q.min_qlen_step),
        q.drop_on_overload ? 'drop_on_overload' : 'overflow', 'drop_dequeue', 'l4s_ect'];
    default:
      throw new Error(`no tc leaf discipline for kind ${q.kind}`);
  }
}

/**
 * TBF's `limit`: when the child is a fifo, `tc qdisc change ... tbf` resets the child's limit to this number
 * (in the child's own unit), so it must be the child's limit; otherwise it is unused after the child is grafted.
 * @param {import('../scenarios/link.js').Link} link
 */
function tbfLimit(link) {
  const q = link.qdisc;
  if (q.kind === 'fifo') return q.limit_bytes ?? q.limit_packets;
  return link.rate?.burst_bytes;
}

/**
 * The TBF root command (op add, or change for a capacity schedule step).
 * @param {'add' | 'change'} op @param {string} dev @param {import('../scenarios/link.js').Link} link @param {number} kbit
 * @param {string[]} nsExec
 */
export function tbfCommand(op, dev, link, kbit, nsExec) {
  return [...nsExec, 'tc', 'qdisc', op, 'dev', dev, 'root', 'handle', '1:', 'tbf', 'rate', `${kbit}kbit`,
    'burst', String(link.rate?.burst_bytes), 'limit', String(tbfLimit(link))];
}

/**
 * The tc qdisc kinds a discipline tree uses (fifo is bfifo or pfifo by its limit's unit).
 * @param {import('../scenarios/link.js').Qdisc} q
 * @returns {string[]}
 */
export function tcKinds(q) {
  if (q.kind === 'fifo') return [q.limit_bytes !== undefined ? 'bfifo' : 'pfifo'];
  if (q.kind === 'prio') return ['prio', ...q.bands.flatMap((/** @type {any} */ b) => tcKinds(b.qdisc))];
  return [q.kind];
}

/**
 * What the kernel must have for this link, and what the kernel backend cannot do at all.
 * @param {import('../scenarios/link.js').Link} link
 * @returns {{ needs: string[], unsupported: string[] }}
 */
export function kernelNeeds(link) {
  /** @type {Set<string>} */
  const needs = new Set();
  /** @type {string[]} */
  const unsupported = [];
  if (link.rate) needs.add('tbf');
  if (link.rate?.trace) unsupported.push('a rate trace (tc has no trace player; use the userspace backend)');
  if (link.qdisc.kind === 'prio') {
    // The thesis' meters (demote for a time, CE-mark for a time or a controlled fraction) have no tc action, and
    // a band's rate cap would need HTB classes under the prio: only the userspace bottleneck implements them.
    if (link.qdisc.meters?.length) unsupported.push('prio meters (rate meters with demote/CE actions have no tc equivalent; use the userspace backend)');
    if (link.qdisc.bands.some((/** @type {any} */ b) => b.rate_cap)) unsupported.push('a prio band rate_cap (use the userspace backend)');
  }
  // netem's loss models count packets; an outage is a stretch of time (Cellsim's on/off), which no qdisc here plays.
  if (link.outage) unsupported.push('on/off outages (`outage`: netem has no loss model in time, only per packet; use the userspace backend)');
  if (link.qdisc.kind === 'dualpi2') {
    // sch_dualpi2 is in mainline Linux only since 6.17: this host's kernel is built without it (CONFIG_NET_SCH_DUALPI2
    // not set) and Debian 12's user-mode Linux is 6.1 (bench/uml/RESULTS.md); Linux's scheduler is also not the
    // time-shifted FIFO of the userspace one.
    unsupported.push('dualpi2 (no kernel here has sch_dualpi2: this host\'s is built without it, Debian 12\'s user-mode Linux is 6.1; use the userspace backend)');
  }
  if (needsDelayLine(link)) ['netem', 'ifb', 'ingress', 'u32', 'mirred'].forEach((k) => needs.add(k));
  // Without a rate limit nothing ever queues: the discipline is not installed (as under the userspace backend).
  if (link.rate) {
    for (const k of tcKinds(link.qdisc)) needs.add(k);
    if (link.qdisc.kind === 'prio') needs.add('u32');
  }
  return { needs: [...needs].sort(), unsupported };
}

/**
 * The tc/ip commands that install one direction's link in r.
 * @param {import('../scenarios/link.js').Link} link normalized link
 * @param {string} dev egress device of this direction in r (r-eth1 forward, r-eth0 reverse)
 * @param {{ ingressDev: string, ifb: string, nsExec: string[] }} o
 *   ingressDev: where this direction's packets enter r; ifb: name of the IFB for its delay; nsExec: prefix for r
 * @returns {string[][]}
 */
export function planKernel(link, dev, o) {
  const { unsupported } = kernelNeeds(link);
  if (unsupported.length) throw new Error(`kernel backend cannot emulate ${unsupported.join('; ')}`);
  const ns = o.nsExec;
  /** @type {string[][]} */
  const plan = [];
  const kbit = firstKbit(link.rate);
  if (kbit !== null) {
    plan.push(tbfCommand('add', dev, link, kbit, ns));
    const q = link.qdisc;
    if (q.kind !== 'prio') {
      plan.push([...ns, 'tc', 'qdisc', 'add', 'dev', dev, 'parent', '1:1', 'handle', '10:', ...tcLeafArgs(q)]);
    } else {
      const bands = q.bands;
      // Every skb priority maps to the last band: only the DSCP filters put packets in the others.
      const priomap = Array(16).fill(String(bands.length - 1));
      plan.push([...ns, 'tc', 'qdisc', 'add', 'dev', dev, 'parent', '1:1', 'handle', '10:', 'prio', 'bands', String(bands.length), 'priomap', ...priomap]);
      bands.forEach((/** @type {any} */ b, /** @type {number} */ i) => {
        plan.push([...ns, 'tc', 'qdisc', 'add', 'dev', dev, 'parent', `10:${i + 1}`, 'handle', `${20 + i}:`, ...tcLeafArgs(b.qdisc)]);
      });
      // ARP in the first band: strict priority would otherwise starve r's own ARP requests behind a full priority
      // band and cut the link once b's neighbour entry fails (seen through the uml guest, bench/uml/RESULTS.md);
      // the userspace bottleneck queues only IPv4, so ARP never waits there.
      plan.push([...ns, 'tc', 'filter', 'add', 'dev', dev, 'parent', '10:', 'protocol', 'arp', 'prio', '2', 'u32',
        'match', 'u32', '0', '0', 'flowid', '10:1']);
      bands.forEach((/** @type {any} */ b, /** @type {number} */ i) => {
        for (const dscp of b.dscp ?? []) {
          plan.push([...ns, 'tc', 'filter', 'add', 'dev', dev, 'parent', '10:', 'protocol', 'ip', 'prio', '1', 'u32',
            'match', 'ip', 'dsfield', `0x${(dscp << 2).toString(16).padStart(2, '0')}`, '0xfc', 'flowid', `10:${i + 1}`]);
        }
      });
    }
  }
  if (needsDelayLine(link)) {
    plan.push([...ns, 'ip', 'link', 'add', o.ifb, 'type', 'ifb']);
    plan.push([...ns, 'ip', 'link', 'set', o.ifb, 'up']);
    plan.push([...ns, 'tc', 'qdisc', 'add', 'dev', o.ingressDev, 'handle', 'ffff:', 'ingress']);
    // IPv4 only, as the userspace bottleneck queues only IPv4: ARP crosses r without the link's delay and loss (with
    // 10 % loss, a lost ARP request held a's packets for a second and overflowed its neighbour queue).
    plan.push([...ns, 'tc', 'filter', 'add', 'dev', o.ingressDev, 'parent', 'ffff:', 'protocol', 'ip', 'u32',
      'match', 'u32', '0', '0', 'action', 'mirred', 'egress', 'redirect', 'dev', o.ifb]);
    plan.push([...ns, 'tc', 'qdisc', 'add', 'dev', o.ifb, 'root', 'handle', '1:', ...netemArgs(link, link.delay_ms)]);
  }
  return plan;
}

/** @param {import('../scenarios/link.js').Link} link */
const needsDelayLine = (link) => link.delay_ms > 0 || link.delay_schedule.length > 0 || link.jitter_ms > 0 || link.loss_percent > 0
  || Boolean(link.loss_gemodel);

/**
 * The delay line's netem, with the delay `delayMs` (the link's, or a step of its delay schedule).
 * @param {import('../scenarios/link.js').Link} link @param {number} delayMs
 */
function netemArgs(link, delayMs) {
  const netem = ['netem', 'limit', String(netemLimitPackets(link)), ...netemDelayArgs(link, delayMs)];
  if (link.loss_percent > 0) netem.push('loss', `${link.loss_percent}%`);
  netem.push(...netemGeModelArgs(link));
  return netem;
}

/**
 * netem's `loss gemodel p r 1-h 1-k` (tc-netem(8)), all four given, so that tc's own defaults (which differ between
 * iproute2 versions for r) never apply: the link's parameters are the userspace bottleneck's (docs/bottleneck.md,
 * "Loss models").
 * @param {import('../scenarios/link.js').Link} link
 * @returns {string[]}
 */
export function netemGeModelArgs(link) {
  const ge = link.loss_gemodel;
  if (!ge) return [];
  return ['loss', 'gemodel', `${ge.p_percent}%`, `${ge.r_percent}%`, `${ge.bad_loss_percent}%`, `${ge.good_loss_percent}%`];
}

/** netem's own rate on the delay line when it carries jitter: far above any link here, only there to keep order. */
export const JITTER_ORDER_RATE = '10gbit';

/**
 * netem's delay arguments for the scenario's delay line: each packet's delay uniform in [delay, delay + jitter],
 * and packets kept in order, as the userspace bottleneck's delay line does (docs/netem.md, "Backends").
 * netem draws a jitter uniformly in [latency - jitter, latency + jitter) when no distribution table is given, so
 * latency is the middle of the range and its jitter half of it. Alone, netem sorts packets by their drawn time and
 * reorders them; with a `rate` it sends each packet no earlier than the one before it (sch_netem.c, netem_enqueue:
 * the last packet's time_to_send is the reference), which is the userspace rule max(own due time, previous one).
 * At 10 Gbit/s that rate adds at most 1.2 us per 1500-byte packet.
 * @param {import('../scenarios/link.js').Link} link @param {number} [delayMs] default: the link's delay_ms
 * @returns {string[]}
 */
export function netemDelayArgs(link, delayMs = link.delay_ms) {
  const us = (/** @type {number} */ ms) => `${Math.round(ms * 1000)}us`;
  // A delay schedule keeps order the same way: after a lower step, a packet leaves no earlier than the one before it.
  const ordered = link.delay_schedule.length > 0 ? ['rate', JITTER_ORDER_RATE] : [];
  if (!(link.jitter_ms > 0)) return ['delay', us(delayMs), ...ordered];
  return ['delay', us(delayMs + link.jitter_ms / 2), us(link.jitter_ms / 2), 'rate', JITTER_ORDER_RATE];
}

/**
 * netem's queue holds every packet in flight on the delay line; it sits before the bottleneck, so it sees the
 * offered load, not the link rate. Sized for 10x the link's highest rate (10 Gbit/s without a rate limit) of
 * 64-byte packets over the longest delay (delay + jitter), and never below netem's own default of 1000.
 * @param {import('../scenarios/link.js').Link} link
 */
export function netemLimitPackets(link) {
  const rates = link.rate?.schedule ? link.rate.schedule.map((s) => s.kbit) : [link.rate?.kbit ?? 1e6];
  const offered_bytes_per_s = (10 * Math.max(...rates) * 1000) / 8;
  return Math.max(1000, Math.ceil((offered_bytes_per_s * ((maxDelayMs(link) + link.jitter_ms) / 1000)) / 64));
}

/**
 * Capacity schedule steps after the first: each a `tc qdisc change` of the TBF at at_s.
 * @param {import('../scenarios/link.js').Link} link @param {string} dev @param {string[]} nsExec
 * @returns {{ at_s: number, kbit: number, argv: string[] }[]}
 */
export function planKernelSchedule(link, dev, nsExec) {
  const steps = link.rate?.schedule ?? [];
  return steps.slice(1).map((s) => ({ at_s: s.at_s, kbit: s.kbit, argv: tbfCommand('change', dev, link, s.kbit, nsExec) }));
}

/**
 * Every scheduled change of a direction's link, in one list for a backend to play at t0 + at_s: the rate's steps
 * (planKernelSchedule) and the delay's (planDelaySchedule), each with the event that reports it once applied.
 * @param {import('../scenarios/link.js').Link} link @param {{ dev: string, ifb: string }} devices @param {string[]} nsExec
 * @returns {{ at_s: number, argv: string[], event: { event: 'capacity_change', kbit: number } | { event: 'delay_change', delay_ms: number } }[]}
 */
export function planScheduleSteps(link, devices, nsExec) {
  return [
    ...planKernelSchedule(link, devices.dev, nsExec).map((s) => ({ at_s: s.at_s, argv: s.argv,
      event: /** @type {const} */ ({ event: 'capacity_change', kbit: s.kbit }) })),
    ...planDelaySchedule(link, devices.ifb, nsExec).map((s) => ({ at_s: s.at_s, argv: s.argv,
      event: /** @type {const} */ ({ event: 'delay_change', delay_ms: s.delay_ms }) })),
  ];
}

/**
 * Delay schedule steps: each a `tc qdisc change` of the delay line's netem at at_s (netem applies a delay to the
 * packets that arrive after it; those already on the line keep theirs).
 * @param {import('../scenarios/link.js').Link} link @param {string} ifb the direction's delay line @param {string[]} nsExec
 * @returns {{ at_s: number, delay_ms: number, argv: string[] }[]}
 */
export function planDelaySchedule(link, ifb, nsExec) {
  return link.delay_schedule.map((s) => ({ at_s: s.at_s, delay_ms: s.delay_ms,
    argv: [...nsExec, 'tc', 'qdisc', 'change', 'dev', ifb, 'root', 'handle', '1:', ...netemArgs(link, s.delay_ms)] }));
}
