#!/usr/bin/env node
// Call setup time: from `npm run call`'s process start to media flowing both ways (video decoded at a and at b),
// with its phases, beside a bare call of the same page in two Chromium instances on the host (no namespaces, no
// bottleneck, no captures): what a user's own puppeteer script would take. Not a test; prints a table.
//   node bench/call/setup-time.mjs [runs]        (as root, after scripts/setup.sh)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSignalingServer } from '../../signaling/server.js';
import { defaultRouteAddress, openPeer, removeDir } from '../../client/test-support/peers.js';
import { scenarioCall } from '../../client/test-support/scenario.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const runs = Number(process.argv[2] ?? 3);
const clip = path.join(repoRoot, 'media', 'default.y4m');
const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function labCall() {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-bench-call-'));
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'harness', 'cli.js'), '--duration', '1', '--no-analyze',
    '--out', path.join(out, 'run')], { encoding: 'utf8' });
  const m = JSON.parse(fs.readFileSync(path.join(out, 'run', 'manifest.json'), 'utf8'));
  fs.rmSync(out, { recursive: true, force: true });
  if (m.timings.media_flowing == null) throw new Error(`lab call did not connect: ${m.error}\n${r.stderr}`);
  const t = m.timings;
  return { total: t.media_flowing - t.process_start, network: t.network_up - t.process_start,
    browsers: t.browsers_launched - t.network_up, media: t.media_flowing - t.browsers_launched };
}

async function bareCall() {
  const start = Date.now();
  const server = await startSignalingServer({ host: '127.0.0.1', port: 0 });
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-bench-bare-'));
  const call = scenarioCall();
  // With the runs' flags Chromium gathers candidates on the default route's interface only, never on loopback.
  const candidate_prefix = await defaultRouteAddress();
  /** @type {import('../../client/test-support/peers.js').TestPeer[]} */
  const peers = [];
  try {
    for (const role of /** @type {const} */ (['caller', 'callee'])) {
      await openPeer({ url: `${server.url}/`, clip, dir: workDir, name: role, opened: peers,
        config: { room: 'bench', role, call, getstats_interval_ms: 100, candidate_prefix } });
    }
    const decoded = (/** @type {any} */ p) => p.reports.some((r) => r.kind === 'stats' &&
      r.payload.report.some((/** @type {any} */ s) => s.type === 'inbound-rtp' && s.kind === 'video' && s.framesDecoded > 0));
    while (!peers.every(decoded)) {
      if (Date.now() - start > 30_000) throw new Error('bare call did not connect within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    return (Date.now() - start) / 1000;
  } finally {
    for (const p of peers) await p.peer.close();
    await server.close();
    await removeDir(workDir);
  }
}

const lab = [];
const bare = [];
for (let i = 0; i < runs; i++) {
  lab.push(labCall());
  bare.push(await bareCall());
  process.stderr.write(`run ${i + 1}/${runs}: rtclab ${lab[i].total.toFixed(2)} s, bare ${bare[i].toFixed(2)} s\n`);
}
const row = (/** @type {string} */ name, /** @type {number[]} */ xs) =>
  `${name.padEnd(38)} ${median(xs).toFixed(2).padStart(6)} ${Math.min(...xs).toFixed(2).padStart(6)} ${Math.max(...xs).toFixed(2).padStart(6)}`;
console.log(`call setup time, ${runs} runs each (seconds)       median    min    max`);
console.log(row('rtclab: process start -> network up', lab.map((x) => x.network)));
console.log(row('rtclab: network up -> pages loaded', lab.map((x) => x.browsers)));
console.log(row('rtclab: pages loaded -> media both ways', lab.map((x) => x.media)));
console.log(row('rtclab: process start -> media (total)', lab.map((x) => x.total)));
console.log(row('bare call (2 Chromium on the host)   ', bare));
console.log(`ratio rtclab / bare (median): ${(median(lab.map((x) => x.total)) / median(bare)).toFixed(2)}`);
