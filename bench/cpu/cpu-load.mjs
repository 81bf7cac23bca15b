#!/usr/bin/env node
// @ts-check
// What a scenario's cpu_load really uses (harness/cpu-load.js, the same code the harness runs): stress-ng started
// N times for S seconds at the cores, policy and priority given, beside nothing else, each measured as the harness
// measures it over a call (its CPU seconds from /proc over the wall seconds), with the host's busy cores
// (/proc/stat) over the same time. The spread is what the validity check cpu_load_as_asked's bound is taken from
// (bench/cpu/RESULTS.md, "A CPU load beside the run"). Run as root (SCHED_FIFO) from the repository:
//   node bench/cpu/cpu-load.mjs --runs 10 --seconds 10 --cores 0.33 --policy fifo [--slice-ms 5]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUSY_SLICE_MS, CpuLoad, CPU_LOAD_LOG, stressNgVersion } from '../../harness/cpu-load.js';
import { readCpuTimes } from '../../harness/hostload.js';
import { normalizeScenario } from '../../scenarios/model.js';

const { values } = parseArgs({ options: {
  runs: { type: 'string', default: '10' }, seconds: { type: 'string', default: '10' }, cores: { type: 'string', default: '0.33' },
  policy: { type: 'string', default: 'fifo' }, priority: { type: 'string' }, 'slice-ms': { type: 'string', default: String(BUSY_SLICE_MS) },
} });
const runs = Number(values.runs);
const seconds = Number(values.seconds);
const sliceMs = Number(values['slice-ms']);
// The field as a scenario gives it, checked and normalised by the scenario model.
const spec = normalizeScenario({ cpu_load: { cores: Number(values.cores), policy: values.policy,
  ...(values.priority === undefined ? {} : { priority: Number(values.priority) }) } }, { label: 'command line' }).cpu_load;
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

console.log(`${stressNgVersion()}; ${os.cpus().length} CPUs, ${os.cpus()[0]?.model}; kernel ${os.release()}`);
console.log(`cpu_load ${JSON.stringify(spec)}, busy slices of ${sliceMs} ms: ${runs} run(s) of ${seconds} s`);
const measured = [];
for (let n = 1; n <= runs; n++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-cpuload-bench-'));
  const load = new CpuLoad({ spec, logFile: path.join(dir, CPU_LOAD_LOG), timeoutS: seconds + 60, sliceMs });
  try {
    const workers = await load.start();
    await sleep(500); // past its start, as a call starts seconds after the load
    const host0 = readCpuTimes();
    const cpu0 = load.cpuSeconds();
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const cpu1 = load.cpuSeconds();
    const wall = (performance.now() - t0) / 1000;
    const host1 = readCpuTimes();
    const cores = (cpu1 - cpu0) / wall;
    // /proc/stat's ticks are per CPU, as are USER_HZ ticks: busy ticks / 100 / wall = busy cores.
    const hostCores = (host1.busy - host0.busy) / 100 / wall;
    measured.push(cores);
    console.log(`run ${n}: load ${cores.toFixed(4)} cores (${(cpu1 - cpu0).toFixed(2)} CPU s / ${wall.toFixed(3)} s), ` +
      `host busy ${hostCores.toFixed(3)} cores; workers ${workers.map((w) => `${w.pid} ${w.policy} ${w.priority}`).join(', ')}`);
  } finally {
    await load.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const mean = measured.reduce((s, x) => s + x, 0) / measured.length;
const sd = Math.sqrt(measured.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, measured.length - 1));
const worst = Math.max(...measured.map((x) => Math.abs(x - spec.cores)));
console.log(`asked ${spec.cores}: measured ${Math.min(...measured).toFixed(4)}-${Math.max(...measured).toFixed(4)} cores, ` +
  `mean ${mean.toFixed(4)}, sd ${sd.toFixed(4)}; furthest from the asked ${worst.toFixed(4)} cores`);
