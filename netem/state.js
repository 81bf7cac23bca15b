// @ts-check
// Host-wide bookkeeping under /run/rtclab: management subnet reservations (so concurrent runs never pick the same
// 10.99.N.0/29) and the state of networks the CLI left up.
import { mkdirSync, writeFileSync, readFileSync, readdirSync, unlinkSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR, nsName } from './names.js';
import { usedMgmtSubnets } from './topology.js';

const MGMT_DIR = join(STATE_DIR, 'mgmt');
/** A reservation whose run has no namespace after this long is left over from a crash. */
const STALE_RESERVATION_MS = 30000;

/**
 * Reserve a free management subnet index for a run: the first index that neither an address on the host nor a
 * reservation file holds. Other runs reserve and release at the same time (a study's parallel runs, the test tier's
 * lanes): a reservation released between our attempt to create it and our reading it is simply tried again.
 * @param {string} id
 * @param {{ dir?: string, used?: Set<number> }} [o] dir: where reservations are kept (tests); used: the indices in use
 *   on the host (default: read from its addresses)
 * @returns {Promise<number>}
 */
export async function reserveMgmtSubnet(id, o = {}) {
  const dir = o.dir ?? MGMT_DIR;
  mkdirSync(dir, { recursive: true });
  const used = o.used ?? await usedMgmtSubnets();
  for (let n = 0; n < 256; n++) {
    if (used.has(n)) continue;
    const file = join(dir, String(n));
    try {
      writeFileSync(file, id, { flag: 'wx' });
      return n;
    } catch (e) {
      if (/** @type {any} */ (e).code !== 'EEXIST') throw e;
      const held = reservation(file);
      if (!held) {
        n--; // released since: try the same index again
        continue;
      }
      const stale = !existsSync(`/run/netns/${nsName(held.owner, 'a')}`) && Date.now() - held.mtimeMs > STALE_RESERVATION_MS;
      if (stale) {
        try { unlinkSync(file); } catch (e2) { if (/** @type {any} */ (e2).code !== 'ENOENT') throw e2; }
        n--; // try the same index again
      }
    }
  }
  throw new Error('no free management subnet 10.99.N.0/29 (N = 0..255): run `node netem/cli.js clean`');
}

/** A reservation file's owner and age, or null when it is gone (its run released it meanwhile). @param {string} file */
function reservation(file) {
  try {
    return { owner: readFileSync(file, 'utf8').trim(), mtimeMs: statSync(file).mtimeMs };
  } catch (e) {
    if (/** @type {any} */ (e).code === 'ENOENT') return null;
    throw e;
  }
}

/** @param {string} id @param {string} [dir] where reservations are kept (tests) */
export function releaseMgmtSubnet(id, dir = MGMT_DIR) {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir)) {
    const file = join(dir, f);
    try {
      if (readFileSync(file, 'utf8').trim() === id) unlinkSync(file);
    } catch { /* raced with another cleanup */ }
  }
}

/** @param {string} id */
export const stateFile = (id) => join(STATE_DIR, `${id}.json`);
/** Directory for logs of a network the CLI brought up. @param {string} id */
export const cliRunDir = (id) => join(STATE_DIR, id);

/** @param {string} id @param {object} state */
export function saveState(id, state) {
  mkdirSync(STATE_DIR, { recursive: true });
  writeFileSync(stateFile(id), JSON.stringify(state, null, 2));
}

/** @param {string} id @returns {any | null} */
export function loadState(id) {
  try {
    return JSON.parse(readFileSync(stateFile(id), 'utf8'));
  } catch {
    return null;
  }
}

/** @param {string} id */
export function removeState(id) {
  try { unlinkSync(stateFile(id)); } catch { /* absent */ }
}

/** Ids that have a state file. */
export function stateIds() {
  if (!existsSync(STATE_DIR)) return [];
  return readdirSync(STATE_DIR).map((f) => /^([a-z0-9]{6})\.json$/.exec(f)?.[1]).filter((x) => !!x).map(String);
}

/** Ids that hold a management subnet reservation. */
export function reservationIds() {
  if (!existsSync(MGMT_DIR)) return [];
  /** @type {Set<string>} */
  const ids = new Set();
  for (const f of readdirSync(MGMT_DIR)) {
    try {
      const id = readFileSync(join(MGMT_DIR, f), 'utf8').trim();
      if (/^[a-z0-9]{6}$/.test(id)) ids.add(id);
    } catch { /* raced with a release */ }
  }
  return [...ids];
}
