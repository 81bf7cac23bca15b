// @ts-check
// load-tolerant: kills at phases the runs report (not at wall-clock moments) and a census of what is left.
// A short kill campaign (bench/reliability/kill-campaign.mjs): real calls and networks killed with SIGKILL and
// SIGINT, then `npm run clean` and a census: nothing left, no hang, every manifest says how its run ended. Only this
// campaign's runs are cleaned and counted (--shared-host), so it can run beside other tests.
// Deterministic: the campaign runs with --at phase, so the seed draws the phase of each kill (set-up, network,
// browsers, call, teardown, analysis for a call; claimed, topology for a network) and the kill is sent when the run
// itself reports that phase, not at a wall-clock moment a fast or slow machine may have passed already (a `net`
// target that finished in 1.1 s once ended before a kill drawn for 1.4 s). Seed 12 draws, for its four kills (a call
// and a network, each with SIGKILL and then SIGINT): a call killed once its network is up (SIGKILL: clean must remove
// it), a network killed once netem has claimed the run, Ctrl-C during a call, Ctrl-C while netem builds namespaces.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const campaign = fileURLToPath(new URL('../../bench/reliability/kill-campaign.mjs', import.meta.url));

test('calls and networks killed in phases drawn by the seed leave nothing behind once cleaned', { timeout: 400_000 }, (t) => {
  // Each kill waits for its phase, then for the program to exit (60 s at most: a hang) and for the clean: these
  // 4 kills take about 10 s here; the time-outs only catch a campaign that is stuck (a run that never reaches its
  // phase is given up after 180 s, three times at most).
  const r = spawnSync(process.execPath, [campaign, '--kills', '4', '--targets', 'call,net', '--seed', '12', '--at', 'phase', '--shared-host'],
    { encoding: 'utf8', timeout: 390_000 });
  t.diagnostic(r.stdout.trim().split('\n').slice(-8).join(' | '));
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /leftovers \(after clean; and before clean after a SIGINT\): 0; hangs: 0; manifests not saying how the run ended: 0/);
  // Every kill landed inside a live run, in the phase the seed drew.
  // (A run that ended before its phase, e.g. a call that failed to connect, is started again by the campaign: its
  // line says "finished before the kill" and is not one of the kills.)
  const kills = [...r.stdout.matchAll(/^kill +\d+: (\w+) +(SIG\w+) +at phase (\S+) .*$/gm)]
    .filter((m) => !m[0].includes('(finished before the kill)')).map((m) => `${m[1]} ${m[2]} ${m[3]}`);
  assert.deepEqual(kills, SEED_12_KILLS, r.stdout);
  assert.match(r.stdout, /\b4 killed\b/);
});

/** What seed 12 draws (the campaign's generator is deterministic: the same seed, the same phases). */
const SEED_12_KILLS = ['call SIGKILL network', 'net SIGKILL claimed', 'call SIGINT call', 'net SIGINT topology'];
