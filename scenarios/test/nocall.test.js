// @ts-check
// A run without a call (`calls: []`) in the scenario model and the call CLI: accepted with cross traffic, refused
// without it (nothing would be measured), naming the problem, exit 2 before anything is set up.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkOne } from '../check-points.js';
import { loadScenario, normalizeScenario, ScenarioError } from '../model.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');
const tcp = [{ kind: 'tcp', flows: 2, ecn: true }];

test('`calls: []` with cross traffic is a scenario without a call; `call` keeps its defaults', () => {
  const s = normalizeScenario({ duration_s: 10, calls: [], cross_traffic: tcp });
  assert.deepEqual(s.calls, []);
  assert.equal(s.cross_traffic.length, 1);
  assert.equal(s.cross_traffic[0].flows, 2);
  // Normalising twice changes nothing (the harness and netem normalise again).
  assert.deepEqual(normalizeScenario(s), s);
  // Without `calls` a scenario keeps its one call of `call`.
  assert.equal(normalizeScenario({ duration_s: 10, cross_traffic: tcp }).calls.length, 1);
});

test('`calls: []` without cross traffic is refused: nothing would be measured', () => {
  assert.throws(() => normalizeScenario({ duration_s: 10, calls: [] }), (err) => {
    assert.ok(err instanceof ScenarioError);
    assert.equal(err.problems.length, 1);
    assert.match(err.problems[0], /^calls: \[\] asks for a run without a call, and the scenario has no cross_traffic: nothing would be measured/);
    return true;
  });
  const r = checkOne({ scenario: { calls: [], cross_traffic: [] }, label: 'p1' }, 0);
  assert.equal(r.ok, false);
  assert.match(/** @type {any} */ (r).problems[0], /nothing would be measured/);
});

test('the thesis ECN bases are runs without a call', () => {
  for (const name of ['thesis-ecn.yaml', 'thesis-ecn-quick.yaml']) {
    const s = loadScenario(path.join(repoRoot, 'scenarios', 'repro', name));
    assert.deepEqual(s.calls, [], name);
    assert.equal(s.cross_traffic.length, 2, name);
  }
});

test('the call CLI refuses a scenario without call and cross traffic with exit 2, naming the problem', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-nocall-'));
  try {
    const file = path.join(dir, 'empty.yaml');
    fs.writeFileSync(file, 'name: empty\nduration_s: 5\ncalls: []\n');
    const out = path.join(dir, 'run');
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'harness', 'cli.js'), '--scenario', file, '--out', out],
      { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /calls: \[\] asks for a run without a call, and the scenario has no cross_traffic: nothing would be measured/);
    assert.equal(fs.existsSync(out), false, 'nothing was set up');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
