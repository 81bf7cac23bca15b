// @ts-check
// One run, from start to teardown, in named stages: prerequisites, network, signaling, captures, browsers, media
// flowing, the call itself, stopping, and teardown that always happens (errors, Ctrl-C, a crashed browser or
// bottleneck). The run directory is written as the run goes, so an interrupted run keeps what it recorded.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNetwork, claimRun, releaseRun, newId, DATA_PREFIX, MGMT_PREFIX } from '../netem/index.js';
import { startSignalingServer } from '../signaling/server.js';
import { chromiumBinary, chromiumFlags } from './browser.js';
import { Peer } from './peer.js';
import { busyFraction, cpuSetBusyFraction, pinnedCpus, readCpuTimes, readPerCpuTimes } from './hostload.js';
import { RunRecorder, collectEventLogs } from './recorder.js';
import { TeardownStack } from './teardown.js';
import { validityChecks } from './validity.js';
import { collectVersions, gitCommit, hostInfo, rtclabVersion } from './versions.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const defaultClip = path.join(repoRoot, 'media', 'default.y4m');

/** The run directory's format (docs/run-directory.md); the analyzer refuses a newer one than it knows. */
export const RUN_FORMAT_VERSION = 2;

export class RunError extends Error {}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @typedef {{phase: string, elapsed_s?: number, remaining_s?: number, send_kbps?: number|null, recv_kbps?: number|null,
 *   rtt_ms?: number|null, fps?: number|null, height?: number|null}} Progress
 * @typedef {{ scenario: any, scenarioFile: string, runDir: string, id?: string, signal?: AbortSignal,
 *   onProgress?: (p: Progress) => void, log?: (line: string) => void }} RunOptions
 *   scenario: a normalised scenario (scenarios/model.js)
 */

/**
 * Places one call and records it in runDir.
 * @param {RunOptions} o
 * @returns {Promise<any>} the final manifest
 */
export async function runCall(o) {
  return new CallRun(o).run();
}

class CallRun {
  /** @param {RunOptions} o */
  constructor({ scenario, scenarioFile, runDir, id = newId(), signal, onProgress = () => {}, log = () => {} }) {
    this.scenario = scenario;
    this.scenarioFile = scenarioFile;
    this.runDir = runDir;
    this.id = id;
    this.signal = signal;
    this.onProgress = onProgress;
    this.log = log;
    this.recorder = new RunRecorder(runDir, { onWriteError: (message) => this.failWith(message) });
    this.teardown = new TeardownStack();
    /** The first fatal problem seen while the call runs (a browser or the bottleneck died). @type {string | null} */
    this.fatal = null;
    /** Set once the run itself closes things: exits after that are expected, not failures. */
    this.stopping = false;
    /** @type {import('../netem/index.js').Network | null} */
    this.net = null;
    /** @type {Awaited<ReturnType<typeof startSignalingServer>> | null} */
    this.server = null;
    this.capturesRunning = false;
    /** Video frames decoded so far, per side (from the page's reports). @type {Record<string, number>} */
    this.framesDecoded = {};
    /** @type {number | null} seconds from the pages loaded to media flowing both ways */
    this.connectSeconds = null;
    this.versions = collectVersions(); // read while the network comes up
    /** The signaling room: unguessable, so that nobody who finds the server's port can join the call. */
    this.room = `${this.id}-${randomBytes(12).toString('hex')}`;
    /** The CPUs this run is pinned to (a study's --parallel), null when it may use them all. */
    this.cpuSet = pinnedCpus();
    /** @type {number | null} share of the pinned CPUs' time that was busy during the call */
    this.cpuSetBusy = null;
  }

  get timings() {
    return this.recorder.manifest.timings;
  }

  async run() {
    this.writeFirstManifest();
    try {
      this.checkPrerequisites();
      await this.bringUpNetwork();
      await this.startSignaling();
      await this.startCaptures();
      await this.openBrowsers();
      await this.waitForMedia();
      const hostCpuBusy = await this.playCall();
      await this.finish(hostCpuBusy);
    } catch (err) {
      this.recordFailure(/** @type {Error} */ (err));
    } finally {
      await this.tearDown();
    }
    return this.recorder.manifest;
  }

  writeFirstManifest() {
    this.recorder.writeManifest({
      format_version: RUN_FORMAT_VERSION, rtclab_version: rtclabVersion(), git_commit: gitCommit(), id: this.id,
      status: 'running', error: null, scenario: this.scenario, scenario_file: this.scenarioFile, backend: null,
      topology: null, versions: null, host: hostInfo(), cpu_set: this.cpuSet,
      timings: { process_start: performance.timeOrigin / 1000, started: Date.now() / 1000, network_up: null,
        browsers_launched: null, call_connected: null, media_flowing: null, call_start: null, call_end: null, ended: null },
      captures: null, validity: null,
    });
    this.recorder.event('run_start', { id: this.id, scenario: this.scenario.name });
    // From here on netem's clean finds the run even if this process is killed before its network exists.
    claimRun(this.id, this.runDir);
    this.teardown.push('run record', async () => releaseRun(this.id));
  }

  /** Stops the run at the next stage boundary when it was interrupted or something it depends on died. */
  checkStillRunning() {
    if (this.signal?.aborted) throw new RunError(`interrupted by ${this.signal.reason ?? 'a signal'}`);
    if (this.fatal) throw new RunError(this.fatal);
  }

  /** @param {string} message */
  failWith(message) {
    if (!this.stopping) this.fatal ??= message;
  }

  /** A missing clip or browser fails before anything is set up. */
  checkPrerequisites() {
    const chosen = this.scenario.call.video_clip;
    this.clip = chosen ?? defaultClip;
    if (!fs.existsSync(this.clip)) {
      throw new RunError(`video clip ${this.clip} does not exist` +
        (chosen ? ' (call.video_clip in the scenario)' : '; run scripts/setup.sh to generate it'));
    }
    chromiumBinary();
  }

  async bringUpNetwork() {
    this.onProgress({ phase: 'network' });
    const net = await createNetwork({ id: this.id, scenario: this.scenario, runDir: this.runDir, log: this.log });
    this.net = net;
    this.teardown.push('network', () => net.down());
    this.timings.network_up = Date.now() / 1000;
    this.recorder.writeManifest({ versions: await this.versions, backend: net.info.backend, topology: {
      namespaces: net.info.namespaces, data: net.info.data, interfaces: net.info.interfaces, mgmt: net.info.mgmt } });
    this.recorder.event('network_up', { backend: net.info.backend });
    // Capacity changes, cross traffic, a bottleneck that exited: as netem's backends reported them.
    net.on('event', (/** @type {any} */ { event, ...fields }) => this.recorder.event(event, fields));
    net.on('failure', (/** @type {{component: string, message: string}} */ f) => this.failWith(f.message));
    this.checkStillRunning();
  }

  /** On the run's management addresses only, for the run's two browsers only. */
  async startSignaling() {
    const mgmt = /** @type {import('../netem/index.js').Network} */ (this.net).info.mgmt;
    const server = await startSignalingServer({ hosts: [mgmt.a.root, mgmt.b.root], port: 0,
      allowedClients: [mgmt.a.host, mgmt.b.host],
      log: (/** @type {any} */ entry) => this.recorder.event('signaling', { entry }) });
    this.server = server;
    this.teardown.push('signaling server', () => server.close());
  }

  async startCaptures() {
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    if (!this.scenario.capture.enabled) return;
    await net.startCaptures({ snaplen: this.scenario.capture.snaplen });
    this.capturesRunning = true;
    this.teardown.push('captures', () => this.stopCaptures());
    this.recorder.event('captures_started');
    this.checkStillRunning();
  }

  /** @returns {Promise<any>} the captures' packet and drop counts, or null when they were not running */
  async stopCaptures() {
    if (!this.capturesRunning) return null;
    this.capturesRunning = false;
    return /** @type {import('../netem/index.js').Network} */ (this.net).stopCaptures();
  }

  /** Both browsers start at once: launching is most of the call's setup time. */
  async openBrowsers() {
    this.onProgress({ phase: 'browsers' });
    await Promise.all([this.openPeer('a', 'caller'), this.openPeer('b', 'callee')]);
    this.timings.browsers_launched = Date.now() / 1000;
    this.recorder.writeManifest();
  }

  /**
   * One browser in its host's namespace, with the page loaded and its reports going to the recorder.
   * @param {'a' | 'b'} side @param {'caller' | 'callee'} role
   */
  async openPeer(side, role) {
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    const origin = `http://${net.info.mgmt[side].root}:${this.server?.port}`;
    const logFile = path.join(this.runDir, `browser-${side}.log`);
    const peer = new Peer({
      name: side, nsExec: net.nsExec(side), logFile,
      flags: chromiumFlags({ clip: /** @type {string} */ (this.clip), origin, mgmtPrefix: MGMT_PREFIX, call: this.scenario.call,
        eventLogDir: this.eventLogDir(side) }),
      onReport: (kind, payload) => this.pageReport(side, kind, payload),
      onExit: (reason) => this.failWith(`browser ${side} (Chromium) exited during the run: ${reason}; see ${logFile}`),
    });
    this.teardown.push(`browser ${side}`, () => peer.close());
    await peer.open(`${origin}/`, { room: this.room, role, call: this.scenario.call,
      getstats_interval_ms: this.scenario.getstats.interval_ms, candidate_prefix: DATA_PREFIX });
    this.recorder.event('page_loaded', { side, url: `${origin}/` });
  }

  /** What a page reports (docs/client.md): stats samples, the selected candidate pair, state changes. @param {string} side @param {string} kind @param {any} payload */
  pageReport(side, kind, payload) {
    if (kind === 'stats') {
      this.recorder.stats(side, payload);
      this.framesDecoded[side] = this.recorder.latest(side)?.frames_decoded ?? 0;
    } else if (kind === 'selected-pair') {
      this.recorder.selectedPair(side, payload);
    } else {
      this.recorder.event(`page_${kind}`, { side, page: payload });
    }
    if (kind === 'state' && payload?.event === 'media-flowing') {
      this.framesDecoded[side] = Math.max(this.framesDecoded[side] ?? 0, payload.framesDecoded);
    }
  }

  /** Connected = video decoded on both sides: media really flows through the bottleneck both ways. */
  async waitForMedia() {
    this.onProgress({ phase: 'connecting' });
    const timeout_s = this.scenario.call.connect_timeout_s;
    const deadline = Date.now() + timeout_s * 1000;
    while (!((this.framesDecoded.a ?? 0) > 0 && (this.framesDecoded.b ?? 0) > 0)) {
      this.checkStillRunning();
      if (Date.now() > deadline) {
        throw new RunError(`the call did not connect within ${timeout_s} s (video frames decoded: a ${this.framesDecoded.a ?? 0}, ` +
          `b ${this.framesDecoded.b ?? 0}); see browser-a.log, browser-b.log, events.jsonl`);
      }
      await sleep(10);
    }
    this.timings.media_flowing = this.timings.call_connected = Date.now() / 1000;
    this.connectSeconds = this.timings.media_flowing - this.timings.browsers_launched;
    this.recorder.event('call_connected', { seconds_after_pages_loaded: this.connectSeconds });
  }

  /**
   * The call itself: schedules start (t = 0 of the scenario), then the call runs for its duration with a progress
   * line every second.
   * @returns {Promise<number>} the share of the host's CPU time that was busy during the call
   */
  async playCall() {
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    this.timings.call_start = Date.now() / 1000;
    const cpuAtStart = readCpuTimes();
    const cpuSetAtStart = this.cpuSet && readPerCpuTimes();
    this.recorder.writeManifest();
    await net.startSchedules(this.timings.call_start * 1000);
    this.recorder.event('call_start');

    const duration_ms = this.scenario.duration_s * 1000;
    const start_ms = this.timings.call_start * 1000;
    while (Date.now() - start_ms < duration_ms) {
      this.checkStillRunning();
      await sleep(Math.min(1000, duration_ms - (Date.now() - start_ms)));
      this.reportProgress((Date.now() - start_ms) / 1000);
    }
    this.checkStillRunning();
    this.timings.call_end = Date.now() / 1000;
    const hostCpuBusy = busyFraction(cpuAtStart, readCpuTimes());
    if (this.cpuSet && cpuSetAtStart) this.cpuSetBusy = cpuSetBusyFraction(cpuSetAtStart, readPerCpuTimes(), this.cpuSet);
    this.recorder.event('call_end', { host_cpu_busy_fraction: hostCpuBusy, cpu_set_busy_fraction: this.cpuSetBusy });
    return hostCpuBusy;
  }

  /** @param {number} elapsed_s */
  reportProgress(elapsed_s) {
    const a = this.recorder.latest('a');
    const b = this.recorder.latest('b');
    this.onProgress({ phase: 'call', elapsed_s, remaining_s: Math.max(0, this.scenario.duration_s - elapsed_s),
      send_kbps: kbps(this.recorder.rateBps('a', 'bytes_sent')), recv_kbps: kbps(this.recorder.rateBps('b', 'bytes_received')),
      rtt_ms: a?.rtt_ms ?? null, fps: b?.fps_received ?? null, height: b?.frame_height_received ?? null });
  }

  /**
   * Where a side's browser writes its RTC event logs (created here), or null when the scenario does not record them:
   * a hidden directory of the run directory, emptied into it by collectEventLogs() once the browser is closed.
   * @param {string} side
   */
  eventLogDir(side) {
    if (!this.scenario.call.event_log) return null;
    const dir = path.join(this.runDir, `.eventlog-${side}`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Moves both browsers' event logs into the run directory (closed browsers only: Chrome writes its last piece when
   * it closes) and names them in the manifest. Safe to call again: a second call finds nothing new.
   * @returns {Record<string, import('./recorder.js').EventLogFile[]> | null} null when the scenario does not record them
   */
  collectEventLogs() {
    if (!this.scenario.call.event_log) return null;
    const logs = /** @type {Record<string, import('./recorder.js').EventLogFile[]>} */ (this.recorder.manifest.event_logs ?? {});
    for (const side of ['a', 'b']) {
      try {
        logs[side] = [...(logs[side] ?? []), ...collectEventLogs(this.runDir, side, path.join(this.runDir, `.eventlog-${side}`))];
      } catch (err) {
        this.recorder.event('event_log_error', { side, message: /** @type {Error} */ (err).message });
      }
    }
    this.recorder.writeManifest({ event_logs: logs });
    return logs;
  }

  /**
   * Browsers first, so the captures hold the call's last packets; then the captures and their counts, then the
   * checks that decide whether the run measured what it claims to.
   * @param {number} hostCpuBusy
   */
  async finish(hostCpuBusy) {
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    this.onProgress({ phase: 'stopping' });
    this.stopping = true;
    const bottleneckAlive = net.info.backend.used === 'userspace' ? net.bottleneckAlive() : null;
    await this.teardown.undo('browser', (name, err) => this.teardownFailed(name, err));
    const eventLogs = this.collectEventLogs();
    const captures = await this.stopCaptures();
    const validity = validityChecks({
      dataPrefix: DATA_PREFIX, selectedPairs: this.recorder.selectedPairs, framesDecoded: this.framesDecoded,
      connectTimeoutS: this.scenario.call.connect_timeout_s, connectSeconds: this.connectSeconds,
      cpuLimited: this.recorder.cpuLimitedCount, samples: this.recorder.sampleCount,
      bottleneckAlive, captures, captureEnabled: this.scenario.capture.enabled, hostCpuBusy,
      cpuSet: this.cpuSet ?? undefined, cpuSetBusy: this.cpuSetBusy ?? undefined, eventLogs,
    });
    this.recorder.writeManifest({ status: 'complete', captures, host_cpu_busy_fraction: hostCpuBusy,
      cpu_set_busy_fraction: this.cpuSetBusy, validity });
  }

  /** @param {Error} err */
  recordFailure(err) {
    this.stopping = true;
    const message = err.message;
    this.recorder.event('run_error', { message, stack: err.stack });
    this.recorder.writeManifest({ status: 'incomplete', error: message,
      validity: { valid: false, checks: [{ name: 'run_completed', ok: false, detail: message }] } });
  }

  /** @param {string} name @param {Error} err */
  teardownFailed(name, err) {
    this.recorder.event('teardown_error', { step: name, message: err.message });
    this.log(`teardown of ${name} failed: ${err.message}`);
  }

  async tearDown() {
    this.stopping = true;
    this.onProgress({ phase: 'teardown' });
    await this.teardown.undoAll((name, err) => this.teardownFailed(name, err));
    this.collectEventLogs(); // an interrupted run keeps the logs its browsers wrote
    this.recorder.manifest.versions ??= await this.versions;
    this.timings.ended = Date.now() / 1000;
    this.recorder.event('run_end', { status: this.recorder.manifest.status });
    this.recorder.writeManifest();
    this.recorder.close();
  }
}

/** @param {number | null} bps */
const kbps = (bps) => (bps == null ? null : bps / 1000);
