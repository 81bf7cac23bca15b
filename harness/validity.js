// @ts-check
import fs from 'node:fs';

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

/**
 * @param {string} address
 * @param {string} dataPrefix e.g. '10.0.'
 */
const onDataPath = (address, dataPrefix) => typeof address === 'string' && address.startsWith(dataPrefix);

/**
 * @param {{
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
 *   guestHealth?: import('../netem/uml/health.js').GuestHealth | null,
 * }} o
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
 *   (net.guestHealth())
 * A check's ok is null when the run's backend cannot measure what it checks ("not measured"): it does not make the
 * run invalid, and it does not vouch for it either.
 */
export function validityChecks(o) {
  /** @type {{name: string, ok: boolean | null, detail: string}[]} */
  const checks = [];
  const add = (/** @type {string} */ name, /** @type {boolean | null} */ ok, /** @type {string} */ detail) => checks.push({ name, ok, detail });

  const calls = o.calls ?? [{ id: '', files: { a: 'a', b: 'b' }, framesDecoded: { a: o.framesDecoded?.a ?? 0, b: o.framesDecoded?.b ?? 0 } }];
  const period = calls.length ? 'the call' : 'the run';
  if (calls.length) {
    const connected = o.connectSeconds !== null && o.connectSeconds <= o.connectTimeoutS;
    add('call_connected_in_time', connected, o.connectSeconds === null ? `no decoded video within ${o.connectTimeoutS} s`
      : `media flowing ${o.connectSeconds.toFixed(1)} s after the browsers loaded the page (limit ${o.connectTimeoutS} s)`);
  }

  for (const call of calls) {
    const suffix = calls.length > 1 ? `_${call.id}` : '';
    const keys = new Set([call.files.a, call.files.b]);
    const pairs = o.selectedPairs.filter((p) => keys.has(p.side));
    // Chrome hides a peer-reflexive remote address (address ""); the other side's own local address covers it.
    const offPath = pairs.filter((p) => !onDataPath(p.local?.address, o.dataPrefix) ||
      (p.remote?.address !== '' && !onDataPath(p.remote?.address, o.dataPrefix)));
    const sides = new Set(pairs.map((p) => p.side));
    if (!sides.has(call.files.a) || !sides.has(call.files.b)) {
      add(`ice_pair_on_data_path${suffix}`, false, `no selected ICE candidate pair was reported by ${[call.files.a, call.files.b].filter((s) => !sides.has(s)).join(' and ')}`);
    } else if (offPath.length) {
      const p = offPath[0];
      add(`ice_pair_on_data_path${suffix}`, false, `side ${p.side} selected ${p.local?.address} <-> ${p.remote?.address}, off the data path ${o.dataPrefix}*`);
    } else {
      const p = pairs[pairs.length - 1];
      add(`ice_pair_on_data_path${suffix}`, true, `${p.local.address} <-> ${p.remote.address || '(peer-reflexive)'} for the whole call (${pairs.length} pair report(s))`);
    }

    // A call whose media goes forward only (call.direction) has video to decode at b alone.
    const decoding = /** @type {('a' | 'b')[]} */ (call.direction === 'forward' ? ['b'] : ['a', 'b']);
    for (const side of decoding) {
      const frames = call.framesDecoded[side] ?? 0;
      add(`video_decoded_${side}${suffix}`, frames > 0, `${call.files[side]} decoded ${frames} video frames`);
    }

    for (const side of /** @type {const} */ (['a', 'b'])) {
      const key = call.files[side];
      const n = o.samples[key] ?? 0;
      const fraction = n ? (o.cpuLimited[key] ?? 0) / n : 0;
      add(`cpu_limited_${side}${suffix}`, fraction <= MAX_CPU_LIMITED_FRACTION,
        `qualityLimitationReason was "cpu" in ${(fraction * 100).toFixed(0)}% of ${n} samples (limit ${MAX_CPU_LIMITED_FRACTION * 100}%)`);
    }
  }

  if (o.bottleneckAlive !== null) {
    add('bottleneck_alive', o.bottleneckAlive, o.bottleneckAlive ? `the userspace bottleneck ran for the whole ${period.slice(4)}`
      : `the userspace bottleneck exited during ${period}`);
  }
  if (o.bottleneckCounters) add(...bottleneckOnTime(o.bottleneckCounters));
  if (o.backend) {
    add(...latenessBounded(o.backend, o.bottleneckCounters ?? null, o.guestHealth ?? null));
    if (o.backend === 'uml') add(...guestLossless(o.guestHealth?.drops ?? null));
  }

  if (o.cpuSet && o.cpuSetBusy !== undefined) {
    // Pinned (a study's --parallel): the run is judged by its own CPUs; the host's are shared with the other runs.
    const host = o.hostCpuBusy === undefined ? '' : `; the host's CPUs ${(o.hostCpuBusy * 100).toFixed(0)}%`;
    add('cpu_set_not_saturated', o.cpuSetBusy <= MAX_CPU_SET_BUSY_FRACTION,
      `its CPUs ${o.cpuSet.join(',')} were ${(o.cpuSetBusy * 100).toFixed(0)}% busy during ${period} ` +
      `(limit ${MAX_CPU_SET_BUSY_FRACTION * 100}%)${host}`);
  } else if (o.hostCpuBusy !== undefined) {
    add('host_cpu_not_saturated', o.hostCpuBusy <= MAX_HOST_CPU_BUSY_FRACTION,
      `the host's CPUs were ${(o.hostCpuBusy * 100).toFixed(0)}% busy during ${period} (limit ${MAX_HOST_CPU_BUSY_FRACTION * 100}%)`);
  }

  if (o.captureEnabled) {
    if (!o.captures) add('captures_complete', false, 'captures were not stopped cleanly; their counts are unknown');
    else {
      const drops = Object.entries(o.captures).map(([side, c]) => `${side}: ${c.packets} packets, ${c.dropped_by_kernel} dropped by kernel`);
      const ok = Object.values(o.captures).every((c) => c.dropped_by_kernel === 0 && c.packets > 0);
      add('captures_complete', ok, drops.join('; '));
    }
  }
  if (o.crossTraffic) {
    const { expected, started, failed } = o.crossTraffic;
    const missing = expected.filter((n) => !started.includes(n));
    const problems = [...missing.map((n) => `cross_traffic[${n}] never started`), ...failed];
    add('cross_traffic_ran', problems.length === 0, problems.length ? problems.join('; ')
      : `${started.length} of ${expected.length} cross-traffic item(s) started, none failed during ${period}`);
  }
  if (o.eventLogs) {
    // Chrome writes the log in pieces; a browser killed mid-write leaves a piece cut short.
    const problems = [];
    const found = [];
    for (const side of ['a', 'b']) {
      const files = o.eventLogs[side] ?? [];
      if (!files.length) problems.push(`${side} wrote no RTC event log`);
      for (const f of files) {
        if (f.bytes === 0) problems.push(`${f.file} is empty`);
        else if (!f.begins_with_log_start) problems.push(`${f.file} does not start with the log's start event`);
        else if (f.complete_bytes < f.bytes) problems.push(`${f.file} is cut short: ${f.bytes - f.complete_bytes} of its ${f.bytes} bytes end mid-record`);
        found.push(`${f.file} ${f.bytes} bytes`);
      }
    }
    add('event_log_complete', problems.length === 0, problems.length ? problems.join('; ') : found.join(', '));
  }
  return { valid: checks.every((c) => c.ok !== false), checks };
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
    return [name, ok, `the uml guest's timers (netem's and TBF's; the host's pings answered through a netem delay ${t.samples} times in ${t.seconds} s): ` +
      `${ok ? 'the latest' : 'one'} fired ${t.max_ms.toFixed(1)} ms late${ok ? ` (bound ${bound} ms)` : `, over the bound of ${bound} ms`}, ` +
      `${t.late_10ms} more than 10 ms and ${t.late_100ms} more than 100 ms late${ok ? '' : `: ${why}`} ` +
      `(bound: ${bound} ms on every path)`];
  }
  return [name, null, `not measured: the ${backend} backend's qdiscs (the host kernel's) report neither release times nor timer lateness`];
}

/**
 * The check `uml_lossless_outside_qdisc`: the guest's devices and its input backlog dropped no packet since the
 * network was up (loss the scenario did not ask for, which the qdiscs' own counters do not show).
 * @param {import('../netem/uml/health.js').GuestDrops | null} drops
 * @returns {[string, boolean, string]}
 */
export function guestLossless(drops) {
  const name = 'uml_lossless_outside_qdisc';
  if (!drops) return [name, false, 'the uml guest\'s probe wrote no device counters (uml-links.jsonl): its losses outside the qdiscs are unknown'];
  const moved = Object.entries(drops.drops);
  if (!moved.length) {
    return [name, true, `in ${drops.seconds} s since the network was up no device of the guest (rx/tx dropped, errors, missed, fifo, over) ` +
      'and not its input backlog dropped a packet'];
  }
  return [name, false, `the uml guest lost packets outside its qdiscs in ${drops.seconds} s since the network was up: ` +
    `${moved.map(([k, n]) => `${k} +${n}`).join(', ')}: loss the scenario did not ask for`];
}

/** The validity of a run that did not complete: the error that stopped it. @param {string} message */
export const runNotCompleted = (message) => ({ valid: false, checks: [{ name: 'run_completed', ok: false, detail: message }] });
