// @ts-check
// Chrome's webrtc-internals dump in a run (harness/webrtc-internals.js): what the harness reads back from a saved dump
// (describeDump), which dumps a run's calls asked for (askedDumps), and the validity check webrtc_internals_saved
// (validity.js). The dump's saving by a real Chromium is tested by analysis/test/test_import_webrtc_internals_real.py.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { test } from 'node:test';
import { askedDumps, describeDump } from '../webrtc-internals.js';
import { validityChecks } from '../validity.js';

/** A dump as Chromium 156 writes it: JSON.stringify(..., null, 1) of its store, series times as ISO dates. */
const dump = {
  timestamp: 1795900772592,
  PeerConnections: {
    '9-1': { pid: 9, url: 'http://10.99.0.1/', updateLog: [], stats: {
      'OT01V1-bytesSent': { startTime: '2026-11-28T21:19:03.281Z', endTime: '2026-11-28T21:19:31.733Z', statsType: 'outbound-rtp', values: '[1,2]' },
      'OT01V1-timestamp': { startTime: '2026-11-28T21:19:03.281Z', endTime: '2026-11-28T21:19:32.733Z', statsType: 'outbound-rtp', values: '[1,2]' },
      'OT01V1-[bytesSent_in_bits/s]': {},
    } },
  },
};

test('a saved dump is described from the file: size, peer connections, series, its newest point', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-internals-'));
  try {
    const file = path.join(dir, 'webrtc-internals-a.json.gz');
    fs.writeFileSync(file, zlib.gzipSync(JSON.stringify(dump, null, 1)));
    assert.deepEqual(describeDump(file), { bytes: fs.statSync(file).size, peer_connections: 1, stats_series: 3,
      last_point_at: Date.parse('2026-11-28T21:19:32.733Z') / 1000 });
    fs.writeFileSync(file, JSON.stringify(dump));
    assert.throws(() => describeDump(file), /webrtc-internals-a.json.gz is not Chrome's gzipped JSON dump/);
    fs.writeFileSync(file, zlib.gzipSync(JSON.stringify({ getUserMedia: [] })));
    assert.throws(() => describeDump(file), /has no PeerConnections object/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

const saved = (/** @type {string} */ file, pcs = 1, series = 268) =>
  ({ file, bytes: 13715, peer_connections: pcs, stats_series: series, last_point_at: 2, saved_at: 1 });
const peers = (/** @type {any} */ a, /** @type {any} */ b) => ({ a: { internalsDump: a }, b: { internalsDump: b } });

test('the dumps asked for are those of the calls with call.webrtc_internals, by their files key', () => {
  const calls = [
    { call: { webrtc_internals: true }, files: { a: 'a', b: 'b' }, peers: peers(saved('webrtc-internals-a.json.gz'), null) },
    { call: { webrtc_internals: false }, files: { a: 'c2-a', b: 'c2-b' }, peers: peers(null, null) },
  ];
  assert.deepEqual(askedDumps(calls), { a: saved('webrtc-internals-a.json.gz'), b: null });
  assert.equal(askedDumps([calls[1]]), null);
});

const base = {
  dataPrefix: '10.0.', selectedPairs: [], framesDecoded: { a: 1, b: 1 }, connectTimeoutS: 20, connectSeconds: 1,
  cpuLimited: {}, samples: {}, bottleneckAlive: null, captures: null, captureEnabled: false,
};
const check = (/** @type {any} */ webrtcInternals) => validityChecks({ ...base, webrtcInternals }).checks
  .find((c) => c.name === 'webrtc_internals_saved');

test('webrtc_internals_saved: every dump asked for saved with a peer connection, or the reason it fails', () => {
  assert.equal(check(null), undefined);
  const ok = check({ a: saved('webrtc-internals-a.json.gz'), b: saved('webrtc-internals-b.json.gz') });
  assert.equal(ok?.ok, true);
  assert.match(ok?.detail ?? '', /webrtc-internals-a.json.gz 13715 bytes, 1 peer connection\(s\), 268 stats series/);
  const bad = check({ a: null, b: { file: null, error: 'Chrome wrote no dump within 30 s' }, 'c2-a': saved('x.json.gz', 0, 0) });
  assert.equal(bad?.ok, false);
  assert.equal(bad?.detail, 'a: no dump was saved; b: no dump: Chrome wrote no dump within 30 s; ' +
    'x.json.gz holds 0 peer connection(s) and 0 stats series: it recorded no call');
});
