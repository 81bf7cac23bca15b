#!/usr/bin/env node
// @ts-check
// `node scenarios/check-points.js < points.json`: validates and normalises many scenarios in one process (a study's
// points, before any run starts). stdin: a JSON array; each item is a scenario document, or
// {"scenario": <document>, "label": "<name in messages>", "base_dir": "<where relative trace files and clips are>"}
// (a scenario has no field "scenario", so the two cannot be confused). stdout: a JSON array, one entry per item, in
// order: {"ok": true, "scenario": <the normalised scenario>} or {"ok": false, "problems": ["<field>: <what>", ...]}.
// Exit 0 when every item is valid, 1 when some is not (the array is printed all the same), 2 when stdin is not such
// an array.
import fs from 'node:fs';
import { normalizeScenario, ScenarioError } from './model.js';

/** @param {string} message @returns {never} */
function fail(message) {
  process.stderr.write(`check-points: ${message}\n`);
  process.exit(2);
}

/**
 * @param {unknown} item
 * @param {number} index
 * @returns {{ ok: true, scenario: any } | { ok: false, problems: string[] }}
 */
export function checkOne(item, index) {
  const wrapped = item !== null && typeof item === 'object' && !Array.isArray(item) && Object.hasOwn(item, 'scenario');
  const w = /** @type {{ scenario?: unknown, label?: unknown, base_dir?: unknown }} */ (wrapped ? item : {});
  const doc = wrapped ? w.scenario : item;
  const label = wrapped && typeof w.label === 'string' ? w.label : `item ${index}`;
  const baseDir = wrapped && typeof w.base_dir === 'string' ? w.base_dir : process.cwd();
  try {
    return { ok: true, scenario: normalizeScenario(doc, { label, baseDir }) };
  } catch (err) {
    if (err instanceof ScenarioError) return { ok: false, problems: /** @type {string[]} */ (err.problems) };
    return { ok: false, problems: [`(the scenario model failed: ${/** @type {Error} */ (err).message})`] };
  }
}

function main() {
  let input;
  try {
    input = JSON.parse(fs.readFileSync(0, 'utf8'));
  } catch (err) {
    fail(`stdin is not JSON: ${/** @type {Error} */ (err).message}`);
  }
  if (!Array.isArray(input)) fail('stdin must hold a JSON array of scenario documents');
  const results = input.map(checkOne);
  process.stdout.write(JSON.stringify(results) + '\n');
  return results.every((r) => r.ok) ? 0 : 1;
}

import { fileURLToPath } from 'node:url';
if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) process.exitCode = main();
