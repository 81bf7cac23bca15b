// @ts-check
// End-to-end: a real call between two Debian Chromium browsers through the emulated network, as a user runs it
// (`node harness/cli.js`, which `npm run call` runs after setup), judged by its timing checks and cross-checks: it
// needs the machine's quiet. The failure paths (bad input, kills, Ctrl-C) are harness/test/call-failures.e2e.test.js.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readPcap } from '../../netem/test-support/pcap.js';
import { measure } from '../../netem/test-support/measure.js';
import { jsonl, lastLine, leftovers, manifestOf, runCli } from '../test-support/call-cli.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-e2e-'));

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
  // one of their own (analysis/test/conftest.py, default_call_run); it saves Chrome's own webrtc-internals dumps for
  // the import's test (test_import_webrtc_internals_real.py), one call fewer.
  const shared = process.env.RTCLAB_TEST_SHARED_RUNS;
  const out = shared ? path.join(shared, 'default-call') : path.join(tmp, 'default');
  const { code, stderr } = await runCli(['--duration', '22', '--webrtc-internals', '--out', out]);
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
