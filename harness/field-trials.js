// @ts-check
// A field trial Chrome does not know is ignored without a word: the call would run Chrome's default and pass for the
// variant. So every trial key a scenario names must be in the Chromium binary's bytes (libwebrtc keeps each key as a
// string literal), checked before anything is set up (docs/gcc-trials.md).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The registry of GCC's component trials: harness/gcc-trials.json (the analyzer reads it too). */
export const GCC_TRIALS_FILE = path.join(repoRoot, 'harness', 'gcc-trials.json');

/** Where the keys found per binary are kept between calls: scanning a 250 MB binary takes seconds. */
const CACHE_DIR = process.env.RTCLAB_TRIAL_KEY_CACHE ?? path.join(os.tmpdir(), 'rtclab-trial-keys');

export class FieldTrialError extends Error {}

/**
 * The trials of a --force-fieldtrials string, in order: "Key1/Group1/Key2/Group2/" (the trailing slash optional).
 * @param {string} trials
 * @returns {{ key: string, group: string }[]}
 */
export function parseFieldTrials(trials) {
  if (!trials) return [];
  const parts = trials.endsWith('/') ? trials.slice(0, -1).split('/') : trials.split('/');
  if (parts.length % 2) {
    throw new FieldTrialError(`call.field_trials "${trials}": not Key/Group/ pairs (Chrome's --force-fieldtrials syntax: ` +
      'WebRTC-Some-Trial/Group/WebRTC-Other/Group/)');
  }
  const out = [];
  for (let i = 0; i < parts.length; i += 2) {
    const [key, group] = [parts[i], parts[i + 1]];
    if (!key || !group) throw new FieldTrialError(`call.field_trials "${trials}": an empty trial name or group at pair ${i / 2 + 1}`);
    out.push({ key, group });
  }
  return out;
}

/**
 * Which of `keys` occur in the file's bytes. The answer per key is cached by the file's path, size and mtime, so a
 * binary is read once per key set, not once per call.
 * @param {string} binary
 * @param {string[]} keys
 * @returns {Set<string>} the keys found
 */
export function keysInBinary(binary, keys) {
  const st = fs.statSync(binary);
  const id = `${path.resolve(binary)}|${st.size}|${st.mtimeMs}`;
  const cacheFile = path.join(CACHE_DIR, `${Buffer.from(id).toString('base64url')}.json`);
  /** @type {Record<string, boolean>} */
  let known = {};
  try { known = JSON.parse(fs.readFileSync(cacheFile, 'utf8')); } catch { /* not scanned yet (or unreadable): scan */ }
  const missing = keys.filter((k) => !(k in known));
  if (missing.length) {
    const data = fs.readFileSync(binary);
    for (const k of missing) known[k] = data.includes(Buffer.from(k, 'latin1'));
    try {
      fs.mkdirSync(CACHE_DIR, { recursive: true });
      const tmp = `${cacheFile}.${process.pid}`;
      fs.writeFileSync(tmp, JSON.stringify(known));
      fs.renameSync(tmp, cacheFile);
    } catch { /* a cache that cannot be written only costs the next call a scan */ }
  }
  return new Set(keys.filter((k) => known[k]));
}

/**
 * Throws FieldTrialError naming every trial key of the scenario's calls that the Chromium binary does not hold.
 * @param {{ calls: { id: string, field_trials: string }[] }} scenario
 * @param {string} binary
 */
export function checkTrialKeys(scenario, binary) {
  const byKey = new Map();
  for (const call of scenario.calls) {
    for (const { key } of parseFieldTrials(call.field_trials)) byKey.set(key, [...(byKey.get(key) ?? []), call.id]);
  }
  if (!byKey.size) return;
  const found = keysInBinary(binary, [...byKey.keys()]);
  const absent = [...byKey.keys()].filter((k) => !found.has(k));
  if (absent.length) {
    throw new FieldTrialError(`call.field_trials: ${absent.map((k) => `"${k}"`).join(', ')} ${absent.length > 1 ? 'are' : 'is'} ` +
      `not in the Chromium binary ${binary}: Chrome would ignore ${absent.length > 1 ? 'them' : 'it'} silently and run its default`);
  }
}
