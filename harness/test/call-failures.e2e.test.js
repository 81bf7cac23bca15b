// @ts-check
// load-tolerant: each test asserts an exit code, a message, a kept record and nothing left behind, none of which a
// busy machine may change (scripts/test.sh runs this file beside other tests).
// End-to-end: how a call ends when it cannot go on: bad input, a missing clip or Chromium, a browser or the bottleneck
// killed mid-call, Ctrl-C (`node harness/cli.js`, as a user runs it).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { callStarted, jsonl, leftovers, manifestOf, runCli } from '../test-support/call-cli.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-e2e-'));

test('a scenario with a bad field fails before anything is set up, naming the field', async () => {
  const file = path.join(tmp, 'bad.yaml');
  fs.writeFileSync(file, 'network:\n  forward:\n    qdisc: {kind: fifo, limit_ms: -3}\n');
  const out = path.join(tmp, 'bad');
  const { code, stderr } = await runCli(['--scenario', file, '--out', out]);
  assert.equal(code, 2);
  assert.match(stderr, /network\.forward\.qdisc\.limit_ms: must be > 0/);
  assert.equal(fs.existsSync(out), false, 'no run directory for a scenario that never ran');
});

test('a missing video clip ends the run with a clear error and nothing set up', async () => {
  const file = path.join(tmp, 'noclip.yaml');
  fs.writeFileSync(file, 'call: {video_clip: /nonexistent/clip.y4m}\n');
  const out = path.join(tmp, 'noclip');
  const { code, stderr } = await runCli(['--scenario', file, '--out', out, '--duration', '5']);
  assert.equal(code, 1);
  assert.match(stderr, /video clip \/nonexistent\/clip\.y4m does not exist/);
  const manifest = manifestOf(out);
  assert.equal(manifest.status, 'incomplete');
  assert.deepEqual(leftovers(manifest.id), []);
});

test('a missing Chromium ends the run with a clear error', async () => {
  const out = path.join(tmp, 'nochrome');
  const { code, stderr } = await runCli(['--out', out, '--duration', '5'], { env: { RTCLAB_CHROMIUM: '/nonexistent/chromium' } });
  assert.equal(code, 1);
  assert.match(stderr, /Chromium not found at \/nonexistent\/chromium/);
  assert.deepEqual(leftovers(manifestOf(out).id), []);
});

test('a browser killed mid-call: clear error, run incomplete with its data kept, nothing left behind', { timeout: 120_000 }, async () => {
  const out = path.join(tmp, 'killed');
  const { code, stderr } = await runCli(['--out', out, '--duration', '60'], {
    during: () => {
      const timer = setInterval(() => {
        if (!callStarted(out)) return;
        const id = manifestOf(out).id;
        // Chromium's browser process of side b: the one launched inside b's namespace.
        const pids = execFileSync('ip', ['netns', 'pids', `rtclab-${id}-b`], { encoding: 'utf8' }).trim().split('\n');
        for (const pid of pids) {
          const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
          if (cmd.includes('chromium') && !cmd.includes('--type=')) process.kill(Number(pid), 'SIGKILL');
        }
        clearInterval(timer);
      }, 2000);
    },
  });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /browser b \(Chromium\) exited during the run/);
  const manifest = manifestOf(out);
  assert.equal(manifest.status, 'incomplete');
  assert.ok(fs.statSync(path.join(out, 'capture-a.pcap')).size > 24, 'the capture recorded before the crash is kept');
  assert.deepEqual(leftovers(manifest.id), []);
});

test('the userspace bottleneck killed mid-call: the run\'s error is the bottleneck\'s own account, nothing left behind', { timeout: 120_000 }, async () => {
  const out = path.join(tmp, 'bottleneck-killed');
  const { code, stderr } = await runCli(['--out', out, '--duration', '60', '--backend', 'userspace'], {
    during: () => {
      const timer = setInterval(() => {
        if (!callStarted(out)) return;
        // The forward bottleneck is the process given this run directory's forward link.
        const pids = execFileSync('pgrep', ['-f', '--', `--config ${path.join(out, 'bottleneck-forward.json')}`], { encoding: 'utf8' }).trim().split('\n');
        for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
        clearInterval(timer);
      }, 1000);
    },
  });
  assert.equal(code, 1, stderr);
  const manifest = manifestOf(out);
  assert.equal(manifest.status, 'incomplete');
  assert.match(manifest.error, /^the userspace bottleneck \(forward\) exited during the run \(killed by SIGKILL\)/);
  assert.match(stderr, /the userspace bottleneck \(forward\) exited during the run/);
  const exits = jsonl(path.join(out, 'events.jsonl')).filter((e) => e.event === 'bottleneck_exit');
  assert.deepEqual(exits.map((e) => [e.direction, e.signal]), [['forward', 'SIGKILL']]);
  assert.deepEqual(leftovers(manifest.id), []);
});

test('Ctrl-C during the call stops it, keeps what was recorded and leaves nothing behind', { timeout: 120_000 }, async () => {
  const out = path.join(tmp, 'sigint');
  const { code } = await runCli(['--out', out, '--duration', '60'], {
    during: (child) => {
      const timer = setInterval(() => {
        if (!callStarted(out)) return;
        child.kill('SIGINT');
        clearInterval(timer);
      }, 1000);
    },
  });
  assert.equal(code, 1);
  const manifest = manifestOf(out);
  assert.equal(manifest.status, 'incomplete');
  assert.match(manifest.error, /interrupted by SIGINT/);
  assert.ok(fs.statSync(path.join(out, 'getstats-a.jsonl')).size > 0);
  assert.deepEqual(leftovers(manifest.id), []);
});
