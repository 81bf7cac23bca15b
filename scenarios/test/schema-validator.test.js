// @ts-check
// The scenario schema's validator is compiled once and then loaded from its cache (scenarios/schema-validator.js):
// the first call writes ajv's standalone code under a name of the schema's hash, a later call loads that file, and the
// loaded validator fills the same defaults and reports the same errors as the one ajv compiles in memory.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { schemaPath, defaultScenarioPath } from '../model.js';
import { scenarioValidator } from '../schema-validator.js';

const schemaText = fs.readFileSync(schemaPath, 'utf8');

test('the first call compiles and writes the code under the schema\'s hash; a later call loads that file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-validator-'));
  try {
    scenarioValidator(schemaText, dir);
    const files = fs.readdirSync(dir);
    assert.equal(files.length, 1, files.join(', '));
    assert.match(files[0], /^scenario-validator-[0-9a-f]{16}\.cjs$/);
    // Replaced by a module of our own, the file is what the next call returns: it is loaded, not compiled again.
    fs.writeFileSync(path.join(dir, files[0]), 'module.exports = function marker() { return "from the cache"; };');
    assert.equal(/** @type {any} */ (scenarioValidator(schemaText, dir))(), 'from the cache');
    // Another schema is another name: compiled, not served the first one's code.
    const other = JSON.stringify({ ...JSON.parse(schemaText), title: 'another' });
    scenarioValidator(other, dir);
    assert.equal(fs.readdirSync(dir).length, 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the loaded validator fills the defaults and words the errors as the compiled one', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-validator-'));
  try {
    const compiled = scenarioValidator(schemaText, dir); // compiled in this process (the cache was empty)
    const loaded = scenarioValidator(schemaText, dir); // from the file it wrote
    assert.notEqual(compiled, loaded);
    const docs = [
      YAML.parse(fs.readFileSync(defaultScenarioPath, 'utf8')),
      {},
      { duration_s: -1, network: { forward: { rate: { kbit: 'fast' }, qdisc: { kind: 'red' } } }, extra: 1 },
      { calls: [{ codec: 'VP8' }, { tracks: [{ dscp: 99 }] }], cross_traffic: [{ kind: 'tcp', flows: 0 }] },
    ];
    const errorCounts = [];
    for (const doc of docs) {
      const a = structuredClone(doc);
      const b = structuredClone(doc);
      assert.equal(compiled(a), loaded(b), JSON.stringify(doc));
      assert.deepEqual(b, a, 'the same defaults filled in');
      const strip = (/** @type {any[] | null | undefined} */ errors) => (errors ?? []).map(
        ({ instancePath, schemaPath: where, keyword, params, message }) => ({ instancePath, where, keyword, params, message }));
      assert.deepEqual(strip(loaded.errors), strip(compiled.errors));
      errorCounts.push((compiled.errors ?? []).length);
    }
    // The valid documents have none; the broken ones each have several to compare.
    assert.deepEqual(errorCounts.map((n) => n > 0), [false, false, true, true]);
    assert.ok(errorCounts[2] >= 4 && errorCounts[3] >= 2, String(errorCounts));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
