// @ts-check
// One run, from start to teardown, in named stages: prerequisites, network, signaling, captures, browsers, media
// flowing, the call itself, stopping, and teardown that always happens (errors, Ctrl-C, a crashed browser or
// bottleneck). The run directory is written as the run goes, so an interrupted run keeps what it recorded.
// A scenario with `calls: []` is a run without a call: no signaling server and no browsers; the network, captures
// and cross traffic run for duration_s from t = 0 as in a call run (docs/run-directory.md).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNetwork, claimRun, releaseRun, newId, DATA_PREFIX, MGMT_PREFIX } from '../netem/index.js';
import { removeProfiles } from './leftovers.js';
import { startSignalingServer } from '../signaling/server.js';
import { chromiumBinary, chromiumFlags } from './browser.js';
import { Peer } from './peer.js';
import { CpuAccounting } from './cpu-accounting.js';
import { CpuLoad, CPU_LOAD_LOG, findStressNg, stressNgVersion } from './cpu-load.js';
import { busyFraction, cpuSetBusyFraction, pinnedCpus, readCpuTimes, readPerCpuTimes } from './hostload.js';
import { RunRecorder } from './recorder.js';
import { clipInfo } from '../media/y4m.js';
import { isNamedClipFile, makeOnFirstUse } from '../media/clips.js';
import { TeardownStack } from './teardown.js';
import { validityChecks, runNotCompleted, stepsDue, crossTrafficDue } from './validity.js';
import { DSCP_MARKING, markCall, recordMarkCounters } from './call-marking.js';
import { schedulePauses } from './pauses.js';
import { applyCallDelays, delayReady, delayNotReady } from './call-delay.js';
import { askedDumps, callDumps } from './webrtc-internals.js';
import { recordRouteCounters, routeCall, routeNotReady, routeReady } from './call-route.js';
import { collectVersions, gitCommit, hostInfo, rtclabVersion } from './versions.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const defaultClip = path.join(repoRoot, 'media', 'default.y4m');

/**
 * The run directory's format (docs/run-directory.md); the analyzer refuses a newer one than it knows. 3: several
 * calls (manifest `calls`: each call's files, tracks with their SSRCs, selected pairs and DSCP marking).
 */
export const RUN_FORMAT_VERSION = 3;

export class RunError extends Error {}

/**
 * The receiving pages record every presented frame and read its stamp on every N-th (docs/client.md, "Frames");
 * RTCLAB_FRAMES_READ_EVERY=N samples the stamp reads, 0 records no frame at all.
 */
const FRAMES_READ_EVERY = process.env.RTCLAB_FRAMES_READ_EVERY === undefined ? 1 : Number(process.env.RTCLAB_FRAMES_READ_EVERY);

/**
 * The receiving pages send the whole picture of every N-th presented frame for picture quality (docs/metrics.md,
 * "quality"; frame-samples-<side>.i420.gz); RTCLAB_FRAMES_SAMPLE_EVERY=N, 0 sends none. The default, 30 (about one a
 * second at 30 fps), and what it costs: docs/harness.md, "A run's CPU".
 */
export const FRAMES_SAMPLE_EVERY_DEFAULT = 30;
const FRAMES_SAMPLE_EVERY = process.env.RTCLAB_FRAMES_SAMPLE_EVERY === undefined ? FRAMES_SAMPLE_EVERY_DEFAULT
  : Number(process.env.RTCLAB_FRAMES_SAMPLE_EVERY);

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @typedef {{phase: string, elapsed_s?: number, remaining_s?: number, send_kbps?: number|null, recv_kbps?: number|null,
 *   rtt_ms?: number|null, fps?: number|null, height?: number|null, calls?: number}} Progress
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

/**
 * One call of the scenario while the run goes: its browsers, what they reported, its files.
 * @typedef {{ call: any, index: number, room: string, files: { a: string, b: string },
 *   framesDecoded: { a: number, b: number }, pairs: { a: any, b: any }, tracks: { a: any[] | null, b: any[] | null },
 *   peers: { a: Peer | null, b: Peer | null }, marks: { a: any[], b: any[] }, marked: Set<string>,
 *   delay: { flow: any, in_force_t: number | null } | null, clips: Record<string, Record<string, any>>,
 *   route: import('./call-route.js').RoutedCall['route'], routing: boolean }} CallState
 *   clips: per sending side, the clip its camera played (clipOf), for the receiving side's frames file
 *   files: the key of each side's files (getstats-<key>.jsonl, browser-<key>.log): a, b for the first call (the
 *   names of a single-call run), <id>-a, <id>-b for the others
 */

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
    /** @type {CallState[]} */
    this.calls = scenario.calls.map((/** @type {any} */ call, /** @type {number} */ index) => ({
      call, index,
      // Unguessable, so that nobody who finds the server's port can join a call.
      room: `${id}-${call.id}-${randomBytes(12).toString('hex')}`,
      files: index === 0 ? { a: 'a', b: 'b' } : { a: `${call.id}-a`, b: `${call.id}-b` },
      framesDecoded: { a: 0, b: 0 }, pairs: { a: null, b: null }, tracks: { a: null, b: null },
      peers: { a: null, b: null }, marks: { a: [], b: [] }, marked: new Set(), delay: null, clips: {}, route: null, routing: false,
    }));
    /** Timers of calls joining and leaving during the run. @type {NodeJS.Timeout[]} */
    this.timers = [];
    /** @type {number | null} seconds from the pages loaded to media flowing both ways */
    this.connectSeconds = null;
    // Read while the network comes up. A run without a call names no browser version (none ran).
    this.versions = collectVersions({ browser: this.calls.length > 0 });
    /** Cross-traffic clients seen starting (their item numbers) and those that failed while the run measured. */
    this.crossTraffic = { started: /** @type {Set<number>} */ (new Set()), failed: /** @type {string[]} */ ([]) };
    /** The capacity and delay steps' events, as the backend reported them (the check schedule_applied). @type {any[]} */
    this.stepEvents = [];
    /** The CPUs this run is pinned to (a study's --parallel), null when it may use them all. */
    this.cpuSet = pinnedCpus();
    /** @type {number | null} share of the pinned CPUs' time that was busy during the call */
    this.cpuSetBusy = null;
    /** Every process of the run, sampled from the start to the end of the teardown (cpu.jsonl). */
    this.cpu = new CpuAccounting({ file: path.join(runDir, 'cpu.jsonl') });
    /** The scenario's cpu_load while it runs, null without one. @type {CpuLoad | null} */
    this.cpuLoad = null;
    /** Its CPU seconds at the call's start (playCall). @type {number | null} */
    this.cpuLoadAtStart = null;
  }

  get timings() {
    return this.recorder.manifest.timings;
  }

  async run() {
    this.writeFirstManifest();
    try {
      this.checkPrerequisites();
      await this.bringUpNetwork();
      await this.startCpuLoad();
      if (this.calls.length) await this.startSignaling();
      await this.startCaptures();
      if (this.calls.length) {
        await this.openBrowsers();
        await this.waitForMedia();
      }
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
      captures: null, validity: null, calls: this.callsManifest(), dscp_marking: DSCP_MARKING ? 'nftables' : 'off',
    });
    this.recorder.event('run_start', { id: this.id, scenario: this.scenario.name });
    this.cpu.start();
    // From here on netem's clean finds the run even if this process is killed before its network exists.
    claimRun(this.id, this.runDir);
    this.teardown.push('run record', async () => releaseRun(this.id));
    // A browser that closes removes its profile; this is for one that could not be closed.
    this.teardown.push('browser profiles', async () => removeProfiles(this.id));
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
    for (const c of this.calls) {
      const chosen = c.call.video_clip;
      const clip = chosen ?? defaultClip;
      makeOnFirstUse(clip);
      if (!fs.existsSync(clip)) {
        throw new RunError(`video clip ${clip} does not exist` + (chosen ? (this.calls.length > 1
          ? ` (video_clip of call ${c.call.id} in the scenario)` : ' (call.video_clip in the scenario)') : '')
          + (isNamedClipFile(clip) ? '; run scripts/setup.sh to generate it' : ''));
      }
    }
    if (this.calls.length) chromiumBinary();
    const load = this.scenario.cpu_load;
    if (load) {
      findStressNg();
      if (this.cpuSet && load.cores > this.cpuSet.length) {
        throw new RunError(`cpu_load.cores ${load.cores} is more than the ${this.cpuSet.length} CPU(s) this run is pinned to (${this.cpuSet.join(',')})`);
      }
    }
  }

  /** The manifest's `calls`: per call its files and what its browsers reported (docs/run-directory.md). */
  callsManifest() {
    return this.calls.map((c) => ({
      id: c.call.id, start_s: c.call.start_s, stop_s: c.call.stop_s, dscp: c.call.dscp,
      getstats: { a: `getstats-${c.files.a}.jsonl`, b: `getstats-${c.files.b}.jsonl` },
      browser_logs: { a: `browser-${c.files.a}.log`, b: `browser-${c.files.b}.log` },
      selected_pairs: c.pairs, tracks: c.tracks, dscp_marking: c.marks, delay_ms: c.call.delay_ms, delay: c.delay, webrtc_internals: callDumps(c),
      ...(this.scenario.network.hops.length ? { path: c.call.path, hop_route: c.route } : {}),
    }));
  }

  async bringUpNetwork() {
    this.onProgress({ phase: 'network' });
    // Interrupted while it sets up, the network stops between its steps and removes itself (netem/index.js).
    const net = await createNetwork({ id: this.id, scenario: this.scenario, runDir: this.runDir, log: this.log, signal: this.signal });
    this.net = net;
    this.teardown.push('network', () => net.down());
    this.timings.network_up = Date.now() / 1000;
    this.recorder.writeManifest({ versions: await this.versions, backend: net.info.backend, topology: {
      namespaces: net.info.namespaces, data: net.info.data, interfaces: net.info.interfaces, mgmt: net.info.mgmt,
      cross_traffic: net.info.cross_traffic } });
    this.recorder.event('network_up', { backend: net.info.backend });
    // Capacity changes, cross traffic, a bottleneck that exited: as netem's backends reported them.
    net.on('event', (/** @type {any} */ { event, ...fields }) => {
      this.recorder.event(event, fields);
      if (event === 'capacity_change' || event === 'delay_change') this.stepEvents.push({ event, ...fields });
      this.noteCrossTraffic(event, fields);
    });
    net.on('failure', (/** @type {{component: string, message: string}} */ f) => this.failWith(f.message));
    this.checkStillRunning();
  }

  /** For cross_traffic_ran: clients started, clients failed before the run stopped them. @param {string} event @param {any} fields */
  noteCrossTraffic(event, fields) {
    if (event === 'cross_traffic_started') this.crossTraffic.started.add(fields.n);
    if (event === 'cross_traffic_stopped' && fields.exit_code !== 0 && !this.stopping) {
      this.crossTraffic.failed.push(`${fields.tool} client ${fields.n} exited with ${fields.exit_code === null ? 'a signal' : `code ${fields.exit_code}`} (see ${fields.tool}-${fields.n}-client.log)`);
    }
  }

  /**
   * The scenario's cpu_load, once the network is up and before the browsers: stress-ng in the run's r namespace (the
   * CPU does not care, and netem's clean, which kills every process in a run's namespaces, then removes a load whose
   * harness was killed outright). Its end on its own while the run goes is a failure, like a bottleneck's.
   */
  async startCpuLoad() {
    const spec = this.scenario.cpu_load;
    if (!spec) return;
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    // Past any run's length, so that a load whose harness and clean both never came ends on its own.
    const connect_s = Math.max(0, ...this.calls.map((c) => c.call.connect_timeout_s));
    const load = new CpuLoad({ spec, logFile: path.join(this.runDir, CPU_LOAD_LOG), nsExec: net.nsExec('r'),
      timeoutS: this.scenario.duration_s + connect_s + 600, onExit: (message) => this.failWith(message) });
    this.cpuLoad = load;
    this.teardown.push('cpu load', () => load.stop());
    const workers = await load.start();
    this.recorder.writeManifest({ cpu_load: { asked: spec, workers: load.shape.workers, percent_per_worker: load.shape.percent,
      command: load.argv, version: stressNgVersion(), pid: load.pid, workers_seen: workers, measured: null,
      measured_missing: 'the call did not reach its end (the load is measured over the call)' } });
    this.recorder.event('cpu_load_started', { pid: load.pid, workers });
    this.checkStillRunning();
  }

  /**
   * What the load used over the call, into the manifest: its CPU seconds (stress-ng and its workers, from /proc) over
   * the call's wall seconds.
   */
  measureCpuLoad() {
    const load = this.cpuLoad;
    if (!load || this.cpuLoadAtStart === null) return;
    const call_s = /** @type {number} */ (this.timings.call_end) - /** @type {number} */ (this.timings.call_start);
    const cpu_s = load.cpuSeconds() - this.cpuLoadAtStart;
    const measured = { cpu_s: round4(cpu_s), call_s: round4(call_s), cores: round4(cpu_s / call_s) };
    const record = this.recorder.manifest.cpu_load;
    delete record.measured_missing;
    record.measured = measured;
    this.recorder.event('cpu_load_measured', measured);
  }

  /** On the run's management addresses only, for the run's browsers only (one room per call). */
  async startSignaling() {
    const mgmt = /** @type {import('../netem/index.js').Network} */ (this.net).info.mgmt;
    const server = await startSignalingServer({ hosts: [mgmt.a.root, mgmt.b.root], port: 0,
      allowedClients: [mgmt.a.host, mgmt.b.host],
      frameSamples: (key, meta, picture) => this.recorder.frameSample(key, meta, picture),
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

  /** Every browser starts at once: launching is most of a call's setup time. */
  async openBrowsers() {
    this.onProgress({ phase: 'browsers' });
    await Promise.all(this.calls.flatMap((c) => [this.openPeer(c, 'a', 'caller'), this.openPeer(c, 'b', 'callee')]));
    this.timings.browsers_launched = Date.now() / 1000;
    this.recorder.writeManifest();
  }

  /**
   * One browser of a call in its host's namespace (every caller in a, every callee in b), with the page loaded and
   * its reports going to the recorder.
   * @param {CallState} c @param {'a' | 'b'} side @param {'caller' | 'callee'} role
   */
  async openPeer(c, side, role) {
    const net = /** @type {import('../netem/index.js').Network} */ (this.net);
    const origin = `http://${net.info.mgmt[side].root}:${this.server?.port}`;
    const key = c.files[side];
    const logFile = path.join(this.runDir, `browser-${key}.log`);
    const peer = new Peer({
      name: key, nsExec: net.nsExec(side), logFile,
      // RTC event logs: the first call's browsers only (collectEventLogs knows sides a and b).
      flags: chromiumFlags({ clip: c.call.video_clip ?? defaultClip, origin, mgmtPrefix: MGMT_PREFIX, call: c.call,
        eventLogDir: c.index === 0 ? this.eventLogDir(side) : null }),
      onReport: (kind, payload) => this.pageReport(c, side, kind, payload),
      onLaunched: (pid) => this.cpu.nameBrowser(pid ?? undefined, key),
      onExit: (reason) => this.failWith(`browser ${key} (Chromium) exited during the run: ${reason}; see ${logFile}`),
      webrtcInternals: c.call.webrtc_internals ? path.join(this.runDir, `webrtc-internals-${key}.json.gz`) : null,
    });
    c.peers[side] = peer;
    this.teardown.push(`browser ${key}`, () => peer.close());
    await peer.open(`${origin}/`, { room: c.room, role, call: c.call,
      getstats_interval_ms: this.scenario.getstats.interval_ms, candidate_prefix: DATA_PREFIX,
      frames_read_every: FRAMES_READ_EVERY,
      frames_sample_every: FRAMES_READ_EVERY > 0 ? FRAMES_SAMPLE_EVERY : 0, frames_sample_path: `/frame-samples/${key}` });
    this.recorder.event('page_loaded', { side, call: c.call.id, url: `${origin}/` });
  }

  /**
   * The clip a call's cameras play, as the frames file names it: its path and what it holds (frames, size, stamp
   * version; media/y4m.js). A clip that cannot be read is named with the reason.
   * @param {any} call
   */
  clipOf(call) {
    const file = call.video_clip ?? defaultClip;
    try {
      return { path: file, ...clipInfo(file) };
    } catch (err) {
      return { path: file, error: /** @type {Error} */ (err).message };
    }
  }

  /**
   * What a page reports (docs/client.md): stats samples, the selected candidate pair, state changes.
   * @param {CallState} c @param {'a' | 'b'} side @param {string} kind @param {any} payload
   */
  pageReport(c, side, kind, payload) {
    const key = c.files[side];
    if (kind === 'stats') {
      this.recorder.stats(key, payload);
      c.framesDecoded[side] = Math.max(c.framesDecoded[side], this.recorder.latest(key)?.frames_decoded ?? 0);
    } else if (kind === 'frames') {
      // What the other side's camera played: the clip whose stamps this side reads.
      const other = side === 'a' ? 'b' : 'a';
      c.clips[other] ??= this.clipOf(c.call);
      this.recorder.frames(key, payload, c.clips[other]);
    } else if (kind === 'selected-pair') {
      this.recorder.selectedPair(key, payload);
      c.pairs[side] = { local: payload.local, remote: payload.remote };
      // Both sides: a side whose remote is peer-reflexive (address hidden) is marked once the other side's own
      // address is known.
      this.markCall(c, 'a');
      this.markCall(c, 'b');
      if (this.net) applyCallDelays(this.calls, { net: this.net, event: (name, fields) => this.recorder.event(name, fields), failWith: (m) => this.failWith(m) });
      if (this.net) routeCall(c, { net: this.net, event: (name, fields) => this.recorder.event(name, fields), failWith: (m) => this.failWith(m) });
    } else {
      this.recorder.event(`page_${kind}`, this.calls.length > 1 ? { side, call: c.call.id, page: payload } : { side, page: payload });
    }
    if (kind === 'state' && payload?.event === 'media-flowing') {
      c.framesDecoded[side] = Math.max(c.framesDecoded[side], payload.framesDecoded);
    }
    if (kind === 'state' && payload?.event === 'send-parameters') {
      c.tracks[side] = payload.tracks;
      this.markCall(c, side);
    }
  }

  /**
   * The call's DSCP on its packets leaving `side` (call-marking.js), unless RTCLAB_DSCP_MARKING=off.
   * @param {CallState} c @param {'a' | 'b'} side
   */
  markCall(c, side) {
    if (!this.net || !DSCP_MARKING) return;
    markCall(c, side, { net: this.net, event: (name, fields) => this.recorder.event(name, fields), failWith: (m) => this.failWith(m) });
  }

  /**
   * Connected = every call ready: video decoded on both sides for a call that sends from the start (media really
   * flows through the bottleneck both ways), a selected candidate pair on both sides for a call that joins later.
   */
  async waitForMedia() {
    this.onProgress({ phase: 'connecting' });
    const timeout_s = Math.max(...this.calls.map((c) => c.call.connect_timeout_s));
    const deadline = Date.now() + timeout_s * 1000;
    // direction forward: the caller receives no video, so the callee's decoded frames say that media flows.
    const chained = this.scenario.network.hops.length > 0; // a chain: its hops cross its media from t = 0
    const ready = (/** @type {CallState} */ c) => delayReady(c) && routeReady(c, chained) && (c.call.start_s === 0
      ? (c.call.direction === 'forward' || c.framesDecoded.a > 0) && c.framesDecoded.b > 0 : c.pairs.a !== null && c.pairs.b !== null);
    while (!this.calls.every(ready)) {
      this.checkStillRunning();
      if (Date.now() > deadline) {
        const late = this.calls.filter((c) => !ready(c)).map((c) => `${this.calls.length > 1 ? `call ${c.call.id}` : 'the call'} did not ` +
          `connect within ${timeout_s} s (video frames decoded: a ${c.framesDecoded.a}, b ${c.framesDecoded.b}${delayNotReady(c)}${routeNotReady(c, chained)}); ` +
          `see browser-${c.files.a}.log, browser-${c.files.b}.log, events.jsonl`);
        throw new RunError(late.join('; '));
      }
      await sleep(10);
    }
    this.timings.media_flowing = this.timings.call_connected = Date.now() / 1000;
    this.connectSeconds = this.timings.media_flowing - this.timings.browsers_launched;
    this.recorder.event('call_connected', { seconds_after_pages_loaded: this.connectSeconds });
    this.recorder.writeManifest({ calls: this.callsManifest() });
  }

  /**
   * Calls that join or leave during the run: their senders switched on at start_s and off at stop_s (both sides),
   * counted from t = 0 (start_ms).
   * @param {number} start_ms
   */
  scheduleJoinsAndLeaves(start_ms) {
    for (const c of this.calls) {
      const moments = [];
      if (c.call.start_s > 0) moments.push({ at_s: c.call.start_s, on: true });
      if (c.call.stop_s !== null && c.call.stop_s < this.scenario.duration_s) moments.push({ at_s: c.call.stop_s, on: false });
      for (const { at_s, on } of moments) {
        this.timers.push(setTimeout(() => {
          this.recorder.event(on ? 'call_join' : 'call_leave', { call: c.call.id, at_s });
          for (const peer of [c.peers.a, c.peers.b]) {
            peer?.page.evaluate((/** @type {boolean} */ v) => /** @type {any} */ (window).rtclab.call.setSending(v), on)
              .catch((/** @type {Error} */ err) => this.failWith(`call ${c.call.id} could not ${on ? 'join' : 'leave'} at ${at_s} s: ${err.message}`));
          }
        }, Math.max(0, start_ms + at_s * 1000 - Date.now())));
      }
    }
    this.teardown.push('join and leave timers', async () => { for (const t of this.timers) clearTimeout(t); });
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
    this.cpuLoadAtStart = this.cpuLoad ? this.cpuLoad.cpuSeconds() : null;
    this.recorder.writeManifest();
    await net.startSchedules(this.timings.call_start * 1000);
    this.scheduleJoinsAndLeaves(this.timings.call_start * 1000);
    this.timers.push(...schedulePauses(this.calls, this.timings.call_start * 1000, {
      event: (name, fields) => this.recorder.event(name, fields), failWith: (message) => this.failWith(message) }));
    // A run without a call marks its measured period with the same events, saying it has no call.
    this.recorder.event('call_start', this.calls.length ? {} : { calls: 0 });

    const duration_ms = this.scenario.duration_s * 1000;
    const start_ms = this.timings.call_start * 1000;
    while (Date.now() - start_ms < duration_ms) {
      this.checkStillRunning();
      await sleep(Math.min(1000, duration_ms - (Date.now() - start_ms)));
      this.reportProgress((Date.now() - start_ms) / 1000);
    }
    this.checkStillRunning();
    this.timings.call_end = Date.now() / 1000;
    this.measureCpuLoad();
    const hostCpuBusy = busyFraction(cpuAtStart, readCpuTimes());
    if (this.cpuSet && cpuSetAtStart) this.cpuSetBusy = cpuSetBusyFraction(cpuSetAtStart, readPerCpuTimes(), this.cpuSet);
    this.recorder.event('call_end', { host_cpu_busy_fraction: hostCpuBusy, cpu_set_busy_fraction: this.cpuSetBusy,
      ...(this.calls.length ? {} : { calls: 0 }) });
    return hostCpuBusy;
  }

  /** @param {number} elapsed_s */
  reportProgress(elapsed_s) {
    const remaining_s = Math.max(0, this.scenario.duration_s - elapsed_s);
    if (!this.calls.length) { this.onProgress({ phase: 'call', elapsed_s, remaining_s, calls: 0 }); return; }
    const a = this.recorder.latest('a');
    const b = this.recorder.latest('b');
    this.onProgress({ phase: 'call', elapsed_s, remaining_s,
      send_kbps: kbps(this.recorder.rateBps('a', 'bytes_sent')), recv_kbps: kbps(this.recorder.rateBps('b', 'bytes_received')),
      rtt_ms: a?.rtt_ms ?? null, fps: b?.fps_received ?? null, height: b?.frame_height_received ?? null });
  }

  /** Where a side's browser writes its RTC event logs, or null when the scenario does not record them. @param {string} side */
  eventLogDir(side) {
    return this.scenario.call.event_log ? this.recorder.eventLogDir(side) : null;
  }

  /**
   * Moves both browsers' event logs into the run directory and names them in the manifest (recorder.js).
   * @returns {Record<string, import('./recorder.js').EventLogFile[]> | null} null when the scenario does not record them
   */
  collectEventLogs() {
    return this.scenario.call.event_log && this.calls.length ? this.recorder.moveEventLogs() : null;
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
    await this.teardown.undo('join and leave timers', (name, err) => this.teardownFailed(name, err));
    await Promise.all(this.calls.flatMap((c) => [c.peers.a?.saveWebrtcInternals(), c.peers.b?.saveWebrtcInternals()])); // before any closes
    await this.teardown.undo('browser', (name, err) => this.teardownFailed(name, err));
    const eventLogs = this.collectEventLogs();
    const captures = await this.stopCaptures();
    const record = { net, event: (/** @type {string} */ name, /** @type {any} */ fields) => this.recorder.event(name, fields) };
    await recordMarkCounters(this.calls, record);
    await recordRouteCounters(record);
    await net.schedulesSettled();
    const validity = validityChecks({
      dataPrefix: DATA_PREFIX, selectedPairs: this.recorder.selectedPairs,
      calls: this.calls.map((c) => ({ id: c.call.id, files: c.files, framesDecoded: c.framesDecoded, direction: c.call.direction })),
      connectTimeoutS: Math.max(0, ...this.calls.map((c) => c.call.connect_timeout_s)), connectSeconds: this.connectSeconds,
      cpuLimited: this.recorder.cpuLimitedCount, samples: this.recorder.sampleCount,
      bottleneckAlive, bottleneckCounters: net.bottleneckCounters(), captures, captureEnabled: this.scenario.capture.enabled, hostCpuBusy,
      cpuSet: this.cpuSet ?? undefined, cpuSetBusy: this.cpuSetBusy ?? undefined, eventLogs,
      crossTraffic: crossTrafficDue(this.scenario.cross_traffic, this.scenario.duration_s, this.crossTraffic),
      backend: net.info.backend.used,
      guestHealth: net.guestHealth({ fromS: /** @type {number} */ (this.timings.call_start), toS: /** @type {number} */ (this.timings.call_end) }),
      probeIntervalMs: net.info.backend.probe?.interval_ms, webrtcInternals: askedDumps(this.calls),
      hopRoutes: this.scenario.network.hops.length ? { calls: this.calls, t0_s: /** @type {number} */ (this.timings.call_start) } : undefined,
      schedule: { expected: stepsDue(net.links, this.scenario.duration_s), events: this.stepEvents },
      cpuLoad: this.scenario.cpu_load ? { asked: this.scenario.cpu_load.cores, measured: this.recorder.manifest.cpu_load?.measured?.cores ?? null } : undefined,
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
      validity: runNotCompleted(message) });
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
    this.recorder.manifest.calls = this.callsManifest();
    this.timings.ended = Date.now() / 1000;
    await this.cpu.stop();
    this.recorder.event('run_end', { status: this.recorder.manifest.status });
    this.recorder.writeManifest();
    this.recorder.close();
  }
}

const round4 = (/** @type {number} */ x) => Math.round(x * 10000) / 10000;
/** @param {number | null} bps */
const kbps = (bps) => (bps == null ? null : bps / 1000);
