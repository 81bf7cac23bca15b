// @ts-check
// The scenario's cpu_load for real (harness/cpu-load.js): stress-ng at a third of a core, SCHED_FIFO 10, for about
// 3 s, measured from /proc against what was asked; stopped, it leaves no process; in a run's r namespace whose harness
// is gone, netem's clean (rtclab clean) removes it. Needs root and stress-ng (scripts/setup.sh).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { newId, nsName } from '../../netem/names.js';
import { alive } from '../../netem/exec.js';
import { measure } from '../../netem/test-support/measure.js';
import { census } from '../census.js';
import { CpuLoad, CPU_LOAD_LOG, processTree } from '../cpu-load.js';
import { cleanRuns } from '../leftovers.js';
import { MAX_CPU_LOAD_DIFFERENCE_CORES } from '../validity.js';

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
const spec = /** @type {const} */ ({ cores: 0.33, policy: 'fifo', priority: 10 });

test('a fifo load of 0.33 cores uses 0.33 cores, as /proc counts it, and leaves nothing when stopped', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-cpuload-'));
  const logFile = path.join(dir, CPU_LOAD_LOG);
  const exits = /** @type {string[]} */ ([]);
  const load = new CpuLoad({ spec, logFile, timeoutS: 60, onExit: (m) => exits.push(m) });
  try {
    const workers = await load.start();
    assert.deepEqual(workers.map((w) => [w.policy, w.priority]), [['fifo', 10]]);
    const pids = [/** @type {number} */ (load.pid), ...workers.map((w) => w.pid)];
    assert.equal(census({ only: [logFile] }).processes.length, pids.length, 'the census knows the load as the run\'s');
    const cpu0 = load.cpuSeconds();
    const t0 = performance.now();
    await sleep(3000);
    const cores = (load.cpuSeconds() - cpu0) / ((performance.now() - t0) / 1000);
    measure(t, 'cpuload.fifo.cores', cores, 4);
    // A clock tick (10 ms) at each end of 3 s is 0.007 cores of reading error, inside the bound.
    assert.ok(Math.abs(cores - spec.cores) <= MAX_CPU_LOAD_DIFFERENCE_CORES,
      `the load used ${cores.toFixed(4)} cores, asked ${spec.cores} (bound ±${MAX_CPU_LOAD_DIFFERENCE_CORES})`);
    await load.stop();
    assert.deepEqual(pids.filter(alive), [], 'every process of the load ended');
    assert.deepEqual(census({ only: [logFile] }).processes, []);
    assert.deepEqual(exits, [], 'a load stopped by its owner is no failure');
    assert.match(fs.readFileSync(logFile, 'utf8'), /stress-ng/);
  } finally {
    await load.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a load whose harness is gone, in its run\'s r namespace, is removed by clean with the namespace', async () => {
  const id = newId();
  const ns = nsName(id, 'r');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rtclab-cpuload-${id}-`));
  const logFile = path.join(dir, CPU_LOAD_LOG);
  execFileSync('ip', ['netns', 'add', ns]);
  const load = new CpuLoad({ spec: { cores: 0.1, policy: 'other' }, logFile, timeoutS: 60, nsExec: ['ip', 'netns', 'exec', ns] });
  try {
    await load.start();
    const pids = processTree(/** @type {number} */ (load.pid)).map((p) => p.pid);
    assert.equal(pids.length, 2);
    // As after a harness killed outright: nobody stops the load; `rtclab clean ID` finds the run by its namespace.
    assert.deepEqual(await cleanRuns({ ids: [id] }), [id]);
    for (let i = 0; i < 100 && pids.some(alive); i++) await sleep(20);
    assert.deepEqual(pids.filter(alive), [], 'clean ended every process of the load');
    assert.deepEqual(census({ only: [logFile, id] }).processes, []);
    assert.deepEqual(census({ only: [id] }).namespaces, []);
  } finally {
    await load.stop();
    try { execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' }); } catch { /* clean removed it */ }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
