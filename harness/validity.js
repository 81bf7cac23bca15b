// @ts-check
import fs from 'node:fs';
import { linkSteps } from '../netem/steps.js';
import { hopRoutesCheck } from './call-route.js';

// The checks that decide whether a run measured what it claims to. A run failing one is marked invalid with the
// reason; its data are kept but never reported as good.

/** Share of the call during which the sender's video may be limited by CPU before the run is invalid. */
export const MAX_CPU_LIMITED_FRACTION = 0.1;
/** Share of the host's CPU time busy over the call above which its timings (bottleneck, encoders) are suspect. */
export const MAX_HOST_CPU_BUSY_FRACTION = 0.9;
/** Share of a direction's forwarded packets the userspace bottleneck may release more than 10 ms after their due
 * time: beyond it, the link the call went through is not the scenario's (delay it did not ask for, packets bunched). */
export const MAX_LATE_RELEASE_FRACTION = 0.01;
/** The same limit for the CPUs a pinned run was given: above it, another run (or the host) disturbed this one. */
export const MAX_CPU_SET_BUSY_FRACTION = 0.9;
/** The bounds this file shares with the analyzer's checks (analysis/rtclab/validity.py): one file both read, so that
 * the live check and the re-judged one cannot drift apart. docs/harness.md says why these numbers. */
export const BOUNDS = JSON.parse(fs.readFileSync(new URL('./validity-bounds.json', import.meta.url), 'utf8'));
/** The latest a bottleneck (userspace: a packet's release; uml: a timer of the guest's kernel) may be past its due
 * time, whatever the path's delay: GCC's delay-based detector reacts to a few ms of delay change, and a stall longer
 * than this is above this machine's scheduling noise (bench/bottleneck/RESULTS.md). */
export const LATENESS_BOUND_MS = /** @type {number} */ (BOUNDS.release_lateness.max_ms);

/** The bound of bottleneck_lateness_bounded: a fixed one, the same for every path (docs/harness.md). */
export const latenessBoundMs = () => LATENESS_BOUND_MS;

/** How far from its time a scheduled change (capacity or delay step) may be applied, ms: well above what this
 * machine's userspace and kernel backends showed (at most 13 ms; bench/bottleneck/RESULTS.md, "Scheduled changes"),
 * so a step that far off is a fault of the emulator, not its noise (the analyzer places each step where it was
 * applied). The uml guest applies steps 50-500 ms late there: its runs with steps are usually invalid. */
export const MAX_STEP_LATE_MS = /** @type {number} */ (BOUNDS.schedule.max_late_ms);

/** How far the cores a scenario's cpu_load used over the call (its CPU seconds / the call's wall seconds) may be from
 * the cores it asked for. 10 loads of 10 s at 0.33 cores, fifo 10, 5 ms slices, beside nothing on this machine
 * (`node bench/cpu/cpu-load.mjs --runs 10 --seconds 10 --cores 0.33 --policy fifo`, 2026-11-28; bench/cpu/RESULTS.md,
 * "A CPU load beside the run") used 0.3335-0.3355 cores (mean 0.3341, sd 0.0007): at most 0.0055 over what was asked,
 * stress-ng's own time around each sleep. /proc counts whole 10 ms ticks: up to 0.02 s at the two ends, 0.007 cores
 * over a 3 s reading (the real-tier test), 0.0002 over a 100 s call. 0.02 is 3.6 times the furthest seen and above
 * both together. At 0.66 cores, the uml guest's cost the backends studies ask for, 10 loads used 0.6637-0.6670 (at most
 * 0.0070 over); off by 0.02, the load is within 3 % of it. */
export const MAX_CPU_LOAD_DIFFERENCE_CORES = /** @type {number} */ (BOUNDS.cpu_load.max_cores_difference);

/**
 * @param {string} address
 * @param {string} dataPrefix e.g. '10.0.'
 */
const onDataPath = (address, dataPrefix) => typeof address === 'string' && address.startsWith(dataPrefix);

/**
 * What the checks read (validityChecks' argument; each field is described there).
 * @typedef {{
 *   dataPrefix: string,
 *   selectedPairs: {side: string, local: any, remote: any}[],
 *   framesDecoded?: Record<string, number>,
 *   calls?: {id: string, files: {a: string, b: string}, framesDecoded: {a: number, b: number}, direction?: 'both' | 'forward'}[],
 *   connectTimeoutS: number, connectSeconds: number | null,
 *   cpuLimited: Record<string, number>, samples: Record<string, number>,
 *   bottleneckAlive: boolean | null,
 *   bottleneckCounters?: Record<string, Record<string, number> | null> | null,
 *   captures: Record<string, {packets: number, dropped_by_kernel: number}> | null,
 *   captureEnabled: boolean,
 *   hostCpuBusy?: number,
 *   cpuSet?: number[], cpuSetBusy?: number,
 *   eventLogs?: Record<string, {file: string, bytes: number, complete_bytes: number, begins_with_log_start: boolean}[]> | null,
 *   crossTraffic?: { expected: number[], started: number[], failed: string[] },
 *   backend?: string,
 *   schedule?: { expected: ScheduledStep[], events: any[] },
 *   guestHealth?: import('../netem/uml/health.js').GuestHealth | null, probeIntervalMs?: number,
 *   cpuLoad?: { asked: number, measured: number | null },
 *   webrtcInternals?: Record<string, import('./webrtc-internals.js').InternalsDump | null> | null,
 *   hopRoutes?: { calls: import('./call-route.js').RoutedCall[], t0_s: number },
 * }} ValidityInputs
 */

/**
 * @param {ValidityInputs} o
 *   calls: each call's id, the keys of its sides in selectedPairs, samples and cpuLimited (a, b for the first call,
 *   <id>-a, <id>-b for the others), and its decoded frames; absent: one call, sides a and b, framesDecoded.
 *   With several calls each call-level check is made per call, named <check>_<call id>; with none (`calls: []`, a
 *   run without a call) no call-level check is made: only the network's (bottleneck, CPU, captures, cross traffic).
 *   eventLogs: each side's RTC event logs (harness/recorder.js collectEventLogs) when the scenario records them
 *   bottleneckCounters: per direction the userspace bottleneck's latest stats line (netem Network.bottleneckCounters);
 *   null or absent under the kernel backend
 *   crossTraffic: the cross-traffic items that should have started (item numbers), those that did, and failures seen
 *   while the run measured; absent when the scenario has none
 *   backend: the backend that ran (net.info.backend.used): the check bottleneck_lateness_bounded (absent: no such
 *   check); guestHealth: the uml guest's probe
 *   (net.guestHealth(), its coverage over the call) with probeIntervalMs, the probe's interval (manifest
 *   backend.probe.interval_ms): the checks uml_timer_on_time, uml_probe_covered and uml_lossless_outside_qdisc
 *   schedule: the links' capacity and delay steps due during the run (expected) and the capacity_change and delay_change
 *   events the backend reported: the check schedule_applied (absent when no link has a step)
 *   cpuLoad: the scenario's cpu_load, the cores it asked for and those it used over the call (null: not measured):
 *   the check cpu_load_as_asked (absent without a cpu_load)
 *   webrtcInternals: Chrome's webrtc-internals dumps the calls asked for (call.webrtc_internals), by the key of each
 *   browser's files (harness/webrtc-internals.js askedDumps): the check webrtc_internals_saved (absent: none asked)
 *   hopRoutes: with a chain of bottlenecks (network.hops), each call's route and t = 0 (epoch s): the check hop_routes
 * A check's ok is null when the run's backend cannot measure what it checks ("not measured"): it does not make the
 * run invalid, and it does not vouch for it either.
 */
export function validityChecks(o) {
  /** @type {{name: string, ok: boolean | null, detail: string}[]} */
  const checks = [];
  const add = (/** @type {string} */ name, /** @type {boolean | null} */ ok, /** @type {string} */ detail) => checks.push({ name, ok, detail });

  const calls = o.calls ?? [{ id: '', files: { a: 'a', b: 'b' }, framesDecoded: { a: o.framesDecoded?.a ?? 0, b: o.framesDecoded?.b ?? 0 } }];
  const period = calls.length ? 'the call' : 'the run';
  for (const check of callChecks(calls, o)) add(...check);

  if (o.bottleneckAlive !== null) {
    add('bottleneck_alive', o.bottleneckAlive, o.bottleneckAlive ? `the userspace bottleneck ran for the whole ${period.slice(4)}`
      : `the userspace bottleneck exited during ${period}`);
  }
  if (o.bottleneckCounters) add(...bottleneckOnTime(o.bottleneckCounters));
  if (o.backend) {
    add(...latenessBounded(o.backend, o.bottleneckCounters ?? null, o.guestHealth ?? null));
    if (o.backend === 'uml') {
      add(...guestTimerOnTime(o.guestHealth?.timer ?? null));
      add(...probeCovered(o.guestHealth?.coverage ?? null, o.probeIntervalMs ?? null));
      add(...guestLossless(o.guestHealth?.drops ?? null));
    }
  }

  if (o.schedule && o.schedule.expected.length) add(...scheduleApplied(o.schedule.expected, o.schedule.events));

  if (o.cpuLoad) add(...cpuLoadAsAsked(o.cpuLoad.asked, o.cpuLoad.measured, period));
  if (o.hopRoutes) add(...hopRoutesCheck(o.hopRoutes.calls, o.hopRoutes.t0_s));

  const cpu = cpuNotSaturated(o, period);
  if (cpu) add(...cpu);

  if (o.captureEnabled) add(...capturesComplete(o.captures));
  if (o.crossTraffic) add(...crossTrafficRan(o.crossTraffic, period));
  if (o.eventLogs) add(...eventLogComplete(o.eventLogs));
  if (o.webrtcInternals) add(...internalsSaved(o.webrtcInternals));
  return { valid: checks.every((c) => c.ok !== false), checks };
}

/**
 * The call-level checks: connected in time (once for all calls), then per call its ICE pair, its decoded video and
 * its CPU-limited share, named <check>_<call id> when there are several calls.
 * @param {NonNullable<ValidityInputs['calls']>} calls
 * @param {ValidityInputs} o
 * @returns {[string, boolean | null, string][]}
 */
function callChecks(calls, o) {
  /** @type {[string, boolean | null, string][]} */
  const checks = [];
  if (calls.length) {
    const connected = o.connectSeconds !== null && o.connectSeconds <= o.connectTimeoutS;
    checks.push(['call_connected_in_time', connected, o.connectSeconds === null ? `no decoded video within ${o.connectTimeoutS} s`
      : `media flowing ${o.connectSeconds.toFixed(1)} s after the browsers loaded the page (limit ${o.connectTimeoutS} s)`]);
  }
  for (const call of calls) {
    const suffix = calls.length > 1 ? `_${call.id}` : '';
    checks.push(icePairOnDataPath(call, o, suffix));
    // A call whose media goes forward only (call.direction) has video to decode at b alone.
    const decoding = /** @type {('a' | 'b')[]} */ (call.direction === 'forward' ? ['b'] : ['a', 'b']);
    for (const side of decoding) {
      const frames = call.framesDecoded[side] ?? 0;
      checks.push([`video_decoded_${side}${suffix}`, frames > 0, `${call.files[side]} decoded ${frames} video frames`]);
    }
    for (const side of /** @type {const} */ (['a', 'b'])) {
      const key = call.files[side];
      const n = o.samples[key] ?? 0;
      const fraction = n ? (o.cpuLimited[key] ?? 0) / n : 0;
      checks.push([`cpu_limited_${side}${suffix}`, fraction <= MAX_CPU_LIMITED_FRACTION,
        `qualityLimitationReason was "cpu" in ${(fraction * 100).toFixed(0)}% of ${n} samples (limit ${MAX_CPU_LIMITED_FRACTION * 100}%)`]);
    }
  }
  return checks;
}

/**
 * ice_pair_on_data_path: both sides of the call reported a selected pair, every one on the data network.
 * @param {NonNullable<ValidityInputs['calls']>[number]} call @param {ValidityInputs} o @param {string} suffix
 * @returns {[string, boolean, string]}
 */
function icePairOnDataPath(call, o, suffix) {
  const name = `ice_pair_on_data_path${suffix}`;
  const keys = new Set([call.files.a, call.files.b]);
  const pairs = o.selectedPairs.filter((p) => keys.has(p.side));
  // Chrome hides a peer-reflexive remote address (address ""); the other side's own local address covers it.
  const offPath = pairs.filter((p) => !onDataPath(p.local?.address, o.dataPrefix) ||
    (p.remote?.address !== '' && !onDataPath(p.remote?.address, o.dataPrefix)));
  const sides = new Set(pairs.map((p) => p.side));
  if (!sides.has(call.files.a) || !sides.has(call.files.b)) {
    return [name, false, `no selected ICE candidate pair was reported by ${[call.files.a, call.files.b].filter((s) => !sides.has(s)).join(' and ')}`];
  }
  if (offPath.length) {
    const p = offPath[0];
    return [name, false, `side ${p.side} selected ${p.local?.address} <-> ${p.remote?.address}, off the data path ${o.dataPrefix}*`];
  }
  const p = pairs[pairs.length - 1];
  return [name, true, `${p.local.address} <-> ${p.remote.address || '(peer-reflexive)'} for the whole call (${pairs.length} pair report(s))`];
}

/**
 * cpu_set_not_saturated for a pinned run (judged by its own CPUs; the host's are shared with the other runs), else
 * host_cpu_not_saturated; null when neither was measured.
 * @param {ValidityInputs} o @param {string} period
 * @returns {[string, boolean, string] | null}
 */
function cpuNotSaturated(o, period) {
  if (o.cpuSet && o.cpuSetBusy !== undefined) {
    const host = o.hostCpuBusy === undefined ? '' : `; the host's CPUs ${(o.hostCpuBusy * 100).toFixed(0)}%`;
    return ['cpu_set_not_saturated', o.cpuSetBusy <= MAX_CPU_SET_BUSY_FRACTION,
      `its CPUs ${o.cpuSet.join(',')} were ${(o.cpuSetBusy * 100).toFixed(0)}% busy during ${period} ` +
      `(limit ${MAX_CPU_SET_BUSY_FRACTION * 100}%)${host}`];
  }
  if (o.hostCpuBusy !== undefined) {
    return ['host_cpu_not_saturated', o.hostCpuBusy <= MAX_HOST_CPU_BUSY_FRACTION,
      `the host's CPUs were ${(o.hostCpuBusy * 100).toFixed(0)}% busy during ${period} (limit ${MAX_HOST_CPU_BUSY_FRACTION * 100}%)`];
  }
  return null;
}

/**
 * captures_complete: both captures stopped cleanly, each with packets and none dropped by the kernel.
 * @param {ValidityInputs['captures']} captures
 * @returns {[string, boolean, string]}
 */
function capturesComplete(captures) {
  if (!captures) return ['captures_complete', false, 'captures were not stopped cleanly; their counts are unknown'];
  const drops = Object.entries(captures).map(([side, c]) => `${side}: ${c.packets} packets, ${c.dropped_by_kernel} dropped by kernel`);
  const ok = Object.values(captures).every((c) => c.dropped_by_kernel === 0 && c.packets > 0);
  return ['captures_complete', ok, drops.join('; ')];
}

/**
 * cross_traffic_ran: every item due started, and none failed while the run measured.
 * @param {NonNullable<ValidityInputs['crossTraffic']>} crossTraffic @param {string} period
 * @returns {[string, boolean, string]}
 */
function crossTrafficRan({ expected, started, failed }, period) {
  const missing = expected.filter((n) => !started.includes(n));
  const problems = [...missing.map((n) => `cross_traffic[${n}] never started`), ...failed];
  return ['cross_traffic_ran', problems.length === 0, problems.length ? problems.join('; ')
    : `${started.length} of ${expected.length} cross-traffic item(s) started, none failed during ${period}`];
}

/**
 * event_log_complete: each side wrote RTC event logs, none empty, each starting with the log's start event and none
 * cut short (Chrome writes the log in pieces; a browser killed mid-write leaves a piece cut short).
 * @param {NonNullable<ValidityInputs['eventLogs']>} eventLogs
 * @returns {[string, boolean, string]}
 */
function eventLogComplete(eventLogs) {
  const problems = [];
  const found = [];
  for (const side of ['a', 'b']) {
    const files = eventLogs[side] ?? [];
    if (!files.length) problems.push(`${side} wrote no RTC event log`);
    for (const f of files) {
      if (f.bytes === 0) problems.push(`${f.file} is empty`);
      else if (!f.begins_with_log_start) problems.push(`${f.file} does not start with the log's start event`);
      else if (f.complete_bytes < f.bytes) problems.push(`${f.file} is cut short: ${f.bytes - f.complete_bytes} of its ${f.bytes} bytes end mid-record`);
      found.push(`${f.file} ${f.bytes} bytes`);
    }
  }
  return ['event_log_complete', problems.length === 0, problems.length ? problems.join('; ') : found.join(', ')];
}

/**
 * webrtc_internals_saved: every browser whose call asked for Chrome's webrtc-internals dump saved one, and it holds a
 * peer connection with stats series (a dump of a page that recorded no call holds none).
 * @param {NonNullable<ValidityInputs['webrtcInternals']>} dumps
 * @returns {[string, boolean, string]}
 */
function internalsSaved(dumps) {
  const problems = [];
  const found = [];
  for (const [key, d] of Object.entries(dumps)) {
    if (!d) problems.push(`${key}: no dump was saved`);
    else if (d.file === null) problems.push(`${key}: no dump: ${d.error}`);
    else if (d.peer_connections < 1 || d.stats_series < 1) {
      problems.push(`${d.file} holds ${d.peer_connections} peer connection(s) and ${d.stats_series} stats series: it recorded no call`);
    } else found.push(`${d.file} ${d.bytes} bytes, ${d.peer_connections} peer connection(s), ${d.stats_series} stats series`);
  }
  return ['webrtc_internals_saved', problems.length === 0, problems.length ? problems.join('; ') : found.join(', ')];
}

/**
 * The check `bottleneck_on_time` from each direction's counters: the share of forwarded packets released more than
 * 10 ms after their due time (the ground-truth log's `release_ns - due_ns`) against MAX_LATE_RELEASE_FRACTION.
 * @param {Record<string, Record<string, number> | null>} counters
 * @returns {[string, boolean, string]}
 */
export function bottleneckOnTime(counters) {
  let ok = true;
  const parts = Object.entries(counters).map(([direction, c]) => {
    if (!c || typeof c.released_late_10ms !== 'number') {
      ok = false;
      return `${direction}: no whole line of the bottleneck's stats file holds its release times (an old build? scripts/setup.sh rebuilds it)`;
    }
    const fraction = c.forwarded > 0 ? c.released_late_10ms / c.forwarded : 0;
    ok &&= fraction <= MAX_LATE_RELEASE_FRACTION;
    return `${direction}: ${c.released_late_10ms} of ${c.forwarded} forwarded packets (${(100 * fraction).toFixed(2)}%) ` +
      `released more than 10 ms late, the latest ${c.max_lateness_ms.toFixed(1)} ms`;
  });
  return ['bottleneck_on_time', ok, `${parts.join('; ')} (limit ${100 * MAX_LATE_RELEASE_FRACTION}%)`];
}

/**
 * The check `bottleneck_lateness_bounded`: no packet released (userspace: the bottleneck's own max_lateness_ms per
 * direction), no timer of the guest's kernel fired (uml: its latest answer to the host's pings, less the netem delay
 * it left through: netem/uml/lateness.js), later than latenessBoundMs (the same on every path), and (userspace) none
 * more than 100 ms late. The kernel backend measures neither: not measured (ok null).
 * @param {string} backend
 * @param {Record<string, Record<string, number> | null> | null} counters the userspace bottleneck's, per direction
 * @param {import('../netem/uml/health.js').GuestHealth | null} guest the uml guest's health (its probes)
 * @returns {[string, boolean | null, string]}
 */
export function latenessBounded(backend, counters, guest) {
  const name = 'bottleneck_lateness_bounded';
  const why = 'the emulator\'s own delay, more than the controller reacts to, is in the one-way and queuing delays';
  if (backend === 'userspace') {
    const bound = latenessBoundMs();
    let ok = true;
    const parts = Object.entries(counters ?? {}).map(([direction, c]) => {
      if (!c || typeof c.max_lateness_ms !== 'number' || typeof c.released_late_100ms !== 'number') {
        ok = false;
        return `${direction}: no whole line of the bottleneck's stats file holds its release times`;
      }
      const late = c.max_lateness_ms > bound || c.released_late_100ms > 0;
      ok &&= !late;
      return `${direction}: ${late ? 'a packet was released' : 'the latest release was'} ${c.max_lateness_ms.toFixed(1)} ms after its due time` +
        `${late ? `, over the bound of ${bound} ms` : ` (bound ${bound} ms)`}, ${c.released_late_100ms} packets more than 100 ms late`;
    });
    if (!parts.length) return [name, false, 'the userspace bottleneck reported no counters'];
    return [name, ok, `${parts.join('; ')}${ok ? '' : `: ${why}`} (bound: ${bound} ms on every path, none more than 100 ms late)`];
  }
  if (backend === 'uml') {
    const bound = latenessBoundMs();
    const t = guest?.timer;
    if (!t || !t.samples) {
      return [name, false, 'the uml guest\'s lateness probe wrote no summary since the network was up (uml-timer.jsonl): its timers\' lateness is unknown'];
    }
    const ok = t.max_ms <= bound;
    // When, so that the report's CPU line (the hypervisor's steal, its worst interval) can be read beside it.
    const callStart = guest?.coverage?.from_s;
    const when = typeof t.max_t === 'number' && typeof callStart === 'number'
      ? ` in the second ending ${Math.abs(t.max_t - callStart).toFixed(0)} s ${t.max_t >= callStart ? 'into' : 'before'} the call`
      : '';
    return [name, ok, `the uml guest's timers (netem's and TBF's; the host's pings answered through a netem delay ${t.samples} times in ${t.seconds} s): ` +
      `${ok ? 'the latest' : 'one'} fired ${t.max_ms.toFixed(1)} ms late${when}${ok ? ` (bound ${bound} ms)` : `, over the bound of ${bound} ms`}, ` +
      `${t.late_10ms} more than 10 ms and ${t.late_100ms} more than 100 ms late${ok ? '' : `: ${why}`} ` +
      `(bound: ${bound} ms on every path)`];
  }
  return [name, null, `not measured: the ${backend} backend's qdiscs (the host kernel's) report neither release times nor timer lateness`];
}

/**
 * The check `uml_lossless_outside_qdisc`: the guest's devices and its input backlog dropped no packet since the
 * network was up (loss the scenario did not ask for, which the qdiscs' own counters do not show).
 * @param {import('../netem/uml/health.js').GuestDrops | null} drops
 * A counter the probe could not read is not measured (ok null), unless another shows a drop.
 * @returns {[string, boolean | null, string]}
 */
export function guestLossless(drops) {
  const name = 'uml_lossless_outside_qdisc';
  if (!drops) return [name, false, 'the uml guest\'s probe wrote no device counters (uml-links.jsonl): its losses outside the qdiscs are unknown'];
  const moved = Object.entries(drops.drops);
  const unreadable = drops.unreadable ?? [];
  if (!moved.length && unreadable.length) {
    return [name, null, `not measured: the uml guest's probe could not read ${unreadable.join(', ')} (uml-links.jsonl): ` +
      'its losses outside the qdiscs there are unknown'];
  }
  if (!moved.length) {
    return [name, true, `in ${drops.seconds} s since the network was up no device of the guest (rx/tx dropped, errors, missed, fifo, over) ` +
      'and not its input backlog dropped a packet'];
  }
  return [name, false, `the uml guest lost packets outside its qdiscs in ${drops.seconds} s since the network was up: ` +
    `${moved.map(([k, n]) => `${k} +${n}`).join(', ')}: loss the scenario did not ask for`];
}

/**
 * @typedef {{ direction: 'forward' | 'reverse', event: 'capacity_change' | 'delay_change', at_s: number, value: number,
 *   hop?: number }} ScheduledStep
 *   value: kbit (capacity) or delay_ms (delay); hop: the hop of a chain of bottlenecks whose (forward) link has the step
 */

/**
 * The links' capacity and delay steps due during a run of `duration_s` (at_s before its end): what the check
 * schedule_applied expects; in a chain of bottlenecks, each hop's (its way back has no steps: netem/chain.js).
 * @param {{ forward: import('../scenarios/link.js').Link, reverse: import('../scenarios/link.js').Link, hops?: import('../scenarios/link.js').Link[] }} links
 * @param {number} duration_s
 * @returns {ScheduledStep[]}
 */
export function stepsDue(links, duration_s) {
  const due = (/** @type {import('../scenarios/link.js').Link} */ link, /** @type {'forward' | 'reverse'} */ direction, /** @type {number | undefined} */ hop) =>
    linkSteps(link).filter((s) => s.at_s < duration_s).map((s) => ({ direction, ...(hop === undefined ? {} : { hop }), event: s.event.event,
      at_s: s.at_s, value: s.event.event === 'capacity_change' ? s.event.kbit : s.event.delay_ms }));
  return [...(/** @type {const} */ (['forward', 'reverse'])).flatMap((direction) => due(links[direction], direction, undefined)),
    ...(links.hops ?? []).flatMap((link, hop) => due(link, 'forward', hop))];
}

/**
 * The cross-traffic items that should have started by the end of a run of `duration_s`, those that did, and the
 * failures seen: what the check cross_traffic_ran reads.
 * @param {any[]} items the scenario's cross_traffic
 * @param {number} duration_s
 * @param {{ started: Set<number>, failed: string[] }} seen
 * @returns {{ expected: number[], started: number[], failed: string[] } | undefined} undefined without cross traffic
 */
export function crossTrafficDue(items, duration_s, seen) {
  if (!items.length) return undefined;
  const expected = items.flatMap((item, n) => (item.start_s < duration_s && (item.stop_s ?? duration_s) > item.start_s ? [n] : []));
  return { expected, started: [...seen.started].sort((x, y) => x - y), failed: seen.failed };
}

/**
 * The check `schedule_applied`: every capacity and delay step due during the run was applied (its event says ok, with
 * a measured applied_ns) within MAX_STEP_LATE_MS of its scheduled time, either way. A step with no event, one that
 * failed, or one late: named, and the run is invalid (the link was not the scenario's). A step whose event says it was
 * applied but carries no measured time (an older run's): not measured (ok null).
 * @param {ScheduledStep[]} expected @param {any[]} events the run's capacity_change and delay_change events
 * @returns {[string, boolean | null, string]}
 */
export function scheduleApplied(expected, events) {
  const name = 'schedule_applied';
  const problems = [];
  /** @type {string[]} applied, with no measured time: an event of an older run, re-judged */
  const unmeasured = [];
  let latest = -Infinity;
  for (const step of expected) {
    const valueKey = step.event === 'capacity_change' ? 'kbit' : 'delay_ms';
    const label = `the ${step.hop === undefined ? '' : `hop ${step.hop} `}${step.direction} ${step.event === 'capacity_change' ? `capacity step to ${step.value} kbit/s`
      : `delay step to ${step.value} ms`} at ${step.at_s} s`;
    const e = events.find((x) => x.event === step.event && x.direction === step.direction && x.hop === step.hop && x.at_s === step.at_s
      && x[valueKey] === step.value);
    if (!e) problems.push(`${label}: no event says it was applied`);
    else if (!e.ok) problems.push(`${label} failed: ${e.error ?? 'no reason given'}`);
    else if (typeof e.late_ms !== 'number') unmeasured.push(label);
    else if (Math.abs(e.late_ms) > MAX_STEP_LATE_MS) {
      problems.push(`${label} was applied ${Math.abs(e.late_ms).toFixed(1)} ms ${e.late_ms > 0 ? 'late' : 'early'} (bound ${MAX_STEP_LATE_MS} ms)`);
    } else latest = Math.max(latest, Math.abs(e.late_ms));
  }
  if (problems.length) return [name, false, `${problems.join('; ')}: the link did not change when the scenario says`];
  if (unmeasured.length) {
    return [name, null, `not measured: ${unmeasured.join('; ')}: applied, but its event carries no applied time (recorded before the backends measured it)`];
  }
  return [name, true, `${expected.length} scheduled change(s) applied, the furthest from its time by ${latest.toFixed(1)} ms ` +
    `(bound ${MAX_STEP_LATE_MS} ms)`];
}

/** The longest silence of the uml lateness probe (ping's own lines) in the call, in probe intervals, before the run is
 * invalid: a probe that stopped for longer did not watch the guest's timers then. Ping sends every interval and
 * prints a line for every answer or unanswered request, so a running probe is silent for about one interval. */
export const MAX_PROBE_GAP_INTERVALS = 10;
/** The longest time between two of the probe's summaries (one a second) in the call, s: its summariser stalled. */
export const MAX_PROBE_SUMMARY_GAP_S = 3;

/**
 * The check `uml_timer_on_time`, the uml counterpart of bottleneck_on_time: the share of the lateness probe's answers
 * more than 10 ms late (the guest kernel's timers fired that late) against MAX_LATE_RELEASE_FRACTION.
 * @param {import('../netem/uml/health.js').GuestTimer | null} t
 * @returns {[string, boolean, string]}
 */
export function guestTimerOnTime(t) {
  const name = 'uml_timer_on_time';
  if (!t || !t.samples) return [name, false, 'the uml guest\'s lateness probe wrote no answer since the network was up (uml-timer.jsonl)'];
  const fraction = t.late_10ms / t.samples;
  const ok = fraction <= MAX_LATE_RELEASE_FRACTION;
  return [name, ok, `${t.late_10ms} of the probe's ${t.samples} answers (${(100 * fraction).toFixed(2)}%) came more than 10 ms late, ` +
    `the latest ${t.max_ms.toFixed(1)} ms (limit ${100 * MAX_LATE_RELEASE_FRACTION}%)`];
}

/**
 * The check `uml_probe_covered`: the lateness probe watched the guest for the whole call: its summaries span it with
 * none more than MAX_PROBE_SUMMARY_GAP_S apart, and ping itself was never silent for more than MAX_PROBE_GAP_INTERVALS
 * intervals (a probe stopped half way): otherwise the other uml checks vouch for part of the call only.
 * @param {import('../netem/uml/health.js').ProbeCoverage | null} c @param {number | null} intervalMs
 * @returns {[string, boolean | null, string]}
 */
export function probeCovered(c, intervalMs) {
  const name = 'uml_probe_covered';
  if (!c) return [name, false, 'the uml guest\'s lateness probe wrote no summary during the call (uml-timer.jsonl)'];
  if (c.max_summary_gap_s === null || c.max_summary_gap_s > MAX_PROBE_SUMMARY_GAP_S) {
    return [name, false, `the lateness probe's summaries left ${c.max_summary_gap_s} s of the call uncovered ` +
      `(${c.summaries} summaries from ${c.first_t} to ${c.last_t}; limit ${MAX_PROBE_SUMMARY_GAP_S} s)`];
  }
  if (c.max_gap_ms === null || !intervalMs) {
    return [name, null, `not measured: ${intervalMs ? 'the probe\'s summaries carry no time of ping\'s own (an older run)' : 'the probe\'s interval is not recorded'}`];
  }
  const bound = MAX_PROBE_GAP_INTERVALS * intervalMs;
  const at = c.gap_from_t === null ? '' : ` from ${new Date(c.gap_from_t * 1000).toISOString()} (${(c.gap_from_t - c.from_s).toFixed(1)} s into the call)`;
  if (c.max_gap_ms > bound) {
    return [name, false, `the lateness probe (ping) was silent for ${c.max_gap_ms.toFixed(0)} ms${at}, over the bound of ${bound} ms ` +
      `(${MAX_PROBE_GAP_INTERVALS} intervals of ${intervalMs} ms): the guest's timers were not watched then`];
  }
  return [name, true, `${c.summaries} summaries over the call; ping's longest silence ${c.max_gap_ms.toFixed(1)} ms (bound ${bound} ms, ` +
    `${MAX_PROBE_GAP_INTERVALS} intervals of ${intervalMs} ms)`];
}

/**
 * The check `cpu_load_as_asked`: the scenario's cpu_load used the cores it asked for over the call, within
 * MAX_CPU_LOAD_DIFFERENCE_CORES either way (a load that got less, e.g. starved by SCHED_FIFO threads above it, or
 * more, is not the experiment the scenario describes). Not measured (null) fails it: the load is the experiment.
 * @param {number} asked @param {number | null} measured @param {string} [period]
 * @returns {[string, boolean, string]}
 */
export function cpuLoadAsAsked(asked, measured, period = 'the call') {
  const name = 'cpu_load_as_asked';
  const bound = MAX_CPU_LOAD_DIFFERENCE_CORES;
  if (measured === null) return [name, false, `the CPU load asked for ${asked} cores; what it used during ${period} was not measured`];
  const off = measured - asked;
  const ok = Math.abs(off) <= bound;
  return [name, ok, `the CPU load (stress-ng) used ${measured.toFixed(3)} cores during ${period}, asked ${asked} ` +
    `(${off >= 0 ? '+' : ''}${off.toFixed(3)}; bound ±${bound})`];
}

/** The validity of a run that did not complete: the error that stopped it. @param {string} message */
export const runNotCompleted = (message) => ({ valid: false, checks: [{ name: 'run_completed', ok: false, detail: message }] });
