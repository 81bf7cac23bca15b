// @ts-check
// The tick rate (CONFIG_HZ) of the kernel whose qdiscs run a network, for the manifest: Linux's PIE updates on its
// timer, every ceil(tupdate x HZ) + 1 ticks (docs/bottleneck.md, "PIE's update period"), so a result under the
// kernel or uml backend depends on it. The userspace bottleneck models it with the scenario's `timer_hz` instead.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { release } from 'node:os';
import { spawnSync } from 'node:child_process';

/**
 * CONFIG_HZ from a kernel config's text, or null.
 * @param {string} text
 */
export function configHz(text) {
  const m = /^CONFIG_HZ=(\d+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}

/** Where a running kernel's config may be: its own (CONFIG_IKCONFIG_PROC), then the one Debian installs beside it. */
export const HOST_CONFIGS = ['/proc/config.gz', `/boot/config-${release()}`];

/** This machine's kernel, from the first of HOST_CONFIGS that reads, else null. */
export function hostKernelHz() {
  for (const file of HOST_CONFIGS) {
    try {
      const raw = readFileSync(file);
      return configHz((file.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'));
    } catch { /* the next */ }
  }
  return null;
}

/**
 * A user-mode Linux kernel binary's: it prints its own config (`--showconfig`, a few ms), else null.
 * @param {string} binary
 */
export function umlKernelHz(binary) {
  const r = spawnSync(binary, ['--showconfig'], { encoding: 'utf8', timeout: 10000 });
  return r.status === 0 ? configHz(r.stdout) : null;
}
