// @ts-check
// exec.js's alive(): a process that has exited is not alive, even while it is a zombie its parent has not reaped
// (the teardown's waits poll it; init on this machine reaps detached processes only about once a second).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { alive, sleep } from '../exec.js';

test('a running process is alive; once it exited it is not, though still a zombie nobody reaped', async () => {
  // sh starts a short sleep, prints its pid and becomes a long sleep, which never reaps it: a zombie for 5 s.
  const parent = spawn('sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = await new Promise((resolve) => parent.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    assert.ok(Number.isInteger(pid) && pid > 0, `pid ${pid}`);
    assert.equal(alive(pid), true, 'running');
    let zombie = false;
    for (let i = 0; i < 200 && !zombie; i++) { // up to 4 s for a 0.2 s sleep to end, on a busy machine
      await sleep(20);
      zombie = /\) Z /.test(readStat(pid));
    }
    assert.ok(zombie, 'the child became a zombie');
    process.kill(pid, 0); // it still exists: kill(pid, 0) alone calls it alive
    assert.equal(alive(pid), false, 'a zombie is not alive');
  } finally {
    parent.kill('SIGKILL');
  }
  assert.equal(alive(2 ** 22 + 1), false, 'a pid above pid_max never exists');
});

/** @param {number} pid */
function readStat(pid) {
  try { return readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return ''; }
}
