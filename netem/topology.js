// @ts-check
// The three namespaces a - r - b with their data veths, and the management links root<->a, root<->b.
// planTopology is a pure command plan (printable, tested); applyTopology runs it.
import { names, DATA, INTERFACES, MGMT_IF, mgmtAddresses } from './names.js';
import { run, runChecked, runPlan } from './exec.js';

/** Every offload that merges or splits packets, plus tx checksum offload so captures hold valid checksums. */
export const OFFLOADS_OFF = ['tx', 'off', 'sg', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off', 'lro', 'off',
  'rx-gro-list', 'off', 'rx-udp-gro-forwarding', 'off', 'tx-udp-segmentation', 'off', 'tx-gso-list', 'off'];

/**
 * The topology as a list of commands.
 * @param {string} id run id
 * @param {number} mgmtN management subnet index (10.99.N.0/29)
 * @returns {string[][]}
 */
export function planTopology(id, mgmtN) {
  const n = names(id);
  const ns = n.namespaces;
  const m = mgmtAddresses(mgmtN);
  /** @param {string} host @param {...string} args */
  const inNs = (host, ...args) => ['ip', 'netns', 'exec', /** @type {any} */ (ns)[host], ...args];
  /** @type {string[][]} */
  const plan = [];
  for (const h of ['a', 'r', 'b']) plan.push(['ip', 'netns', 'add', /** @type {any} */ (ns)[h]]);
  // Created directly inside the namespaces, so the fixed names never meet in the root namespace.
  plan.push(['ip', 'link', 'add', INTERFACES.a, 'netns', ns.a, 'type', 'veth', 'peer', 'name', INTERFACES.r_a, 'netns', ns.r]);
  plan.push(['ip', 'link', 'add', INTERFACES.b, 'netns', ns.b, 'type', 'veth', 'peer', 'name', INTERFACES.r_b, 'netns', ns.r]);
  for (const h of ['a', 'r', 'b']) {
    // No IPv6: nothing but the experiment's packets (no router solicitations, no ND) in the captures.
    plan.push(inNs(h, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1'));
    plan.push(['ip', '-n', /** @type {any} */ (ns)[h], 'link', 'set', 'lo', 'up']);
  }
  /** @type {[string, string, string][]} host, device, address */
  const data = [['a', INTERFACES.a, `${DATA.a}/24`], ['r', INTERFACES.r_a, `${DATA.r_a}/24`],
    ['r', INTERFACES.r_b, `${DATA.r_b}/24`], ['b', INTERFACES.b, `${DATA.b}/24`]];
  for (const [h, dev, addr] of data) {
    const nsName = /** @type {any} */ (ns)[h];
    plan.push(inNs(h, 'ethtool', '-K', dev, ...OFFLOADS_OFF));
    plan.push(['ip', '-n', nsName, 'addr', 'add', addr, 'dev', dev]);
    plan.push(['ip', '-n', nsName, 'link', 'set', dev, 'up']);
  }
  // a and b route everything through r (r has no default route, so nothing leaves the lab). A default route, not
  // just the other side's /24: Chrome's ICE gathers candidates only on the interface of the default route.
  plan.push(['ip', '-n', ns.a, 'route', 'add', 'default', 'via', DATA.r_a]);
  plan.push(['ip', '-n', ns.b, 'route', 'add', 'default', 'via', DATA.r_b]);
  plan.push(inNs('r', 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1'));
  // Management: point-to-point /30s to the root namespace (signaling), one per host, no path between them.
  for (const h of /** @type {const} */ (['a', 'b'])) {
    const root = n.rootVeths[h];
    plan.push(['ip', 'link', 'add', root, 'type', 'veth', 'peer', 'name', MGMT_IF, 'netns', ns[h]]);
    plan.push(['ip', 'addr', 'add', `${m[h].root}/30`, 'dev', root]);
    plan.push(['ip', 'link', 'set', root, 'up']);
    plan.push(['ip', '-n', ns[h], 'addr', 'add', `${m[h].host}/30`, 'dev', MGMT_IF]);
    plan.push(['ip', '-n', ns[h], 'link', 'set', MGMT_IF, 'up']);
  }
  plan.push(['nft', '-f', '-', nftRuleset(id)]);
  return plan;
}

/**
 * The run's nftables table in the root namespace: the root never forwards to or from the management links
 * (the root may have ip_forward=1 and docker's rules), so they can never carry data-path traffic.
 * @param {string} id
 */
export function nftRuleset(id) {
  const n = names(id);
  return `table inet ${n.nftTable} {
  chain forward {
    type filter hook forward priority -10; policy accept;
    iifname "rl${id}*" drop
    oifname "rl${id}*" drop
  }
}
`;
}

/**
 * Run the topology plan (the nft step gets its ruleset on stdin).
 * @param {string[][]} plan
 * @param {(msg: string) => void} [log]
 */
export async function applyTopology(plan, log) {
  for (const argv of plan) {
    if (argv[0] === 'nft') {
      if (log) log(`nft -f - <<< ${JSON.stringify(argv[3])}`);
      await runChecked(argv.slice(0, 3), { input: argv[3] });
    } else {
      await runPlan([argv], log);
    }
  }
}

/** Management subnet indexes used by addresses in the root namespace right now. */
export async function usedMgmtSubnets() {
  const out = await runChecked(['ip', '-j', '-4', 'addr', 'show']);
  /** @type {Set<number>} */
  const used = new Set();
  for (const link of JSON.parse(out || '[]')) {
    for (const a of link.addr_info ?? []) {
      const m = /^10\.99\.(\d+)\./.exec(a.local ?? '');
      if (m) used.add(Number(m[1]));
    }
  }
  return used;
}

/**
 * Best effort: make `cc` the default TCP congestion control in a and b. A namespace other than the root may only
 * default to an algorithm in the root's net.ipv4.tcp_allowed_congestion_control (else EPERM); iperf3's -C sets
 * it per flow anyway, so a refusal is reported, not fatal.
 * @param {string} id @param {string} cc
 * @returns {Promise<{ tcp_congestion_control: string, set: boolean, error?: string }>}
 */
export async function setDefaultCongestionControl(id, cc) {
  const ns = names(id).namespaces;
  for (const h of /** @type {const} */ (['a', 'b'])) {
    const r = await run(['ip', 'netns', 'exec', ns[h], 'sysctl', '-q', '-w', `net.ipv4.tcp_congestion_control=${cc}`]);
    if (r.code !== 0) return { tcp_congestion_control: cc, set: false, error: r.stderr.trim() };
  }
  return { tcp_congestion_control: cc, set: true };
}
