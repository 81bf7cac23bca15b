// @ts-check
// A link after the schema: the schema (scenarios/schema.json) checks each field and fills in every default; this
// module derives what a schema cannot (a queue limit given in milliseconds becomes bytes or packets at the link's
// first rate, a trace named by its short name or a path becomes an absolute path that exists, with its offset) and
// checks what a schema cannot express (a schedule that starts at 0 and moves forward, an offset within the trace, a
// DSCP in one band only, an AQM with a rate to queue behind). Its output, the
// normalised link, is what both backends and the analyzer read, and it is still valid against the schema, so
// normalising twice changes nothing.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The shipped traces (Mahimahi's cellular traces, netem/traces/README.md), named in a link by their file name. */
export const TRACES_DIR = resolvePath(dirname(fileURLToPath(import.meta.url)), '..', 'netem', 'traces');

/** One MTU-sized Ethernet frame: the smallest bucket TBF accepts on a veth, and SFQ's unit for limit_ms. */
export const FRAME_BYTES = 1514;

/**
 * @typedef {{ kind: string, [k: string]: any }} Qdisc
 * @typedef {{ kbit?: number, schedule?: {at_s: number, kbit: number}[], trace?: string, trace_offset_ms?: number,
 *   burst_bytes: number }} Rate
 * @typedef {{ at_s: number, delay_ms: number }} DelayStep
 * @typedef {{ mean_on_ms: number, mean_off_ms: number }} Outage
 * @typedef {{ p_percent: number, r_percent: number, bad_loss_percent: number, good_loss_percent: number }} GeModel
 * @typedef {{ delay_ms: number, delay_schedule: DelayStep[], jitter_ms: number, loss_percent: number,
 *   outage: Outage | null, loss_gemodel: GeModel | null, rate: Rate | null, qdisc: Qdisc }} Link
 */

export class LinkError extends Error {}

/** @param {string} field @param {string} msg @returns {never} */
const fail = (field, msg) => { throw new LinkError(`${field}: ${msg}`); };

/**
 * The first rate of a link in kbit/s (what fifo/sfq limit_ms are computed at), or null: no rate limit, or a trace
 * (its rate varies, so limit_ms with a trace is refused).
 * @param {Rate | null} rate
 */
export function firstKbit(rate) {
  if (!rate) return null;
  if (rate.kbit !== undefined) return rate.kbit;
  if (rate.schedule) return rate.schedule[0].kbit;
  return null;
}

/**
 * @param {Rate | null} rate schema-valid @param {string} field @param {string} baseDir
 * @returns {Rate | null}
 */
function normalizeRate(rate, field, baseDir) {
  if (!rate) return null;
  const out = { ...rate };
  if (rate.schedule) {
    const steps = rate.schedule;
    if (steps[0].at_s !== 0) fail(`${field}.schedule[0].at_s`, `the schedule must start at 0 (got ${steps[0].at_s})`);
    for (let i = 1; i < steps.length; i++) {
      if (steps[i].at_s <= steps[i - 1].at_s) fail(`${field}.schedule[${i}].at_s`, `must be later than the step before (${steps[i - 1].at_s})`);
    }
    out.schedule = steps.map((s) => ({ ...s }));
  }
  if (rate.trace !== undefined) {
    out.trace = tracePath(rate.trace, `${field}.trace`, baseDir);
    out.trace_offset_ms = rate.trace_offset_ms ?? 0;
    const period = tracePeriodMs(out.trace, `${field}.trace`);
    if (out.trace_offset_ms >= period) {
      fail(`${field}.trace_offset_ms`, `${out.trace_offset_ms} is not less than the trace's period, its last timestamp (${period} ms in ${out.trace})`);
    }
  }
  return out;
}

/**
 * A trace's file: a short name (a bare file name of netem/traces/) or a path relative to the scenario's directory.
 * A bare name that is both is refused rather than silently shadowed. An absolute path (a normalised link) stays.
 * @param {string} name @param {string} field @param {string} baseDir
 */
function tracePath(name, field, baseDir) {
  const path = resolvePath(baseDir, name);
  const shipped = !name.includes('/') ? resolvePath(TRACES_DIR, name) : null;
  if (shipped && existsSync(shipped)) {
    if (existsSync(path) && path !== shipped) {
      fail(field, `${name} names both the shipped trace ${shipped} and the file ${path}: write ./${name} for the file`);
    }
    return shipped;
  }
  if (!existsSync(path)) {
    fail(field, `file ${path} does not exist` + (name.includes('/') ? '' : ` and ${name} is not a shipped trace (netem/traces/README.md lists them)`));
  }
  return path;
}

/**
 * A trace's period: its last timestamp, in ms (the bottleneck checks every line when it reads the file).
 * @param {string} path @param {string} field
 */
function tracePeriodMs(path, field) {
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
  const last = Number(lines[lines.length - 1].trim());
  if (!Number.isInteger(last) || last <= 0) fail(field, `${path} must end in a timestamp > 0 ms, its period (got ${JSON.stringify(lines[lines.length - 1])})`);
  return last;
}

/**
 * fifo and sfq limits given in ms become bytes (fifo) or 1514-byte packets (sfq) at the link's first rate; a prio's
 * bands are checked and normalised one by one.
 * @param {Qdisc} q schema-valid, defaults filled in @param {string} field @param {number | null} kbit
 * @returns {Qdisc}
 */
function normalizeQdisc(q, field, kbit) {
  const out = { ...q };
  if (q.limit_ms !== undefined) {
    if (kbit === null) fail(`${field}.limit_ms`, 'needs a constant or scheduled rate to turn milliseconds into a queue size');
    const bytes = (q.limit_ms * /** @type {number} */ (kbit)) / 8;
    delete out.limit_ms;
    if (q.kind === 'fifo') out.limit_bytes = Math.max(1, Math.round(bytes));
    else out.limit_packets = Math.max(2, Math.round(bytes / FRAME_BYTES)); // sfq
  }
  if (q.kind === 'prio') {
    out.bands = normalizeBands(q.bands, `${field}.bands`, kbit);
    out.meters = normalizeMeters(q.meters, `${field}.meters`, q.bands.length);
  }
  return out;
}

/**
 * Rate meters (docs/bottleneck.md "Meters"): every field written out; a demote goes to the last band unless it says.
 * @param {any[]} meters schema-valid @param {string} field @param {number} nBands
 */
function normalizeMeters(meters, field, nBands) {
  return meters.map((m, i) => {
    const action = { ...m.action };
    if (action.kind === 'demote') {
      action.to_band ??= nBands - 1;
      if (action.to_band >= nBands) fail(`${field}[${i}].action.to_band`, `is ${action.to_band}, but the prio has bands 0 to ${nBands - 1}`);
    }
    return { dscp: [...m.dscp], per: m.per, window_ms: m.window_ms, limit_kbit: m.limit_kbit, action };
  });
}

/**
 * Strict-priority bands: each band but the last lists the DSCPs it takes; the last takes the rest.
 * @param {{dscp?: number[], qdisc: Qdisc, rate_cap?: {kbit: number, burst_bytes?: number} | null}[]} bands
 * @param {string} field @param {number | null} kbit
 */
function normalizeBands(bands, field, kbit) {
  /** @type {Map<number, number>} */
  const bandOf = new Map();
  return bands.map((band, i) => {
    const f = `${field}[${i}]`;
    const last = i === bands.length - 1;
    if (last && band.dscp !== undefined) fail(`${f}.dscp`, 'the last band takes every packet no other band takes: it must have no dscp list');
    if (!last && band.dscp === undefined) fail(`${f}.dscp`, 'every band but the last needs a non-empty dscp list');
    for (const [j, d] of (band.dscp ?? []).entries()) {
      if (bandOf.has(d)) fail(`${f}.dscp[${j}]`, `DSCP ${d} is already in band ${bandOf.get(d)}`);
      bandOf.set(d, i);
    }
    const qdisc = normalizeQdisc(band.qdisc, `${f}.qdisc`, kbit);
    const rate_cap = band.rate_cap ? { ...band.rate_cap } : null;
    return band.dscp ? { dscp: [...band.dscp], qdisc, rate_cap } : { qdisc, rate_cap };
  });
}

/**
 * netem's Gilbert-Elliott parameters, every one written out: r defaults to 100 - p (tc-netem(8): with 1-h = 100 and
 * 1-k = 0, the Bernoulli model of loss p), which a schema default cannot say; one loss model per link, as netem.
 * @param {any} ge schema-valid, or null @param {number} lossPercent @param {string} field
 * @returns {GeModel | null}
 */
function normalizeGeModel(ge, lossPercent, field) {
  if (!ge) return null;
  if (lossPercent > 0) fail(field, `cannot be combined with loss_percent ${lossPercent} (one loss model per link, as netem has)`);
  return { p_percent: ge.p_percent, r_percent: ge.r_percent ?? 100 - ge.p_percent, bad_loss_percent: ge.bad_loss_percent,
    good_loss_percent: ge.good_loss_percent };
}

/**
 * Normalise one direction's link.
 * @param {Link & Record<string, any>} link schema-valid, with the schema's defaults filled in
 * @param {string} field e.g. "network.forward", for messages
 * @param {string} baseDir what a relative trace path is relative to
 * @returns {Link}
 */
export function normalizeLink(link, field, baseDir) {
  const rate = normalizeRate(link.rate, `${field}.rate`, baseDir);
  const qdisc = normalizeQdisc(link.qdisc, `${field}.qdisc`, firstKbit(rate));
  if (!rate && qdisc.kind !== 'fifo') fail(`${field}.qdisc`, `${qdisc.kind} needs a rate: without a rate limit nothing ever queues`);
  const delay_schedule = (link.delay_schedule ?? []).map((step, i, steps) => {
    if (i > 0 && step.at_s <= steps[i - 1].at_s) fail(`${field}.delay_schedule[${i}].at_s`, `must be later than the step before (${steps[i - 1].at_s})`);
    return { at_s: step.at_s, delay_ms: step.delay_ms };
  });
  const outage = link.outage ? { mean_on_ms: link.outage.mean_on_ms, mean_off_ms: link.outage.mean_off_ms } : null;
  const loss_gemodel = normalizeGeModel(link.loss_gemodel, link.loss_percent, `${field}.loss_gemodel`);
  return { delay_ms: link.delay_ms, delay_schedule, jitter_ms: link.jitter_ms, loss_percent: link.loss_percent, outage,
    loss_gemodel, rate, qdisc };
}

/** The largest propagation delay the link ever has (sizes the delay line's queue). @param {Link} link */
export function maxDelayMs(link) {
  return Math.max(link.delay_ms, ...link.delay_schedule.map((s) => s.delay_ms));
}

/**
 * Every qdisc kind a (normalised) discipline tree uses, e.g. prio -> ['prio', 'fifo', 'fq_codel'].
 * @param {Qdisc} q
 * @returns {string[]}
 */
export function qdiscKinds(q) {
  if (q.kind !== 'prio') return [q.kind];
  return [...new Set(['prio', ...q.bands.flatMap((/** @type {any} */ b) => qdiscKinds(b.qdisc))])];
}
