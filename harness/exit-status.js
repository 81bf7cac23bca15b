// @ts-check
// What `rtclab call` exits with (README, docs/harness.md): 0 a valid run, 3 a complete run that failed a validity
// check (the harness's or the analyzer's), 1 a run that did not complete, 2 bad arguments (cli.js, before any run),
// 4 a complete run the analyzer could not judge: it failed, or wrote no validity into metrics.json.
import fs from 'node:fs';
import path from 'node:path';

export const EXIT = Object.freeze({ valid: 0, notCompleted: 1, badArguments: 2, invalid: 3, notAnalysed: 4 });

/**
 * The validity in metrics.json once the analyzer wrote it: the manifest's checks and the analyzer's own (dscp_marked,
 * docs/multiflow.md); null when metrics.json is missing, unreadable or holds no validity.
 * @param {string} runDir
 * @returns {{ valid: boolean, checks: any[] } | null}
 */
export function analysedValidity(runDir) {
  try {
    const validity = JSON.parse(fs.readFileSync(path.join(runDir, 'metrics.json'), 'utf8')).validity;
    return typeof validity?.valid === 'boolean' ? { valid: validity.valid, checks: validity.checks ?? [] } : null;
  } catch {
    return null;
  }
}

/**
 * The exit status of a call and why.
 * @param {{ status: string, valid: boolean, analysis: { exit: number | null, validity: { valid: boolean } | null } | null }} o
 *   status, valid: the manifest's; analysis: null when the analyzer was not run (--no-analyze, an interrupted run, no
 *   captures, a full disk), else its exit status (null: it could not be started) and the validity it wrote
 * @returns {{ code: number, why: string }}
 */
export function callExitStatus(o) {
  if (o.status !== 'complete') return { code: EXIT.notCompleted, why: `the run is ${o.status}` };
  if (o.analysis) {
    if (o.analysis.exit !== 0) {
      return { code: EXIT.notAnalysed, why: o.analysis.exit === null ? 'the analyzer could not be started'
        : `the analyzer failed (exit status ${o.analysis.exit})` };
    }
    if (!o.analysis.validity) return { code: EXIT.notAnalysed, why: 'the analyzer wrote no validity into metrics.json' };
    if (!o.analysis.validity.valid) return { code: EXIT.invalid, why: 'a validity check failed' };
  }
  return o.valid ? { code: EXIT.valid, why: 'valid' } : { code: EXIT.invalid, why: 'a validity check failed' };
}
