// @ts-check
// A chain of bottlenecks in r (network.hops, docs/netem.md "A chain of bottlenecks"): one userspace bottleneck per
// hop and direction, each on its own NFQUEUE, fed by iptables rules at successive stages of a forwarded packet's way
// through r's netfilter hooks, in the order the packets cross the hops (a -> b: hop 0 first; b -> a: the last hop
// first). A packet a bottleneck releases (NF_ACCEPT) goes on to the next stage, so a packet whose flow has a rule at
// several stages crosses those hops in series, each with its own queue, rate, delay and ground-truth log. A flow gets
// its rules once its 5-tuple is known (routeFlow: the harness, when ICE has selected a call's pair); until then, and
// for any packet no rule names, r forwards it through no hop.
// iptables (its nf_tables flavour, as the single bottleneck's rule): nft's own `queue` statement needs the kernel's
// nft_queue, which the development machine's kernel lacks; iptables' NFQUEUE target is there.
import { INTERFACES } from './names.js';

/**
 * The stages, in the order a forwarded packet meets them (hook, then priority: raw -300 and mangle -150 before
 * routing, mangle -150, filter 0 and security 50 on the forward hook, mangle -150 after routing). Before routing the
 * out interface is not known and after it the in interface is not matched: each side names the direction alone.
 * @type {readonly { table: string, chain: string, match: 'in' | 'both' | 'out' }[]}
 */
export const STAGES = Object.freeze([
  { table: 'raw', chain: 'PREROUTING', match: 'in' },
  { table: 'mangle', chain: 'PREROUTING', match: 'in' },
  { table: 'mangle', chain: 'FORWARD', match: 'both' },
  { table: 'filter', chain: 'FORWARD', match: 'both' },
  { table: 'security', chain: 'FORWARD', match: 'both' },
  { table: 'mangle', chain: 'POSTROUTING', match: 'out' },
]);

/** The most hops a chain can have: one stage each (scenarios/schema.json network.hops maxItems). */
export const MAX_HOPS = STAGES.length;

/** The NFQUEUE numbers of hop i: 10 + i (a -> b), 20 + i (b -> a); 0 and 1 are the single bottleneck's. */
export const HOP_QUEUE_BASE = Object.freeze({ forward: 10, reverse: 20 });

/** @param {number} hop @param {'forward' | 'reverse'} direction */
export function hopQueueNum(hop, direction) {
  return HOP_QUEUE_BASE[direction] + hop;
}

/** The name of hop i's bottleneck in one direction: its files are bottleneck-<name>.* @param {number} hop @param {'forward' | 'reverse'} direction */
export function hopName(hop, direction) {
  return `hop${hop}-${direction}`;
}

/**
 * The stage at which hop `hop` of a chain of n takes its packets in a direction: a -> b crosses hop 0 first, b -> a
 * the last hop first.
 * @param {number} hop @param {'forward' | 'reverse'} direction @param {number} n
 */
export function hopStage(hop, direction, n) {
  if (n > MAX_HOPS) throw new Error(`a chain of ${n} hops: at most ${MAX_HOPS} (one netfilter stage each)`);
  return STAGES[direction === 'forward' ? hop : n - 1 - hop];
}

/**
 * @typedef {{ proto: 'udp' | 'tcp', src: string, dst: string, sport?: number, dport?: number }} FlowMatch
 *   a flow a -> b (src in a, dst in b); a port left out matches any
 */

/** @param {string} address */
function checkAddress(address) {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) throw new Error(`hop route: "${address}" is not an IPv4 address`);
  return address;
}

/** @param {number | undefined} port */
function checkPort(port) {
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) throw new Error(`hop route: port ${port} is not 1-65535`);
  return port;
}

/**
 * The iptables commands that send a flow (a -> b, and its packets back b -> a) through the hops of its path.
 * @param {FlowMatch} flow @param {number[]} path consecutive hop indexes @param {number} n hops in the chain
 * @returns {string[][]} argv each
 */
export function routeRules(flow, path, n) {
  if (flow.proto !== 'udp' && flow.proto !== 'tcp') throw new Error(`hop route: protocol "${flow.proto}" is not udp or tcp`);
  if (!path.length || path.some((h) => !Number.isInteger(h) || h < 0 || h >= n)) {
    throw new Error(`hop route: path ${JSON.stringify(path)} is not hops of the chain (0 to ${n - 1})`);
  }
  const [src, dst] = [checkAddress(flow.src), checkAddress(flow.dst)];
  const [sport, dport] = [checkPort(flow.sport), checkPort(flow.dport)];
  const ports = (/** @type {number | undefined} */ from, /** @type {number | undefined} */ to) =>
    [...(from !== undefined ? ['--sport', String(from)] : []), ...(to !== undefined ? ['--dport', String(to)] : [])];
  /** @type {string[][]} */
  const out = [];
  for (const hop of path) {
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      const stage = hopStage(hop, direction, n);
      const [inDev, outDev] = direction === 'forward' ? [INTERFACES.r_a, INTERFACES.r_b] : [INTERFACES.r_b, INTERFACES.r_a];
      const [from, to, fromPort, toPort] = direction === 'forward' ? [src, dst, sport, dport] : [dst, src, dport, sport];
      out.push(['iptables', '-w', '-t', stage.table, '-A', stage.chain,
        ...(stage.match !== 'out' ? ['-i', inDev] : []), ...(stage.match !== 'in' ? ['-o', outDev] : []),
        '-p', flow.proto, '-s', from, '-d', to, ...ports(fromPort, toPort),
        '-j', 'NFQUEUE', '--queue-num', String(hopQueueNum(hop, direction))]);
    }
  }
  return out;
}

/** The stages a chain of n hops uses (flushed when it stops). @param {number} n */
export function usedStages(n) {
  return STAGES.slice(0, n);
}

/**
 * The packets each hop rule has queued so far, from `iptables -t TABLE -L CHAIN -v -x -n` of a stage.
 * @param {string} listing @param {{ table: string, chain: string }} stage
 * @returns {{ stage: string, queue_num: number, packets: number, bytes: number }[]}
 */
export function routeCounters(listing, stage) {
  /** @type {{ stage: string, queue_num: number, packets: number, bytes: number }[]} */
  const out = [];
  for (const line of listing.split('\n')) {
    const m = line.match(/^\s*(\d+)\s+(\d+)\s+NFQUEUE\b.*NFQUEUE num (\d+)/);
    if (m) out.push({ stage: `${stage.table} ${stage.chain}`, queue_num: Number(m[3]), packets: Number(m[1]), bytes: Number(m[2]) });
  }
  return out;
}
