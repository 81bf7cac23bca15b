// @ts-check
// A run pinned to its own CPUs (a study's --parallel) is judged by the busy share of those CPUs, computed from
// /proc/stat's per-CPU lines; checked here against sums done by hand on fixed /proc/stat texts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { busyFraction, cpuSetBusyFraction, parseCpuList, pinnedCpus, readCpuTimes, readPerCpuTimes } from '../hostload.js';
import { validityChecks } from '../validity.js';

// user nice system idle iowait irq softirq steal guest guest_nice
const stat0 = `cpu  100 0 100 800 0 0 0 0 0 0
cpu0 50 0 50 400 0 0 0 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
intr 1 2 3
`;
const stat1 = `cpu  400 0 200 1200 100 0 0 0 0 0
cpu0 300 0 80 420 0 0 0 0 0 0
cpu1 100 0 120 780 100 0 0 0 0 0
intr 1 2 3
`;

test('busy share of all CPUs and of a CPU set, from /proc/stat', () => {
  // all: busy 600-200 = 400 of total 1900-1000 = 900; iowait counts as idle
  assert.equal(busyFraction(readCpuTimes(stat0), readCpuTimes(stat1)), 400 / 900);
  const a = readPerCpuTimes(stat0);
  const b = readPerCpuTimes(stat1);
  // cpu0: busy (300+80)-(50+50) = 280 of 800-500 = 300
  assert.equal(cpuSetBusyFraction(a, b, [0]), 280 / 300);
  // cpu1: busy 220-100 = 120 of 1100-500 = 600 (iowait 100 not busy)
  assert.equal(cpuSetBusyFraction(a, b, [1]), 120 / 600);
  assert.equal(cpuSetBusyFraction(a, b, [0, 1]), 400 / 900);
  assert.equal(cpuSetBusyFraction(a, b, [7]), 0, 'a CPU the readings do not know did no work');
});

test('CPU lists in the kernel format', () => {
  assert.deepEqual(parseCpuList('0-3,8,10-11\n'), [0, 1, 2, 3, 8, 10, 11]);
  assert.deepEqual(parseCpuList('1'), [1]);
  assert.throws(() => parseCpuList('0-x'), /not a CPU list/);
});

test('pinned: fewer allowed CPUs than online ones; not pinned: null', () => {
  assert.deepEqual(pinnedCpus('Name:\tnode\nCpus_allowed_list:\t1\n', '0-1\n'), [1]);
  assert.equal(pinnedCpus('Cpus_allowed_list:\t0-1\n', '0-1\n'), null);
  assert.deepEqual(pinnedCpus('Cpus_allowed_list:\t2-3\n', '0-7\n'), [2, 3]);
});

test('a process started under taskset sees its own CPU set', { skip: !spawnSync('taskset', ['--version']).stdout }, () => {
  const code = `import('${new URL('../hostload.js', import.meta.url).href}').then((m) => console.log(JSON.stringify(m.pinnedCpus())))`;
  const online = parseCpuList(readOnline());
  const r = spawnSync('taskset', ['-c', String(online[0]), process.execPath, '-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), online.length > 1 ? [online[0]] : null);
});

function readOnline() {
  return spawnSync('cat', ['/sys/devices/system/cpu/online'], { encoding: 'utf8' }).stdout;
}

const base = {
  dataPrefix: '10.0.', selectedPairs: [{ side: 'a', local: { address: '10.0.1.2' }, remote: { address: '10.0.2.2' } },
    { side: 'b', local: { address: '10.0.2.2' }, remote: { address: '10.0.1.2' } }],
  framesDecoded: { a: 9, b: 9 }, connectTimeoutS: 20, connectSeconds: 1, cpuLimited: {}, samples: {},
  bottleneckAlive: null, captures: null, captureEnabled: false, hostCpuBusy: 0.95,
};

test('a pinned run is judged by its own CPUs, not by the host shared with the other runs', () => {
  const ok = validityChecks({ ...base, cpuSet: [2, 3], cpuSetBusy: 0.5 });
  const names = ok.checks.map((c) => c.name);
  assert.ok(names.includes('cpu_set_not_saturated') && !names.includes('host_cpu_not_saturated'));
  assert.equal(ok.valid, true);
  assert.match(ok.checks.find((c) => c.name === 'cpu_set_not_saturated')?.detail ?? '', /CPUs 2,3 were 50% busy .*limit 90%.*host's CPUs 95%/);
  const disturbed = validityChecks({ ...base, cpuSet: [2, 3], cpuSetBusy: 0.91 });
  assert.equal(disturbed.valid, false);
  assert.deepEqual(disturbed.checks.filter((c) => !c.ok).map((c) => c.name), ['cpu_set_not_saturated']);
  assert.equal(validityChecks({ ...base, cpuSet: [2, 3], cpuSetBusy: 0.9 }).valid, true, 'the limit itself passes');
  // not pinned: the host check as before
  assert.deepEqual(validityChecks(base).checks.filter((c) => !c.ok).map((c) => c.name), ['host_cpu_not_saturated']);
});
