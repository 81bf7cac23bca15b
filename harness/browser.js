// @ts-check
// Debian Chromium for a call: which binary, which flags, and how one instance is started (inside a network namespace
// or on the host) and stopped. harness/peer.js drives the page on top of this; runs and client tests both use it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NS_RE } from '../netem/names.js';
import { PROFILE_PREFIX } from './leftovers.js';

/** Debian's real binary (/usr/bin/chromium is a shell wrapper around it); RTCLAB_CHROMIUM names another one. */
export function chromiumBinary() {
  const chosen = process.env.RTCLAB_CHROMIUM;
  if (chosen) {
    if (!fs.existsSync(chosen)) throw new Error(`Chromium not found at ${chosen} (RTCLAB_CHROMIUM)`);
    return chosen;
  }
  const candidates = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/google-chrome'];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(`Chromium not found (looked for ${candidates.join(', ')}); run scripts/setup.sh ` +
      'or set RTCLAB_CHROMIUM to a Chrome/Chromium binary');
  }
  return found;
}

/**
 * The field trials `call.l4s` turns on (docs/chrome-ecn.md): RFC 8888 congestion-control feedback, offered in the SDP
 * (a=rtcp-fb:* ack ccfb), which also makes Chrome send its media ECT(1) and read the ECN bits it receives; and the
 * SCReAM v2 controller, which reacts to the CE marks that feedback reports.
 */
export const L4S_FIELD_TRIALS = {
  'WebRTC-RFC8888CongestionControlFeedback': 'Enabled,offer:true',
  'WebRTC-Bwe-ScreamV2': 'Enabled',
};

/**
 * The --force-fieldtrials value of a call: its field_trials, plus the L4S trials when call.l4s is on. Throws when
 * field_trials names an L4S trial itself (which of two groups Chrome would take is not ours to guess).
 * @param {{ field_trials: string, l4s?: boolean }} call
 */
export function fieldTrials(call) {
  if (!call.l4s) return call.field_trials;
  const named = new Set(call.field_trials.split('/').filter((_, i) => i % 2 === 0));
  const clash = Object.keys(L4S_FIELD_TRIALS).filter((t) => named.has(t));
  if (clash.length) {
    throw new Error(`call.l4s: true sets ${clash.join(' and ')}; call.field_trials must not name ${clash.length > 1 ? 'them' : 'it'} too`);
  }
  const l4s = Object.entries(L4S_FIELD_TRIALS).map(([trial, group]) => `${trial}/${group}/`).join('');
  const own = call.field_trials && !call.field_trials.endsWith('/') ? `${call.field_trials}/` : call.field_trials;
  return own + l4s;
}

/**
 * The command-line flags of one call browser: fake camera from the clip, no background traffic, no DNS, and ICE
 * candidates on every interface so media cannot silently move to the management link.
 * @param {{ clip: string, origin: string, mgmtPrefix: string, call: { field_trials: string, l4s?: boolean, chrome_flags: string[] },
 *   eventLogDir?: string | null }} o
 *   origin: the page's origin (treated as secure, else navigator.mediaDevices is undefined); mgmtPrefix: names are
 *   never resolved, except addresses starting with it; call: the scenario's call object (complete); eventLogDir: where
 *   Chrome writes the RTC event log of each peer connection (event_log_<date>_<time>_<renderer>_<pc>.log), if at all
 */
export function chromiumFlags({ clip, origin, mgmtPrefix, call, eventLogDir = null }) {
  const flags = [
    '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
    '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
    `--use-file-for-fake-video-capture=${clip}`,
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    '--disable-quic', '--autoplay-policy=no-user-gesture-required',
    `--unsafely-treat-insecure-origin-as-secure=${origin}`,
    `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE ${mgmtPrefix}*`,
    '--webrtc-ip-handling-policy=default_public_and_private_interfaces',
    // A hidden headless page must not be throttled: timers drive getStats and the encoder.
    '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
    '--disable-backgrounding-occluded-windows',
  ];
  // Local event logging: starts with every peer connection, no chrome://webrtc-internals needed (docs/eventlog.md).
  if (eventLogDir) flags.push(`--webrtc-event-logging=${eventLogDir}`);
  const trials = fieldTrials(call);
  if (trials) flags.push(`--force-fieldtrials=${trials}`);
  flags.push(...call.chrome_flags);
  return flags;
}

/** How long a browser gets to close before it is killed. */
const CLOSE_TIMEOUT_MS = 5000;

/** @param {string} arg */
const shellQuote = (arg) => `'${arg.replaceAll("'", "'\\''")}'`;

/**
 * Starts one headless Chromium with a fresh profile, driven over a pipe (in a namespace its DevTools websocket would
 * listen on the namespace's own loopback, out of the harness's reach).
 * @param {{ nsExec?: string[], flags: string[], stderrFile: string }} o
 *   nsExec: command prefix that enters a network namespace (['ip', 'netns', 'exec', NS]); empty: the host's network.
 *   stderrFile: Chromium's stderr is appended to it.
 * @returns {Promise<{ browser: import('puppeteer-core').Browser, profileDir: string, close: () => Promise<void> }>}
 *   close(): closes the browser, kills it (and its child processes) if it does not close within 5 s, then removes the
 *   profile; safe to call more than once and after the browser died.
 */
export async function launchChromium({ nsExec = [], flags, stderrFile }) {
  const binary = chromiumBinary();
  // In a run's namespace the profile is named after the run (rtclab-chromium-<id>-<host>-...), so that the run's
  // teardown and `npm run clean` find it again after a harness that was killed (leftovers.js).
  const inRun = nsExec.map((a) => NS_RE.exec(a)).find(Boolean);
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), inRun ? `${PROFILE_PREFIX}${inRun[1]}-${inRun[2]}-` : PROFILE_PREFIX));
  // puppeteer takes one executable path: a two-line wrapper enters the namespace, sends stderr to the log and execs
  // Chromium (so the process puppeteer sees is Chromium itself).
  const wrapper = path.join(profileDir, 'chromium.sh');
  const command = [...nsExec, binary].map(shellQuote).join(' ');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${command} "$@" 2>>${shellQuote(stderrFile)}\n`, { mode: 0o755 });
  const removeProfile = () => fs.rmSync(profileDir, { recursive: true, force: true });
  // Loaded when first needed: it is the largest module of the harness, and a bad scenario never needs it.
  const { default: puppeteer } = await import('puppeteer-core');
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: wrapper,
      pipe: true,
      headless: true,
      userDataDir: path.join(profileDir, 'profile'),
      args: flags,
      protocolTimeout: 60_000,
      handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false, // the harness tears down itself
    });
  } catch (error) {
    removeProfile();
    throw error;
  }
  const launched = browser;
  /** @type {Promise<void> | null} */
  let closing = null;
  const close = () => (closing ??= closeOrKill(launched).finally(removeProfile));
  return { browser: launched, profileDir, close };
}

/**
 * Closes a browser, and kills its process group (puppeteer starts Chromium detached, in a group of its own, so the
 * renderers go too) if it does not close in time.
 * @param {import('puppeteer-core').Browser} browser
 */
async function closeOrKill(browser) {
  const proc = browser.process();
  const exited = new Promise((resolve) => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) resolve(undefined);
    else proc.once('exit', () => resolve(undefined));
  });
  const closedInTime = browser.connected
    ? await Promise.race([browser.close().then(() => true, () => false), sleep(CLOSE_TIMEOUT_MS).then(() => false)])
    : false;
  if (!closedInTime && proc?.pid) {
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  // The profile is removed only once Chromium no longer writes to it.
  await Promise.race([exited, sleep(CLOSE_TIMEOUT_MS)]);
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
