// @ts-check
// What `rtclab call` exits with (harness/exit-status.js): a complete run is judged by the analyzer too, and one the
// analyzer failed on, or left without a validity, is not called valid.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT, analysedValidity, callExitStatus } from '../exit-status.js';

test('callExitStatus: 0 valid, 3 invalid (the harness\'s or the analyzer\'s checks), 1 not complete, 4 not judged by the analyzer', () => {
  const judged = (/** @type {boolean} */ valid) => ({ exit: 0, validity: { valid } });
  const code = (/** @type {any} */ o) => callExitStatus(o).code;
  assert.equal(code({ status: 'complete', valid: true, analysis: judged(true) }), EXIT.valid);
  assert.equal(code({ status: 'complete', valid: false, analysis: judged(false) }), EXIT.invalid);
  assert.equal(code({ status: 'complete', valid: true, analysis: judged(false) }), EXIT.invalid, 'the analyzer\'s own check failed');
  assert.equal(code({ status: 'incomplete', valid: false, analysis: null }), EXIT.notCompleted);
  // The analyzer failed, could not start, or wrote no validity: never 0, whatever the harness's checks said.
  const failed = callExitStatus({ status: 'complete', valid: true, analysis: { exit: 1, validity: null } });
  assert.deepEqual(failed, { code: EXIT.notAnalysed, why: 'the analyzer failed (exit status 1)' });
  assert.equal(code({ status: 'complete', valid: true, analysis: { exit: 2, validity: { valid: true } } }), EXIT.notAnalysed, 'a stale metrics.json');
  assert.equal(code({ status: 'complete', valid: true, analysis: { exit: null, validity: null } }), EXIT.notAnalysed);
  assert.equal(callExitStatus({ status: 'complete', valid: true, analysis: { exit: 0, validity: null } }).why,
    'the analyzer wrote no validity into metrics.json');
  // Not analysed on purpose (--no-analyze): the harness's checks decide.
  assert.equal(code({ status: 'complete', valid: true, analysis: null }), EXIT.valid);
  assert.equal(code({ status: 'complete', valid: false, analysis: null }), EXIT.invalid);
  assert.equal(EXIT.notAnalysed, 4);
});

test('analysedValidity: metrics.json\'s validity, or null when the file is missing, damaged or holds none', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-exit-'));
  try {
    assert.equal(analysedValidity(dir), null, 'no metrics.json');
    writeFileSync(join(dir, 'metrics.json'), '{"validity": {"valid": tru');
    assert.equal(analysedValidity(dir), null, 'cut short');
    writeFileSync(join(dir, 'metrics.json'), '{"validity": null}');
    assert.equal(analysedValidity(dir), null);
    writeFileSync(join(dir, 'metrics.json'), '{"validity": {"valid": "yes"}}');
    assert.equal(analysedValidity(dir), null, 'not a boolean');
    writeFileSync(join(dir, 'metrics.json'), '{"validity": {"valid": false, "checks": [{"name": "dscp_marked", "ok": false}]}}');
    assert.deepEqual(analysedValidity(dir), { valid: false, checks: [{ name: 'dscp_marked', ok: false }] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
