// @ts-check
// Loading a scenario file for netem's own CLI and tests: YAML -> friendly link checks -> JSON Schema (ajv, defaults
// filled) -> normalized links. The harness has its own loader (harness/scenario.js) built on the same pieces.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import Ajv from 'ajv';
import { normalizeNetwork } from './link.js';

const SCHEMA_PATH = fileURLToPath(new URL('../scenarios/schema.json', import.meta.url));

/** @type {import('ajv').ValidateFunction | null} */
let validate = null;
function validator() {
  if (!validate) {
    // @ts-ignore ajv's default export is the class
    const ajv = new Ajv({ useDefaults: true, allErrors: false, strict: false });
    validate = ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')));
  }
  return validate;
}

/**
 * One sentence from ajv's first error, naming the field as a dotted path.
 * @param {import('ajv').ErrorObject[]} errors
 */
export function formatAjvError(errors) {
  const e = errors[0];
  const field = e.instancePath.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.') || '(scenario)';
  const p = /** @type {any} */ (e.params);
  if (e.keyword === 'enum') return `${field}: is not one of ${p.allowedValues.join(', ')}`;
  if (e.keyword === 'additionalProperties') return `${field}.${p.additionalProperty}: is not a known field`;
  return `${field}: ${e.message}`;
}

/**
 * Validate and normalize a parsed scenario object: defaults filled, network links normalized.
 * @param {any} raw parsed YAML/JSON (undefined or null: the default scenario)
 * @param {string} [baseDir] for relative trace paths
 */
export function normalizeScenario(raw, baseDir = process.cwd()) {
  const scenario = structuredClone(raw ?? {});
  if (typeof scenario !== 'object' || Array.isArray(scenario)) throw new Error('scenario: must be a mapping');
  // Our own checks first: their messages name the field and the allowed values precisely.
  const network = normalizeNetwork(scenario.network, baseDir);
  const v = validator();
  if (!v(scenario)) throw new Error(formatAjvError(/** @type {any} */ (v.errors)));
  scenario.network = network;
  return scenario;
}

/**
 * Load a scenario file (YAML or JSON); no path gives the default scenario.
 * @param {string} [path]
 */
export function loadScenarioNetwork(path) {
  if (!path) return normalizeScenario({});
  const text = readFileSync(path, 'utf8');
  let raw;
  try {
    raw = YAML.parse(text);
  } catch (e) {
    throw new Error(`${path}: not valid YAML: ${/** @type {Error} */ (e).message}`);
  }
  try {
    return normalizeScenario(raw, dirname(resolve(path)));
  } catch (e) {
    throw new Error(`${path}: ${/** @type {Error} */ (e).message}`);
  }
}
