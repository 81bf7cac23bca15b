// @ts-check
// The scenario model, the one place a scenario is read: YAML in, the normalised scenario out. The JSON Schema in
// scenarios/schema.json is the single definition of the format and the only source of defaults (ajv fills them in);
// link.js then derives what the schema cannot (queue limits in ms -> bytes or packets). netem, the harness and the
// client read the normalised scenario; the userspace bottleneck gets its normalised links; the Python analyzer
// validates the normalised scenario it finds in a run's manifest against the same schema.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { LinkError, normalizeLink } from './link.js';
import { namedClipPath } from '../media/clips.js';
import { normalizeChain } from './chain.js';
import { scenarioValidator } from './schema-validator.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const schemaPath = path.join(repoRoot, 'scenarios', 'schema.json');
export const defaultScenarioPath = path.join(repoRoot, 'scenarios', 'default.yaml');

export class ScenarioError extends Error {
  /** @param {string} file @param {string[]} problems */
  constructor(file, problems) {
    super(`scenario ${file} is not valid:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ScenarioError';
    this.problems = problems;
  }
}

const schemaText = fs.readFileSync(schemaPath, 'utf8');
const schema = JSON.parse(schemaText);
const validateSchema = scenarioValidator(schemaText);

/** Every queue discipline a link's `qdisc` may be: the schema's enum, the one list of them. @type {string[]} */
export const QDISC_KINDS = schema.definitions.qdisc.properties.kind.enum;

/** @param {string} instancePath */
function fieldName(instancePath) {
  return instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replaceAll('/', '.') || '(top level)';
}

/**
 * Turns ajv's errors into one sentence per problem, each naming the field and what it may be.
 * @param {import('ajv').ErrorObject[]} errors
 */
export function describeErrors(errors) {
  const problems = [];
  for (const e of errors) {
    if (/\/oneOf\/\d+\//.test(e.schemaPath)) continue; // a branch of a oneOf: the oneOf error says it better
    const field = fieldName(e.instancePath);
    switch (e.keyword) {
      case 'enum':
        problems.push(`${field}: ${JSON.stringify(e.data)} is not one of ${e.params.allowedValues.join(', ')}`);
        break;
      case 'additionalProperties': {
        const allowed = Object.keys(e.parentSchema?.properties ?? {});
        const where = field === '(top level)' ? 'the scenario' : field;
        problems.push(`${where}: unknown field "${e.params.additionalProperty}"` +
          (allowed.length ? ` (allowed: ${allowed.join(', ')})` : ''));
        break;
      }
      case 'oneOf':
        if (e.schemaPath.includes('/rate/')) problems.push(`${field}: give exactly one of kbit, schedule, trace (trace_offset_ms only with trace)`);
        else problems.push(`${field}: ${e.message}`);
        break;
      case 'not':
        problems.push(`${field}: these fields exclude each other: ${conflictingFields(e)}`);
        break;
      case 'if':
      case 'anyOf':
        break; // the branch's own errors say what is wrong
      case 'type':
        problems.push(`${field}: must be ${e.params.type} (got ${JSON.stringify(e.data)})`);
        break;
      default:
        problems.push(`${field}: ${e.message}${e.data !== undefined && typeof e.data !== 'object' ? ` (got ${JSON.stringify(e.data)})` : ''}`);
    }
  }
  return [...new Set(problems)];
}

/** @param {import('ajv').ErrorObject} e */
function conflictingFields(e) {
  const present = e.data && typeof e.data === 'object' ? Object.keys(e.data) : [];
  const named = new Set(JSON.stringify(e.schema).match(/"[a-z_]+"/g)?.map((s) => s.slice(1, -1)) ?? []);
  return present.filter((k) => named.has(k)).join(', ');
}

/**
 * Validates a scenario object and fills in the schema's defaults (in place); links are not normalised yet.
 * @param {any} scenario
 * @param {string} [label] the file name used in error messages
 * @returns {any}
 */
export function validateScenario(scenario, label = 'scenario') {
  if (scenario === null || typeof scenario !== 'object' || Array.isArray(scenario)) {
    throw new ScenarioError(label, ['the file must hold a YAML mapping (key: value lines)']);
  }
  if (!validateSchema(scenario)) throw new ScenarioError(label, describeErrors(validateSchema.errors ?? []));
  return scenario;
}

/**
 * Validates a scenario object (a parsed file, or an already normalised scenario: normalising twice changes nothing),
 * fills in the schema's defaults and normalises its links. The object is not changed.
 * @param {any} doc
 * @param {{ label?: string, baseDir?: string }} [o] label: the file name in messages; baseDir: where relative trace
 *   files and video clips are looked for (a clip's name, media/clips.js, is not a path)
 * @returns {any} the normalised scenario
 */
export function normalizeScenario(doc, { label = 'scenario', baseDir = process.cwd() } = {}) {
  const scenario = validateScenario(withCallsList(structuredClone(doc)), label);
  const problems = [...normalizeCalls(scenario), ...normalizeCpuLoad(scenario), ...checkShortFlows(scenario)];
  if (problems.length) throw new ScenarioError(label, problems);
  try {
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      scenario.network[direction] = normalizeLink(scenario.network[direction], `network.${direction}`, baseDir);
    }
  } catch (err) {
    if (err instanceof LinkError) throw new ScenarioError(label, [err.message]);
    throw err;
  }
  const chainProblems = normalizeChain(scenario, plainLink(), baseDir);
  if (chainProblems.length) throw new ScenarioError(label, chainProblems);
  const untraceable = [...tracesTheBackendCannotPlay(scenario), ...callDelaysTheNetworkCannotApply(scenario)];
  if (untraceable.length) throw new ScenarioError(label, untraceable);
  for (const call of [scenario.call, ...scenario.calls]) {
    // A clip's name (media/clips.js: default, default-60fps, natural) is the file rtclab makes; anything else a path.
    if (call.video_clip) call.video_clip = namedClipPath(call.video_clip) ?? path.resolve(baseDir, call.video_clip);
  }
  return scenario;
}

/** @type {any} */
let plain = null;

/** The normalised plain link: what a direction left out becomes (the schema's defaults). */
export function plainLink() {
  plain ??= normalizeLink(validateScenario(withCallsList({})).network.forward, 'network.forward', process.cwd());
  return structuredClone(plain);
}

/**
 * A trace is played by the userspace bottleneck only: tc, under the kernel and uml backends, has no trace player
 * (netem/kernel.js kernelNeeds refuses it there too, for a backend chosen on the command line).
 * @param {any} scenario normalised links
 * @returns {string[]}
 */
function tracesTheBackendCannotPlay(scenario) {
  if (scenario.backend !== 'kernel' && scenario.backend !== 'uml') return [];
  return /** @type {const} */ (['forward', 'reverse']).filter((d) => scenario.network[d].rate?.trace)
    .map((d) => `network.${d}.rate.trace: the ${scenario.backend} backend cannot play a trace (tc has no trace player); use backend userspace (or auto)`);
}

/**
 * A call's own delay (`calls[].delay_ms`) is applied by the userspace bottleneck's delay line, keyed by the call's
 * 5-tuple (docs/netem.md, "Delay per call"): tc has no such line, and a link's delay_schedule would leave the call's
 * packets on a delay of their own while the schedule changes every other flow's, which is no case the RFC asks for.
 * @param {any} scenario normalised links
 * @returns {string[]}
 */
function callDelaysTheNetworkCannotApply(scenario) {
  const delayed = scenario.calls.map((/** @type {any} */ c, /** @type {number} */ i) => [c, i]).filter(([c]) => c.delay_ms !== null);
  if (!delayed.length) return [];
  const [, first] = delayed[0];
  const problems = [];
  if (scenario.backend === 'kernel' || scenario.backend === 'uml') {
    problems.push(`calls[${first}].delay_ms: the ${scenario.backend} backend cannot give a call a delay of its own (tc has no delay keyed by a call's 5-tuple); use backend userspace (or auto)`);
  }
  if (scenario.network.hops?.length) {
    // Each hop's bottleneck would give the call's flow its delay in place of the hop's: n hops, n times the delay.
    problems.push(`calls[${first}].delay_ms: a call's own delay is not supported with network.hops (each hop has its delay_ms; a call's path delay is the sum of its hops')`);
  }
  for (const d of /** @type {const} */ (['forward', 'reverse'])) {
    if (scenario.network[d].delay_schedule?.length) {
      problems.push(`calls[${first}].delay_ms: a call's own delay cannot be combined with network.${d}.delay_schedule (the schedule would change every flow's delay but the call's)`);
    }
  }
  return problems;
}

/**
 * Gives every scenario the list of its calls, before the schema fills in defaults: a scenario without `calls` has
 * the one call of `call`; each item of `calls` takes the fields it leaves out from `call` (then from the schema).
 * A normalised scenario passes through unchanged (its items are complete).
 * @param {any} doc
 */
function withCallsList(doc) {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return doc;
  const template = doc.call && typeof doc.call === 'object' && !Array.isArray(doc.call) ? doc.call : {};
  if (doc.calls === undefined) doc.calls = [structuredClone(template)];
  else if (Array.isArray(doc.calls)) {
    doc.calls = doc.calls.map((/** @type {any} */ item) =>
      (item && typeof item === 'object' && !Array.isArray(item) ? { ...structuredClone(template), ...item } : item));
  }
  return doc;
}

/**
 * What the schema cannot say about calls: ids (derived where null, unique), start and stop inside the run, each
 * track complete (a field left null takes its call's value), and a run without a call (`calls: []`) only when it has
 * cross traffic to measure.
 * @param {any} scenario validated, defaults filled in
 * @returns {string[]} problems, one sentence each
 */
function normalizeCalls(scenario) {
  const problems = [];
  if (scenario.calls.length === 0 && scenario.cross_traffic.length === 0) {
    problems.push('calls: [] asks for a run without a call, and the scenario has no cross_traffic: nothing would be ' +
      'measured (give cross_traffic items, or leave calls out for the one call of `call`)');
  }
  /** @type {Set<string>} */
  const ids = new Set();
  scenario.call.tracks = completeTracks(scenario.call, 'call', problems);
  scenario.calls.forEach((/** @type {any} */ call, /** @type {number} */ i) => {
    const where = `calls[${i}]`;
    call.id ??= `c${i + 1}`;
    if (ids.has(call.id)) problems.push(`${where}.id: "${call.id}" names two calls (each call needs its own id)`);
    ids.add(call.id);
    if (call.start_s >= scenario.duration_s) {
      problems.push(`${where}.start_s: ${call.start_s} is not before the end of the run (duration_s ${scenario.duration_s})`);
    }
    if (call.stop_s !== null && call.stop_s <= call.start_s) {
      problems.push(`${where}.stop_s: ${call.stop_s} must be after start_s (${call.start_s})`);
    }
    call.tracks = completeTracks(call, where, problems);
    problems.push(...pauseProblems(call, where, scenario.duration_s));
  });
  return problems;
}

/**
 * A call's pauses must lie inside its media period (after start_s, resumed before stop_s or the end of the run),
 * each resume after its pause, in order and not overlapping (a pause that starts before the previous one resumed).
 * @param {any} call @param {string} where @param {number} duration_s
 * @returns {string[]}
 */
function pauseProblems(call, where, duration_s) {
  const problems = [];
  const end = call.stop_s ?? duration_s;
  const endName = call.stop_s === null ? `the end of the run (duration_s ${duration_s})` : `stop_s (${call.stop_s})`;
  call.pauses.forEach((/** @type {{at_s: number, resume_s: number}} */ p, /** @type {number} */ k) => {
    const at = `${where}.pauses[${k}]`;
    if (p.at_s <= call.start_s) problems.push(`${at}.at_s: ${p.at_s} must be after the call's start_s (${call.start_s})`);
    if (p.resume_s <= p.at_s) problems.push(`${at}.resume_s: ${p.resume_s} must be after at_s (${p.at_s})`);
    else if (p.resume_s >= end) problems.push(`${at}.resume_s: ${p.resume_s} must be before ${endName}`);
    const before = call.pauses[k - 1];
    if (before && p.at_s <= before.resume_s) {
      problems.push(`${at}.at_s: ${p.at_s} must be after the previous pause's resume_s (${before.resume_s}): pauses ` +
        'in order, not overlapping');
    }
  });
  return problems;
}

/** The fields of RFC 8868 5.1's short-flow model, which a tcp_short item must give and a tcp item must not. */
const SHORT_FLOW_FIELDS = ['initially_on', 'size_bytes', 'idle_mean_s', 'seed'];

/**
 * What the schema cannot say about short TCP flows (`kind: tcp_short`): the model's fields given (no default: each is
 * a choice of the case, the study file names its source), only there, and consistent.
 * @param {any} scenario validated, defaults filled in
 * @returns {string[]} problems, one sentence each
 */
function checkShortFlows(scenario) {
  const problems = [];
  scenario.cross_traffic.forEach((/** @type {any} */ item, /** @type {number} */ n) => {
    const where = `cross_traffic[${n}]`;
    if (item.kind !== 'tcp_short') {
      for (const f of SHORT_FLOW_FIELDS) if (item[f] !== null) problems.push(`${where}.${f}: only with kind tcp_short (this item is kind ${item.kind})`);
      return;
    }
    for (const f of SHORT_FLOW_FIELDS) if (item[f] === null) problems.push(`${where}.${f}: kind tcp_short needs it (RFC 8868 5.1's short-flow model)`);
    if (item.initially_on !== null && item.initially_on > item.flows) {
      problems.push(`${where}.initially_on: ${item.initially_on} is more than its flows (${item.flows})`);
    }
    if (item.size_bytes !== null && item.size_bytes[0] > item.size_bytes[1]) {
      problems.push(`${where}.size_bytes: [${item.size_bytes.join(', ')}] is not [min, max] with min <= max`);
    }
  });
  return problems;
}

/** The SCHED_FIFO priority of a fifo cpu_load that names none: the uml guest's (netem/uml/guest.js GUEST_FIFO_PRIORITY). */
export const CPU_LOAD_FIFO_PRIORITY = 10;

/**
 * What the schema cannot say about `cpu_load`: its cores within the machine's CPUs, and a priority with fifo only
 * (filled in there when left out). Absent stays absent: no load.
 * @param {any} scenario validated, defaults filled in
 * @param {number} [cpus] the machine's CPUs
 * @returns {string[]} problems, one sentence each
 */
export function normalizeCpuLoad(scenario, cpus = os.cpus().length) {
  const load = scenario.cpu_load;
  if (load === undefined) return [];
  const problems = [];
  if (load.cores > cpus) {
    problems.push(`cpu_load.cores: ${load.cores} is more than this machine's ${cpus} CPU(s)`);
  }
  if (load.policy === 'fifo') load.priority ??= CPU_LOAD_FIFO_PRIORITY;
  else if (load.priority !== undefined) {
    problems.push(`cpu_load.priority: ${load.priority} is a SCHED_FIFO priority, for policy fifo only (policy is ${load.policy})`);
  }
  return problems;
}

/**
 * A call's tracks, each complete: ids derived where null (v1, v2, ...), the call's values where a field is null.
 * @param {any} call @param {string} where @param {string[]} problems
 */
function completeTracks(call, where, problems) {
  /** @type {Set<string>} */
  const ids = new Set();
  return call.tracks.map((/** @type {any} */ track, /** @type {number} */ k) => {
    const full = {
      id: track.id ?? `v${k + 1}`,
      priority: track.priority ?? call.priority,
      network_priority: track.network_priority ?? call.network_priority,
      max_bitrate_kbps: track.max_bitrate_kbps ?? call.max_bitrate_kbps,
      dscp: track.dscp ?? call.dscp,
    };
    if (ids.has(full.id)) problems.push(`${where}.tracks[${k}].id: "${full.id}" names two tracks of the call`);
    ids.add(full.id);
    return full;
  });
}

/**
 * Reads a scenario file, applies command-line overrides, and returns the normalised scenario.
 * @param {string} [file] YAML file; the default scenario when absent
 * @param {{ duration_s?: number, backend?: string }} [overrides]
 */
export function loadScenario(file = defaultScenarioPath, overrides = {}) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ScenarioError(file, [`cannot read the file: ${/** @type {Error} */ (err).message}`]);
  }
  let doc;
  try {
    doc = YAML.parse(text, { prettyErrors: true });
  } catch (err) {
    throw new ScenarioError(file, [`not valid YAML: ${/** @type {Error} */ (err).message}`]);
  }
  if (doc && typeof doc === 'object') {
    for (const [key, value] of Object.entries(overrides)) if (value !== undefined) doc[key] = value;
  }
  // Trace files and clips named relative to the scenario file are found next to it.
  return normalizeScenario(doc, { label: file, baseDir: path.dirname(path.resolve(file)) });
}
