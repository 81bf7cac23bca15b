#!/usr/bin/env node
// @ts-check
// The kill campaign: starts `npm run call`'s program, `npm run net -- up` and a study, kills each with SIGKILL or
// SIGINT (to its whole process group, as a closed terminal or Ctrl-C does) in one phase of its life (set-up, the
// call, teardown, analysis), then runs `npm run clean` (harness/clean.js) and takes a census of everything rtclab can leave
// (harness/census.js). Prints every kill and the counts: leftovers, hangs (an interrupted program that did not exit
// within 60 s), and runs whose manifest does not say how they ended. Every one of those is a bug. Not a test: a
// benchmark of promises (the test suite runs a short version, harness/test/kill-campaign.e2e.test.js).
//   node bench/reliability/kill-campaign.mjs [--kills 50] [--seed 1] [--targets call,net,study] [--at phase|random] [--shared-host]
// --at phase (the default): the seed draws a phase for each kill among its target's phases (PHASES below), and the
// kill is sent the moment the run itself reports that phase (an event in its events.jsonl, netem's state file or
// namespaces), so it lands inside a live run however fast or busy the machine is; a run that ends before its phase
// (it failed early) is started again, up to 3 times, and reported. --at random: the old mode, a kill moment drawn
// from the target's usual life in seconds (it explores moments between phases, but on a fast machine a short
// target can end before its kill: it is then counted as "finished before the kill").
// --shared-host: clean and count only this campaign's runs (other runs may be going on); without it, the clean
// removes every run's leftovers, as a user would run it, and the census counts everything.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { census, censusCount } from '../../harness/census.js';
import { newId, names } from '../../netem/names.js';
import { stateFile } from '../../netem/state.js';
import { mulberry32 } from '../../netem/seeded-random.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({ options: {
  kills: { type: 'string', default: '50' }, seed: { type: 'string', default: '1' },
  targets: { type: 'string', default: 'call,net,study' }, 'shared-host': { type: 'boolean', default: false },
  at: { type: 'string', default: 'phase' },
} });
if (!['phase', 'random'].includes(values.at)) {
  console.error(`--at must be phase or random (got "${values.at}")`);
  process.exit(2);
}

/**
 * What each target runs, and how long its life usually is (the kill moment is drawn from it).
 * @type {Record<string, { argv: (dir: string) => string[], life_s: number }>}
 */
const TARGETS = {
  call: { argv: (dir) => [process.execPath, path.join(repo, 'harness', 'cli.js'), '--duration', '6', '--out', dir], life_s: 12 },
  net: { argv: (dir) => [process.execPath, path.join(repo, 'netem', 'cli.js'), 'up', '--id', path.basename(dir).split('-').pop() ?? ''], life_s: 1.5 },
  study: { argv: (dir) => [path.join(repo, '.venv', 'bin', 'python'), '-m', 'rtclab_study', 'run',
    path.join(repo, 'studies', 'examples', 'aqm-quick.yaml'), '--out', dir, '--quick', '0.2'], life_s: 45 },
};

/**
 * The phases a kill can be aimed at, per target, in the order a run goes through them: each is reached when the run
 * itself reports it. Only phases after which the program still has a long stretch of life are listed, so a kill sent
 * when the phase is seen (within one 10 ms poll) lands while the program runs, on a slow or a fast machine:
 * a call is followed by at least its 6 s call until call_end, then teardown (stopping two browsers, the captures and
 * the network) and the analyzer (a Python process that imports numpy and reads the captures); netem's `up` by the
 * rest of its topology (`ip`/`nft` commands, each a process) and both bottlenecks' start, waited for, once it has
 * claimed the run or made its first namespace: about 0.7 s here, 70 polls (its last step, saving the state once the
 * bottlenecks are ready, is left out: too short to aim at); a study by further runs after its first run's events.
 * @type {Record<string, Record<string, (dir: string, id: string) => boolean>>}
 */
const PHASES = {
  call: {
    'set-up': (dir) => eventsIn(dir).includes('run_start'),
    network: (dir) => eventsIn(dir).includes('network_up'),
    browsers: (dir) => eventsIn(dir).includes('page_loaded'),
    call: (dir) => eventsIn(dir).includes('call_start'),
    teardown: (dir) => eventsIn(dir).includes('call_end'),
    analysis: (dir) => eventsIn(dir).includes('run_end'),
  },
  net: {
    // netem records the run in its state file before anything of it exists (netem/state.js), then builds namespaces.
    claimed: (_dir, id) => fs.existsSync(stateFile(id)),
    topology: (_dir, id) => fs.existsSync(`/run/netns/${names(id).namespaces.a}`),
  },
  study: {
    'set-up': (dir) => eventsIn(dir).includes('run_start'),
    call: (dir) => eventsIn(dir).includes('call_start'),
    teardown: (dir) => eventsIn(dir).includes('call_end'),
    analysis: (dir) => eventsIn(dir).includes('run_end'),
  },
};

/** The events every run under dir has reported so far (a study's runs together). @param {string} dir */
function eventsIn(dir) {
  return filesNamed(dir, 'events.jsonl').flatMap((f) => {
    let text = '';
    try { text = fs.readFileSync(f, 'utf8'); } catch { /* not there yet */ }
    return text.split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l).event; } catch { return ''; } });
  });
}

/** Every file called `name` under dir (a run directory, or a study's tree of them). @param {string} dir @param {string} name */
function filesNamed(dir, name) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => path.basename(f) === name).map((f) => path.join(dir, f));
}

/** @param {string} file @returns {any} the JSON in it, or null when it is cut or unreadable */
function readJson(file) {
  try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return null; }
}

/** Run ids mentioned in a program's output and in the run directories under dir. @param {string} output @param {string} dir */
function runIds(output, dir) {
  // The harness says "rtclab call: run ID, ..." before it makes anything; netem's up is given its id (--id).
  const ids = new Set([...output.matchAll(/rtclab call: run ([a-z0-9]{6}),/g)].map((m) => m[1]));
  const given = /-([a-z0-9]{6})$/.exec(dir);
  if (given) ids.add(given[1]);
  for (const manifest of filesNamed(dir, 'manifest.json')) ids.add(readJson(manifest)?.id);
  return [...ids].filter((id) => /^[a-z0-9]{6}$/.test(id));
}

/** The phase a run was in, from what it reported. @param {string} target @param {string} dir @param {string} id */
function phaseOf(target, dir, id) {
  if (target === 'net') {
    if (fs.existsSync(`/run/netns/${names(id).namespaces.a}`)) return 'topology';
    return fs.existsSync(stateFile(id)) ? 'claimed' : 'start';
  }
  const events = eventsIn(dir);
  if (events.includes('run_end')) return fs.existsSync(path.join(dir, 'metrics.json')) ? 'after analysis' : 'teardown/analysis';
  if (events.includes('call_end')) return 'teardown';
  if (events.includes('call_start')) return 'call';
  return events.length ? 'set-up' : 'start';
}

/** Manifests under dir that still say "running" (or cannot be read). @param {string} dir */
function stillRunning(dir) {
  return filesNamed(dir, 'manifest.json').filter((f) => (readJson(f)?.status ?? 'running') === 'running');
}

/** @param {string[]} argv @returns {Promise<{ code: number | null, output: string }>} */
function run(argv) {
  return new Promise((resolve) => {
    const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.on('data', (d) => { output += d; });
    p.stderr.on('data', (d) => { output += d; });
    p.on('exit', (code) => resolve({ code, output }));
  });
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
const rand = mulberry32(Number(values.seed));
const targets = values.targets.split(',').filter((t) => TARGETS[t]);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-kill-'));
/** @type {{ n: number, target: string, signal: string, aim: string, at_s: number, phase: string, hang: boolean, left: number, running: string[], details: string }[]}
 *  aim: the phase drawn (phase mode) or the moment drawn (random mode); at_s: when the kill was sent, after start;
 *  left: what the census found after clean, plus (SIGINT) what the program left before clean */
const results = [];
/** In phase mode: how many times a kill is tried before its target's run is taken to never reach the phase. */
const ATTEMPTS = 3;
/** How long a run may take to reach its phase (a study's first run may need a minute to start its call). */
const PHASE_TIMEOUT_MS = 180_000;

/**
 * Waits until the run reports its phase (then returns the seconds since start) or its program exits first (null).
 * @param {import('node:child_process').ChildProcess} child @param {() => boolean} reached @param {number} t0
 */
async function whenPhase(child, reached, t0) {
  while (child.exitCode === null && child.signalCode === null) {
    if (reached()) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 > PHASE_TIMEOUT_MS) return (Date.now() - t0) / 1000; // killed where it is; its phase says where
    await sleep(10);
  }
  return null;
}

/** One kill: start the target, kill it at its phase or moment, wait for it and its orphans, clean, count. */
async function oneKill(/** @type {number} */ n, /** @type {string} */ target, /** @type {string} */ signal,
  /** @type {string} */ aim, /** @type {string} */ dir) {
  // A net target's directory ends with the id it is brought up with, so its id is known even if it is killed early.
  const givenId = /-([a-z0-9]{6})$/.exec(dir)?.[1] ?? '';
  const argv = TARGETS[target].argv(dir);
  const t0 = Date.now();
  const child = spawn(argv[0], argv.slice(1), { cwd: repo, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => { output += d; });
  child.stderr?.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const at_s = values.at === 'phase'
    ? await whenPhase(child, () => PHASES[target][aim](dir, givenId), t0)
    : await Promise.race([exited.then(() => null), sleep(Number(aim) * 1000).then(() => Number(aim))]);
  const finishedFirst = at_s === null;
  let hang = false;
  if (!finishedFirst) {
    try { process.kill(-(/** @type {number} */ (child.pid)), signal); } catch { /* exited just now */ }
  }
  const phase = finishedFirst ? 'finished before the kill' : phaseOf(target, dir, givenId);
  if (!finishedFirst) {
    const inTime = await Promise.race([exited.then(() => true), sleep(60_000).then(() => false)]);
    if (!inTime) {
      hang = true;
      try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL'); } catch { /* gone */ }
      await exited;
    }
  }
  // A study's harness runs in a session of its own: a study killed with SIGKILL leaves it to finish its run (and tear
  // it down) as an orphan. That is its design, not a leftover: wait for it before cleaning.
  const orphansDeadline = Date.now() + 120_000;
  let orphans = 0;
  const owners = () => census({ only: [dir] }).processes.filter((p) => /harness\/cli\.js|rtclab_study/.test(p));
  while (owners().length && Date.now() < orphansDeadline) { orphans = 1; await sleep(500); }
  const ids = runIds(output, dir);
  // Interrupted (SIGINT), the harness and a study tear down by themselves: nothing of theirs may be left even before
  // clean (a network brought up is meant to stay up: `net` is left out).
  const selfCleaned = signal === 'SIGINT' && !finishedFirst && target !== 'net' ? censusCount(census({ only: [...ids, dir] })) : 0;
  // On a shared host only this kill's ids are cleaned (none known: nothing was made yet); otherwise, as a user would.
  const clean = values['shared-host'] && ids.length === 0 ? { output: 'nothing of it to clean' }
    : await run([process.execPath, path.join(repo, 'harness', 'clean.js'), ...(values['shared-host'] ? ids : [])]);
  const left = census(values['shared-host'] ? { only: [...ids, dir] } : {});
  const running = stillRunning(dir);
  const details = Object.entries(left).filter(([, v]) => v.length).map(([k, v]) => `${k}: ${v.join(', ')}`).join('; ');
  const r = { n, target, signal, aim, at_s: at_s ?? (Date.now() - t0) / 1000, phase, hang, left: censusCount(left) + selfCleaned, running, details };
  const aimed = values.at === 'phase' ? `at phase ${aim.padEnd(8)} (${r.at_s.toFixed(1).padStart(4)} s)` : `at ${Number(aim).toFixed(1).padStart(4)} s`;
  process.stdout.write(`kill ${String(n).padStart(2)}: ${target.padEnd(5)} ${signal.padEnd(7)} ${aimed} (${phase}); ` +
    `ids ${ids.join(' ') || '-'}; ${orphans ? 'waited for its orphaned harness; ' : ''}${selfCleaned ? `LEFT ${selfCleaned} before clean (SIGINT); ` : ''}clean: ${clean.output.trim().split('\n').pop()}; left ${censusCount(left)}` +
    `${hang ? '; HANG' : ''}${running.length ? `; manifest still "running": ${running.join(', ')}` : ''}${details ? `\n    ${details}` : ''}\n`);
  return r;
}

for (let n = 1; n <= Number(values.kills); n++) {
  const target = targets[(n - 1) % targets.length];
  // Each target is killed with SIGKILL and SIGINT in turn, in a phase (or at a moment) drawn by the seed.
  const signal = Math.floor((n - 1) / targets.length) % 2 === 0 ? 'SIGKILL' : 'SIGINT';
  const phases = Object.keys(PHASES[target]);
  const draw = rand();
  const aim = values.at === 'phase' ? phases[Math.floor(draw * phases.length)] : String(0.2 + draw * TARGETS[target].life_s);
  for (let attempt = 1; attempt <= (values.at === 'phase' ? ATTEMPTS : 1); attempt++) {
    const dir = path.join(work, `${n}-${attempt}-${target}${target === 'net' ? `-${newId()}` : ''}`);
    const r = await oneKill(n, target, signal, aim, dir);
    results.push(r);
    if (r.phase !== 'finished before the kill') break;
    if (values.at === 'phase') process.stdout.write(`kill ${String(n).padStart(2)}: its run ended before phase ${aim}${attempt < ATTEMPTS ? ': started again' : ''}\n`);
  }
}

const kills = results.filter((r) => r.phase !== 'finished before the kill');
const byPhase = Object.entries(kills.reduce((/** @type {Record<string, number>} */ m, r) => ({ ...m, [`${r.target} ${r.signal} ${r.phase}`]: (m[`${r.target} ${r.signal} ${r.phase}`] ?? 0) + 1 }), {}));
console.log(`\nkill campaign: ${results.length} started, ${kills.length} killed (${results.length - kills.length} finished before their kill), seed ${values.seed}, ` +
  `${values.at === 'phase' ? 'each kill at a phase the run reported' : 'each kill at a random moment'}`);
for (const [k, v] of byPhase.sort()) console.log(`  ${String(v).padStart(3)} x ${k}`);
const missed = values.at === 'phase' ? Number(values.kills) - kills.length : 0;
if (missed) console.log(`kills whose run never reached its phase in ${ATTEMPTS} tries: ${missed}`);
const leftovers = results.reduce((s, r) => s + r.left, 0);
const hangs = results.filter((r) => r.hang).length;
const unmarked = results.reduce((s, r) => s + r.running.length, 0);
console.log(`leftovers (after clean; and before clean after a SIGINT): ${leftovers}; hangs: ${hangs}; manifests not saying how the run ended: ${unmarked}`);
fs.rmSync(work, { recursive: true, force: true });
process.exit(leftovers || hangs || unmarked || missed ? 1 : 0);
