// @ts-check
/**
 * Test helper: `call` objects as the harness injects them, through the scenario model itself (scenarios/model.js,
 * whose schema is the only source of defaults).
 */
import fs from 'node:fs';
import { normalizeScenario, schemaPath, ScenarioError } from '../../scenarios/model.js';

export const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));

/**
 * A scenario's `call` object as the harness has it: `settings` validated, every schema default filled in.
 * @param {Record<string, unknown>} [settings]
 * @returns {import('../config.js').CallSettings & { field_trials: string, chrome_flags: string[] } & Record<string, any>}
 */
export function scenarioCall(settings = {}) {
  return normalizeScenario({ call: settings }).call;
}

/** @param {any} doc */
const accepts = (doc) => {
  try {
    normalizeScenario(doc);
    return true;
  } catch (err) {
    if (err instanceof ScenarioError) return false;
    throw err;
  }
};

/** Whether the scenario model accepts `settings` as a scenario's `call`. @param {Record<string, unknown>} settings */
export const schemaAcceptsCall = (settings) => accepts({ call: settings });

/** Whether the scenario model accepts `interval_ms` as a scenario's `getstats.interval_ms`. @param {unknown} interval_ms */
export const schemaAcceptsInterval = (interval_ms) => accepts({ getstats: { interval_ms } });
