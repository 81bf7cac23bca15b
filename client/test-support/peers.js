// @ts-check
/**
 * Test helpers: a small Y4M clip, and a Peer (harness/peer.js, launched exactly as runs launch Chromium) on the
 * host's network with its reports kept in memory.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromiumFlags } from '../../harness/browser.js';
import { Peer } from '../../harness/peer.js';

const run = promisify(execFile);

/** @returns {Promise<{ dir: string, clip: string }>} a temporary directory with a 320x240 5 s testsrc2 clip */
export async function makeClip() {
  const dir = await mkdtemp(path.join(tmpdir(), 'rtclab-client-test-'));
  const clip = path.join(dir, 'clip.y4m');
  await run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=15', '-t', '5', '-pix_fmt', 'yuv420p', clip]);
  return { dir, clip };
}

/**
 * The address the host's default route leaves from: with the runs' --webrtc-ip-handling-policy Chrome gathers ICE
 * candidates on that interface only (no loopback), so a test call's media takes it, as a run's takes the data path.
 * @returns {Promise<string>}
 */
export async function defaultRouteAddress() {
  const { stdout } = await run('ip', ['-4', 'route', 'get', '1.1.1.1']); // a lookup only: nothing is sent
  const address = /\bsrc (\S+)/.exec(stdout)?.[1];
  if (!address) throw new Error(`no IPv4 default route (ip route get: ${stdout.trim()}); Chrome would gather no candidate`);
  return address;
}

/** @param {string} dir */
export const removeDir = (dir) => rm(dir, { recursive: true, force: true });

/**
 * @typedef {{ kind: string, payload: any, received_ms: number }} Received
 * @typedef {{ peer: Peer, readonly page: import('puppeteer-core').Page, reports: Received[], logFile: string,
 *   logTail: () => string }} TestPeer
 */

/**
 * A Peer on the host's network, launched as runs launch it, its page opened with `config`. The peer must be closed
 * by the caller, also when this throws (see `opened`).
 * @param {{ url: string, config: import('../../harness/peer.js').PageConfig, clip: string, dir: string, name: string,
 *   manual?: boolean, opened: TestPeer[] }} o
 *   opened: the peer is pushed here before it is opened, so the caller can close it whatever happens
 * @returns {Promise<TestPeer>}
 */
export async function openPeer({ url, config, clip, dir, name, manual = false, opened }) {
  const origin = new URL(url).origin;
  const logFile = path.join(dir, `browser-${name}.log`);
  /** @type {Received[]} */
  const reports = [];
  const peer = new Peer({
    name,
    flags: chromiumFlags({ clip, origin, mgmtPrefix: '127.', call: /** @type {any} */ (config.call) }),
    logFile,
    onReport: (kind, payload) => { reports.push({ kind, payload, received_ms: Date.now() }); },
  });
  const testPeer = {
    peer, reports, logFile,
    get page() { return peer.page; },
    logTail: () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').slice(-6).join(' | ') : ''),
  };
  opened.push(testPeer);
  await peer.open(url, config, { manual });
  return testPeer;
}
