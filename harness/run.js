// @ts-check
// One run, from start to teardown: network up, captures, signaling, two browsers, the call, schedules, stop, and
// teardown that always happens (errors, Ctrl-C, a crashed browser). The run directory is written as the run goes, so
// an interrupted run keeps what it recorded.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNetwork } from '../netem/index.js';
import { startSignalingServer } from '../signaling/server.js';
import { chromiumBinary, chromiumFlags, launchInNamespace } from './browser.js';
import { busyFraction, readCpuTimes } from './hostload.js';
import { RunRecorder } from './recorder.js';
import { validityChecks } from './validity.js';
import { collectVersions, gitCommit, hostInfo, rtclabVersion } from './versions.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const defaultClip = path.join(repoRoot, 'media', 'default.y4m');

/** Data-path addresses start with this; ICE candidates elsewhere must never carry media. */
const DATA_PREFIX = '10.0.';
/** Management addresses (signaling only) start with this; Chrome must not resolve names there either. */
const MGMT_PREFIX = '10.99.';

const execFileAsync = promisify(execFile);

export class RunError extends Error {}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A 6-character run id: short enough for interface names, unique enough for concurrent runs. */
export function newRunId() {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let id = '';
  for (let i = 0; i < 6; i++) id += alphabet[Math.floor(Math.random() * alphabet.length)];
  return id;
}

/**
 * @param {{
 *   scenario: any, scenarioFile: string, runDir: string, id?: string,
 *   signal?: AbortSignal,
 *   onProgress?: (p: {phase: string, elapsed_s?: number, remaining_s?: number, send_kbps?: number|null,
 *                     recv_kbps?: number|null, rtt_ms?: number|null, fps?: number|null, height?: number|null}) => void,
 *   log?: (line: string) => void,
 * }} o
 * @returns {Promise<any>} the final manifest
 */
export async function runCall({ scenario, scenarioFile, runDir, id = newRunId(), signal, onProgress = () => {}, log = () => {} }) {
  const recorder = new RunRecorder(runDir);
  const startedAt = Date.now() / 1000;
  recorder.writeManifest({
    rtclab_version: rtclabVersion(), git_commit: gitCommit(), id, status: 'running', error: null,
    scenario, scenario_file: scenarioFile, backend: null, topology: null,
    versions: null, host: hostInfo(),
    timings: { process_start: performance.timeOrigin / 1000, started: startedAt, network_up: null, browsers_launched: null, call_connected: null,
      media_flowing: null, call_start: null, call_end: null, ended: null },
    captures: null, validity: null,
  });
  const timings = recorder.manifest.timings;
  recorder.event('run_start', { id, scenario: scenario.name });
  const versions = collectVersions(); // read while the network comes up

  /** Cleanup steps, undone in reverse order whatever happens. @type {{name: string, fn: () => Promise<any>}[]} */
  const teardown = [];
  /** The first fatal problem seen while the call runs (a browser or the bottleneck died). @type {string | null} */
  let fatal = null;
  let stopping = false;
  let net = null;
  let capturesRunning = false;
  /** @type {Record<string, number>} */
  const framesDecoded = {};
  let connectSeconds = null;

  const abortIfAsked = () => {
    if (signal?.aborted) throw new RunError(`interrupted by ${signal.reason ?? 'a signal'}`);
    if (fatal) throw new RunError(fatal);
  };

  try {
    // Prerequisites first: a missing clip or browser must fail before anything is set up.
    const clip = scenario.call.video_clip ?? defaultClip;
    if (!fs.existsSync(clip)) {
      throw new RunError(`video clip ${clip} does not exist` +
        (scenario.call.video_clip ? ' (call.video_clip in the scenario)' : '; run scripts/setup.sh to generate it'));
    }
    chromiumBinary();

    onProgress({ phase: 'network' });
    net = await createNetwork({ id, scenario, runDir, log });
    const network = net;
    teardown.push({ name: 'network', fn: () => network.down() });
    timings.network_up = Date.now() / 1000;
    recorder.writeManifest({ versions: await versions, backend: net.info.backend, topology: {
      namespaces: net.info.namespaces, data: net.info.data, interfaces: net.info.interfaces, mgmt: net.info.mgmt } });
    recorder.event('network_up', { backend: net.info.backend });
    // Chrome's ICE policy (default_public_and_private_interfaces) gathers candidates only on the interface of the
    // default route: point it at the data path. r has no default route, so nothing leaves the lab.
    for (const [side, gateway] of [['a', net.info.data.r_a], ['b', net.info.data.r_b]]) {
      await execFileAsync('ip', ['-n', net.info.namespaces[side], 'route', 'replace', 'default', 'via', gateway]);
    }
    // Cross-traffic starts/stops and capacity changes, as netem saw them.
    net.on('event', (/** @type {any} */ { event, ...fields }) => recorder.event(event ?? 'netem', fields));
    net.on('bottleneck-exit', (/** @type {any} */ info) => {
      if (stopping) return;
      fatal ??= `the userspace bottleneck (${info?.direction ?? 'a direction'}) exited during the run` +
        (info?.stderr ? `: ${String(info.stderr).trim().split('\n').pop()}` : '');
      recorder.event('bottleneck_exit', { info });
    });
    abortIfAsked();

    const server = await startSignalingServer({ host: '0.0.0.0', port: 0,
      log: (/** @type {any} */ entry) => recorder.event('signaling', { entry }) });
    teardown.push({ name: 'signaling server', fn: () => server.close() });

    if (scenario.capture.enabled) {
      await net.startCaptures({ snaplen: scenario.capture.snaplen });
      capturesRunning = true;
      teardown.push({ name: 'captures', fn: async () => { if (capturesRunning) { capturesRunning = false; await network.stopCaptures(); } } });
      recorder.event('captures_started');
    }
    abortIfAsked();

    onProgress({ phase: 'browsers' });
    // Both browsers start at once: launching is most of the call's setup time.
    const openSide = async (/** @type {'a'|'b'} */ side, /** @type {string} */ role) => {
      const origin = `http://${network.info.mgmt[side].root}:${server.port}`;
      const browserLog = path.join(runDir, `browser-${side}.log`);
      const { browser, cleanupProfile } = await launchInNamespace({
        nsExec: network.nsExec(side), stderrFile: browserLog,
        flags: chromiumFlags({ clip, origin, mgmtPrefix: MGMT_PREFIX, call: scenario.call }),
      });
      teardown.push({ name: `browser ${side}`, fn: async () => { await closeBrowser(browser); cleanupProfile(); } });
      browser.on('disconnected', () => {
        if (!stopping) fatal ??= `browser ${side} (Chromium) exited during the run; see ${browserLog}`;
      });
      const page = await browser.newPage();
      page.on('console', (/** @type {any} */ msg) => fs.appendFileSync(browserLog, `[console.${msg.type()}] ${msg.text()}\n`));
      page.on('pageerror', (/** @type {any} */ err) => fs.appendFileSync(browserLog, `[pageerror] ${err.message}\n`));
      await page.exposeFunction('rtclabReport', (/** @type {string} */ kind, /** @type {any} */ payload) => {
        if (kind === 'stats') {
          recorder.stats(side, payload);
          framesDecoded[side] = recorder.latest(side)?.frames_decoded ?? 0;
        } else if (kind === 'selected-pair') recorder.selectedPair(side, payload);
        else recorder.event(`page_${kind}`, { side, page: payload });
        if (kind === 'state' && payload?.event === 'media-flowing') framesDecoded[side] = Math.max(framesDecoded[side] ?? 0, payload.framesDecoded);
      });
      const config = { room: id, role, call: scenario.call, getstats_interval_ms: scenario.getstats.interval_ms,
        candidate_prefix: DATA_PREFIX };
      await page.evaluateOnNewDocument((/** @type {any} */ c) => { /** @type {any} */ (window).rtclabConfig = c; }, config);
      await page.goto(`${origin}/`, { waitUntil: 'load', timeout: 30_000 });
      recorder.event('page_loaded', { side, url: `${origin}/` });
    };
    await Promise.all([openSide('a', 'caller'), openSide('b', 'callee')]);
    timings.browsers_launched = Date.now() / 1000;
    recorder.writeManifest();

    // Connected = video decoded on both sides: media really flows through the bottleneck both ways.
    onProgress({ phase: 'connecting' });
    const connectDeadline = Date.now() + scenario.call.connect_timeout_s * 1000;
    while (!((framesDecoded.a ?? 0) > 0 && (framesDecoded.b ?? 0) > 0)) {
      abortIfAsked();
      if (Date.now() > connectDeadline) {
        throw new RunError(`the call did not connect within ${scenario.call.connect_timeout_s} s ` +
          `(video frames decoded: a ${framesDecoded.a ?? 0}, b ${framesDecoded.b ?? 0}); see browser-a.log, browser-b.log, events.jsonl`);
      }
      await sleep(10);
    }
    timings.media_flowing = timings.call_connected = Date.now() / 1000;
    connectSeconds = timings.media_flowing - timings.browsers_launched;
    recorder.event('call_connected', { seconds_after_pages_loaded: connectSeconds });

    // t = 0 of the scenario's schedules.
    timings.call_start = Date.now() / 1000;
    const cpuAtStart = readCpuTimes();
    recorder.writeManifest();
    await net.startSchedules(timings.call_start * 1000);
    recorder.event('call_start');

    const durationMs = scenario.duration_s * 1000;
    const callStartMs = timings.call_start * 1000;
    while (Date.now() - callStartMs < durationMs) {
      abortIfAsked();
      await sleep(Math.min(1000, durationMs - (Date.now() - callStartMs)));
      const a = recorder.latest('a');
      const b = recorder.latest('b');
      const elapsed_s = (Date.now() - callStartMs) / 1000;
      onProgress({ phase: 'call', elapsed_s, remaining_s: Math.max(0, scenario.duration_s - elapsed_s),
        send_kbps: kbps(recorder.rateBps('a', 'bytes_sent')), recv_kbps: kbps(recorder.rateBps('b', 'bytes_received')),
        rtt_ms: a?.rtt_ms ?? null, fps: b?.fps_received ?? null, height: b?.frame_height_received ?? null });
    }
    abortIfAsked();
    timings.call_end = Date.now() / 1000;
    const hostCpuBusy = busyFraction(cpuAtStart, readCpuTimes());
    recorder.event('call_end', { host_cpu_busy_fraction: hostCpuBusy });
    onProgress({ phase: 'stopping' });

    // Browsers first, so the captures hold the call's last packets; then the captures and their counts.
    stopping = true;
    const bottleneckAlive = net.info.backend?.used === 'userspace' ? net.bottleneckAlive() : null;
    for (const step of teardown.filter((s) => s.name.startsWith('browser'))) await step.fn();
    let captures = null;
    if (capturesRunning) {
      capturesRunning = false;
      captures = await net.stopCaptures();
    }
    const validity = validityChecks({
      dataPrefix: DATA_PREFIX, selectedPairs: recorder.selectedPairs, framesDecoded,
      connected: true, connectTimeoutS: scenario.call.connect_timeout_s, connectSeconds,
      cpuLimited: recorder.cpuLimitedCount, samples: recorder.sampleCount,
      bottleneckAlive, captures, captureEnabled: scenario.capture.enabled, hostCpuBusy,
    });
    recorder.writeManifest({ status: 'complete', captures, host_cpu_busy_fraction: hostCpuBusy, validity });
  } catch (err) {
    stopping = true;
    const message = err instanceof RunError ? err.message : `${/** @type {Error} */ (err).message}`;
    recorder.event('run_error', { message, stack: /** @type {Error} */ (err).stack });
    recorder.writeManifest({ status: 'incomplete', error: message,
      validity: { valid: false, checks: [{ name: 'run_completed', ok: false, detail: message }] } });
  } finally {
    stopping = true;
    onProgress({ phase: 'teardown' });
    for (const step of teardown.reverse()) {
      try {
        await step.fn();
      } catch (err) {
        recorder.event('teardown_error', { step: step.name, message: /** @type {Error} */ (err).message });
        log(`teardown of ${step.name} failed: ${/** @type {Error} */ (err).message}`);
      }
    }
    recorder.manifest.versions ??= await versions;
    timings.ended = Date.now() / 1000;
    recorder.event('run_end', { status: recorder.manifest.status });
    recorder.writeManifest();
    recorder.close();
  }
  return recorder.manifest;
}

/** @param {number | null} bps */
const kbps = (bps) => (bps == null ? null : bps / 1000);

/** Closes a browser, and kills it if it does not close in time. @param {import('puppeteer-core').Browser} browser */
async function closeBrowser(browser) {
  const proc = browser.process();
  if (!browser.connected) { proc?.kill('SIGKILL'); return; }
  const closed = browser.close().then(() => true, () => false);
  const inTime = await Promise.race([closed, sleep(5000).then(() => false)]);
  if (!inTime) proc?.kill('SIGKILL');
}
