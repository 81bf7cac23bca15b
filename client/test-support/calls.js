// @ts-check
// Real calls between two Debian Chromium instances on loopback, through the real signaling server, as the client's
// integration tests place them: what a test file sets up once (a clip, the server, the data address) and one call
// placed, inspected and always closed.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSignalingServer } from '../../signaling/server.js';
import { defaultRouteAddress, makeClip, openPeer, removeDir } from './peers.js';
import { scenarioCall } from './scenario.js';
import { measure } from '../../netem/test-support/measure.js';

export const CONNECT_LIMIT_MS = 10_000;
/** Browser start-up, page load and getUserMedia of both peers, on a busy machine. */
export const LAUNCH_LIMIT_MS = 40_000;

/** @typedef {import('./peers.js').TestPeer} TestPeer */
/**
 * @typedef {object} CallSetup
 * @property {{ dir: string, clip: string }} media
 * @property {Awaited<ReturnType<typeof startSignalingServer>>} server
 * @property {string} dataAddress the data path's stand-in: media goes over the host's default-route address,
 *   signaling over loopback
 */

/** Registers the file's before/after hooks; the returned object is filled before its first test. */
export function callSetup() {
  const setup = /** @type {CallSetup} */ ({ dataAddress: '' });
  before(async () => {
    setup.media = await makeClip();
    setup.server = await startSignalingServer({ host: '127.0.0.1', port: 0 });
    setup.dataAddress = await defaultRouteAddress();
  });
  after(async () => {
    await setup.server?.close();
    if (setup.media) await removeDir(setup.media.dir);
  });
  return setup;
}

/**
 * Place one call, let media flow for `media_ms` after both sides are connected, hand the peers to `inspect`,
 * and always close both browsers.
 * `measured`: the launch and connect times go to the measures (a test that runs alone); otherwise the connect limit
 * is a time-out only (a load-tolerant test).
 * @param {import('node:test').TestContext} t
 * @param {CallSetup} setup
 * @param {{ room: string, call: Record<string, unknown>, getstats_interval_ms: number, media_ms: number, measured?: boolean }} options
 * @param {(peers: TestPeer[], timing: { started_ms: number, connected_ms: number }) => Promise<void>} inspect
 */
export async function withCall(t, setup, { room, call, getstats_interval_ms, media_ms, measured = false }, inspect) {
  const { server, media, dataAddress } = setup;
  const started_ms = Date.now();
  /** @type {TestPeer[]} */
  const peers = [];
  try {
    await Promise.all(/** @type {const} */ (['caller', 'callee']).map((role) => openPeer({
      url: server.url,
      config: { room, role, call: scenarioCall({ width: 320, height: 240, fps: 15, ...call }), getstats_interval_ms, candidate_prefix: dataAddress },
      clip: media.clip,
      dir: media.dir,
      name: `${room}-${role}`,
      opened: peers,
    })));
    const stateAt = (/** @type {TestPeer} */ peer, /** @type {(p: any) => boolean} */ match) =>
      peer.reports.find((r) => r.kind === 'state' && match(r.payload))?.payload.t_ms;
    const joinedAt = (/** @type {TestPeer} */ p) => stateAt(p, (s) => s.event === 'joined');
    const connectedAt = (/** @type {TestPeer} */ p) => stateAt(p, (s) => s.connectionState === 'connected');
    // The page's connect time counts from both pages in the room: Chromium's own start-up is slow when the
    // 2 cores are busy and is not the page's doing, so it only gets a generous overall limit.
    const bothJoined = () => Math.max(...peers.map((p) => joinedAt(p) ?? Infinity));
    while (peers.some((p) => connectedAt(p) === undefined) && Date.now() - started_ms < LAUNCH_LIMIT_MS
      && !(Date.now() - bothJoined() > CONNECT_LIMIT_MS)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const errors = peers.flatMap((p) => p.reports.filter((r) => r.kind === 'error').map((r) => r.payload.message));
    assert.deepEqual(errors, [], 'the pages reported errors');
    const connected_ms = Math.max(...peers.map((p) => connectedAt(p) ?? Infinity));
    assert.ok(Number.isFinite(connected_ms), `not connected: ${peers.map((p) => p.logTail()).join(' || ')}`);
    const connect_ms = connected_ms - bothJoined();
    t.diagnostic(`launch to both connected ${connected_ms - started_ms} ms; both joined to both connected ${connect_ms} ms`);
    if (measured) {
      measure(t, `client.${room}.launch_ms`, connected_ms - started_ms);
      measure(t, `client.${room}.connect_ms`, connect_ms);
    }
    assert.ok(connect_ms < CONNECT_LIMIT_MS, `connected ${connect_ms} ms after both joined`);
    await new Promise((resolve) => setTimeout(resolve, media_ms));
    await inspect(peers, { started_ms, connected_ms });
  } finally {
    await Promise.all(peers.map((p) => p.peer.close()));
  }
}

/** @param {TestPeer} peer */
export const statsOf = (peer) => peer.reports.filter((r) => r.kind === 'stats').map((r) => r.payload);
