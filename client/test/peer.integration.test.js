// @ts-check
// Not load-tolerant: its page loads on the host's own network, which other tests' namespaces and links change
// (net::ERR_NETWORK_CHANGED): it runs alone.
// harness/peer.js with a real Debian Chromium and the real page: the config contract as the page enforces it, the
// log, the browser's death, and close().
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSignalingServer } from '../../signaling/server.js';
import { chromiumFlags } from '../../harness/browser.js';
import { Peer } from '../../harness/peer.js';
import { makeClip, removeDir } from '../test-support/peers.js';
import { scenarioCall } from '../test-support/scenario.js';

/** @type {{ dir: string, clip: string }} */
let media;
/** @type {Awaited<ReturnType<typeof startSignalingServer>>} */
let server;

before(async () => {
  media = await makeClip();
  server = await startSignalingServer({ host: '127.0.0.1', port: 0 });
});
after(async () => {
  await server?.close();
  if (media) await removeDir(media.dir);
});

/** @param {() => boolean} done @param {number} limit_ms */
async function waitFor(done, limit_ms) {
  const deadline_ms = Date.now() + limit_ms;
  while (!done() && Date.now() < deadline_ms) await new Promise((resolve) => setTimeout(resolve, 50));
  return done();
}

/**
 * @param {string} name
 * @param {{ onReport?: import('../../harness/peer.js').ReportHandler, onExit?: (reason: string) => void }} handlers
 */
function newPeer(name, handlers) {
  const call = scenarioCall({ width: 320, height: 240, fps: 15 });
  const logFile = path.join(media.dir, `browser-${name}.log`);
  const flags = chromiumFlags({ clip: media.clip, origin: new URL(server.url).origin, mgmtPrefix: '127.', call });
  return { peer: new Peer({ name, flags, logFile, ...handlers }), logFile, call };
}

test('an incomplete config stops the page with an error naming the field; the log has the page\'s console', async () => {
  /** @type {{ kind: string, payload: any }[]} */
  const reports = [];
  const { peer, logFile, call } = newPeer('incomplete', { onReport: (kind, payload) => { reports.push({ kind, payload }); } });
  try {
    const { fps, ...withoutFps } = call;
    // Incomplete on purpose: the type checker would refuse it too.
    const config = /** @type {any} */ ({ room: 'incomplete', role: 'caller', call: withoutFps, getstats_interval_ms: 1000, candidate_prefix: null });
    await peer.open(server.url, config);
    assert.ok(await waitFor(() => reports.some((r) => r.kind === 'error'), 10_000), 'no error report');
    assert.deepEqual(reports.map((r) => r.kind), ['error'], 'the page went on after a bad config');
    assert.match(reports[0].payload.message, /^config: call\.fps is missing/);
    assert.match(fs.readFileSync(logFile, 'utf8'), /\[console\.log\] rtclab error .*call\.fps is missing/);
  } finally {
    await peer.close();
  }
});

test('a browser that dies is reported once with a reason; close() then removes the profile, twice over', async () => {
  /** @type {string[]} */
  const exits = [];
  const { peer, call } = newPeer('dies', { onExit: (reason) => exits.push(reason) });
  try {
    await peer.open(server.url, { room: 'dies', role: 'caller', call, getstats_interval_ms: 1000, candidate_prefix: null });
    const pid = peer.page.browser().process()?.pid;
    assert.ok(pid, 'no Chromium process');
    assert.ok(peer.profileDir && fs.existsSync(peer.profileDir));
    process.kill(pid, 'SIGKILL');
    assert.ok(await waitFor(() => exits.length > 0, 5000), 'onExit was not called');
    assert.equal(exits.length, 1);
    assert.equal(exits[0], 'killed by SIGKILL');
    assert.equal(peer.exitReason, exits[0]);
  } finally {
    await peer.close();
    await peer.close();
  }
  assert.ok(peer.profileDir && !fs.existsSync(peer.profileDir), 'profile left behind');
  assert.equal(exits.length, 1);
});

test('close() of a live browser is not a death, and a closed peer cannot be opened', async () => {
  /** @type {string[]} */
  const exits = [];
  const { peer, call } = newPeer('closes', { onExit: (reason) => exits.push(reason) });
  const config = { room: 'closes', role: /** @type {const} */ ('caller'), call, getstats_interval_ms: 1000, candidate_prefix: null };
  await peer.open(server.url, config);
  const proc = peer.page.browser().process();
  await Promise.all([peer.close(), peer.close()]);
  assert.ok(proc?.exitCode !== null || proc?.signalCode !== null, 'Chromium still runs');
  assert.ok(peer.profileDir && !fs.existsSync(peer.profileDir), 'profile left behind');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(exits, []);
  await assert.rejects(peer.open(server.url, config), /open\(\) called twice|closed/);
});
