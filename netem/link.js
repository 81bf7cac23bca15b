// @ts-check
// The link model shared by both backends: pure functions that check a scenario's link and fill in every default
// (each discipline's defaults are Linux's), so that a link means the same thing under tc and under the userspace
// bottleneck. Errors name the field, e.g. `network.forward.qdisc.kind: "codle" is not one of fifo, codel, ...`.
import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';

export const QDISC_KINDS = ['fifo', 'codel', 'pie', 'sfq', 'fq_codel', 'prio'];
export const LEAF_KINDS = QDISC_KINDS.filter((k) => k !== 'prio');

/** Linux's defaults per discipline (tc-codel(8), tc-pie(8), tc-sfq(8), tc-fq_codel(8); pfifo = txqueuelen 1000). */
export const QDISC_DEFAULTS = Object.freeze({
  fifo: { limit_packets: 1000 },
  codel: { target_ms: 5, interval_ms: 100, limit_packets: 1000, ecn: false },
  pie: { target_ms: 15, tupdate_ms: 15, alpha: 2, beta: 20, limit_packets: 1000, ecn: false },
  sfq: { limit_packets: 127, quantum_bytes: 1514, perturb_s: 0, divisor: 1024 },
  fq_codel: { target_ms: 5, interval_ms: 100, limit_packets: 10240, quantum_bytes: 1514, flows: 1024, ecn: true },
  prio: {},
});

/** Parameters each discipline accepts (besides `kind`). */
const QDISC_PARAMS = {
  fifo: ['limit_packets', 'limit_bytes', 'limit_ms'],
  codel: ['target_ms', 'interval_ms', 'limit_packets', 'ecn'],
  pie: ['target_ms', 'tupdate_ms', 'alpha', 'beta', 'limit_packets', 'ecn'],
  sfq: ['limit_packets', 'limit_ms', 'quantum_bytes', 'perturb_s', 'divisor'],
  fq_codel: ['target_ms', 'interval_ms', 'limit_packets', 'quantum_bytes', 'flows', 'ecn'],
  prio: ['bands'],
};
const LINK_PARAMS = ['delay_ms', 'jitter_ms', 'loss_percent', 'rate', 'qdisc'];
const RATE_PARAMS = ['kbit', 'schedule', 'trace', 'burst_bytes'];

/** One MTU-sized Ethernet frame: the smallest bucket TBF accepts on a veth, and SFQ's unit for limit_ms. */
export const FRAME_BYTES = 1514;
/** Default token bucket depth: one frame above the minimum (a bucket of exactly one frame can round below it). */
export const DEFAULT_BURST_BYTES = 2 * FRAME_BYTES;

/** The default scenario's links: 1 Mbit/s, 25 ms each way, DropTail 300 ms forward; reverse 25 ms, no rate limit. */
export const DEFAULT_FORWARD_LINK = Object.freeze({ delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_ms: 300 } });
export const DEFAULT_REVERSE_LINK = Object.freeze({ delay_ms: 25 });

/**
 * @typedef {{ kind: string, [k: string]: any }} Qdisc
 * @typedef {{ kbit?: number, schedule?: {at_s: number, kbit: number}[], trace?: string, burst_bytes: number }} Rate
 * @typedef {{ delay_ms: number, jitter_ms: number, loss_percent: number, rate: Rate | null, qdisc: Qdisc }} Link
 */

export class LinkError extends Error {}

/** @param {string} field @param {string} msg */
const fail = (field, msg) => { throw new LinkError(`${field}: ${msg}`); };

/** @param {any} v */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * @param {any} v @param {string} field
 * @param {{ min?: number, max?: number, exclusiveMin?: boolean, integer?: boolean }} [o]
 */
function checkNumber(v, field, o = {}) {
  if (typeof v !== 'number' || !Number.isFinite(v)) fail(field, `${JSON.stringify(v)} is not a number`);
  if (o.integer && !Number.isInteger(v)) fail(field, `${v} is not an integer`);
  if (o.min !== undefined && (o.exclusiveMin ? v <= o.min : v < o.min)) fail(field, `${v} must be ${o.exclusiveMin ? '>' : '>='} ${o.min}`);
  if (o.max !== undefined && v > o.max) fail(field, `${v} must be <= ${o.max}`);
  return v;
}

/** @param {any} obj @param {string[]} allowed @param {string} field @param {string} what */
function checkKeys(obj, allowed, field, what) {
  if (!isObject(obj)) fail(field, `must be an object`);
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) fail(`${field}.${k}`, `is not a parameter of ${what}; allowed: ${allowed.join(', ')}`);
  }
}

/**
 * The first rate of a link in kbit/s (what fifo/sfq limit_ms are computed at), or null without a rate limit.
 * A trace's first rate is taken as one 1500-byte opportunity per ms = 12 Mbit/s only if nothing else is known,
 * so limit_ms with a trace is refused instead (the trace's rate varies).
 * @param {Rate | null} rate
 */
export function firstKbit(rate) {
  if (!rate) return null;
  if (rate.kbit !== undefined) return rate.kbit;
  if (rate.schedule) return rate.schedule[0].kbit;
  return null;
}

/**
 * Normalize a rate: null, or {kbit | schedule | trace, burst_bytes}. A trace path is made absolute against baseDir
 * and must exist.
 * @param {any} rate @param {string} field @param {string} baseDir
 * @returns {Rate | null}
 */
export function normalizeRate(rate, field, baseDir) {
  if (rate === undefined || rate === null) return null;
  checkKeys(rate, RATE_PARAMS, field, 'rate');
  const given = ['kbit', 'schedule', 'trace'].filter((k) => rate[k] !== undefined);
  if (given.length !== 1) fail(field, `needs exactly one of kbit, schedule, trace (got ${given.join(', ') || 'none'})`);
  /** @type {Rate} */
  const out = { burst_bytes: DEFAULT_BURST_BYTES };
  if (rate.burst_bytes !== undefined) out.burst_bytes = checkNumber(rate.burst_bytes, `${field}.burst_bytes`, { min: FRAME_BYTES, integer: true });
  if (rate.kbit !== undefined) out.kbit = checkNumber(rate.kbit, `${field}.kbit`, { min: 0, exclusiveMin: true, max: 1e7 });
  if (rate.schedule !== undefined) {
    if (!Array.isArray(rate.schedule) || rate.schedule.length === 0) fail(`${field}.schedule`, 'must be a non-empty list of {at_s, kbit}');
    out.schedule = rate.schedule.map((/** @type {any} */ step, /** @type {number} */ i) => {
      const f = `${field}.schedule[${i}]`;
      checkKeys(step, ['at_s', 'kbit'], f, 'a schedule step');
      return { at_s: checkNumber(step.at_s, `${f}.at_s`, { min: 0 }), kbit: checkNumber(step.kbit, `${f}.kbit`, { min: 0, exclusiveMin: true, max: 1e7 }) };
    });
    // @ts-ignore out.schedule set above
    const steps = out.schedule;
    if (steps[0].at_s !== 0) fail(`${field}.schedule[0].at_s`, `the schedule must start at 0 (got ${steps[0].at_s})`);
    for (let i = 1; i < steps.length; i++) {
      if (steps[i].at_s <= steps[i - 1].at_s) fail(`${field}.schedule[${i}].at_s`, `must be later than the step before (${steps[i - 1].at_s})`);
    }
  }
  if (rate.trace !== undefined) {
    if (typeof rate.trace !== 'string' || rate.trace === '') fail(`${field}.trace`, 'must be a file name');
    const path = resolvePath(baseDir, rate.trace);
    if (!existsSync(path)) fail(`${field}.trace`, `file ${path} does not exist`);
    out.trace = path;
  }
  return out;
}

/**
 * Normalize one discipline: every Linux default filled in; fifo ends with exactly one of limit_packets / limit_bytes
 * (limit_ms -> bytes at the first rate); sfq limit_ms -> packets of 1514 bytes at the first rate.
 * @param {any} q @param {string} field @param {number | null} kbit the link's first rate
 * @param {boolean} [leaf] true inside a prio band (no nested prio)
 * @returns {Qdisc}
 */
export function normalizeQdisc(q, field, kbit, leaf = false) {
  if (q === undefined || q === null) q = { kind: 'fifo' };
  if (!isObject(q)) fail(field, 'must be an object with a kind');
  const kinds = leaf ? LEAF_KINDS : QDISC_KINDS;
  if (!kinds.includes(q.kind)) fail(`${field}.kind`, `${JSON.stringify(q.kind)} is not one of ${kinds.join(', ')}`);
  const kind = /** @type {keyof typeof QDISC_DEFAULTS} */ (q.kind);
  checkKeys(q, ['kind', ...QDISC_PARAMS[kind]], field, kind);
  /** @type {Qdisc} */
  const out = { kind, ...QDISC_DEFAULTS[kind] };
  const ms = { min: 0, exclusiveMin: true };
  const int1 = { min: 1, integer: true };
  /** @type {Record<string, object>} */
  const rules = {
    target_ms: ms, interval_ms: ms, tupdate_ms: ms, limit_ms: ms,
    limit_packets: kind === 'sfq' ? { min: 2, integer: true } : int1, limit_bytes: int1,
    alpha: { min: 0, max: 32, integer: true }, beta: { min: 0, max: 32, integer: true },
    quantum_bytes: { min: 64, integer: true }, perturb_s: { min: 0 },
    divisor: { min: 1, max: 65536, integer: true }, flows: { min: 1, max: 65536, integer: true },
  };
  for (const [k, v] of Object.entries(q)) {
    if (k === 'kind' || k === 'bands') continue;
    if (k === 'ecn') {
      if (typeof v !== 'boolean') fail(`${field}.ecn`, `${JSON.stringify(v)} is not true or false`);
      out.ecn = v;
    } else {
      out[k] = checkNumber(v, `${field}.${k}`, rules[k]);
    }
  }
  if (kind === 'fifo') {
    const limits = ['limit_packets', 'limit_bytes', 'limit_ms'].filter((k) => q[k] !== undefined);
    if (limits.length > 1) fail(field, `give only one of limit_packets, limit_bytes, limit_ms (got ${limits.join(', ')})`);
    if (q.limit_bytes !== undefined || q.limit_ms !== undefined) delete out.limit_packets;
    if (q.limit_ms !== undefined) {
      if (kbit === null) fail(`${field}.limit_ms`, 'needs a constant or scheduled rate to turn milliseconds into bytes');
      out.limit_bytes = Math.max(1, Math.round((q.limit_ms * /** @type {number} */ (kbit)) / 8));
      delete out.limit_ms;
    }
  }
  if (kind === 'sfq' && q.limit_ms !== undefined) {
    // A limit_packets equal to the default may be one a JSON Schema validator filled in (ajv useDefaults): limit_ms wins.
    if (q.limit_packets !== undefined && q.limit_packets !== QDISC_DEFAULTS.sfq.limit_packets) fail(field, 'give only one of limit_packets, limit_ms');
    if (kbit === null) fail(`${field}.limit_ms`, 'needs a constant or scheduled rate to turn milliseconds into packets');
    out.limit_packets = Math.max(2, Math.round((q.limit_ms * /** @type {number} */ (kbit)) / 8 / FRAME_BYTES));
    delete out.limit_ms;
  }
  if (kind === 'prio') out.bands = normalizeBands(q.bands, `${field}.bands`, kbit);
  return out;
}

/**
 * Strict-priority bands: each band but the last lists the DSCPs it takes; the last takes the rest.
 * @param {any} bands @param {string} field @param {number | null} kbit
 */
function normalizeBands(bands, field, kbit) {
  if (!Array.isArray(bands) || bands.length < 2 || bands.length > 16) fail(field, 'must be a list of 2 to 16 bands');
  /** @type {Map<number, number>} */
  const seen = new Map();
  return bands.map((/** @type {any} */ band, /** @type {number} */ i) => {
    const f = `${field}[${i}]`;
    checkKeys(band, ['dscp', 'qdisc'], f, 'a prio band');
    const last = i === bands.length - 1;
    if (last && band.dscp !== undefined) fail(`${f}.dscp`, 'the last band takes every packet no other band takes: it must have no dscp list');
    if (!last && (!Array.isArray(band.dscp) || band.dscp.length === 0)) fail(`${f}.dscp`, 'every band but the last needs a non-empty dscp list');
    /** @type {{dscp?: number[], qdisc: Qdisc}} */
    const out = { qdisc: normalizeQdisc(band.qdisc, `${f}.qdisc`, kbit, true) };
    if (!last) {
      out.dscp = band.dscp.map((/** @type {any} */ d, /** @type {number} */ j) => {
        checkNumber(d, `${f}.dscp[${j}]`, { min: 0, max: 63, integer: true });
        if (seen.has(d)) fail(`${f}.dscp[${j}]`, `DSCP ${d} is already in band ${seen.get(d)}`);
        seen.set(d, i);
        return d;
      });
    }
    if (band.qdisc === undefined) fail(`${f}.qdisc`, 'is required');
    return out;
  });
}

/**
 * Normalize one link (a direction): every default filled in.
 * @param {any} link the scenario's link (may be undefined: schema defaults)
 * @param {string} field e.g. "network.forward"
 * @param {string} [baseDir] directory that relative trace paths are relative to
 * @returns {Link}
 */
export function normalizeLink(link, field, baseDir = process.cwd()) {
  if (link === undefined || link === null) link = {};
  checkKeys(link, LINK_PARAMS, field, 'a link');
  const rate = normalizeRate(link.rate, `${field}.rate`, baseDir);
  const kbit = firstKbit(rate);
  const qdisc = normalizeQdisc(link.qdisc, `${field}.qdisc`, kbit);
  if (!rate && qdisc.kind !== 'fifo') fail(`${field}.qdisc`, `${qdisc.kind} needs a rate: without a rate limit nothing ever queues`);
  return {
    delay_ms: checkNumber(link.delay_ms ?? 25, `${field}.delay_ms`, { min: 0, max: 10000 }),
    jitter_ms: checkNumber(link.jitter_ms ?? 0, `${field}.jitter_ms`, { min: 0, max: 10000 }),
    loss_percent: checkNumber(link.loss_percent ?? 0, `${field}.loss_percent`, { min: 0, max: 100 }),
    rate,
    qdisc,
  };
}

/**
 * Normalize a scenario's network: absent directions get the default scenario's links.
 * @param {any} network scenario.network (may be undefined)
 * @param {string} [baseDir]
 * @returns {{ forward: Link, reverse: Link }}
 */
export function normalizeNetwork(network, baseDir) {
  if (network === undefined || network === null) network = {};
  checkKeys(network, ['forward', 'reverse'], 'network', 'network');
  return {
    forward: normalizeLink(network.forward ?? DEFAULT_FORWARD_LINK, 'network.forward', baseDir),
    reverse: normalizeLink(network.reverse ?? DEFAULT_REVERSE_LINK, 'network.reverse', baseDir),
  };
}

/**
 * Every qdisc kind a (normalized) discipline tree uses, e.g. prio -> ['prio', 'fifo', 'fq_codel'].
 * @param {Qdisc} q
 * @returns {string[]}
 */
export function qdiscKinds(q) {
  if (q.kind !== 'prio') return [q.kind];
  return [...new Set(['prio', ...q.bands.flatMap((/** @type {any} */ b) => qdiscKinds(b.qdisc))])];
}
