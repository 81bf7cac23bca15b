#!/usr/bin/env node
// @ts-check
// `node scenarios/test-support/check-points-serve.js`: scenarios/check-points.js for many requests in one process,
// for the analyzer's tests (analysis/test-support/scenario_model.py). Each stdin line is a JSON array as
// check-points.js reads it; each answer is one stdout line, the array check-points.js would print (its checkOne on
// each item). A test session starts this once instead of a node, the model's imports and its schema's compilation
// (about 0.4 CPU-seconds) for every study it checks.
import readline from 'node:readline';
import { checkOne } from '../check-points.js';

for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  let items;
  try {
    items = JSON.parse(line);
  } catch (err) {
    items = null;
    process.stderr.write(`check-points-serve: a line is not JSON: ${/** @type {Error} */ (err).message}\n`);
  }
  if (!Array.isArray(items)) process.exit(2);
  process.stdout.write(JSON.stringify(items.map(checkOne)) + '\n');
}
