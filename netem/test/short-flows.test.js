// @ts-check
// RFC 8868 5.1's short TCP flows (cross_traffic kind tcp_short): the plan drawn from the seed, and the driver
// (netem/short_tcp.py) downloading it for real over loopback, each download recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { planShortFlows, planCrossTraffic, crossTrafficEndpoints } from '../cross.js';

const item = { kind: 'tcp_short', flows: 10, initially_on: 2, size_bytes: [30000, 50000], idle_mean_s: 10, seed: 8867,
  congestion_control: 'reno', direction: 'forward', start_s: 5, stop_s: 299, dscp: 0 };

test('the plan is drawn from the seed: the same seed the same plan, another seed another', () => {
  assert.deepEqual(planShortFlows(item, 294), planShortFlows(item, 294));
  assert.notDeepEqual(planShortFlows(item, 294), planShortFlows({ ...item, seed: 1 }, 294));
});

test('the first initially_on flows start with a download, the others idle; idle times outlast the item', () => {
  const { flows } = planShortFlows(item, 294);
  assert.equal(flows.length, 10);
  assert.deepEqual(flows.map((f) => f[0].idle_s === 0), [true, true, false, false, false, false, false, false, false, false]);
  for (const f of flows) assert.ok(f.reduce((s, x) => s + x.idle_s, 0) > 294);
});

test('sizes are uniform integers in [min, max] and idle times exponential of the mean (over many draws)', () => {
  const { flows } = planShortFlows({ ...item, initially_on: 0, flows: 20 }, 20000);
  const steps = flows.flat();
  const sizes = steps.map((s) => s.size_bytes), idles = steps.map((s) => s.idle_s);
  assert.ok(steps.length > 30000);
  assert.ok(sizes.every((s) => Number.isInteger(s) && s >= 30000 && s <= 50000));
  const mean = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  assert.ok(Math.abs(mean(sizes) - 40000) < 150, `mean size ${mean(sizes)}`);
  assert.ok(Math.abs(mean(idles) - 10) < 0.2, `mean idle ${mean(idles)}`);
  // Exponential: P(idle > mean) = e^-1, and the median is mean x ln 2.
  const above = idles.filter((x) => x > 10).length / idles.length;
  assert.ok(Math.abs(above - Math.exp(-1)) < 0.01, `share above the mean ${above}`);
  assert.ok(Math.min(...sizes) === 30000 && Math.max(...sizes) === 50000, 'both ends drawn');
});

test('the server sends from the sending namespace (a for forward), the client downloads in the other', () => {
  const [ep] = crossTrafficEndpoints([item]);
  assert.deepEqual([ep.server_host, ep.client_host, ep.port], ['a', 'b', 5201]);
  const p = planCrossTraffic(item, 0, 300, '/r');
  assert.deepEqual(p.server.slice(4), ['serve', '--bind', '10.0.1.2', '--port', '5201', '--congestion-control', 'reno', '--dscp', '0']);
  assert.equal(p.length_s, 294);
});

test('the driver downloads each planned size over a real TCP connection and records its completion time', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-short-tcp-'));
  const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'short_tcp.py');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const cc = execFileSync('sysctl', ['-n', 'net.ipv4.tcp_congestion_control']).toString().trim();
  const server = spawn('python3', ['-S', '-I', script, 'serve', '--bind', '127.0.0.1', '--port', String(port), '--congestion-control', cc]);
  try {
    const plan = { flows: [[{ idle_s: 0, size_bytes: 30000 }, { idle_s: 0.05, size_bytes: 50000 }], [{ idle_s: 0.02, size_bytes: 12345 }], [{ idle_s: 30, size_bytes: 1 }]] };
    writeFileSync(join(dir, 'plan.json'), JSON.stringify(plan));
    const out = join(dir, 'out.jsonl');
    for (let i = 0; i < 100; i++) { // until it listens
      try { execFileSync('ss', ['-Hltn', `sport = :${port}`]).toString().trim() || (() => { throw new Error('not yet'); })(); break; } catch { await new Promise((r) => setTimeout(r, 20)); }
    }
    const stopAt = BigInt(Date.now() + 1500) * 1000000n;
    execFileSync('python3', ['-S', '-I', script, 'fetch', '--server', '127.0.0.1', '--port', String(port), '--plan', join(dir, 'plan.json'),
      '--out', out, '--stop-at-ns', String(stopAt), '--congestion-control', cc]);
    const recs = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const done = recs.filter((r) => r.completed).sort((x, y) => x.size_bytes - y.size_bytes);
    assert.deepEqual(done.map((r) => [r.flow, r.size_bytes, r.bytes_received]), [[1, 12345, 12345], [0, 30000, 30000], [0, 50000, 50000]]);
    for (const r of done) assert.ok(r.completion_s > 0 && r.completion_s < 1 && Math.abs(r.completion_s - (r.end_ns - r.start_ns) / 1e9) < 1e-6);
    // Flow 2 was still idle at its stop: no download started, none recorded.
    assert.equal(recs.length, 3);
  } finally {
    server.kill('SIGTERM');
  }
});
