#!/usr/bin/env node
// @ts-check
// `npm run call -- [--scenario FILE] [--duration S] [--out DIR] [--backend B] [--no-analyze]`
// Places one real call through the emulated network, then runs the analyzer on its run directory. A scenario with
// `calls: []` is a run without a call: the network, its captures and cross traffic alone, reported the same way.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { loadScenario, ScenarioError, defaultScenarioPath } from '../scenarios/model.js';
import { checkTrialKeys, FieldTrialError } from './field-trials.js';
import { chromiumBinary } from './browser.js';
import { newId } from '../netem/names.js';
import { makeWritableDirectory, DirectoryError } from '../netem/dirs.js';
import { progressPrinter } from './progress.js';
import { EXIT, analysedValidity, callExitStatus } from './exit-status.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const usage = `usage: npm run call -- [options]
  --scenario FILE   scenario YAML (default: scenarios/default.yaml)
  --duration S      call (or run) length in seconds (overrides the scenario's duration_s)
  --out DIR         run directory (default: results/<date>-<id>/)
  --backend B       auto | kernel | userspace | uml (overrides the scenario's backend)
  --webrtc-internals  save Chrome's chrome://webrtc-internals dump of every call (sets call.webrtc_internals)
  --no-analyze      stop after the call; analyse later with: rtclab analyze DIR`;

/** @param {string} message @returns {never} */
function fail(message, code = 2) {
  process.stderr.write(`rtclab call: ${message}\n`);
  process.exit(code);
}

/** @returns {{scenario?: string, duration?: string, out?: string, backend?: string, 'no-analyze'?: boolean, 'webrtc-internals'?: boolean, help?: boolean}} */
function parseCommandLine() {
  try {
    return parseArgs({ options: {
      scenario: { type: 'string' }, duration: { type: 'string' }, out: { type: 'string' },
      backend: { type: 'string' }, 'no-analyze': { type: 'boolean' }, 'webrtc-internals': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    } }).values;
  } catch (err) {
    return fail(`${/** @type {Error} */ (err).message}\n${usage}`);
  }
}

function timestamp() {
  const d = new Date();
  const p = (/** @type {number} */ n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** Runs the analyzer and lets it print its report. Returns its exit status (null when it is not installed). */
function analyze(/** @type {string} */ runDir) {
  const local = path.join(repoRoot, '.venv', 'bin', 'rtclab');
  const command = fs.existsSync(local) ? local : 'rtclab';
  const result = spawnSync(command, ['analyze', runDir], { stdio: 'inherit' });
  if (result.error) {
    process.stderr.write(`rtclab call: the analyzer could not run (${result.error.message}); run scripts/setup.sh\n`);
    return null;
  }
  return result.status;
}

/**
 * The scenario and the run directory the command line asks for; a bad one exits with a usage error before anything is
 * set up (the directory is made first, so one that cannot be written fails here).
 * @param {ReturnType<typeof parseCommandLine>} args
 */
function prepareRun(args) {
  const duration_s = args.duration === undefined ? undefined : Number(args.duration);
  if (duration_s !== undefined && !(duration_s > 0)) fail(`--duration must be a positive number of seconds (got "${args.duration}")`);

  const scenarioFile = args.scenario ?? defaultScenarioPath;
  let scenario;
  try {
    scenario = loadScenario(scenarioFile, { duration_s, backend: args.backend });
  } catch (err) {
    if (err instanceof ScenarioError) fail(err.message);
    throw err;
  }
  if (args['webrtc-internals']) {
    if (!scenario.calls.length) fail(`--webrtc-internals: ${scenarioFile} has no call (calls: []), so no webrtc-internals dump to save`);
    for (const call of [scenario.call, ...scenario.calls]) call.webrtc_internals = true;
  }
  // A trial key Chrome does not hold would be ignored silently: refused before anything is set up.
  try {
    if (scenario.calls.some((/** @type {any} */ c) => c.field_trials)) checkTrialKeys(scenario, chromiumBinary());
  } catch (err) {
    if (err instanceof FieldTrialError) fail(err.message);
    throw err;
  }

  const id = newId();
  const runDir = path.resolve(args.out ?? path.join(repoRoot, 'results', `${timestamp()}-${id}`));
  if (fs.existsSync(runDir) && fs.readdirSync(runDir).length > 0) fail(`${runDir} exists and is not empty; choose another --out`);
  // Made first: a directory that cannot be made or written fails before anything is set up.
  try {
    makeWritableDirectory(runDir);
  } catch (err) {
    if (err instanceof DirectoryError) fail(`--out: ${err.message}`);
    throw err;
  }
  return { scenario, scenarioFile, id, runDir };
}

/**
 * Prints how the run ended and its checks, runs the analyzer on a run with captures (when `analyse`), and returns
 * the command's exit status (exit-status.js).
 * @param {any} manifest @param {string} runDir @param {{ analyse: boolean }} o
 */
function reportRun(manifest, runDir, { analyse }) {
  const v = manifest.validity;
  if (manifest.status !== 'complete') {
    process.stderr.write(`rtclab call: run ${manifest.status}: ${manifest.error}\n  what was recorded is in ${runDir} (analyse it with: rtclab analyze ${runDir})\n`);
  } else {
    process.stderr.write(`rtclab call: backend ${manifest.backend?.used} (${manifest.backend?.reason}); run ${v.valid ? 'VALID' : 'INVALID'}\n`);
    for (const c of v.checks) process.stderr.write(`  ${c.ok ? 'ok  ' : c.ok === null ? 'n/m ' : 'FAIL'} ${c.name}: ${c.detail}\n`);
  }
  const hasCaptures = fs.existsSync(path.join(runDir, 'capture-a.pcap'));
  const diskFull = /^cannot write the run directory/.test(manifest.error ?? '');
  /** @type {number | null | undefined} the analyzer's exit status; undefined: not run */
  let analyzerExit;
  if (diskFull) process.stderr.write(`rtclab call: not analysed: the run directory has no room; free some, then: rtclab analyze ${runDir}\n`);
  else if (analyse && hasCaptures) analyzerExit = analyze(runDir);
  process.stderr.write(`rtclab call: run directory ${runDir}\n`);
  if (fs.existsSync(path.join(runDir, 'dashboard.html'))) process.stderr.write(`rtclab call: dashboard ${path.join(runDir, 'dashboard.html')}\n`);
  const analysed = analyzerExit === undefined ? null : analysedValidity(runDir);
  if (v?.valid && analysed?.valid === false) {
    process.stderr.write(`rtclab call: run INVALID by the analyzer's own checks (metrics.json):\n`);
    for (const c of analysed.checks.filter((/** @type {any} */ c) => c.ok === false)) process.stderr.write(`  FAIL ${c.name}: ${c.detail}\n`);
  }
  const exit = callExitStatus({ status: manifest.status, valid: !!v?.valid,
    analysis: analyzerExit === undefined ? null : { exit: analyzerExit, validity: analysed } });
  if (exit.code === EXIT.notAnalysed) process.stderr.write(`rtclab call: not judged: ${exit.why}; run it again with: rtclab analyze ${runDir}\n`);
  return exit.code;
}

async function main() {
  const args = parseCommandLine();
  if (args.help) { process.stdout.write(usage + '\n'); return 0; }
  const { scenario, scenarioFile, id, runDir } = prepareRun(args);

  // Ctrl-C or SIGTERM stops the call; teardown still runs and the run directory keeps what was recorded.
  const controller = new AbortController();
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    process.on(sig, () => {
      if (!controller.signal.aborted) process.stderr.write(`\nrtclab call: ${sig}: stopping and cleaning up...\n`);
      controller.abort(sig);
    });
  }

  process.stderr.write(`rtclab call: run ${id}, scenario ${scenario.name} (${path.relative(process.cwd(), scenarioFile) || scenarioFile}), ` +
    `${scenario.duration_s} s -> ${runDir}\n`);
  const progress = progressPrinter(process.stderr);
  // Every command the network runs goes to harness.log; notes and warnings are shown too.
  const harnessLog = fs.openSync(path.join(runDir, 'harness.log'), 'a');
  const log = (/** @type {string} */ line) => {
    try {
      fs.writeSync(harnessLog, `${new Date().toISOString()} ${line}\n`);
    } catch { /* a full disk: the run itself stops on it and says so */ }
    if (/^(note|warning|error)\b|failed/i.test(line)) process.stderr.write(`rtclab call: ${line}\n`);
  };
  // Loaded only for a run (the browser driver, the signaling server, the network's backends): a command line that is
  // refused is answered at once.
  const { runCall } = await import('./run.js');
  let manifest;
  try {
    manifest = await runCall({ scenario, scenarioFile: path.resolve(scenarioFile), runDir, id, signal: controller.signal,
      onProgress: progress, log });
  } catch (err) {
    if (err instanceof DirectoryError) fail(`--out: ${err.message}`);
    throw err;
  }
  fs.closeSync(harnessLog);
  progress.done();

  return reportRun(manifest, runDir, { analyse: !args['no-analyze'] && !controller.signal.aborted });
}

main().then((code) => process.exit(code), (err) => {
  process.stderr.write(`rtclab call: ${err?.stack ?? err}\n`);
  process.exit(1);
});
