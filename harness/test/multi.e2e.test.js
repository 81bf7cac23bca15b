// @ts-check
// End-to-end: several media flows through one bottleneck, as a user runs them (`node harness/cli.js`, analysed by
// `rtclab analyze`): two calls (the second joining later), one call with two video tracks at priorities low and
// high, and DSCP marking on the wire checked from the captures: the thesis' q-1 passes `dscp_marked`, and fails it
// with marking switched off (RTCLAB_DSCP_MARKING=off). Short calls at 640x360: about 2 minutes in all.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { leftovers } from '../../netem/test-support/leftovers.js';
import { readPcap } from '../../netem/test-support/pcap.js';
import { measure } from '../../netem/test-support/measure.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(repoRoot, 'harness', 'cli.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-multi-'));
/** @type {string[]} */
const runDirs = [];

/**
 * Runs the call CLI with its analysis (the analyzer's exit status is the CLI's: 3 for an invalid run).
 * @param {string[]} args @param {Record<string, string>} [env]
 * @returns {Promise<{ code: number | null, output: string, manifest: any, metrics: any }>}
 */
function runCli(args, env = {}) {
  const out = path.join(tmp, `run-${fs.readdirSync(tmp).length}`);
  runDirs.push(out);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args, '--out', out], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    child.on('exit', (code) => {
      // Strict JSON: a NaN or Infinity the analyzer let through would fail the parse (JSON has neither).
      const read = (/** @type {string} */ f) => (fs.existsSync(path.join(out, f))
        ? JSON.parse(fs.readFileSync(path.join(out, f), 'utf8')) : null);
      resolve({ code, output, manifest: read('manifest.json'), metrics: read('metrics.json') });
    });
  });
}

/** The forward flows of one call and track in metrics.json. @param {any} metrics @param {string} call @param {string} track */
const forwardFlows = (metrics, call, track) => metrics.flows.filter((/** @type {any} */ f) => f.direction === 'forward' && f.call === call && f.track === track);

test('two calls through one bottleneck: each its own browsers and room, every flow attributed, the second joining at 4 s', { timeout: 150_000 }, async (t) => {
  const { output, manifest, metrics } = await runCli(['--scenario', path.join(repoRoot, 'scenarios/examples/two-calls.yaml'), '--duration', '14']);
  assert.equal(manifest?.status, 'complete', output);
  assert.equal(manifest.format_version, 3);
  assert.deepEqual(manifest.calls.map((/** @type {any} */ c) => [c.id, c.getstats.a]), [['first', 'getstats-a.jsonl'], ['second', 'getstats-second-a.jsonl']]);
  const [first, second] = manifest.calls;
  assert.notEqual(first.selected_pairs.a.local.port, second.selected_pairs.a.local.port, 'each call its own 5-tuple');
  for (const check of ['ice_pair_on_data_path_first', 'ice_pair_on_data_path_second', 'video_decoded_b_second']) {
    assert.equal(manifest.validity.checks.find((/** @type {any} */ c) => c.name === check)?.ok, true, check);
  }
  for (const call of ['first', 'second']) {
    assert.equal(forwardFlows(metrics, call, 'v1').filter((/** @type {any} */ f) => f.kind === 'video').length, 1, `call ${call}'s video found`);
  }
  const calls = metrics.multiflow.calls;
  assert.equal(calls[1].start_s, 4);
  const secondVideo = calls[1].tracks[0];
  measure(t, 'multi.two_calls.second_rate_kbps', typeof secondVideo?.rate_bps === 'number' ? secondVideo.rate_bps / 1000 : null, 3);
  assert.ok(secondVideo.rate_bps > 50_000, `the second call sends once it joined: ${secondVideo.rate_bps}`);
  // Before it joined, the second call sent no media: its video's first packet at capture-a is after 4 s.
  const video = forwardFlows(metrics, 'second', 'v1').find((/** @type {any} */ f) => f.kind === 'video');
  assert.ok(video.packets_sent > 0);
  const firstVideo = readPcap(path.join(runDirs[runDirs.length - 1], 'capture-a.pcap')).find((p) => p.rtp?.ssrc === video.ssrc);
  const joinedAt_s = Number(firstVideo?.t_ns) / 1e9 - manifest.timings.call_start;
  measure(t, 'multi.two_calls.joined_s', joinedAt_s, 3);
  assert.ok(joinedAt_s >= 3.9 && joinedAt_s < 6, `the second call's first video packet ${joinedAt_s.toFixed(2)} s after t = 0`);
  assert.equal(metrics.multiflow.shares.flows.length, 2);
  measure(t, 'multi.two_calls.jain_index', metrics.multiflow.shares.jain_index, 4);
  assert.ok(metrics.multiflow.shares.jain_index > 0.5 && metrics.multiflow.shares.jain_index <= 1);
  assert.deepEqual(leftovers(manifest.id), []);
});

test('one call, two video tracks at priority low and high: both attributed, one 5-tuple, shares asked 1:4', { timeout: 120_000 }, async (t) => {
  const { output, manifest, metrics } = await runCli(['--scenario', path.join(repoRoot, 'scenarios/examples/two-tracks.yaml'), '--duration', '12']);
  assert.equal(manifest?.status, 'complete', output);
  const tracks = manifest.calls[0].tracks.a;
  assert.deepEqual(tracks.map((/** @type {any} */ t) => [t.id, t.priority]), [['low', 'low'], ['high', 'high']], 'Chrome kept each priority');
  for (const t of tracks) assert.ok(t.ssrcs.length >= 1, `track ${t.id} announced its SSRCs`);
  assert.deepEqual(manifest.calls[0].tracks.b.filter((/** @type {any} */ t) => t.kind === 'video').map((/** @type {any} */ t) => t.id), ['low'],
    'the callee sends its first video track only');
  for (const id of ['low', 'high']) assert.ok(forwardFlows(metrics, 'c1', id).some((/** @type {any} */ f) => f.kind === 'video'), `track ${id} found in the captures`);
  const shares = metrics.multiflow.shares.flows;
  assert.deepEqual(shares.map((/** @type {any} */ s) => [s.track, s.asked_share]), [['low', 0.2], ['high', 0.8]]);
  for (const s of shares) measure(t, `multi.two_tracks.${s.track}_achieved_share`, s.achieved_share, 4);
  for (const s of shares) assert.ok(s.achieved_share > 0, `track ${s.track} got some of the rate`);
  assert.deepEqual(leftovers(manifest.id), []);
});

test('the thesis\' q-1: the call\'s packets carry DSCP 46 on the wire; with marking off dscp_marked fails the run', { timeout: 150_000 }, async () => {
  const q1 = path.join(repoRoot, 'scenarios/repro/thesis-q1.yaml');
  const marked = await runCli(['--scenario', q1, '--duration', '10']);
  assert.equal(marked.manifest?.status, 'complete', marked.output);
  const pass = marked.metrics.validity.checks.find((/** @type {any} */ c) => c.name === 'dscp_marked');
  assert.equal(pass?.ok, true, JSON.stringify(pass));
  assert.ok(marked.manifest.calls[0].dscp_marking.a.length >= 1, 'the caller\'s flow was marked');
  const off = await runCli(['--scenario', q1, '--duration', '5'], { RTCLAB_DSCP_MARKING: 'off' });
  assert.equal(off.manifest?.status, 'complete', off.output);
  assert.equal(off.manifest.dscp_marking, 'off');
  const fail = off.metrics.validity.checks.find((/** @type {any} */ c) => c.name === 'dscp_marked');
  assert.equal(fail?.ok, false, JSON.stringify(fail));
  assert.match(fail.detail, /c1: 0\/\d+ packets \(0\.0%\) carried DSCP 46/);
  assert.equal(off.metrics.validity.valid, false);
  assert.equal(off.code, 3, 'the CLI says the run is invalid');
});
