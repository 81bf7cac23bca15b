// @ts-check
// Not load-tolerant although it asserts no time: its calls use the host's own network (the default-route address),
// and another test's namespaces and root-side links change that network, on which Chromium drops the page's loads and
// the call (net::ERR_NETWORK_CHANGED, seen in a fresh-clone run): it runs alone, with the calls that need quiet.
// Real calls between two Debian Chromium instances on loopback, through the real signaling server: the codecs asked
// for, the forward-only direction, RED/FEC, and the page in manual use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPeer } from '../test-support/peers.js';
import { scenarioCall } from '../test-support/scenario.js';
import { LAUNCH_LIMIT_MS, callSetup, statsOf, withCall } from '../test-support/calls.js';

/** @typedef {import('../test-support/peers.js').TestPeer} TestPeer */

const setup = callSetup();

test('direction forward: only the caller sends; the callee opens no camera, answers recvonly and decodes', async (t) => {
  await withCall(t, setup, { room: 'forward', call: { codec: 'VP8', direction: 'forward' }, getstats_interval_ms: 500, media_ms: 2500 },
    async ([caller, callee]) => {
      const last = (/** @type {TestPeer} */ p) => statsOf(p).at(-1).report;
      const sent = (/** @type {TestPeer} */ p, /** @type {string} */ kind) => last(p)
        .filter((/** @type {any} */ s) => s.type === 'outbound-rtp' && s.kind === kind).reduce((n, /** @type {any} */ s) => n + (s.packetsSent ?? 0), 0);
      const decoded = (/** @type {TestPeer} */ p) => last(p).find((/** @type {any} */ s) => s.type === 'inbound-rtp' && s.kind === 'video')?.framesDecoded ?? 0;
      assert.ok(sent(caller, 'video') > 0 && sent(caller, 'audio') > 0, 'the caller sends video and audio');
      assert.equal(sent(callee, 'video') + sent(callee, 'audio'), 0, 'the callee sends no media');
      assert.ok(decoded(callee) > 0, 'the callee decodes the caller\'s video');
      assert.equal(decoded(caller), 0, 'the caller receives no video');
      assert.equal(callee.reports.filter((r) => r.kind === 'media').length, 0, 'the callee opened no camera or microphone');
      assert.ok(!caller.reports.some((r) => r.kind === 'state' && r.payload.event === 'media-flowing'), 'the caller waits for no remote video');
      const answer = await callee.page.evaluate(() => /** @type {any} */ (window).rtclab.call.pc.localDescription.sdp);
      const directions = [...answer.matchAll(/a=(sendrecv|sendonly|recvonly|inactive)/g)].map((m) => m[1]);
      assert.deepEqual([...new Set(directions)], ['recvonly'], `the answer's directions: ${directions}`);
      for (const peer of [caller, callee]) {
        const preview = await peer.page.evaluate(() => /** @type {HTMLVideoElement} */ (document.getElementById('local')).srcObject !== null);
        assert.equal(preview, false, 'no local preview unless call.local_preview');
      }
    });
});

for (const codec of ['VP9', 'H264', 'AV1']) {
  test(`${codec} call: the requested codec is sent and decoded on both sides`, async (t) => {
    await withCall(t, setup, { room: codec.toLowerCase(), call: { codec, red_fec: false, max_bitrate_kbps: null }, getstats_interval_ms: 500, media_ms: 2500 },
      async (peers) => {
        for (const peer of peers) {
          const last = statsOf(peer).at(-1).report;
          const inbound = last.find((/** @type {any} */ s) => s.type === 'inbound-rtp' && s.kind === 'video');
          const outbound = last.find((/** @type {any} */ s) => s.type === 'outbound-rtp' && s.kind === 'video');
          const codecOf = (/** @type {any} */ s) => last.find((/** @type {any} */ c) => c.id === s.codecId)?.mimeType;
          assert.ok(inbound.framesDecoded > 0);
          assert.equal(codecOf(inbound), `video/${codec}`);
          assert.equal(codecOf(outbound), `video/${codec}`);
          const sdp = await peer.page.evaluate(() => /** @type {any} */ (window).rtclab.call.pc.remoteDescription.sdp);
          const others = ['red', 'ulpfec', 'VP8', 'VP9', 'H264', 'AV1'].filter((c) => c !== codec).join('|');
          assert.doesNotMatch(sdp, new RegExp(`a=rtpmap:\\d+ (${others})/`));
        }
      });
  });
}

test('red_fec: RED and ULPFEC are negotiated when asked', async (t) => {
  await withCall(t, setup, { room: 'red', call: { codec: 'VP8', red_fec: true }, getstats_interval_ms: 1000, media_ms: 500 },
    async (peers) => {
      for (const peer of peers) {
        const sdp = await peer.page.evaluate(() => /** @type {any} */ (window).rtclab.call.pc.remoteDescription.sdp);
        assert.match(sdp, /a=rtpmap:\d+ red\/90000/);
        assert.match(sdp, /a=rtpmap:\d+ ulpfec\/90000/);
      }
    });
});

test('manual use: config in ?config=, no rtclabReport, the page still calls and shows video and numbers', async () => {
  /** @type {TestPeer[]} */
  const peers = [];
  try {
    await Promise.all(/** @type {const} */ (['caller', 'callee']).map((role) => openPeer({
      url: setup.server.url,
      config: { room: 'manual', role, call: scenarioCall({ width: 320, height: 240, fps: 15 }), getstats_interval_ms: 500, candidate_prefix: setup.dataAddress },
      clip: setup.media.clip,
      dir: setup.media.dir,
      name: `manual-${role}`,
      manual: true,
      opened: peers,
    })));
    const shown = () => Promise.all(peers.map((p) => p.page.evaluate(() => ({
      remoteWidth: /** @type {HTMLVideoElement} */ (document.getElementById('remote')).videoWidth,
      numbers: document.getElementById('numbers')?.textContent ?? '',
      errors: document.getElementById('error')?.textContent ?? '',
    }))));
    const deadline_ms = Date.now() + LAUNCH_LIMIT_MS;
    let views = await shown();
    // Wait for what is asserted below: the receive side's frame rate appears a sample after its resolution.
    const complete = (/** @type {{remoteWidth: number, numbers: string}} */ v) => v.remoteWidth > 0
      && /send\d+ kbit\/s\s+320x240 @ \d+ fps/.test(v.numbers) && /receive\d+ kbit\/s\s+320x240 @ \d+ fps/.test(v.numbers)
      && /RTT\d+\.\d ms/.test(v.numbers);
    while (!views.every(complete) && Date.now() < deadline_ms) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      views = await shown();
    }
    for (const view of views) {
      assert.equal(view.errors, '');
      assert.equal(view.remoteWidth, 320);
      assert.match(view.numbers, /send\d+ kbit\/s\s+320x240 @ \d+ fps\s+video\/VP8/);
      assert.match(view.numbers, /receive\d+ kbit\/s\s+320x240 @ \d+ fps\s+video\/VP8/);
      assert.match(view.numbers, /RTT\d+\.\d ms/);
    }
    assert.ok(peers.every((p) => p.reports.length === 0));
  } finally {
    await Promise.all(peers.map((p) => p.peer.close()));
  }
});
