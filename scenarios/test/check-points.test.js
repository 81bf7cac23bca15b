// @ts-check
// scenarios/check-points.js: a study's points checked by the scenario model in one process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkOne } from '../check-points.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = path.join(here, '..', 'check-points.js');
/** @param {string} input */
const run = (input) => spawnSync(process.execPath, [cli], { input, encoding: 'utf8' });

test('every item gets its normalised scenario or its problems, in order, and exit 1 when one is invalid', () => {
  const r = run(JSON.stringify([
    { duration_s: 5, network: { forward: { rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_ms: 300 } } } },
    { network: { forward: { qdisc: { kind: 'codel', targt_ms: 5 } } } },
    { scenario: { cross_traffic: [{ kind: 'tcp', flows: 0 }] }, label: 'p3', base_dir: here },
  ]));
  assert.equal(r.status, 1, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.length, 3);
  assert.equal(out[0].ok, true);
  assert.deepEqual(out[0].scenario.network.forward.qdisc, { kind: 'fifo', limit_bytes: 37500 });
  assert.equal(out[0].scenario.duration_s, 5);
  assert.deepEqual(out[1], { ok: false,
    problems: ['network.forward.qdisc: unknown field "targt_ms" (allowed: kind, target_ms, interval_ms, limit_packets, ecn)'] });
  assert.deepEqual(out[2], { ok: false, problems: ['cross_traffic[0].flows: must be >= 1 (got 0)'] });
});

test('all valid: exit 0; normalising a normalised scenario changes nothing', () => {
  const first = JSON.parse(run(JSON.stringify([{ name: 'x' }])).stdout)[0].scenario;
  const r = run(JSON.stringify([first]));
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout)[0].scenario, first);
});

test('a relative trace file is looked for in the item\'s base_dir', () => {
  const res = checkOne({ scenario: { network: { forward: { rate: { trace: 'no-such.trace' } } } }, base_dir: '/nowhere' }, 0);
  assert.equal(res.ok, false);
  assert.match(/** @type {{problems: string[]}} */ (res).problems[0], /network\.forward\.rate\.trace: .*\/nowhere\/no-such\.trace does not exist/);
});

test('input that is not a JSON array: exit 2, nothing printed on stdout', () => {
  for (const input of ['{', '{"a": 1}']) {
    const r = run(input);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /check-points: /);
  }
});
