// @ts-check
// What a run leaves outside the network, and cleaning it with the network: the browsers' profiles in the temporary
// directory, and the manifest of a run whose harness was killed (it still says "running"). netem cleans the network
// (namespaces, veths, rules, the bottleneck, the uml guest: netem/cleanup.js, and with every process in the run's
// namespaces a scenario's CPU load, which runs in r: harness/cpu-load.js) and knows nothing of these;
// `npm run clean` (this module's cleanRuns, via harness/clean.js) does both.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanAll, leftoverIds } from '../netem/cleanup.js';
import { alive } from '../netem/exec.js';
import { loadState } from '../netem/state.js';

/** Chromium profiles in the temporary directory: rtclab-chromium-<id>-<host>-XXXXXX for a browser in a run's host. */
export const PROFILE_PREFIX = 'rtclab-chromium-';
export const PROFILE_RE = /^rtclab-chromium-([a-z0-9]{6})-[ab]-/;

/** Browser profile directories of runs in the temporary directory (names only). */
export function browserProfiles() {
  return readdirSync(tmpdir()).filter((d) => PROFILE_RE.test(d));
}

/** Removes run `id`'s browser profiles (a browser that closed removed its own already). @param {string} id */
export function removeProfiles(id) {
  for (const dir of browserProfiles()) {
    if (PROFILE_RE.exec(dir)?.[1] === id) rmSync(join(tmpdir(), dir), { recursive: true, force: true });
  }
}

/**
 * A run whose owner died without tearing it down (SIGKILL, a crash) still says "running" in its manifest: say how it
 * ended instead. Only for another process's run whose owner is gone (the owner's own teardown writes its manifest).
 * @param {{ runDir?: string, owner_pid?: number, detached?: boolean } | null} run netem's record of the run, read
 *   before its clean removed it
 */
function markAbandonedRun(run) {
  if (!run?.runDir || run.detached || !run.owner_pid || run.owner_pid === process.pid || alive(run.owner_pid)) return;
  const file = join(run.runDir, 'manifest.json');
  if (!existsSync(file)) return;
  try {
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    if (manifest.status !== 'running') return;
    manifest.status = 'incomplete';
    manifest.error = `the process that ran it (pid ${run.owner_pid}) ended without tearing it down; ` +
      `what it left was removed by rtclab's clean at ${new Date().toISOString()}`;
    manifest.ended_by = 'clean';
    writeFileSync(file + '.tmp', JSON.stringify(manifest, null, 2) + '\n');
    renameSync(file + '.tmp', file);
  } catch { /* a manifest we cannot read or write stays as it is */ }
}

/**
 * Removes whatever earlier runs left whose owner is gone (or only the given ids): the network (netem's cleanAll),
 * the browser profiles, and a "running" manifest becomes "incomplete". Returns the ids cleaned.
 * @param {{ ids?: string[] }} [opts]
 */
export async function cleanRuns(opts = {}) {
  const profileIds = browserProfiles().map((d) => /** @type {string} */ (PROFILE_RE.exec(d)?.[1]));
  const ids = opts.ids ?? (await leftoverIds(profileIds));
  const records = new Map(ids.map((id) => [id, loadState(id)])); // netem's clean removes them
  await cleanAll({ ids });
  for (const id of ids) {
    markAbandonedRun(records.get(id));
    removeProfiles(id);
  }
  return ids;
}
