// @ts-check
// What produced a run: versions of every component, recorded in its manifest so a result can be reproduced.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumBinary } from './browser.js';
import { hostKernelHz } from '../netem/kernel-hz.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** First line a command prints (stdout or stderr), or null when it cannot run. @param {string} cmd @param {string[]} args */
function firstLine(cmd, args) {
  try {
    const out = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
    return out.split('\n').find((l) => l.trim())?.trim() ?? null;
  } catch (err) {
    const e = /** @type {any} */ (err);
    const text = `${e.stdout ?? ''}${e.stderr ?? ''}`;
    return text.split('\n').find((l) => l.trim())?.trim() ?? null;
  }
}

export function rtclabVersion() {
  return JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version;
}

/** HEAD, with "-dirty" when the tree differs from it: tracked files changed or untracked files that are not ignored
 * (the rule of a study's refusal, analysis/rtclab_study/tree.py). */
export function gitCommit() {
  const commit = firstLine('git', ['-C', repoRoot, 'rev-parse', 'HEAD']);
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) return null;
  const dirty = firstLine('git', ['-C', repoRoot, 'status', '--porcelain', '--untracked-files=normal']);
  return dirty ? `${commit}-dirty` : commit;
}

/** The same as firstLine, without blocking: the versions are read while the network comes up. @param {string} cmd @param {string[]} args */
function firstLineAsync(cmd, args) {
  return new Promise((resolve) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: 10_000 }, (_err, stdout, stderr) => {
      resolve(`${stdout ?? ''}${stderr ?? ''}`.split('\n').find((l) => l.trim())?.trim() ?? null);
    });
  });
}

/** @param {{ browser?: boolean }} [o] browser: false for a run without a call (Chromium is neither probed nor named) */
export async function collectVersions({ browser = true } = {}) {
  let chromium = null;
  if (browser) {
    try { chromium = firstLineAsync(chromiumBinary(), ['--version']); } catch { /* reported when the call starts */ }
  }
  const [chromiumVersion, iproute2, tcpdump, iperf3] = await Promise.all([chromium,
    firstLineAsync('ip', ['-V']), firstLineAsync('tcpdump', ['--version']), firstLineAsync('iperf3', ['--version'])]);
  return { rtclab: rtclabVersion(), chromium: chromiumVersion, kernel: os.release(), iproute2, tcpdump, iperf3, node: process.version };
}

/** The machine a run ran on, for the findings page's provenance: its CPU model and count, memory, and the host
 * kernel's release and tick rate (CONFIG_HZ; null when no config is readable). */
export function hostInfo() {
  const cpus = os.cpus();
  return {
    hostname: os.hostname(), cpus: cpus.length, cpu_model: cpus[0]?.model?.trim() || null,
    memory_gib: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(), kernel_hz: hostKernelHz(),
  };
}
