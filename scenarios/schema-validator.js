// @ts-check
// The scenario schema's ajv validator, compiled once per schema: ajv's standalone code for scenarios/schema.json is
// kept in node_modules/.cache/rtclab/, named by the SHA-256 of what makes the code (the schema, ajv's options and
// version), and every later process loads it (about 50 ms, against about 280 ms to import ajv and compile the schema
// in each of the many processes that read a scenario: the command lines, the study's checks, the tests). The code is
// ajv's own, the same it compiles in memory; a schema, option or ajv edited is a new name, compiled by the first
// process that reads it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE_DIR = path.join(repoRoot, 'node_modules', '.cache', 'rtclab');

// strict: false because definitions carry defaults that ajv applies where they are referenced.
const AJV_OPTIONS = Object.freeze({ useDefaults: true, allErrors: true, strict: false, verbose: true });

/**
 * The validator of a schema's text: loaded from the cache when this schema was compiled before, else compiled (and
 * its code written to the cache for the next process; a tree that cannot be written compiles each time).
 * @param {string} schemaText
 * @param {string} [cacheDir]
 * @returns {import('ajv').ValidateFunction}
 */
export function scenarioValidator(schemaText, cacheDir = CACHE_DIR) {
  const made = JSON.stringify([require('ajv/package.json').version, AJV_OPTIONS]);
  const hash = crypto.createHash('sha256').update(made).update(schemaText).digest('hex').slice(0, 16);
  const file = path.join(cacheDir, `scenario-validator-${hash}.cjs`);
  if (fs.existsSync(file)) {
    try {
      return require(file);
    } catch {
      // Written against another node_modules (the tree moved): compiled again below, and rewritten.
    }
  }
  const { Ajv } = require('ajv');
  const standaloneCode = require('ajv/dist/standalone').default;
  const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } });
  const validate = ajv.compile(JSON.parse(schemaText));
  try {
    fs.mkdirSync(cacheDir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`; // then renamed: a process reading the cache never sees half a file
    // The code requires ajv's runtime helpers by name; by their resolved paths it loads from any directory.
    const code = standaloneCode(ajv, validate).replace(/require\("(ajv\/[^"]+)"\)/g,
      (/** @type {string} */ _, /** @type {string} */ name) => `require(${JSON.stringify(require.resolve(name))})`);
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, file);
  } catch {
    // A read-only tree (or a full disk): this process keeps the validator it compiled.
  }
  return validate;
}
