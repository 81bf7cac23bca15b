// @ts-check
// Tearing a run down by its id, and cleaning up everything any earlier run left (found by naming convention,
// like Mininet's `mn -c`): processes in the run's namespaces (the uml backend's guest among them), the namespaces,
// root veths, the nft table, state and the uml guest's directory. The network only: what a call leaves beside it
// (browser profiles, the manifest of a killed run) is the harness's to clean (harness/leftovers.js).
import { rmSync } from 'node:fs';
import { alive, run, sleep } from './exec.js';
import { NS_RE, ROOT_VETH_RE, NFT_TABLE_RE, checkId, nsName, names } from './names.js';
import { releaseMgmtSubnet, removeState, stateIds, reservationIds, cliRunDir, loadState } from './state.js';
import { removeGuestDir, guestDirIds } from './uml/guest.js';


/** @param {string} ns @returns {Promise<number[]>} */
async function pidsIn(ns) {
  const r = await run(['ip', 'netns', 'pids', ns]);
  return r.code === 0 ? r.stdout.split(/\s+/).filter(Boolean).map(Number) : [];
}

/**
 * SIGTERM the processes, then SIGKILL whatever is still there after grace_ms.
 * @param {number[]} pids @param {number} grace_ms
 */
export async function killPids(pids, grace_ms = 2000) {
  for (const pid of pids) { try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } }
  const deadline = Date.now() + grace_ms;
  while (pids.some(alive) && Date.now() < deadline) await sleep(20);
  for (const pid of pids.filter(alive)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  while (pids.some(alive) && Date.now() < deadline + 2000) await sleep(20);
}

/** Namespaces that exist now. @returns {Promise<string[]>} */
export async function listNamespaces() {
  const r = await run(['ip', 'netns', 'list']);
  return r.stdout.split('\n').map((l) => l.split(' ')[0]).filter(Boolean);
}

/**
 * Remove everything of one run. Idempotent; safe while nothing of the run exists.
 * @param {string} id
 * @param {{ removeLogs?: boolean }} [opts]
 */
export async function teardown(id, opts = {}) {
  checkId(id);
  const hosts = /** @type {const} */ (['a', 'r', 'b', 'p']);
  const existing = new Set(await listNamespaces());
  const namespaces = hosts.map((h) => nsName(id, h)).filter((n) => existing.has(n));
  /** @type {number[]} */
  const pids = [];
  for (const ns of namespaces) pids.push(...(await pidsIn(ns)));
  await killPids(pids.filter((p) => p !== process.pid));
  for (const ns of namespaces) await run(['ip', 'netns', 'del', ns]);
  removeGuestDir(id);
  const n = names(id);
  for (const dev of Object.values(n.rootVeths)) {
    const r = await run(['ip', 'link', 'show', 'dev', dev]);
    if (r.code === 0) await run(['ip', 'link', 'del', 'dev', dev]);
  }
  const t = await run(['nft', 'list', 'table', 'inet', n.nftTable]);
  if (t.code === 0) await run(['nft', 'delete', 'table', 'inet', n.nftTable]);
  releaseMgmtSubnet(id);
  removeState(id);
  if (opts.removeLogs) rmSync(cliRunDir(id), { recursive: true, force: true });
}

/**
 * Ids of every run that left something of its network on this host (and of the candidates: ids whose other leftovers
 * the caller found), whose owner is gone.
 * @param {string[]} [candidates] @returns {Promise<string[]>}
 */
export async function leftoverIds(candidates = []) {
  /** @type {Set<string>} */
  const ids = new Set([...stateIds(), ...reservationIds(), ...guestDirIds(), ...candidates]);
  for (const ns of await listNamespaces()) {
    const m = NS_RE.exec(ns);
    if (m) ids.add(m[1]);
  }
  const links = await run(['ip', '-j', 'link', 'show']);
  for (const l of JSON.parse(links.stdout || '[]')) {
    const m = ROOT_VETH_RE.exec(l.ifname ?? '');
    if (m) ids.add(m[1]);
  }
  const tables = await run(['nft', '-j', 'list', 'tables']);
  for (const item of JSON.parse(tables.stdout || '{"nftables":[]}').nftables ?? []) {
    const m = item.table ? NFT_TABLE_RE.exec(item.table.name) : null;
    if (m) ids.add(m[1]);
  }
  // A run whose owner is still running is not left behind: a call whose harness runs, or a network the CLI's `up` is
  // still setting up (it clears owner_pid when the network is up; tearing it down beside its set-up could miss what
  // that set-up starts next). clean without ids leaves it alone (name it to remove it).
  return [...ids].filter((id) => {
    const state = loadState(id);
    return !(state && state.owner_pid && state.owner_pid !== process.pid && alive(state.owner_pid));
  });
}

/**
 * Remove whatever any earlier run left (or only the given ids). Safe any time; returns the ids cleaned.
 * @param {{ ids?: string[] }} [opts]
 */
export async function cleanAll(opts = {}) {
  const ids = opts.ids ?? (await leftoverIds());
  for (const id of ids) await teardown(id, { removeLogs: true });
  return ids;
}
