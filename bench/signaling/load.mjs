#!/usr/bin/env node
// @ts-check
// The signaling server under load: by default 1000 clients (500 rooms, 490 completing offer/answer/candidates and 10
// whose callee vanishes mid-exchange) plus 50 clients sending invalid, oversized and unknown messages, all at once
// on loopback against the server in its own process. Prints messages sent, received, lost, misrouted, errors
// answered, the server's memory (RSS before, peak, after) and whether it survived. Exit status 1 on any loss,
// misrouting, missing error answer or server death. Not a test: a benchmark (the test suite runs a short version).
// The load runs --rounds times against the same server: memory that keeps growing from round to round is a leak.
//   node bench/signaling/load.mjs [--rooms 490] [--vanishing 10] [--misbehaving 50] [--candidates 5] [--rounds 3]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { runLoad } from '../../signaling/load.js';

const { values } = parseArgs({ options: {
  rooms: { type: 'string', default: '490' }, vanishing: { type: 'string', default: '10' },
  misbehaving: { type: 'string', default: '50' }, candidates: { type: 'string', default: '5' },
  rounds: { type: 'string', default: '3' },
} });
const serverJs = fileURLToPath(new URL('../../signaling/server.js', import.meta.url));

/** @param {number} pid resident memory in MiB, or null once the process is gone */
function rssMiB(pid) {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return kb ? Number(kb[1]) / 1024 : null;
  } catch { return null; }
}

const server = spawn(process.execPath, [serverJs, '--host', '127.0.0.1', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
let exited = false;
server.on('exit', () => { exited = true; });
const url = await new Promise((resolve, reject) => {
  let buffered = '';
  server.stdout.on('data', (d) => {
    buffered += d;
    for (const line of buffered.split('\n')) if (line.includes('"listening"')) resolve(JSON.parse(line).url);
  });
  server.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
});
server.stdout.resume();
const pid = /** @type {number} */ (server.pid);
const before = rssMiB(pid);
let peak = before ?? 0;
const sampler = setInterval(() => { peak = Math.max(peak, rssMiB(pid) ?? 0); }, 50);

const fmt = (/** @type {number | null} */ v) => (v === null ? '-' : v.toFixed(1));
let ok = true;
/** @type {(number | null)[]} */
const afterRounds = [];
for (let round = 1; round <= Number(values.rounds); round++) {
  const r = await runLoad(url, { rooms: Number(values.rooms), vanishing_rooms: Number(values.vanishing),
    misbehaving_clients: Number(values.misbehaving), candidates: Number(values.candidates), timeout_ms: 30_000 });
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the server lets go of the disconnected clients
  afterRounds.push(rssMiB(pid));
  console.log(`round ${round}: ${r.clients} clients, ${Number(values.rooms) + Number(values.vanishing)} rooms, ${r.seconds.toFixed(2)} s`);
  console.log(`  messages: ${r.sent} sent, ${r.received} received, ${r.lost} lost, ${r.misrouted} misrouted`);
  console.log(`  vanishing callees: ${r.peer_left_seen} of ${r.peer_left_expected} announced to their caller`);
  console.log(`  misbehaving clients: ${r.errors_answered} of ${r.errors_expected} bad messages answered with an error`);
  for (const p of r.problems.slice(0, 10)) console.log(`  problem: ${p}`);
  ok &&= r.lost === 0 && r.misrouted === 0 && r.errors_answered === r.errors_expected && r.peer_left_seen === r.peer_left_expected;
}
clearInterval(sampler);
const survived = !exited && rssMiB(pid) !== null;
server.kill('SIGINT');
console.log(`server RSS: ${fmt(before)} MiB before, ${fmt(peak)} peak, after each round ${afterRounds.map(fmt).join(', ')}; ${survived ? 'survived' : 'DIED'}`);
process.exit(ok && survived ? 0 : 1);
