// @ts-check
// Not load-tolerant although it bounds no time, rate or count: on a saturated host Chromium 156 stopped ECT(1) mid-call
// (from 2.6 s on every packet from a was Not-ECT; none was reported bleached or CE), so it runs with the calls, alone.
// A short real call with Chrome's L4S path on (call.l4s) through CoDel marking CE (scenarios/examples/l4s-codel-ecn.yaml):
// pins what studies/RESULTS.md ("Chrome's L4S path") measured with Chromium 156, so that a Chrome that changes is
// noticed. Run it under the machine-wide lock: flock /tmp/rtclab-realcalls.lock node --test harness/test/l4s.e2e.test.js
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readPcap } from '../../netem/test-support/pcap.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const A = '10.0.1.2';
const B = '10.0.2.2';
const ECT1 = 1;
const CE = 3;

/** The last getStats sample of one side. @param {string} dir @param {string} side @returns {any[]} */
const lastReport = (dir, side) => JSON.parse(fs.readFileSync(path.join(dir, `getstats-${side}.jsonl`), 'utf8').trim().split('\n').at(-1) ?? '{}').report;

test('l4s on: a\'s RTP and RTCP leave ECT(1), arrive ECT(1) or CE, and the CE marks come back in RFC 8888 feedback', { timeout: 180_000 }, () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-l4s-'));
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'harness', 'cli.js'), '--scenario',
    path.join(repoRoot, 'scenarios', 'examples', 'l4s-codel-ecn.yaml'), '--duration', '15', '--out', out, '--no-analyze'],
  { encoding: 'utf8' });
  const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
  assert.equal(manifest.status, 'complete', r.stdout + r.stderr);

  const report = lastReport(out, 'a');
  const sent = report.filter((/** @type {any} */ s) => s.type === 'outbound-rtp');
  assert.deepEqual(sent.map((/** @type {any} */ s) => s.kind).sort(), ['audio', 'video']);

  const fromA = (/** @type {any} */ p) => p.src === A && p.dst === B;
  const atA = readPcap(path.join(out, 'capture-a.pcap')).filter(fromA);
  const atB = readPcap(path.join(out, 'capture-b.pcap')).filter(fromA);
  for (const s of sent) {
    // Every RTP packet of the stream leaves a ECT(1), as getStats counts it.
    const left = atA.filter((p) => p.rtp?.ssrc === s.ssrc);
    assert.ok(left.length > 100, `${s.kind}: ${left.length} packets at a`);
    assert.deepEqual([...new Set(left.map((p) => p.ecn))], [ECT1], `${s.kind}: codepoints at a`);
    assert.equal(s.packetsSentWithEct1, s.packetsSent, `${s.kind}: packetsSentWithEct1`);
    // At b it is ECT(1) or, marked by the bottleneck, CE; the feedback reports no bleaching and no more CE than b saw.
    const arrived = atB.filter((p) => p.rtp?.ssrc === s.ssrc);
    assert.ok(arrived.every((p) => p.ecn === ECT1 || p.ecn === CE), `${s.kind}: codepoints at b`);
    const remote = report.find((/** @type {any} */ x) => x.type === 'remote-inbound-rtp' && x.ssrc === s.ssrc);
    assert.equal(remote.packetsWithBleachedEct1Marking, 0, `${s.kind}: bleached`);
    const ceAtB = arrived.filter((p) => p.ecn === CE).length;
    assert.ok(remote.packetsReceivedWithCe <= ceAtB, `${s.kind}: ${remote.packetsReceivedWithCe} CE reported, ${ceAtB} at b`);
  }
  // RTCP from a (its own RFC 8888 feedback and reports) is ECT(1) too; STUN and DTLS are not ECN-capable.
  assert.ok(atA.filter((p) => p.cls === 'rtcp').every((p) => p.ecn === ECT1), 'RTCP codepoints at a');
  assert.ok(atA.filter((p) => p.cls === 'stun' || p.cls === 'dtls').every((p) => p.ecn === 0), 'STUN/DTLS codepoints at a');
  // The feedback is RFC 8888 (ccfb), negotiated and received by a.
  const transport = report.find((/** @type {any} */ x) => x.type === 'transport');
  assert.ok(transport.ccfbMessagesReceived > 0, `ccfbMessagesReceived ${transport.ccfbMessagesReceived}`);
  fs.rmSync(out, { recursive: true, force: true });
});
