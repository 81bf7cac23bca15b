// @ts-check
// The page's pure helpers, in Node, against Chromium 156's real codec capabilities and a real getStats sample.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { chooseAudioCodecs, chooseVideoCodecs, sdpCodecNames } from '../codecs.js';
import { isCandidateAllowed, parseCandidate } from '../candidates.js';
import { liveNumbers, pairKey, selectedCandidatePair } from '../stats.js';
import { CALL_FIELDS, GETSTATS_INTERVAL_MS, readConfig } from '../config.js';
import { ssrcsByMid } from '../connection.js';
import { schema, schemaAcceptsCall, schemaAcceptsInterval, scenarioCall } from '../test-support/scenario.js';

const fixture = (/** @type {string} */ name) => JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
const caps = fixture('chromium-156-capabilities.json');
const statsSamples = fixture('chromium-156-stats-callee.json');
const mimes = (/** @type {{ mimeType: string, sdpFmtpLine?: string }[]} */ list) => list.map((c) => `${c.mimeType}${c.sdpFmtpLine ? ` ${c.sdpFmtpLine}` : ''}`);

test('VP8 without red_fec: exactly VP8 and rtx', () => {
  assert.deepEqual(mimes(chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'VP8', false)), ['video/VP8', 'video/rtx']);
});

test('red_fec adds RED and ULPFEC, never FlexFEC', () => {
  assert.deepEqual(mimes(chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'VP8', true)), ['video/VP8', 'video/rtx', 'video/red', 'video/ulpfec']);
});

test('only profiles the browser can also send are kept (VP9 profiles 1 and 3 cannot be encoded)', () => {
  assert.deepEqual(mimes(chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'VP9', false)), ['video/VP9 profile-id=0', 'video/VP9 profile-id=2', 'video/rtx']);
  const h264 = chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'H264', false);
  assert.ok(h264.every((c) => c.mimeType === 'video/H264' || c.mimeType === 'video/rtx'));
  assert.ok(!h264.some((c) => c.sdpFmtpLine?.includes('profile-level-id=f4001f')));
  assert.deepEqual(mimes(chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'AV1', false)), ['video/AV1 level-idx=5;profile=0;tier=0', 'video/rtx']);
});

test('a codec the browser lacks is an error naming it and what exists', () => {
  const noAv1 = caps.receiver.video.filter((/** @type {any} */ c) => c.mimeType !== 'video/AV1');
  assert.throws(() => chooseVideoCodecs(noAv1, caps.sender.video, 'AV1', false), /cannot both send and receive video codec AV1 \(it can: video\/VP8/);
  assert.throws(() => chooseVideoCodecs(caps.receiver.video, caps.sender.video, 'H265', false), /unknown video codec "H265"/);
});

test('audio: opus only, audio/red only with red_fec', () => {
  assert.deepEqual(mimes(chooseAudioCodecs(caps.receiver.audio, false)), ['audio/opus minptime=10;useinbandfec=1']);
  assert.deepEqual(mimes(chooseAudioCodecs(caps.receiver.audio, true)), ['audio/opus minptime=10;useinbandfec=1', 'audio/red']);
});

test('sdpCodecNames lists the codecs of one m-section', () => {
  const sdp = 'v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 97 118\r\n'
    + 'a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=rtpmap:118 red/90000\r\n';
  assert.deepEqual(sdpCodecNames(sdp, 'video'), ['VP8', 'rtx', 'red']);
  assert.deepEqual(sdpCodecNames(sdp, 'audio'), ['opus']);
  assert.deepEqual(sdpCodecNames('v=0\r\n', 'video'), []);
});

test('candidate lines are parsed', () => {
  assert.deepEqual(parseCandidate('candidate:3146179749 1 udp 2122063615 10.0.1.2 45556 typ host generation 0 ufrag 9fTM'),
    { protocol: 'udp', address: '10.0.1.2', port: 45556, candidateType: 'host' });
  assert.deepEqual(parseCandidate('a=candidate:1 1 TCP 1518083839 ::1 9 typ host tcptype active'),
    { protocol: 'tcp', address: '::1', port: 9, candidateType: 'host' });
  assert.equal(parseCandidate('not a candidate'), null);
});

test('only candidates on the data network pass the prefix', () => {
  const data = 'candidate:1 1 udp 2122063615 10.0.1.2 45556 typ host';
  const management = 'candidate:2 1 udp 2122063615 10.99.1.2 45557 typ host';
  const mdns = 'candidate:3 1 udp 2122063615 0f3c9d2e-1111-4bbb-8ccc-123456789abc.local 45558 typ host';
  assert.equal(isCandidateAllowed(data, '10.0.'), true);
  assert.equal(isCandidateAllowed(management, '10.0.'), false);
  assert.equal(isCandidateAllowed(mdns, '10.0.'), false);
  assert.equal(isCandidateAllowed('garbage', '10.0.'), false);
  assert.equal(isCandidateAllowed(management, null), true);
  assert.equal(isCandidateAllowed(management, ''), true);
});

test('selected candidate pair is read from a real Chromium report', () => {
  const pair = selectedCandidatePair(statsSamples[1].report);
  assert.ok(pair);
  assert.equal(pair.local.protocol, 'udp');
  assert.equal(typeof pair.local.port, 'number');
  assert.ok(['host', 'prflx', 'srflx', 'relay'].includes(pair.remote.candidateType));
  assert.match(pairKey(pair), /^udp:.*<-> udp:/);
  assert.equal(selectedCandidatePair([]), null);
  assert.equal(pairKey(null), '');
});

test('live numbers from two consecutive real samples', () => {
  const [prev, cur] = statsSamples.map((/** @type {any} */ s) => s.report);
  const n = liveNumbers(prev, cur);
  assert.ok(n.send_kbps !== null && n.send_kbps > 0, `send_kbps ${n.send_kbps}`);
  assert.ok(n.receive_kbps !== null && n.receive_kbps > 0, `receive_kbps ${n.receive_kbps}`);
  assert.equal(n.send_codec, 'video/VP8');
  assert.equal(n.receive_codec, 'video/VP8');
  assert.equal(n.receive_resolution, '320x240');
  assert.ok(n.rtt_ms !== null && n.rtt_ms >= 0);
  assert.equal(liveNumbers(null, cur).send_kbps, null);
});

test('bitrate is computed from byte deltas over the stats timestamps', () => {
  const at = (/** @type {number} */ t_ms, /** @type {number} */ bytes) => [{ id: 'o', type: 'outbound-rtp', kind: 'video', timestamp: t_ms, bytesSent: bytes, headerBytesSent: 0 }];
  assert.equal(liveNumbers(at(1000, 0), at(2000, 125000)).send_kbps, 1000);
  assert.equal(liveNumbers(at(1000, 0), at(1000, 10)).send_kbps, null);
});

/** A complete config as the harness injects it: the scenario's call with every schema default filled in. */
const complete = () => ({ room: 'x', role: 'callee', call: scenarioCall({ codec: 'VP9' }), getstats_interval_ms: 1000, candidate_prefix: '10.0.', frames_read_every: 1, frames_sample_every: 30, frames_sample_path: '/frame-samples/b' });

test('config: the page mirrors the schema\'s constraints exactly (and keeps no defaults)', () => {
  /** Keywords that constrain a value; `default` and `description` are not the page's business. */
  const constraints = (/** @type {Record<string, unknown>} */ rule) => Object.fromEntries(Object.entries(rule)
    .filter(([keyword]) => keyword !== 'default' && keyword !== 'description'));
  for (const [field, rule] of Object.entries(CALL_FIELDS)) {
    assert.deepEqual(rule, constraints(schema.properties.call.properties[field]), `call.${field}`);
  }
  assert.deepEqual(GETSTATS_INTERVAL_MS, constraints(schema.properties.getstats.properties.interval_ms));
  // And the page accepts exactly what the schema accepts, at and beyond every bound.
  const probes = {
    width: [15, 16, 7680, 7681, 640.5], height: [15, 16, 4320, 4321], fps: [0, 1, 120, 121],
    max_bitrate_kbps: [0, -1, 0.5, null, 1e6, 'x'], codec: ['VP8', 'AV1', 'H265', 'vp8'], red_fec: [true, 0],
    degradation_preference: ['maintain-resolution', 'disabled'], audio: [false, 'yes'],
    priority: ['very-low', 'high', 'urgent', null], network_priority: ['medium', 'HIGH'], start_s: [0, 2.5, -1, null],
  };
  for (const [field, values] of Object.entries(probes)) {
    for (const value of values) {
      const config = complete();
      config.call[field] = value;
      let pageAccepts = true;
      try { readConfig(config, ''); } catch { pageAccepts = false; }
      assert.equal(pageAccepts, schemaAcceptsCall({ [field]: value }), `call.${field} = ${JSON.stringify(value)}`);
    }
  }
  for (const value of [99, 100, 60000, 60001, 150.5]) {
    let pageAccepts = true;
    try { readConfig({ ...complete(), getstats_interval_ms: value }, ''); } catch { pageAccepts = false; }
    assert.equal(pageAccepts, schemaAcceptsInterval(value), `getstats_interval_ms = ${value}`);
  }
});

test('config: a complete config is taken as given, from window or ?config=', () => {
  assert.deepEqual(readConfig(complete(), ''), complete());
  const fromQuery = readConfig(undefined, `?config=${encodeURIComponent(JSON.stringify({ ...complete(), role: null }))}`);
  assert.deepEqual(fromQuery, { ...complete(), role: null });
});

test('config: a missing field is an error naming it (no defaults in the page)', () => {
  for (const field of ['room', 'role', 'call', 'getstats_interval_ms', 'candidate_prefix']) {
    const config = /** @type {Record<string, unknown>} */ (complete());
    delete config[field];
    assert.throws(() => readConfig(config, ''), new RegExp(`config: ${field} is missing`));
  }
  for (const field of Object.keys(CALL_FIELDS)) {
    const config = complete();
    delete config.call[field];
    assert.throws(() => readConfig(config, ''), new RegExp(`config: call\\.${field} is missing`));
  }
  assert.throws(() => readConfig(undefined, ''), /config: none given/);
});

test('config: errors name the field and what it must be', () => {
  const withCall = (/** @type {Record<string, unknown>} */ call) => ({ ...complete(), call: { ...complete().call, ...call } });
  assert.throws(() => readConfig(withCall({ codec: 'H265' }), ''), /call\.codec must be one of VP8, VP9, H264, AV1, got "H265"/);
  assert.throws(() => readConfig(withCall({ width: 8000 }), ''), /call\.width must be an integer >= 16 and <= 7680, got 8000/);
  assert.throws(() => readConfig(withCall({ max_bitrate_kbps: 0 }), ''), /call\.max_bitrate_kbps must be a number > 0 or null, got 0/);
  assert.throws(() => readConfig({ ...complete(), role: 'boss' }, ''), /role must be/);
  assert.throws(() => readConfig({ ...complete(), room: 'a b' }, ''), /room must be/);
  assert.throws(() => readConfig({ ...complete(), getstats_interval_ms: 50 }, ''), /getstats_interval_ms must be an integer >= 100 and <= 60000, got 50/);
  assert.throws(() => readConfig({ ...complete(), candidate_prefix: 10 }, ''), /candidate_prefix must be a string or null/);
  assert.throws(() => readConfig(undefined, '?config=%7Bnope'), /not valid JSON/);
  assert.throws(() => readConfig([], ''), /must be a JSON object/);
});

test('ssrcsByMid: each m-section\'s SSRCs, media then RTX (the FID group\'s order), from a local description', () => {
  const sdp = ['v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0 1 2',
    'm=video 9 UDP/TLS/RTP/SAVPF 96 97', 'a=mid:0', 'a=ssrc-group:FID 1111 2222', 'a=ssrc:1111 cname:x', 'a=ssrc:1111 msid:s t0',
    'a=ssrc:2222 cname:x', 'm=video 9 UDP/TLS/RTP/SAVPF 96 97', 'a=mid:1', 'a=ssrc-group:FID 3333 4444', 'a=ssrc:4444 cname:x',
    'a=ssrc:3333 cname:x', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:2', 'a=ssrc:5555 cname:x',
    'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=mid:3', 'a=recvonly', ''].join('\r\n');
  assert.deepEqual(ssrcsByMid(sdp), { 0: [1111, 2222], 1: [3333, 4444], 2: [5555], 3: [] });
});

test('config: call.tracks must be a non-empty list of complete tracks', () => {
  const withTracks = (/** @type {any} */ tracks) => { const c = complete(); c.call.tracks = tracks; return c; };
  assert.throws(() => readConfig(withTracks([]), ''), /config: call.tracks must be a non-empty list of objects/);
  assert.throws(() => readConfig(withTracks([{ id: 'v1', priority: 'low', network_priority: 'low' }]), ''),
    /config: call.tracks\[0\].max_bitrate_kbps is missing/);
  assert.throws(() => readConfig(withTracks([{ id: 'v1', priority: 'top', network_priority: 'low', max_bitrate_kbps: null }]), ''),
    /config: call.tracks\[0\].priority must be one of very-low, low, medium, high/);
});
