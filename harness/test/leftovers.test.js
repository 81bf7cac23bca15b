// @ts-check
// The harness's clean (harness/leftovers.js, `npm run clean`): for a run whose owner was killed it removes the
// browser profiles and marks the manifest that still says "running"; a run whose owner lives keeps its manifest.
// Only the ids made here are cleaned (the network part finds nothing of them: no namespace was made).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '../../netem/names.js';
import { loadState, saveState } from '../../netem/state.js';
import { cleanRuns, PROFILE_PREFIX } from '../leftovers.js';

/** A run's record as the harness leaves it (claimRun), a "running" manifest and a browser profile. @param {number} ownerPid */
function leftRun(ownerPid) {
  const id = newId();
  const runDir = mkdtempSync(join(tmpdir(), 'leftovers-test-'));
  writeFileSync(join(runDir, 'manifest.json'), JSON.stringify({ format_version: 3, id, status: 'running', error: null }));
  saveState(id, { id, runDir, owner_pid: ownerPid, detached: false });
  const profile = mkdtempSync(join(tmpdir(), `${PROFILE_PREFIX}${id}-a-`));
  const manifest = () => JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
  return { id, runDir, profile, manifest };
}

test('a run whose owner died: profile removed, manifest says how it ended, record gone', async () => {
  const dead = /** @type {number} */ (spawnSync('true').pid); // a pid that has exited
  const run = leftRun(dead);
  try {
    assert.deepEqual(await cleanRuns({ ids: [run.id] }), [run.id]);
    assert.equal(existsSync(run.profile), false);
    assert.equal(loadState(run.id), null);
    const m = run.manifest();
    assert.equal(m.status, 'incomplete');
    assert.equal(m.ended_by, 'clean');
    assert.match(m.error, new RegExp(`pid ${dead}\\) ended without tearing it down`));
  } finally {
    rmSync(run.runDir, { recursive: true, force: true });
  }
});

test('a run whose owner lives, named: cleaned, but its manifest is the owner\'s to write', async () => {
  const owner = spawn('sleep', ['30']);
  const run = leftRun(/** @type {number} */ (owner.pid));
  try {
    await cleanRuns({ ids: [run.id] });
    assert.equal(existsSync(run.profile), false);
    assert.equal(run.manifest().status, 'running');
  } finally {
    owner.kill();
    rmSync(run.runDir, { recursive: true, force: true });
  }
});
