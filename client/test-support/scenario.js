// @ts-check
/**
 * Test helper: the scenario schema (scenarios/schema.json, the only source of defaults) and `call` objects as the
 * harness injects them, every default filled in by the schema itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const schema = JSON.parse(fs.readFileSync(path.join(repoRoot, 'scenarios', 'schema.json'), 'utf8'));

const ajv = new Ajv({ useDefaults: true, strict: false, allErrors: true });
const validateCall = ajv.compile(schema.properties.call);
const validateGetstats = ajv.compile(schema.properties.getstats);

/**
 * A scenario's `call` object as the harness has it: `settings` validated, every schema default filled in.
 * @param {Record<string, unknown>} [settings]
 * @returns {import('../config.js').CallSettings & { field_trials: string, chrome_flags: string[] } & Record<string, any>}
 */
export function scenarioCall(settings = {}) {
  const call = structuredClone(settings); // ajv fills the defaults in place
  if (!validateCall(call)) throw new Error(`bad call settings: ${JSON.stringify(validateCall.errors)}`);
  return /** @type {any} */ (call);
}

/** Whether the schema accepts `settings` as a scenario's `call`. @param {Record<string, unknown>} settings */
export const schemaAcceptsCall = (settings) => validateCall(structuredClone(settings));

/** Whether the schema accepts `interval_ms` as a scenario's `getstats.interval_ms`. @param {unknown} interval_ms */
export const schemaAcceptsInterval = (interval_ms) => validateGetstats({ interval_ms });
