// @ts-check
// A short kill campaign (bench/reliability/kill-campaign.mjs): real calls and networks killed with SIGKILL and
// SIGINT at random moments, then netem's clean and a census: nothing left, no hang, every manifest says how its run
// ended. Only this campaign's runs are cleaned and counted (--shared-host), so it can run beside other tests.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const campaign = fileURLToPath(new URL('../../bench/reliability/kill-campaign.mjs', import.meta.url));

// Four kills: a call and a network, each with SIGKILL and then SIGINT (the campaign alternates targets and signals).
test('calls and networks killed at random moments leave nothing behind once cleaned', { timeout: 240_000 }, (t) => {
  const r = spawnSync(process.execPath, [campaign, '--kills', '4', '--targets', 'call,net', '--seed', '11', '--shared-host'],
    { encoding: 'utf8', timeout: 230_000 });
  t.diagnostic(r.stdout.trim().split('\n').slice(-6).join(' | '));
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /leftovers \(after clean; and before clean after a SIGINT\): 0; hangs: 0; manifests not saying how the run ended: 0/);
  const killed = Number(/(\d+) killed/.exec(r.stdout)?.[1]);
  assert.ok(killed >= 3, `${killed} of 4 were killed before they finished`);
});
