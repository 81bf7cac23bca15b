// @ts-check
// Management subnet reservations (netem/state.js) taken and given back by several processes at once, as a study's
// parallel runs and the test tier's lanes do: no process fails and no index is held by two runs at once. (Before,
// a reservation released between another process's failed create and its read of the owner threw ENOENT: a lane's
// `up` failed that way.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const stateUrl = new URL('../state.js', import.meta.url).href;

/** A process that reserves and releases `rounds` times in `dir`, checking it alone holds what it reserved.
 * @param {string} dir @param {string} id @param {number} rounds @returns {Promise<{ code: number | null, out: string }>} */
function contender(dir, id, rounds) {
  const code = `
    import { readFileSync } from 'node:fs';
    import { join } from 'node:path';
    const { reserveMgmtSubnet, releaseMgmtSubnet } = await import(${JSON.stringify(stateUrl)});
    for (let i = 0; i < ${rounds}; i++) {
      const n = await reserveMgmtSubnet(${JSON.stringify(id)}, { dir: ${JSON.stringify(dir)}, used: new Set() });
      const owner = readFileSync(join(${JSON.stringify(dir)}, String(n)), 'utf8');
      if (owner !== ${JSON.stringify(id)}) throw new Error('index ' + n + ' held by ' + owner + ' too');
      releaseMgmtSubnet(${JSON.stringify(id)}, ${JSON.stringify(dir)});
    }`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('close', (c) => resolve({ code: c, out }));
  });
}

test('reservations taken and released by four processes at once: none fails, no index held twice', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-mgmt-'));
  try {
    const ids = ['aaaaa1', 'bbbbb2', 'ccccc3', 'ddddd4'];
    const results = await Promise.all(ids.map((id) => contender(dir, id, 1500)));
    results.forEach((r, i) => assert.equal(r.code, 0, `${ids[i]}: ${r.out}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
