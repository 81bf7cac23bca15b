// @ts-check
// Property-based tests of the scenario model (fast-check): scenarios generated from the schema itself (its types,
// bounds, enums and each discipline's parameters), then mutated (a field set to any JSON value, a field removed, an
// unknown field added). Every one is either accepted, and then normalising it again changes nothing and the result
// is still schema-valid, or refused with a ScenarioError whose every problem names the field; never another
// exception. The command line answers a refused one with exit status 2 and the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { normalizeScenario, schemaPath, ScenarioError } from '../model.js';

const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const definitions = schema.definitions;
const strictValidate = new Ajv({ strict: false, allErrors: true }).compile(schema);
/** Generated runs per property: enough to reach every discipline and mutation often, small enough for the suite. */
const RUNS = 400;

/** @param {any} node */
const resolve = (node) => {
  if (!node.$ref) return node;
  if (node.$ref.startsWith('#/properties/')) return schema.properties[node.$ref.replace('#/properties/', '')];
  return definitions[node.$ref.replace('#/definitions/', '')];
};

/**
 * An arbitrary for a schema node, following its type, bounds and enums (what this schema uses).
 * @param {any} node
 * @returns {fc.Arbitrary<any>}
 */
function fromSchema(node) {
  node = resolve(node);
  if (node === definitions.qdisc) return qdisc(false);
  if (node === definitions.leaf_qdisc) return qdisc(true);
  if (node === definitions.rate) return rate();
  if (node === schema.properties.cpu_load) return cpuLoad();
  if (node.items?.required?.includes('resume_s')) return pauses(node);
  if (node === schema.properties.cross_traffic.items) return crossTraffic();
  // A chain's fields keep their defaults here (the mutations still reach them); chains: the property below.
  if (node === schema.properties.network.properties.hops) return fc.constant([]);
  if (node === schema.properties.call.properties.path) return fc.constant(null);
  if (node.enum) return fc.constantFrom(...node.enum);
  const type = Array.isArray(node.type) ? node.type.find((/** @type {string} */ t) => t !== 'null') : node.type;
  const nullable = Array.isArray(node.type) && node.type.includes('null');
  const orNull = (/** @type {fc.Arbitrary<any>} */ a) => (nullable ? fc.oneof(a, fc.constant(null)) : a);
  const min = node.minimum ?? node.exclusiveMinimum ?? 0;
  const max = node.maximum ?? 1e6;
  switch (type) {
    case 'integer': return orNull(fc.integer({ min: Math.ceil(min + (node.exclusiveMinimum !== undefined ? 1 : 0)), max: Math.min(max, 2 ** 31) }));
    case 'number': return orNull(fc.double({ min: node.exclusiveMinimum !== undefined ? min + 1e-3 : min, max, noNaN: true }));
    case 'boolean': return orNull(fc.boolean());
    case 'string': if (node.pattern?.startsWith('^[a-z]')) return orNull(fc.constantFrom('c1', 'v2', 'x', 'call_two'));
      return orNull(node.pattern === '^--' ? fc.string().map((s) => `--${s}`) : fc.string({ minLength: node.minLength ?? 0, maxLength: node.maxLength ?? 20 }));
    case 'array': return fc.array(fromSchema(node.items), { minLength: node.minItems ?? 0, maxLength: Math.min(node.maxItems ?? 3, 3) });
    case 'object': {
      /** @type {Record<string, fc.Arbitrary<any>>} */
      const fields = {};
      for (const [k, v] of Object.entries(node.properties ?? {})) fields[k] = fromSchema(v);
      return fc.record(fields, { requiredKeys: node.required ?? [] });
    }
    default: return fc.constant(null);
  }
}

/** A discipline: a kind from the schema's enum, then that kind's own parameters (its `then` branch). @param {boolean} leaf */
function qdisc(leaf) {
  const kinds = definitions.qdisc.properties.kind.enum.filter((/** @type {string} */ k) => !(leaf && k === 'prio'));
  return fc.constantFrom(...kinds).chain((kind) => {
    const branch = definitions.qdisc.allOf.find((/** @type {any} */ b) => b.if.properties.kind.const === kind).then;
    /** @type {Record<string, fc.Arbitrary<any>>} */
    const fields = {};
    for (const [k, v] of Object.entries(branch.properties)) if (k !== 'kind') fields[k] = fromSchema(v);
    return fc.record(fields, { requiredKeys: branch.required ?? [] }).map((params) => ({ kind, ...params }));
  });
}

/** A rate: null, or one of kbit and schedule (a trace needs a file), with or without burst_bytes. */
function rate() {
  const p = definitions.rate.properties;
  const step = fromSchema(p.schedule.items);
  return fc.oneof(
    fc.constant(null),
    fc.record({ kbit: fromSchema(p.kbit), burst_bytes: fromSchema(p.burst_bytes) }, { requiredKeys: ['kbit'] }),
    fc.record({ schedule: fc.array(step, { minLength: 1, maxLength: 3 }), burst_bytes: fromSchema(p.burst_bytes) }, { requiredKeys: ['schedule'] }),
  );
}

/**
 * A cpu_load within this machine's CPUs (the bound the schema cannot hold: the model checks it), its priority with
 * fifo only (the model's check too); the mutations reach the refusals.
 */
function cpuLoad() {
  const cores = fc.double({ min: 1e-3, max: os.cpus().length, noNaN: true });
  return fc.oneof(
    fc.record({ cores, policy: fc.constant('other') }, { requiredKeys: ['cores'] }),
    fc.record({ cores, policy: fc.constant('fifo'), priority: fromSchema(schema.properties.cpu_load.properties.priority) },
      { requiredKeys: ['cores', 'policy'] }),
  );
}

/**
 * A call's pauses: none, or one early in the call (the model refuses pauses outside the call's media period, which a
 * pause drawn anywhere in the schema's range nearly always is); the mutations reach the refusals.
 * @param {any} node
 */
function pauses(node) {
  const item = node.items.properties;
  const pause = fc.tuple(fromSchema(item.at_s).map((at) => Math.min(at, 5)), fc.double({ min: 0.5, max: 5, noNaN: true }))
    .map(([at_s, length]) => ({ at_s, resume_s: at_s + length }));
  return fc.oneof(fc.constant([]), fc.array(pause, { minLength: 1, maxLength: 1 }));
}

/** The fields of RFC 8868 5.1's short-flow model: a tcp_short item needs them all, a tcp item none (scenarios/model.js). */
const SHORT_FLOW_FIELDS = ['initially_on', 'size_bytes', 'idle_mean_s', 'seed'];

/**
 * A cross-traffic item whose kind and short-flow fields agree (the model's check, which the schema cannot hold): kind
 * tcp without them, kind tcp_short with all four, initially_on at most its flows, size_bytes as [min, max]; the
 * mutations reach the refusals.
 */
function crossTraffic() {
  const p = schema.properties.cross_traffic.items.properties;
  /** @type {Record<string, fc.Arbitrary<any>>} */
  const common = {};
  for (const [k, v] of Object.entries(p)) if (k !== 'kind' && !SHORT_FLOW_FIELDS.includes(k)) common[k] = fromSchema(v);
  const nonNull = (/** @type {string} */ k) => fromSchema(p[k]).filter((v) => v !== null);
  return fc.oneof(
    fc.record({ kind: fc.constant('tcp'), ...common }, { requiredKeys: ['kind'] }),
    fc.record({ kind: fc.constant('tcp_short'), ...common, initially_on: nonNull('initially_on'), size_bytes: nonNull('size_bytes'),
      idle_mean_s: nonNull('idle_mean_s'), seed: nonNull('seed') }, { requiredKeys: /** @type {any} */ (['kind', ...SHORT_FLOW_FIELDS]) })
      .map((/** @type {any} */ item) => ({ ...item, initially_on: Math.min(item.initially_on, item.flows ?? p.flows.default),
        size_bytes: [...item.size_bytes].sort((x, y) => x - y) })),
  );
}

/** Every path to a value inside a document, as lists of keys. @param {any} doc @returns {(string | number)[][]} */
function paths(doc, prefix = /** @type {(string | number)[]} */ ([])) {
  if (doc === null || typeof doc !== 'object') return [prefix];
  const inner = Object.entries(doc).flatMap(([k, v]) => paths(v, [...prefix, Array.isArray(doc) ? Number(k) : k]));
  return [prefix, ...inner];
}

/** @param {any} doc @param {(string | number)[]} at @param {(parent: any, key: string | number) => void} change */
function edit(doc, at, change) {
  if (at.length === 0) return;
  let parent = doc;
  for (const k of at.slice(0, -1)) parent = parent[k];
  change(parent, at[at.length - 1]);
}

/** A generated scenario with 0-3 mutations applied. */
const mutations = fc.array(fc.tuple(fc.nat(), fc.constantFrom('set', 'delete', 'add'), fc.anything()), { maxLength: 3 });
const mutatedScenario = fc.tuple(fromSchema(schema), mutations).map(([doc, changes]) => mutate(doc, changes));

/**
 * A hop of a chain: a rate, a delay and a discipline (each kind but prio, with its defaults) from the schema's bounds
 * and enum.
 * A link's every other field is the general generator's (network.forward and reverse): a chain of links generated
 * whole is seldom valid at every hop at once, and this test is about the chain.
 */
const hop = fc.record({
  delay_ms: fromSchema(definitions.link.properties.delay_ms),
  rate: fc.record({ kbit: fromSchema(definitions.rate.properties.kbit) }),
  qdisc: fc.constantFrom(...definitions.qdisc.properties.kind.enum.filter((/** @type {string} */ k) => k !== 'prio')).map((kind) => ({ kind })),
}, { requiredKeys: ['rate'] });

/**
 * A chain (network.hops with each call's path) on an otherwise default scenario, with 0-3 mutations: 1-4 hops, each
 * call's path left out, a run of hops that may reach past the chain, or any list the schema allows; a backend from
 * its enum.
 */
const mutatedChain = fc.record({
  backend: fc.constantFrom(...schema.properties.backend.enum),
  hops: fc.array(hop, { minLength: 1, maxLength: 4 }),
  paths: fc.array(fc.oneof(
    fc.constant(undefined),
    fc.tuple(fc.nat(4), fc.nat(2)).map(([first, more]) => Array.from({ length: more + 1 }, (_, k) => first + k)),
    fromSchema({ ...schema.properties.call.properties.path, type: 'array' }),
  ), { minLength: 1, maxLength: 3 }),
}).chain(({ backend, hops, paths }) => mutations.map((changes) => mutate({
  backend, duration_s: 30, network: { hops },
  calls: paths.map((p, i) => ({ id: `c${i}`, ...(p === undefined ? {} : { path: p }) })),
}, changes)));

/**
 * `doc` with the mutations applied (each a pick among its paths, and what to do there).
 * @param {any} doc @param {[number, string, unknown][]} changes
 */
function mutate(doc, changes) {
  for (const [pick, how, value] of changes) {
    const all = paths(doc).filter((p) => p.length > 0);
    if (all.length === 0) break;
    const at = all[pick % all.length];
    if (how === 'set') edit(doc, at, (parent, key) => { parent[key] = value; });
    else if (how === 'delete') edit(doc, at, (parent, key) => { if (Array.isArray(parent)) parent.splice(Number(key), 1); else delete parent[key]; });
    else edit(doc, at, (parent, key) => { const target = parent[key]; if (target && typeof target === 'object' && !Array.isArray(target)) target.unknown_field = value; });
  }
  return doc;
}

/** A problem names its field: `a.b[0].c: ...`, or speaks of the whole file. */
const NAMES_A_FIELD = /^((\w+(\[\d+\])?)(\.\w+(\[\d+\])?)*: |the scenario: |\(top level\): |the file must hold)/;

/**
 * Checks the property over `docs`: each accepted (then schema-valid, stable under normalising again, and `accepted`
 * holds) or refused with problems that name their fields; both outcomes reached.
 * @param {fc.Arbitrary<any>} docs @param {number} seed @param {(normalised: any) => void} [accepted] more to hold of an accepted one
 * @returns {{ accepted: number, refused: number }}
 */
function acceptedOrRefused(docs, seed, accepted = () => {}) {
  const n = { accepted: 0, refused: 0 };
  fc.assert(fc.property(docs, (doc) => {
    let normalised;
    try {
      normalised = normalizeScenario(doc);
    } catch (err) {
      if (!(err instanceof ScenarioError)) throw err;
      for (const p of err.problems) assert.match(p, NAMES_A_FIELD);
      n.refused++;
      return;
    }
    n.accepted++;
    assert.ok(strictValidate(normalised), `normalised but not schema-valid: ${JSON.stringify(strictValidate.errors)}`);
    assert.deepEqual(normalizeScenario(normalised), normalised, 'normalising again changes nothing');
    accepted(normalised);
  }), { numRuns: RUNS, seed });
  assert.ok(n.accepted > RUNS / 20 && n.refused > RUNS / 20, `both outcomes reached: ${n.accepted} accepted, ${n.refused} refused`);
  return n;
}

test('generated and mutated scenarios are accepted (then stable and schema-valid) or refused naming the field', (t) => {
  const n = acceptedOrRefused(mutatedScenario, 20261123);
  t.diagnostic(`${n.accepted} accepted, ${n.refused} refused`);
});

test('generated and mutated chains of hops are accepted (every path consecutive hops of the chain) or refused naming the field', (t) => {
  let chains = 0;
  const n = acceptedOrRefused(mutatedChain, 8867, (s) => {
    if (!s.network.hops.length) { // a mutation took the hops away: no call may name one
      for (const call of s.calls) assert.equal(call.path, null);
      return;
    }
    chains++;
    assert.ok(s.backend !== 'kernel' && s.backend !== 'uml', `a chain under the ${s.backend} backend`);
    for (const call of s.calls) {
      assert.ok(call.path.length > 0 && call.path.every((/** @type {number} */ h, /** @type {number} */ k) =>
        h === call.path[0] + k && h < s.network.hops.length), `calls ${call.id}: path ${JSON.stringify(call.path)} in ${s.network.hops.length} hops`);
    }
  });
  assert.ok(chains > RUNS / 40, `${chains} accepted with hops`);
  t.diagnostic(`${n.accepted} accepted (${chains} with hops), ${n.refused} refused`);
});

test('the command line answers refused scenarios with exit status 2 and the field, never a crash', () => {
  const cli = fileURLToPath(new URL('../../harness/cli.js', import.meta.url));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-fuzz-'));
  const refusedDocs = fc.sample(mutatedScenario.filter((doc) => {
    try { normalizeScenario(doc); return false; } catch (err) { return err instanceof ScenarioError; }
  }), { numRuns: 8, seed: 7 });
  for (const [i, doc] of refusedDocs.entries()) {
    const file = path.join(dir, `s${i}.json`);
    fs.writeFileSync(file, JSON.stringify(doc));
    const r = spawnSync(process.execPath, [cli, '--scenario', file, '--out', path.join(dir, `run${i}`)], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /is not valid:\n {2}- /);
    // A stack frame is an indented `at NAME (FILE:LINE:COL)` line (a sentence may say "must start at 0 (got ...)").
    assert.doesNotMatch(r.stderr, /^\s+at .*\(.*:\d+:\d+\)$|TypeError|RangeError/m, 'no stack trace');
    assert.equal(fs.existsSync(path.join(dir, `run${i}`)), false, 'nothing run');
  }
  fs.rmSync(dir, { recursive: true, force: true });
});
