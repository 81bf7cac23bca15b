// @ts-check
// A chain of bottlenecks in r (network.hops, docs/netem.md "A chain of bottlenecks"): one userspace bottleneck per
// hop and direction, each on its own NFQUEUE, and an nftables table in r with one base chain per hop and direction on
// the forward hook, in the order the packets cross them (a -> b: hop 0 first; b -> a: the last hop first). A packet
// a bottleneck releases (NF_ACCEPT) goes on to the next base chain, so a packet whose flow has a rule in several
// chains crosses those hops in series, each with its own queue, rate, delay and ground-truth log. A flow gets its
// rules once its 5-tuple is known (routeFlow: the harness, when ICE has selected a call's pair); until then, and for
// any packet no rule names, r forwards it through no hop.
import { INTERFACES } from './names.js';

/** The table in r (family ip: the data path is IPv4 only). */
export const CHAIN_TABLE = 'rtclab_hops';

/** The NFQUEUE numbers of hop i: 10 + i (a -> b), 20 + i (b -> a); 0 and 1 are the single bottleneck's. */
export const HOP_QUEUE_BASE = Object.freeze({ forward: 10, reverse: 20 });

/** Base chain priorities: before the single bottleneck's iptables mangle chain (-150), one step per hop. */
const FIRST_PRIORITY = -200;

/** @param {number} hop @param {'forward' | 'reverse'} direction */
export function hopQueueNum(hop, direction) {
  return HOP_QUEUE_BASE[direction] + hop;
}

/** The name of hop i's bottleneck in one direction: its files are bottleneck-<name>.* @param {number} hop @param {'forward' | 'reverse'} direction */
export function hopName(hop, direction) {
  return `hop${hop}-${direction}`;
}

/** @param {number} hop @param {'forward' | 'reverse'} direction */
function chainName(hop, direction) {
  return `hop${hop}_${direction}`;
}

/**
 * The table and its base chains for n hops (no rules yet: nothing is queued until routeFlow names a flow).
 * @param {number} n
 */
export function chainTableRuleset(n) {
  let out = `add table ip ${CHAIN_TABLE}\n`;
  for (let hop = 0; hop < n; hop++) {
    // a -> b crosses hop 0 first, b -> a the last hop first: the priority orders them.
    out += `add chain ip ${CHAIN_TABLE} ${chainName(hop, 'forward')} { type filter hook forward priority ${FIRST_PRIORITY + hop}; policy accept; }\n`;
    out += `add chain ip ${CHAIN_TABLE} ${chainName(hop, 'reverse')} { type filter hook forward priority ${FIRST_PRIORITY + n - 1 - hop}; policy accept; }\n`;
  }
  return out;
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
 * The rules that send a flow (a -> b, and its packets back b -> a) through the hops of its path.
 * @param {FlowMatch} flow @param {number[]} path consecutive hop indexes @param {number} n hops in the chain
 * @returns {string} `nft -f` lines
 */
export function routeRuleLines(flow, path, n) {
  if (flow.proto !== 'udp' && flow.proto !== 'tcp') throw new Error(`hop route: protocol "${flow.proto}" is not udp or tcp`);
  if (!path.length || path.some((h) => !Number.isInteger(h) || h < 0 || h >= n)) {
    throw new Error(`hop route: path ${JSON.stringify(path)} is not hops of the chain (0 to ${n - 1})`);
  }
  const [src, dst] = [checkAddress(flow.src), checkAddress(flow.dst)];
  const [sport, dport] = [checkPort(flow.sport), checkPort(flow.dport)];
  const ports = (/** @type {number | undefined} */ from, /** @type {number | undefined} */ to) =>
    (from !== undefined ? ` ${flow.proto} sport ${from}` : '') + (to !== undefined ? ` ${flow.proto} dport ${to}` : '');
  let out = '';
  for (const hop of path) {
    out += `add rule ip ${CHAIN_TABLE} ${chainName(hop, 'forward')} iifname "${INTERFACES.r_a}" oifname "${INTERFACES.r_b}" `
      + `ip saddr ${src} ip daddr ${dst} ip protocol ${flow.proto}${ports(sport, dport)} counter queue num ${hopQueueNum(hop, 'forward')}\n`;
    out += `add rule ip ${CHAIN_TABLE} ${chainName(hop, 'reverse')} iifname "${INTERFACES.r_b}" oifname "${INTERFACES.r_a}" `
      + `ip saddr ${dst} ip daddr ${src} ip protocol ${flow.proto}${ports(dport, sport)} counter queue num ${hopQueueNum(hop, 'reverse')}\n`;
  }
  return out;
}

/**
 * The packets each hop rule has queued so far, from `nft -j list table ip rtclab_hops`.
 * @param {string} json
 * @returns {{ chain: string, rule: string, packets: number, bytes: number }[]}
 */
export function routeCounters(json) {
  /** @type {{ chain: string, rule: string, packets: number, bytes: number }[]} */
  const out = [];
  for (const item of JSON.parse(json).nftables ?? []) {
    const rule = item.rule;
    if (!rule) continue;
    const counter = (rule.expr ?? []).find((/** @type {any} */ e) => e.counter)?.counter;
    out.push({ chain: rule.chain, rule: `handle ${rule.handle}`, packets: counter?.packets ?? 0, bytes: counter?.bytes ?? 0 });
  }
  return out;
}
