// @ts-check
// The scenario's cpu_load (harness/cpu-load.js): the field as the scenario model checks and normalises it, the
// stress-ng command built from it, its validity check, and how cpu.jsonl and the census know its processes. The load
// itself, run and measured from /proc: cpu-load.integration.test.js.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { normalizeScenario, ScenarioError, CPU_LOAD_FIFO_PRIORITY } from '../../scenarios/model.js';
import { GUEST_FIFO_PRIORITY } from '../../netem/uml/guest.js';
import { BUSY_SLICE_MS, CPU_METHOD, cpuLoadArgv, findStressNg, loadShape } from '../cpu-load.js';
import { processGroup } from '../cpu-accounting.js';
import { cpuLoadAsAsked, MAX_CPU_LOAD_DIFFERENCE_CORES, validityChecks } from '../validity.js';

/** @param {any} cpu_load */
const scenarioWith = (cpu_load) => normalizeScenario({ cpu_load }, { label: 'test.yaml' });
/** @param {any} cpu_load @returns {string[]} */
const problemsOf = (cpu_load) => {
  try { scenarioWith(cpu_load); } catch (err) { assert.ok(err instanceof ScenarioError, String(err)); return err.problems; }
  assert.fail('expected a ScenarioError');
};
const logFile = '/r/cpu-load.log';

test('a fifo load of a third of a core: one worker busy 33 % at SCHED_FIFO 10, the uml guest\'s priority', () => {
  const s = scenarioWith({ cores: 0.33, policy: 'fifo' });
  assert.deepEqual(s.cpu_load, { cores: 0.33, policy: 'fifo', priority: 10 });
  assert.equal(CPU_LOAD_FIFO_PRIORITY, GUEST_FIFO_PRIORITY);
  assert.deepEqual(cpuLoadArgv(s.cpu_load, { logFile, timeoutS: 700.2 }), ['stress-ng', '--log-file', logFile, '--cpu', '1',
    '--cpu-load', '33', '--cpu-load-slice', String(BUSY_SLICE_MS), '--cpu-method', CPU_METHOD, '--sched', 'fifo',
    '--sched-prio', '10', '--timeout', '701s', '--keep-name']);
});

test('more than one core: as few workers as carry it, each the same share; SCHED_OTHER names no scheduler', () => {
  const s = scenarioWith({ cores: 1.5 });
  assert.deepEqual(s.cpu_load, { cores: 1.5, policy: 'other' });
  const argv = cpuLoadArgv(s.cpu_load, { logFile, timeoutS: 60 });
  assert.deepEqual(argv.slice(3, 7), ['--cpu', '2', '--cpu-load', '75']);
  assert.ok(!argv.includes('--sched') && !argv.includes('--sched-prio'));
  assert.deepEqual(cpuLoadArgv(scenarioWith({ cores: 0.5, policy: 'fifo', priority: 42 }).cpu_load, { logFile, timeoutS: 60 })
    .slice(11, 15), ['--sched', 'fifo', '--sched-prio', '42']);
  // Whole cores are whole workers; the workers' shares add up to what was asked, to stress-ng's whole percent.
  assert.deepEqual(loadShape({ cores: 2, policy: 'other' }), { workers: 2, percent: 100, cores: 2 });
  assert.deepEqual(loadShape({ cores: 1, policy: 'other' }), { workers: 1, percent: 100, cores: 1 });
  for (const cores of [0.01, 0.1, 0.33, 0.335, 0.999, 1.01, 1.37, 1.999]) {
    const shape = loadShape({ cores, policy: 'other' });
    assert.equal(shape.workers, Math.ceil(cores));
    assert.ok(Math.abs(shape.cores - cores) <= 0.005 * shape.workers + 1e-9, `${cores} cores made as ${JSON.stringify(shape)}`);
  }
});

test('a bad cpu_load is refused with the field and what it may be', () => {
  assert.deepEqual(problemsOf({ cores: 0 }), ['cpu_load.cores: must be > 0 (got 0)']);
  assert.deepEqual(problemsOf({ cores: -1, policy: 'fifo' }), ['cpu_load.cores: must be > 0 (got -1)']);
  assert.deepEqual(problemsOf({ cores: 'a third' }), ['cpu_load.cores: must be number (got "a third")']);
  assert.deepEqual(problemsOf({ cores: 0.3, policy: 'rr' }), ['cpu_load.policy: "rr" is not one of other, fifo']);
  assert.deepEqual(problemsOf({ cores: 0.3, policy: 'fifo', priority: 100 }), ['cpu_load.priority: must be <= 99 (got 100)']);
  assert.deepEqual(problemsOf({ cores: 0.3, policy: 'fifo', priority: 0 }), ['cpu_load.priority: must be >= 1 (got 0)']);
  assert.deepEqual(problemsOf({ cores: 0.3, priority: 10 }),
    ['cpu_load.priority: 10 is a SCHED_FIFO priority, for policy fifo only (policy is other)']);
  assert.deepEqual(problemsOf({ policy: 'fifo' }), ["cpu_load: must have required property 'cores'"]);
  assert.deepEqual(problemsOf({ cores: 0.3, nice: 5 }), ['cpu_load: unknown field "nice" (allowed: cores, policy, priority)']);
  const cpus = os.cpus().length;
  assert.deepEqual(problemsOf({ cores: cpus + 0.5 }), [`cpu_load.cores: ${cpus + 0.5} is more than this machine's ${cpus} CPU(s)`]);
  assert.equal(scenarioWith({ cores: cpus }).cpu_load.cores, cpus);
});

test('no cpu_load: the normalised scenario has none (the manifest of a run without a load is unchanged)', () => {
  const s = normalizeScenario({}, { label: 'test.yaml' });
  assert.ok(!('cpu_load' in s));
  // Normalising twice changes nothing, with a load or without.
  const loaded = scenarioWith({ cores: 0.33, policy: 'fifo' });
  assert.deepEqual(normalizeScenario(loaded), loaded);
  assert.deepEqual(normalizeScenario(s), s);
});

test('stress-ng missing: an error that names the package and how to install it', () => {
  assert.throws(() => findStressNg(''), /cpu_load needs stress-ng, which is not installed .*apt-get install stress-ng \(scripts\/setup\.sh installs it\)/);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-cpuload-'));
  try {
    fs.writeFileSync(path.join(dir, 'stress-ng'), '#!/bin/sh\n', { mode: 0o755 });
    assert.equal(findStressNg(`/nonexistent:${dir}`), path.join(dir, 'stress-ng'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('cpu.jsonl accounts stress-ng and its workers as their own component', () => {
  const group = (/** @type {string} */ comm, /** @type {string[]} */ argv) => processGroup({ pid: 5, argv, comm, browserKey: null, harnessPid: 1 });
  const argv = cpuLoadArgv({ cores: 0.33, policy: 'fifo', priority: 10 }, { logFile, timeoutS: 60 });
  assert.equal(group('stress-ng', argv), 'cpu-load/stress-ng');
  assert.equal(group('stress-ng-cpu', []), 'cpu-load/stress-ng'); // a worker named by stress-ng itself
  assert.equal(group('ip', ['ip', 'netns', 'exec', 'rtclab-abcdef-r', ...argv]), 'harness/other'); // before its exec
});

test('cpu_load_as_asked: the measured cores within the bound of the asked, either way; not measured fails', () => {
  const b = MAX_CPU_LOAD_DIFFERENCE_CORES;
  assert.ok(b > 0 && b < 0.1);
  assert.equal(cpuLoadAsAsked(0.33, 0.33)[1], true);
  assert.equal(cpuLoadAsAsked(0.33, 0.33 + b * 0.99)[1], true);
  assert.equal(cpuLoadAsAsked(0.33, 0.33 - b * 0.99)[1], true);
  assert.equal(cpuLoadAsAsked(0.33, 0.33 + b * 1.01)[1], false);
  assert.equal(cpuLoadAsAsked(0.33, 0.33 - b * 1.01)[1], false);
  assert.match(cpuLoadAsAsked(0.33, 0.2)[2], /used 0\.200 cores during the call, asked 0\.33 \(-0\.130; bound ±/);
  assert.deepEqual(cpuLoadAsAsked(0.33, null).slice(0, 2), ['cpu_load_as_asked', false]);
  const run = { dataPrefix: '10.0.', selectedPairs: [], calls: [], connectTimeoutS: 0, connectSeconds: null, cpuLimited: {},
    samples: {}, bottleneckAlive: null, captures: null, captureEnabled: false, hostCpuBusy: 0.5 };
  assert.ok(!validityChecks(run).checks.some((c) => c.name === 'cpu_load_as_asked'));
  const checks = validityChecks({ ...run, cpuLoad: { asked: 0.33, measured: 0.1 } });
  assert.equal(checks.valid, false);
  assert.match(/** @type {any} */ (checks.checks.find((c) => c.name === 'cpu_load_as_asked')).detail, /during the run/);
  // The load is part of what the machine had to do: the saturation check still judges the host's whole busy share.
  assert.ok(checks.checks.some((c) => c.name === 'host_cpu_not_saturated'));
});
