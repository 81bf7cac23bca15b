// @ts-check
// Scheduled changes (netem/steps.js): the event each step gets, with its scheduled and applied times; the staged step
// (netem/step.sh) on this host's bash and tc; the kernel backend reporting a tc change that fails; the userspace
// bottleneck's schedule log as the backend reads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkSteps, readStepResult, stepArgs, stepEvent } from '../steps.js';
import { KernelBackend } from '../kernel-backend.js';
import { UserspaceBottleneck } from '../userspace.js';
import { normalizeScenario } from '../../scenarios/model.js';

/** A link as the scenario model normalises it. @param {any} link */
const normalizeLink = (link) => normalizeScenario({ network: { forward: link } }).network.forward;
const LINK = normalizeLink({ delay_ms: 20, rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 0.3, kbit: 500 }] },
  delay_schedule: [{ at_s: 0.2, delay_ms: 80 }], qdisc: { kind: 'fifo', limit_ms: 100 } });

test('linkSteps: the rate\'s steps after its first, then the delay\'s, each with its place in its list', () => {
  assert.deepEqual(linkSteps(LINK), [
    { kind: 'capacity', index: 1, at_s: 0.3, event: { event: 'capacity_change', kbit: 500 } },
    { kind: 'delay', index: 0, at_s: 0.2, event: { event: 'delay_change', delay_ms: 80 } }]);
});

test('stepEvent: scheduled at t0 + at_s, late_ms from the measured applied time; not applied is not ok, with the error', () => {
  const t0_ms = 1_800_000_000_000;
  const step = linkSteps(LINK)[0];
  const e = stepEvent({ step, direction: 'forward', t0_ms, applied_ns: (t0_ms + 300) * 1e6 + 12_345_678, by: 'tc', extra: { started_ns: 1 } });
  assert.deepEqual(e, { event: 'capacity_change', kbit: 500, direction: 'forward', at_s: 0.3, scheduled_ns: (t0_ms + 300) * 1e6,
    applied_ns: (t0_ms + 300) * 1e6 + 12_345_678, late_ms: 12.346, ok: true, by: 'tc', started_ns: 1 });
  const failed = stepEvent({ step, direction: 'reverse', t0_ms, applied_ns: null, by: 'tc', error: 'exit 2' });
  assert.equal(failed.ok, false);
  assert.equal(failed.late_ms, null);
  assert.equal(failed.error, 'exit 2');
});

test('step.sh: waits until its time on its own clock, hands tc the change, records when and tc\'s exit status; a failed change is named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-step-'));
  try {
    assert.equal(spawnSync('mkfifo', [join(dir, 'tick')]).status, 0);
    const due_ms = Date.now() + 300;
    const out = join(dir, 'step');
    // No such device: tc fails at once, whatever the host has.
    const argv = stepArgs(join(dir, 'tick'), due_ms, ['tc', 'qdisc', 'change', 'dev', 'rtclab-no-dev0', 'root', 'netem', 'delay', '10ms'], out);
    const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const done = readStepResult(out);
    assert.ok(done, 'a result');
    assert.notEqual(done.code, 0);
    assert.match(done.stderr, /rtclab-no-dev0/);
    // Handed to tc at its time (not before; on a loaded machine bash may wake late, never early), tc returned after.
    assert.ok(done.handed_ns >= due_ms * 1e6, `handed ${(done.handed_ns / 1e6 - due_ms).toFixed(2)} ms after its time`);
    assert.ok(done.returned_ns >= done.handed_ns);
    assert.equal(done.applied_ns, null, 'tc stopped at the failed change: it never answered after it');
    // A command tc carries out (a harmless show): applied once tc answered the next command, before it returned.
    const ok = stepArgs(join(dir, 'tick'), Date.now() + 100, ['tc', 'qdisc', 'show', 'dev', 'lo'], out);
    assert.equal(spawnSync(ok[0], ok.slice(1)).status, 0);
    const shown = readStepResult(out);
    assert.ok(shown && shown.code === 0 && shown.applied_ns !== null, JSON.stringify(shown));
    assert.ok(shown.handed_ns <= shown.applied_ns && shown.applied_ns <= shown.returned_ns, JSON.stringify(shown));
    writeFileSync(out, '0 12 13');
    assert.equal(readStepResult(out), null, 'a line not yet whole');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => stepArgs('t', 0, ['ip', 'link'], 'o'), /runs tc, not ip/);
});

test('kernel backend: a step whose tc change fails gives an event that is not ok, naming the command and tc\'s error', { timeout: 20000 }, async () => {
  const runDir = mkdtempSync(join(tmpdir(), 'rtclab-kstep-'));
  /** @type {any[]} */
  const events = [];
  // No namespace prefix: tc runs here, where r's devices (r-eth1, ifb-fwd) do not exist, so both changes fail.
  const backend = new KernelBackend({ nsExec: [], links: { forward: LINK, reverse: normalizeLink({}) }, runDir, detached: true,
    log: () => {}, onEvent: (e) => events.push(e) });
  try {
    const t0_ms = Date.now();
    backend.startSchedules(t0_ms);
    await new Promise((r) => setTimeout(r, 600));
    await backend.schedulesSettled();
    assert.equal(events.length, 2);
    for (const e of events) {
      assert.equal(e.ok, false);
      assert.equal(e.applied_ns, null);
      assert.equal(e.late_ms, null);
      assert.equal(e.scheduled_ns, Math.round((t0_ms + e.at_s * 1000) * 1e6));
      assert.ok(e.started_ns >= e.scheduled_ns, `tc was handed the change at its time (started_ns ${e.started_ns}, scheduled_ns ${e.scheduled_ns}; ${e.error})`);
    }
    const delay = events.find((e) => e.event === 'delay_change');
    assert.match(delay.error, /^`tc qdisc change dev ifb-fwd root handle 1: netem .*delay 80000us.*` in r exited with \d+: .*ifb-fwd/);
  } finally {
    await backend.stop();
    rmSync(runDir, { recursive: true, force: true });
  }
});

test('userspace: a step\'s record in the schedule log, for the restart it belongs to, from whole lines only', () => {
  const runDir = mkdtempSync(join(tmpdir(), 'rtclab-slog-'));
  try {
    const b = new UserspaceBottleneck({ nsExec: [], direction: 'forward', link: LINK, runDir, t0_ns: 0n });
    assert.equal(b.stepRecord('capacity', 1, 1), null, 'no log yet');
    const rec = (/** @type {number} */ restart, /** @type {number} */ in_force_ns) =>
      JSON.stringify({ kind: 'capacity', index: 1, at_s: 0.3, restart, t0_ns: 1, in_force_ns, noticed_ns: in_force_ns + 5000, kbit: 500 });
    writeFileSync(b.schedule, `${rec(0, 100)}\n${rec(1, 200).slice(0, 20)}`);
    assert.equal(b.stepRecord('capacity', 1, 1), null, 'the record before the restart, and one still being written');
    writeFileSync(b.schedule, `${rec(0, 100)}\nnot json\n${rec(1, 200)}\n`);
    assert.equal(b.stepRecord('capacity', 1, 1)?.in_force_ns, 200);
    assert.equal(b.stepRecord('delay', 0, 1), null);
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
});
