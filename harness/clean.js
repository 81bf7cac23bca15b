#!/usr/bin/env node
// @ts-check
// `npm run clean [ID...]` (`rtclab clean`): removes what earlier runs left whose owner is gone, or these runs:
// the network (netem's clean), the browsers' profiles, and a killed run's manifest says how it ended.
import { ID_RE } from '../netem/names.js';
import { cleanRuns } from './leftovers.js';

const USAGE = `usage: node harness/clean.js [ID...]   (npm run clean -- [ID...], rtclab clean [ID...])
  remove what earlier runs left (runs whose owner is gone), or these ids: namespaces, veths, rules, the bottleneck,
  the uml guest, captures' and browsers' processes, a scenario's CPU load (stress-ng), browser profiles; a killed run's manifest becomes "incomplete"`;

const args = process.argv.slice(2);
if (args.some((a) => a === '-h' || a === '--help')) {
  console.log(USAGE);
  process.exit(0);
}
const bad = args.find((a) => !ID_RE.test(a));
if (bad !== undefined) {
  console.error(`clean: run id must be 6 characters [a-z0-9] (got ${JSON.stringify(bad)})\n${USAGE}`);
  process.exit(2);
}
cleanRuns(args.length ? { ids: args } : {}).then((ids) => {
  console.log(ids.length ? `removed ${ids.join(' ')}` : 'nothing to clean');
}, (e) => {
  console.error(`clean: ${e.message}`);
  process.exit(1);
});
