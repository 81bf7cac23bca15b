#!/usr/bin/env node
// @ts-check
// netem's CLI: the emulated network without a call (docs/netem.md). Networks brought `up` stay up after the CLI
// exits; their state is in /run/rtclab/<id>.json and their logs in /run/rtclab/<id>/.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs, USAGE } from './cli-args.js';
import { createNetwork, chooseBackend } from './index.js';
import { loadScenario } from '../scenarios/model.js';
import { cleanAll, teardown } from './cleanup.js';
import { newId, names } from './names.js';
import { saveState, loadState, cliRunDir } from './state.js';
import { alive, run } from './exec.js';
import { planTopology } from './topology.js';
import { planKernelNetwork } from './kernel-backend.js';
import { routeRules } from './chain.js';
import { guestRun, channelDir } from './uml/guest.js';

/** @param {string} file */
function lastLine(file) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').pop() ?? '';
  } catch {
    return '';
  }
}

/** @param {string} id */
function requireRun(id) {
  if (!existsSync(`/run/netns/${names(id).namespaces.r}`)) throw new Error(`no network ${id} is up (see \`ip netns list\`)`);
}

/** Exit status after a signal, as a shell reports it. */
const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/**
 * @param {{ scenario?: string, id?: string, backend?: 'auto'|'kernel'|'userspace'|'uml' }} a
 * @returns {Promise<number>} exit status
 */
async function up(a) {
  const scenario = loadScenario(a.scenario); // fails on a bad scenario before anything is set up
  const id = a.id ?? newId();
  if (existsSync(`/run/netns/${names(id).namespaces.a}`)) throw new Error(`a network with id ${id} is already up`);
  // A signal while the network comes up stops the set-up: createNetwork starts no further step, lets the one in flight
  // settle and removes everything it made. (Tearing down from here, beside a set-up that went on, left a bottleneck
  // it started meanwhile running with nothing left to find it by.) After a SIGKILL, `clean` does it.
  const interrupt = new AbortController();
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    process.on(sig, () => {
      if (!interrupt.signal.aborted) console.error(`netem: ${sig}: stopping the set-up of ${id} and removing what it made...`);
      interrupt.abort(sig);
    });
  }
  // For netem/test/interrupt.integration.test.js: set-up waits at this phase until a signal comes, so the signal
  // lands in that phase however fast or slow the machine is.
  const holdAt = process.env.RTCLAB_NETEM_HOLD_AT;
  const interrupted = new Promise((resolve) => interrupt.signal.addEventListener('abort', resolve, { once: true }));
  const runDir = cliRunDir(id);
  try {
    await createNetwork({ id, scenario, runDir, backend: a.backend, detached: true, signal: interrupt.signal,
      log: (m) => { if (process.env.RTCLAB_VERBOSE) console.error(m); },
      onPhase: async (phase) => {
        if (process.env.RTCLAB_VERBOSE || holdAt) console.error(`netem: set-up phase ${phase}`);
        if (phase !== holdAt) return;
        const keepAlive = setInterval(() => {}, 60_000); // a pending promise alone would let Node exit
        await interrupted;
        clearInterval(keepAlive);
      } });
  } catch (e) {
    if (!interrupt.signal.aborted) throw e;
    // Whatever failed once the signal came (Ctrl-C also reaches the commands set-up was running), it is all removed.
    console.error(`netem: up ${id} interrupted by ${interrupt.signal.reason}: nothing of it is left`);
    return SIGNAL_EXIT[/** @type {'SIGINT'|'SIGTERM'|'SIGHUP'} */ (interrupt.signal.reason)];
  }
  // The network now belongs to nobody: owner_pid null tells `clean` it is no longer being set up (docs/netem.md).
  saveState(id, { ...loadState(id), owner_pid: null, scenario_file: a.scenario ?? null });
  console.log(id);
  return 0;
}

/** @param {string} id @param {'a'|'r'|'b'} host @param {string[]} command */
function exec(id, host, command) {
  requireRun(id);
  const r = spawnSync('ip', ['netns', 'exec', names(id).namespaces[host], ...command], { stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 128 + 9;
}

/** @param {string} id */
async function show(id) {
  requireRun(id);
  const ns = names(id).namespaces;
  const state = loadState(id);
  const out = [`network ${id}`];
  if (state) {
    out.push(`  backend: ${state.info.backend.used} (requested ${state.info.backend.requested}: ${state.info.backend.reason})`);
    out.push(`  data: a ${state.info.data.a}, b ${state.info.data.b}; management: a ${state.info.mgmt.a.host} -> root ${state.info.mgmt.a.root}, b ${state.info.mgmt.b.host} -> root ${state.info.mgmt.b.root}`);
    for (const b of state.bottlenecks) {
      out.push(`  bottleneck ${b.direction}: pid ${b.pid} ${alive(b.pid) ? 'running' : 'NOT RUNNING (traffic in this direction is stopped)'}; log ${b.log}`);
      const stats = lastLine(b.log.replace(/\.log$/, '.stats.jsonl'));
      if (stats) out.push(`    last stats: ${stats}`);
    }
  } else {
    out.push('  (no state file: not brought up by this CLI)');
  }
  for (const h of /** @type {const} */ (['a', 'r', 'b'])) {
    out.push(`\n[${ns[h]}] addresses`);
    out.push((await run(['ip', '-n', ns[h], '-br', 'addr'])).stdout.trimEnd());
  }
  out.push(`\n[${ns.r}] qdiscs`);
  out.push((await run(['ip', 'netns', 'exec', ns.r, 'tc', '-s', 'qdisc', 'show'])).stdout.trimEnd());
  if (state?.info.backend.used === 'uml') {
    out.push(`\n[uml guest in ${ns.r}, kernel ${state.info.backend.kernel}] addresses and qdiscs`);
    for (const argv of [['ip', '-br', 'addr'], ['tc', '-s', 'qdisc', 'show']]) {
      const r = await guestRun(channelDir(id), argv);
      out.push((r.stdout + r.stderr).trimEnd());
    }
  }
  out.push(`\n[${ns.r}] NFQUEUE rules`);
  out.push((await run(['ip', 'netns', 'exec', ns.r, 'iptables', '-w', '-t', 'mangle', '-S', 'FORWARD'])).stdout.trimEnd());
  console.log(out.join('\n'));
}

/**
 * Print what `up` would run: the backend `auto` (or the scenario's backend) chooses here and why, the topology, the
 * kernel backend's tc plan (or why the kernel cannot), and the links the userspace bottleneck would get.
 * @param {string} [file]
 */
async function plan(file) {
  const scenario = loadScenario(file);
  const id = 'xxxxxx';
  const lines = [];
  try {
    const backend = await chooseBackend(scenario.backend, scenario.network);
    lines.push(`# backend: ${backend.used} (requested ${backend.requested}: ${backend.reason})`);
  } catch (e) {
    lines.push(`# backend: none can run this scenario here (requested ${scenario.backend}): ${/** @type {Error} */ (e).message}`);
  }
  lines.push('\n# topology (run id xxxxxx, management subnet 10.99.0.0/29)');
  for (const argv of planTopology(id, 0)) lines.push(argv[0] === 'nft' ? `nft -f - <<EOF\n${argv[3]}EOF` : argv.join(' '));
  lines.push('\n# kernel backend');
  const hops = scenario.network.hops;
  try {
    if (hops.length) throw new Error('a chain of bottlenecks (network.hops) is played by the userspace backend only');
    for (const argv of planKernelNetwork(scenario.network, ['ip', 'netns', 'exec', names(id).namespaces.r])) lines.push(argv.join(' '));
  } catch (e) {
    lines.push(`# not possible: ${/** @type {Error} */ (e).message}`);
  }
  if (hops.length) {
    lines.push(`\n# userspace backend: a chain of ${hops.length} hops, each a -> b as bottleneck-hop<i>-forward.json (its way back: its delay only); a call's rules, once its 5-tuple is known, e.g.`);
    for (const argv of routeRules({ proto: 'udp', src: '10.0.1.2', sport: 40000, dst: '10.0.2.2', dport: 50000 }, hops.map((_, i) => i), hops.length)) lines.push(argv.join(' '));
    lines.push(JSON.stringify(hops, null, 2));
  } else {
    lines.push('\n# userspace backend: the links as bottleneck-forward.json / bottleneck-reverse.json');
    lines.push(JSON.stringify(scenario.network, null, 2));
  }
  console.log(lines.join('\n'));
}

async function main() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(/** @type {Error} */ (e).message);
    return 2;
  }
  switch (a.cmd) {
    case 'help': console.log(USAGE); return 0;
    case 'up': return up(a);
    case 'plan': await plan(a.scenario); return 0;
    case 'exec': return exec(a.id, a.host, a.command);
    case 'show': await show(a.id); return 0;
    case 'down': requireRun(a.id); await teardown(a.id); console.log(`down ${a.id} (logs kept in ${cliRunDir(a.id)})`); return 0;
    case 'clean': {
      const ids = await cleanAll(a.ids.length ? { ids: a.ids } : {});
      console.log(ids.length ? `removed ${ids.join(' ')}` : 'nothing to clean');
      return 0;
    }
  }
  return 2;
}

main().then((code) => process.exit(code), (e) => {
  console.error(`netem: ${e.message}`);
  process.exit(1);
});
