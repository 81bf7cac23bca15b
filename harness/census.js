// @ts-check
// A census of everything rtclab can leave on a host, found by its names (netem/names.js, leftovers.js): namespaces and their
// mounts, root-side veths, nft tables, NFQUEUE rules in the root namespace, state and reservation files, browser
// profiles, uml guest directories, and processes (Chromium, tcpdump, iperf3, the bottleneck, the uml guest, the
// harness, netem's CLI, the signaling server, the study runner, a scenario's CPU load). The kill campaign (bench/reliability) counts it after every kill; empty means clean.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NS_RE, ROOT_VETH_RE, NFT_TABLE_RE, STATE_DIR, UML_DIR } from '../netem/names.js';
import { browserProfiles } from './leftovers.js';

/** Command lines that belong to rtclab's processes. */
const OURS = [/rtclab-bottleneck/, /umid=rtclab-/, /netem\/uml\/exec\.js/, /capture-[ab]\.pcap/, /iperf3.*(rtclab|iperf3-\d+)/, /rtclab-chromium-/,
  /harness\/cli\.js/, /netem\/cli\.js/, /signaling\/server\.js/, /rtclab_study/, /chromium-in-ns|chromium\.sh/,
  /stress-ng .*cpu-load\.log/];

/** @param {string[]} argv */
const lines = (argv) => {
  try { return execFileSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n'); } catch { return []; }
};

/**
 * @param {{ ignorePids?: number[], only?: string[] }} [o] ignorePids: processes not to count (besides the caller and
 *   its parent); only: count just what names one of these strings (run ids, run directories), e.g. on a host where
 *   other runs go on
 * @returns {Record<string, string[]>} per kind, what is there (every list empty: nothing left)
 */
export function census(o = {}) {
  const only = o.only;
  const all = fullCensus(o.ignorePids ?? [], only);
  if (!only) return all;
  // Processes were matched on their whole command line (a process's line here is cut short).
  return Object.fromEntries(Object.entries(all).map(([kind, items]) => [kind,
    kind === 'processes' ? items : items.filter((i) => only.some((s) => i.includes(s)))]));
}

/** @param {number[]} ignorePids @param {string[] | undefined} only */
function fullCensus(ignorePids, only) {
  const ignore = new Set([process.pid, process.ppid, ...ignorePids]);
  const namespaces = lines(['ip', 'netns', 'list']).map((l) => l.split(' ')[0]).filter((n) => NS_RE.test(n));
  const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '')
    .filter((m) => /^\/run\/netns\/rtclab-/.test(m));
  const rootLinks = lines(['ip', '-br', 'link']).map((l) => l.split(/[ @]/)[0]).filter((n) => ROOT_VETH_RE.test(n));
  const nftTables = lines(['nft', 'list', 'tables']).map((l) => l.split(' ').pop() ?? '').filter((t) => NFT_TABLE_RE.test(t));
  const nfqueueRules = lines(['iptables', '-w', '-t', 'mangle', '-S']).filter((l) => l.includes('NFQUEUE'));
  const stateFiles = existsSync(STATE_DIR)
    ? readdirSync(STATE_DIR).filter((f) => f !== 'mgmt').map((f) => join(STATE_DIR, f)) : [];
  const mgmtDir = join(STATE_DIR, 'mgmt');
  const reservations = existsSync(mgmtDir) ? readdirSync(mgmtDir).map((f) => join(mgmtDir, f)) : [];
  const umlDirs = existsSync(UML_DIR) ? readdirSync(UML_DIR).map((f) => join(UML_DIR, f)) : [];
  /** @type {string[]} */
  const processes = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number)) {
    if (ignore.has(pid)) continue;
    let cmdline, stat;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch { continue; } // gone meanwhile
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    if (state === 'Z' || !OURS.some((re) => re.test(cmdline))) continue; // a zombie holds nothing
    if (only && !only.some((s) => `${pid} ${cmdline}`.includes(s))) continue;
    processes.push(`${pid} ${cmdline.slice(0, 160)}`);
  }
  return { namespaces, netns_mounts: mounts, root_links: rootLinks, nft_tables: nftTables, nfqueue_rules_in_root: nfqueueRules,
    state_files: stateFiles, mgmt_reservations: reservations, uml_guest_dirs: umlDirs, browser_profiles: browserProfiles(), processes };
}

/** @param {Record<string, string[]>} c @returns {number} how many things are left */
export const censusCount = (c) => Object.values(c).reduce((n, items) => n + items.length, 0);
