// @ts-check
// What the manifest records of the machine and the code (harness/versions.js), against independent readings: the
// CPU model and count from /proc/cpuinfo, the kernel from /proc/sys/kernel/osrelease, memory from /proc/meminfo, and
// the commit from git itself with its "-dirty" rule (a changed file or an untracked one that is not ignored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitCommit, hostInfo } from '../versions.js';
import { hostKernelHz } from '../../netem/kernel-hz.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('hostInfo: the CPU model and count, memory, kernel and its HZ, as /proc says', () => {
  const h = hostInfo();
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const models = [...cpuinfo.matchAll(/^model name\s*:\s*(.+)$/gm)].map((m) => m[1].trim());
  if (models.length) assert.equal(h.cpu_model, models[0]);
  assert.equal(h.cpus, [...cpuinfo.matchAll(/^processor\s*:/gm)].length);
  assert.equal(h.kernel, fs.readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim());
  const memKib = Number(/^MemTotal:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))?.[1]);
  assert.equal(h.memory_gib, Math.round(memKib / 2 ** 20));
  assert.equal(h.kernel_hz, hostKernelHz()); // null when no kernel config is readable: "not recorded" on the page
});

test('gitCommit: HEAD, with -dirty exactly when git status lists a file (untracked ones too)', () => {
  const head = execFileSync('git', ['-C', repoRoot, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const status = execFileSync('git', ['-C', repoRoot, 'status', '--porcelain', '--untracked-files=normal'],
    { encoding: 'utf8' });
  assert.equal(gitCommit(), status.trim() ? `${head}-dirty` : head);
});
