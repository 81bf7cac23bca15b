#!/usr/bin/env node
// @ts-check
// The spread of what a real-tier test measures: runs one test command many times, optionally while a second command
// loads the machine, and prints, for each value the test reports on a line `measure: NAME=VALUE`, its distribution
// over the runs (n, min, p5, median, p95, max), and how many runs failed. A real-tier assertion on a timing, a rate or
// a count takes its bound from such a table (the test's comment cites the row in bench/reliability/RESULTS.md).
// Each run gets a fresh file in RTCLAB_MEASURES_FILE, where the tests' helpers (netem/test-support/measure.js,
// analysis/test-support/measures.py) append their lines: a run's values are read from that file when it has any, else
// from the run's output (so pytest needs no -s, and nothing printed to both is counted twice). A value written `null`
// (not measured in that run) is counted apart, below the table.
//
//   node bench/reliability/spreads.mjs --runs 30 -- node --test netem/test/cross.integration.test.js
//   node bench/reliability/spreads.mjs --runs 30 --load '.venv/bin/python -m pytest analysis/test -q -x -m "not real_calls and not integration"' -- CMD...
//
// --load runs its command over and over beside every run (the "second test"), each round to its end (a test killed half
// way would leave its networks behind), so each run sees the same kind of load. Nothing else should run meanwhile;
// `npm run clean` after an interrupted campaign. A failed run's whole output (and its measures file) is written to
// --keep DIR (a new directory under the system's temp directory by default) and named on stderr.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const sep = args.indexOf('--');
if (sep < 0 || sep === args.length - 1) {
  console.error('usage: spreads.mjs [--runs N] [--load CMD] [--keep DIR] -- COMMAND [ARG...]');
  process.exit(2);
}
const opts = args.slice(0, sep);
const command = args.slice(sep + 1);
const opt = (/** @type {string} */ name) => { const i = opts.indexOf(name); return i < 0 ? undefined : opts[i + 1]; };
const runs = Number(opt('--runs') ?? 30);
const load = opt('--load');
if (!Number.isInteger(runs) || runs < 1) { console.error(`--runs: a whole number of at least 1, not ${opt('--runs')}`); process.exit(2); }

/** The values a run reports, by name; null for one it wrote as not measured. @param {string} text
 * @returns {Map<string, (number | null)[]>} */
function parseMeasures(text) {
  const out = new Map();
  for (const m of text.matchAll(/measure: ([\w.:-]+)=(-?[\d.]+(?:e[-+]?\d+)?|null)/g)) {
    const v = m[2] === 'null' ? null : Number(m[2]);
    if (v !== null && !Number.isFinite(v)) continue;
    out.set(m[1], [...(out.get(m[1]) ?? []), v]);
  }
  return out;
}

/** A run's values: from its measures file when that has any (every line is there once), else from its output.
 * @param {string} file @param {string} output */
function runMeasures(file, output) {
  const fromFile = existsSync(file) ? parseMeasures(readFileSync(file, 'utf8')) : new Map();
  return fromFile.size ? fromFile : parseMeasures(output);
}

/** Nearest-rank quantile of sorted values. @param {number[]} xs @param {number} q */
const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))];

/** Runs a command to its end, its output collected. @param {string[]} argv @param {boolean} quiet
 * @param {string | undefined} measuresFile its RTCLAB_MEASURES_FILE; none for the load, whose values are not the run's
 * @returns {Promise<{ status: number | null, out: string }>} */
function run(argv, quiet, measuresFile) {
  const env = { ...process.env };
  delete env.RTCLAB_MEASURES_FILE;
  if (measuresFile) env.RTCLAB_MEASURES_FILE = measuresFile;
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    if (!quiet) for (const s of [child.stdout, child.stderr]) s.on('data', (d) => { out += d; });
    else for (const s of [child.stdout, child.stderr]) s.resume();
    child.on('close', (status) => resolve({ status, out }));
  });
}

/** Where a failed run's output goes: --keep DIR, else a new directory under the system's temp directory. */
const failedDir = opt('--keep') ?? mkdtempSync(join(tmpdir(), 'rtclab-spreads.'));
/** Each run's RTCLAB_MEASURES_FILE, removed at the end. */
const measuresDir = mkdtempSync(join(tmpdir(), 'rtclab-measures.'));
/** @type {Map<string, number[]>} */
const all = new Map();
/** How many times each value was written as not measured. @type {Map<string, number>} */
const missing = new Map();
let failed = 0;
const started = Date.now();
for (let i = 0; i < runs; i++) {
  // The load runs over and over until the measured run ends, then its last round is let finish: a test killed half
  // way would leave its networks, bottlenecks and captures behind (they would load every later run).
  let measuring = true;
  const loader = (async () => {
    while (load && measuring) await run(['bash', '-c', load], true, undefined);
  })();
  const measuresFile = join(measuresDir, `run-${i + 1}.txt`);
  const r = await run(command, false, measuresFile);
  measuring = false;
  await loader;
  if (r.status !== 0) {
    failed++;
    // A failed run's whole output is kept: which assertion failed, and on what values, is the point of the campaign.
    const kept = join(failedDir, `run-${i + 1}.log`);
    mkdirSync(failedDir, { recursive: true });
    const values = existsSync(measuresFile) ? readFileSync(measuresFile, 'utf8') : '';
    writeFileSync(kept, values ? `${r.out}\n--- its RTCLAB_MEASURES_FILE:\n${values}` : r.out);
    process.stderr.write(`run ${i + 1}: failed; its output: ${kept}\n`);
  }
  for (const [k, vs] of runMeasures(measuresFile, r.out)) {
    const got = /** @type {number[]} */ (vs.filter((v) => v !== null));
    if (got.length < vs.length) missing.set(k, (missing.get(k) ?? 0) + vs.length - got.length);
    all.set(k, [...(all.get(k) ?? []), ...got]);
  }
  process.stderr.write(`run ${i + 1}/${runs}: exit ${r.status}, ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}

const fmt = (/** @type {number} */ x) => (Math.abs(x) >= 100 ? x.toFixed(1) : x.toPrecision(4));
console.log(`${runs} runs of \`${command.join(' ')}\`${load ? ` beside \`${load}\`` : ''}: ${failed} failed`);
console.log('| measure | n | min | p5 | median | p95 | max |');
console.log('|---|---|---|---|---|---|---|');
for (const [k, vs] of [...all].sort()) {
  const xs = [...vs].sort((a, b) => a - b);
  const cells = xs.length ? [0, 0.05, 0.5, 0.95, 1].map((q) => fmt(q === 0 ? xs[0] : quantile(xs, q))) : Array(5).fill('-');
  console.log(`| ${k} | ${xs.length} | ${cells.join(' | ')} |`);
}
for (const [k, n] of [...missing].sort()) console.log(`${k}: not measured (written null) ${n} time(s)`);
rmSync(measuresDir, { recursive: true, force: true });
