// @ts-check
// Scenario loading for netem's CLI and tests: the harness's loader (YAML -> JSON Schema with defaults -> links
// normalized by netem/link.js), so a scenario means the same thing with and without a call.
import { loadScenario, defaultScenarioPath } from '../harness/scenario.js';

/**
 * Load and validate a scenario file; no path gives the default scenario (scenarios/default.yaml).
 * @param {string} [path]
 * @returns {any} the scenario with every default filled in and network.forward/reverse normalized
 */
export function loadScenarioNetwork(path) {
  return loadScenario(path ?? defaultScenarioPath);
}
