// @ts-check
// A link's scheduled changes (capacity and delay steps) and the event that reports each once a backend has applied it,
// with its time: scheduled (the call's t0 + at_s), applied (measured by the backend: docs/netem.md, "Scheduled
// changes"), and how late. Shared by the three backends (userspace.js, kernel-backend.js, uml/backend.js); the kernel
// and uml backends apply a step with step.sh, staged ahead of its time.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The staged step's job (kernel backend: in r; uml: in the guest, over hostfs). */
export const STEP_SCRIPT = fileURLToPath(new URL('./step.sh', import.meta.url));

/**
 * step.sh's arguments for one step: wait on `tick` (a FIFO nobody writes) until due_ms, then `tc` with the rest of
 * `tcArgv`; results in `out`.
 * @param {string} tick @param {number} due_ms wall clock @param {string[]} tcArgv ['tc', ...] @param {string} out
 */
export function stepArgs(tick, due_ms, tcArgv, out) {
  if (tcArgv[0] !== 'tc') throw new Error(`a staged step runs tc, not ${tcArgv[0]}`);
  return ['bash', STEP_SCRIPT, tick, String(Math.round(due_ms * 1000)), tcArgv.slice(1).join(' '), out];
}

/**
 * What step.sh left in `out` (its one line, "<tc's exit status> <handed us> <applied us> <returned us>") and tc's
 * stderr; null before it has written it. applied_ns: when tc had applied the change (null: it never said so).
 * @param {string} out
 * @returns {{ code: number, handed_ns: number, applied_ns: number | null, returned_ns: number, stderr: string } | null}
 */
export function readStepResult(out) {
  let line;
  try { line = readFileSync(out, 'utf8').trim(); } catch { return null; }
  const m = /^(\d+) (\d+) (\d+) (\d+)$/.exec(line);
  if (!m) return null;
  let stderr = '';
  try { stderr = readFileSync(`${out}.err`, 'utf8'); } catch { /* none */ }
  return { code: Number(m[1]), handed_ns: Number(m[2]) * 1000, applied_ns: m[3] === '0' ? null : Number(m[3]) * 1000,
    returned_ns: Number(m[4]) * 1000, stderr };
}

/**
 * @typedef {{ kind: 'capacity', index: number, at_s: number, event: { event: 'capacity_change', kbit: number } }
 *   | { kind: 'delay', index: number, at_s: number, event: { event: 'delay_change', delay_ms: number } }} Step
 *   index: its place in rate.schedule (1, 2, ...: the first is the rate before any step) or in delay_schedule (0, 1, ...)
 */

/**
 * Every scheduled change of a link, capacity steps first (each list in its own order).
 * @param {import('../scenarios/link.js').Link} link normalized
 * @returns {Step[]}
 */
export function linkSteps(link) {
  return [
    ...(link.rate?.schedule ?? []).slice(1).map((s, i) => /** @type {Step} */ ({ kind: 'capacity', index: i + 1, at_s: s.at_s,
      event: { event: 'capacity_change', kbit: s.kbit } })),
    ...link.delay_schedule.map((s, i) => /** @type {Step} */ ({ kind: 'delay', index: i, at_s: s.at_s,
      event: { event: 'delay_change', delay_ms: s.delay_ms } })),
  ];
}

/** Epoch ns of a wall-clock time in ms (Date.now()'s resolution: 1 ms). @param {number} ms */
export const msToNs = (ms) => Math.round(ms * 1e6);

/**
 * The event of one step: applied at applied_ns (epoch ns, null when it was not), or failed with `error`.
 * ok: the backend applied it (whether on time is the validity check schedule_applied's call).
 * @param {{ step: { at_s: number, event: Step['event'] }, direction: 'forward' | 'reverse', t0_ms: number,
 *   applied_ns: number | null, by: string, error?: string, extra?: Record<string, number> }} o
 *   extra: what else the backend measured (started_ns, noticed_ns)
 * @returns {import('./backend.js').CapacityChange | import('./backend.js').DelayChange}
 */
export function stepEvent(o) {
  const scheduled_ns = msToNs(o.t0_ms + o.step.at_s * 1000);
  const ok = o.applied_ns !== null && !o.error;
  const late_ms = o.applied_ns === null ? null : Math.round((o.applied_ns - scheduled_ns) / 1000) / 1000;
  return /** @type {any} */ ({ ...o.step.event, direction: o.direction, at_s: o.step.at_s, scheduled_ns,
    applied_ns: o.applied_ns, late_ms, ok, by: o.by, ...(o.extra ?? {}), ...(ok ? {} : { error: o.error ?? 'not applied' }) });
}
