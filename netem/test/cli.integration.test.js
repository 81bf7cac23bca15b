// @ts-check
// The CLI end to end: up with a scenario file, exec, show, down.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newRunDir } from '../test-support/net.js';
import { leftovers, runPids } from '../test-support/leftovers.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
const cli = (/** @type {string[]} */ args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

test('up --scenario, exec, show, down', { timeout: 30000 }, () => {
  const file = join(newRunDir('cli'), 'kernel.yaml');
  writeFileSync(file, 'network:\n  forward: { delay_ms: 0, rate: { kbit: 5000 }, qdisc: { kind: fifo, limit_ms: 50 } }\n  reverse: { delay_ms: 0 }\n');
  const up = cli(['up', '--scenario', file, '--backend', 'kernel']);
  assert.equal(up.status, 0, up.stderr);
  const id = up.stdout.trim();
  assert.match(id, /^[a-z0-9]{6}$/);
  try {
    const ping = cli(['exec', id, 'a', '--', 'ping', '-c', '1', '-W', '1', '10.0.2.2']);
    assert.equal(ping.status, 0, ping.stderr);
    assert.equal(cli(['exec', id, 'a', '--', 'false']).status, 1, 'exec passes the exit code on');
    const show = cli(['show', id]);
    assert.equal(show.status, 0, show.stderr);
    assert.match(show.stdout, /backend: kernel \(requested kernel: requested\)/);
    assert.match(show.stdout, /qdisc tbf 1: dev r-eth1 root .* rate 5Mbit/);
    assert.match(show.stdout, /r-eth1@\S+\s+UP\s+10\.0\.2\.1\/24/);
    const pids = runPids(id);
    const down = cli(['down', id]);
    assert.equal(down.status, 0, down.stderr);
    assert.deepEqual(leftovers(id, pids), []);
    assert.match(cli(['show', id]).stderr, /no network .* is up/);
  } finally {
    execFileSync(process.execPath, [CLI, 'clean', id]);
  }
});

test('up with a bad scenario fails with the field named and sets nothing up', () => {
  const file = join(newRunDir('cli'), 'bad.yaml');
  writeFileSync(file, 'network:\n  forward: { rate: { kbit: 1000 }, qdisc: { kind: codle } }\n');
  const r = cli(['up', '--scenario', file, '--id', 'zzbad1']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /network\.forward\.qdisc\.kind: "codle" is not one of fifo, codel, pie, sfq, fq_codel, dualpi2, prio/);
  assert.deepEqual(leftovers('zzbad1'), []);
});
