// @ts-check
// The scenario model, the one place a scenario is read: YAML in, the normalised scenario out. The JSON Schema in
// scenarios/schema.json is the single definition of the format and the only source of defaults (ajv fills them in);
// link.js then derives what the schema cannot (queue limits in ms -> bytes or packets). netem, the harness and the
// client read the normalised scenario; the userspace bottleneck gets its normalised links; the Python analyzer
// validates the normalised scenario it finds in a run's manifest against the same schema.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import YAML from 'yaml';
import { LinkError, normalizeLink } from './link.js';

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

// strict: false because definitions carry defaults that ajv applies where they are referenced.
const ajv = new Ajv({ useDefaults: true, allErrors: true, strict: false, verbose: true });
const validateSchema = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));

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
        if (e.schemaPath.includes('/rate/')) problems.push(`${field}: give exactly one of kbit, schedule, trace`);
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
 *   files and video clips are looked for
 * @returns {any} the normalised scenario
 */
export function normalizeScenario(doc, { label = 'scenario', baseDir = process.cwd() } = {}) {
  const scenario = validateScenario(structuredClone(doc), label);
  try {
    for (const direction of /** @type {const} */ (['forward', 'reverse'])) {
      scenario.network[direction] = normalizeLink(scenario.network[direction], `network.${direction}`, baseDir);
    }
  } catch (err) {
    if (err instanceof LinkError) throw new ScenarioError(label, [err.message]);
    throw err;
  }
  if (scenario.call.video_clip && !path.isAbsolute(scenario.call.video_clip)) {
    scenario.call.video_clip = path.resolve(baseDir, scenario.call.video_clip);
  }
  return scenario;
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
