// @ts-check
// End-to-end: real calls between two Debian Chromium browsers through the emulated network, as a user runs them
// (`node harness/cli.js`, which `npm run call` runs after setup).
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readPcap } from '../../netem/test-support/pcap.js';
import { measure } from '../../netem/test-support/measure.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = path.join(repoRoot, 'harness', 'cli.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-e2e-'));

/**
 * Runs the call CLI; `during` may act on the running process.
 * @param {string[]} args @param {{env?: Record<string,string>, during?: (child: import('node:child_process').ChildProcess, out: () => string) => void}} [o]
 * @returns {Promise<{code: number|null, stderr: string}>}
 */
function runCli(args, { env = {}, during } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', (d) => { stderr += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    during?.(child, () => stderr);
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** Namespaces, root-side links and processes a run with this id could have left. @param {string} id */
function leftovers(id) {
  const found = [];
  const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (netns.includes(`rtclab-${id}-`)) found.push(`namespaces: ${netns.trim()}`);
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  if (links.includes(`rl${id}`)) found.push('root-side management links');
  const procs = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n')
    .filter((l) => l.includes(`rtclab-${id}-`) || (l.includes('rtclab-bottleneck') && l.includes(id)));
  if (procs.length) found.push(`processes: ${procs.join(' | ')}`);
  return found;
}

/** True once the run's media flows and its schedules have started. @param {string} dir */
const callStarted = (dir) => {
  try { return fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8').includes('"event":"call_start"'); } catch { return false; }
};
const manifestOf = (/** @type {string} */ dir) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
const jsonl = (/** @type {string} */ file) => fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
/** A JSONL file's last line, or null when the file is missing or empty. @param {string} file */
const lastLine = (file) => (fs.existsSync(file) && fs.statSync(file).size > 0 ? jsonl(file).at(-1) : null);

/**
 * The values behind the default call's timing checks (harness/validity.js; their bounds in harness/validity-bounds.json
 * and docs/harness.md, "Validity checks"), as the run recorded them: the host's CPU over the call, the connect time,
 * and each bottleneck's release lateness (its stats file's last line, written at its exit: the whole run).
 * @param {import('node:test').TestContext} t @param {string} out @param {any} manifest
 */
function measureValidity(t, out, manifest) {
  measure(t, 'call.default.host_cpu_busy_fraction', manifest.host_cpu_busy_fraction, 4);
  const connected = jsonl(path.join(out, 'events.jsonl')).find((e) => e.event === 'call_connected');
  measure(t, 'call.default.connect_s', connected?.seconds_after_pages_loaded, 3);
  for (const direction of ['forward', 'reverse']) {
    const c = lastLine(path.join(out, `bottleneck-${direction}.stats.jsonl`));
    measure(t, `call.default.${direction}_max_lateness_ms`, c?.max_lateness_ms, 3);
    measure(t, `call.default.${direction}_late_10ms_pct`, c?.forwarded ? (100 * c.released_late_10ms) / c.forwarded : null, 4);
    measure(t, `call.default.${direction}_late_100ms`, c?.released_late_100ms);
  }
}

/**
 * The differences the analyzer's cross-checks hold against their tolerances (analysis/rtclab/crosscheck.py):
 * |getStats - pcap| lost packets, |ours - tshark's| maximum jitter, p99 |OWD - time in the bottleneck|, p99
 * |queuing delay - (tx_end - arrival)|.
 * @param {import('node:test').TestContext} t @param {any[]} crosschecks
 */
function measureCrosschecks(t, crosschecks) {
  for (const c of crosschecks) {
    const [kind, direction, media] = c.name.split(':');
    const v = c.values ?? {};
    const absDiff = (/** @type {any} */ x, /** @type {any} */ y) => (typeof x === 'number' && typeof y === 'number' ? Math.abs(x - y) : null);
    if (kind === 'loss_vs_getstats') measure(t, `call.default.loss_vs_getstats_${direction}_${media}_pkts`, absDiff(v.getstats, v.pcap));
    else if (kind === 'jitter_vs_tshark') {
      measure(t, `call.default.jitter_vs_tshark_${direction}_${media}_ms`, absDiff(v.ours?.max_tshark_rule, v.tshark?.max_jitter_ms), 4);
    } else if (kind === 'owd_vs_ground_truth') measure(t, 'call.default.owd_vs_ground_truth_p99_ms', v.owd_minus_time_in_router_ms?.p99_abs, 4);
    else if (kind === 'queuing_delay_vs_ground_truth') measure(t, 'call.default.queuing_delay_vs_ground_truth_p99_ms', v.p99_abs_difference_ms, 4);
  }
}

test('a 22 s call through the default scenario: captures, getStats, a valid manifest, the rate under the capacity', { timeout: 240_000 }, async (t) => {
  // Under scripts/test.sh the run stays for the analyzer's real-call tests, which read this call instead of placing
  // one of their own (analysis/test/conftest.py, default_call_run).
  const shared = process.env.RTCLAB_TEST_SHARED_RUNS;
  const out = shared ? path.join(shared, 'default-call') : path.join(tmp, 'default');
  const { code, stderr } = await runCli(['--duration', '22', '--out', out]);
  const manifest = manifestOf(out);
  assert.equal(manifest.status, 'complete', stderr);
  assert.equal(manifest.format_version, 3);
  measureValidity(t, out, manifest);
  assert.equal(manifest.validity.valid, true, JSON.stringify(manifest.validity, null, 1));
  // The userspace bottleneck's own release counters were read (the check that judges its timing).
  assert.match(manifest.validity.checks.find((/** @type {any} */ c) => c.name === 'bottleneck_on_time')?.detail ?? '', /^forward: \d+ of [1-9]\d* forwarded packets .*; reverse: \d+ of [1-9]\d* forwarded packets/);
  assert.equal(code, 0, stderr);
  assert.deepEqual(leftovers(manifest.id), []);
  for (const f of ['capture-a.pcap', 'capture-b.pcap', 'getstats-a.jsonl', 'getstats-b.jsonl', 'events.jsonl']) {
    assert.ok(fs.statSync(path.join(out, f)).size > 0, `${f} is empty`);
  }

  // b decoded video, by its browser's own account; the default scenario's media goes a -> b only (call.direction
  // forward), so b sent none back and a decoded none.
  const inboundVideo = (/** @type {string} */ side) => jsonl(path.join(out, `getstats-${side}.jsonl`)).at(-1).report
    .find((/** @type {any} */ s) => s.type === 'inbound-rtp' && s.kind === 'video');
  assert.ok(inboundVideo('b')?.framesDecoded > 0, 'b: no decoded frames');
  assert.equal(inboundVideo('a'), undefined, 'a received video although the call is forward only');
  const sentByB = jsonl(path.join(out, 'getstats-b.jsonl')).at(-1).report.filter((/** @type {any} */ s) => s.type === 'outbound-rtp');
  assert.deepEqual(sentByB, [], 'b sent media although the call is forward only');

  // Video RTP from a to b is present at both captures (the VP8 payload type the browsers negotiated).
  const outbound = jsonl(path.join(out, 'getstats-a.jsonl')).at(-1).report
    .find((/** @type {any} */ s) => s.type === 'outbound-rtp' && s.kind === 'video');
  const isVideo = (/** @type {any} */ p) => p.src === '10.0.1.2' && p.dst === '10.0.2.2' && p.rtp?.ssrc === outbound.ssrc;
  const atB = readPcap(path.join(out, 'capture-b.pcap'));
  const videoAtA = readPcap(path.join(out, 'capture-a.pcap')).filter(isVideo).length;
  const videoAtB = atB.filter(isVideo).length;
  assert.ok(videoAtA > 500 && videoAtB > 500, `video RTP packets: ${videoAtA} at a, ${videoAtB} at b`);

  // After the first 12 s (GCC is at the capacity within 4-8 s here), all a -> b traffic arriving at b (wire bytes)
  // is 70-100% of the 1 Mbit/s capacity over the 10 s left.
  const from = manifest.timings.call_start + 12;
  const to = manifest.timings.call_end;
  let bytes = 0;
  for (const p of atB) {
    const t_s = Number(p.t_ns) / 1e9;
    if (p.src === '10.0.1.2' && p.dst === '10.0.2.2' && t_s >= from && t_s < to) bytes += p.frame_len;
  }
  const rate_kbps = (bytes * 8) / (to - from) / 1000;
  measure(t, 'call.default.rate_kbps', rate_kbps, 3);
  assert.ok(rate_kbps >= 700 && rate_kbps <= 1000, `received rate at b after 12 s: ${rate_kbps.toFixed(0)} kbit/s`);

  // The analyzer ran at the end and wrote its outputs.
  for (const f of ['metrics.json', 'dashboard.html']) assert.ok(fs.existsSync(path.join(out, f)), `${f} missing`);

  // On this real call the analyzer's per-stream loss and jitter agree with getStats and with tshark's own RTP stream
  // analysis, and its one-way delays with the bottleneck's ground-truth log; the report says so.
  const metrics = JSON.parse(fs.readFileSync(path.join(out, 'metrics.json'), 'utf8'));
  for (const kind of ['loss_vs_getstats:forward:video', 'jitter_vs_tshark:forward:video', 'jitter_vs_tshark:forward:audio', 'owd_vs_ground_truth']) {
    assert.ok(metrics.crosschecks.some((/** @type {any} */ c) => c.name.startsWith(kind)), `no ${kind} cross-check`);
  }
  measureCrosschecks(t, metrics.crosschecks);
  const disagreements = metrics.crosschecks.filter((/** @type {any} */ c) => c.ok !== true);
  assert.deepEqual(disagreements, [], 'every cross-check agrees');
  assert.match(fs.readFileSync(path.join(out, 'report.txt'), 'utf8'), /agree forward video ssrc \d+: jitter mean/);
});

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
