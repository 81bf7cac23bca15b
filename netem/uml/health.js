// @ts-check
// What the uml guest's health probes recorded, over a window of the run: its kernel's timer lateness
// (uml-timer.jsonl, lateness.js on the host) and the packets its devices and input backlog dropped outside the qdiscs
// (uml-links.jsonl, links_probe.py in the guest). Pure functions of the files' text; the validity checks read their
// results (harness/validity.js).

/**
 * @typedef {{ seconds: number, samples: number, late_1ms: number, late_10ms: number, late_100ms: number, max_ms: number,
 *   max_t?: number }} GuestTimer
 *   the answers to the host's pings in the window: how many, how many more than 1, 10, 100 ms late, the latest, and the
 *   end (epoch s) of the second it came in
 * @typedef {{ seconds: number, drops: Record<string, number>, unreadable: string[] }} GuestDrops
 *   increases over the window of every drop counter that moved: `<device>.<counter>` or `softnet_dropped`;
 *   unreadable: the counters the probe could not read (null in its lines) at the window's start or end: not measured
 * @typedef {{ from_s: number, to_s: number, summaries: number, first_t: number | null, last_t: number | null,
 *   max_summary_gap_s: number | null, max_gap_ms: number | null, gap_from_t: number | null }} ProbeCoverage
 *   how the lateness probe covered [from_s, to_s] (the call): its summaries there (their first and last t, the longest
 *   time between two), and the longest silence of ping itself (max_gap_ms, from gap_from_t): between two of its lines,
 *   or from its last line to a summary's time (or the window's end); null without a summary
 * @typedef {{ timer: GuestTimer | null, drops: GuestDrops | null, coverage?: ProbeCoverage | null }} GuestHealth
 *   null: the probe wrote no line in the window; coverage: only when asked over a window (the call)
 */

/** The device counters that count a packet lost outside the qdiscs (ip -s link's; packets and bytes are not). */
export const DROP_COUNTERS = ['rx_dropped', 'tx_dropped', 'rx_errors', 'tx_errors', 'rx_missed_errors', 'rx_over_errors',
  'rx_fifo_errors', 'tx_fifo_errors', 'tx_aborted_errors', 'tx_carrier_errors'];

/**
 * The whole lines of a JSONL file being written (a last line without its newline is still being written).
 * @param {string} text
 * @returns {any[]}
 */
function wholeLines(text) {
  const out = [];
  for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
    if (!line) continue;
    try { out.push(JSON.parse(line)); } catch { /* a damaged line: skipped */ }
  }
  return out;
}

/**
 * The probe's timer lines whose second ends after fromS (epoch s), summed.
 * @param {string} text uml-timer.jsonl @param {number} fromS
 * @returns {GuestTimer | null}
 */
export function timerSummary(text, fromS) {
  const lines = wholeLines(text).filter((l) => l.t > fromS);
  if (!lines.length) return null;
  const sum = (/** @type {string} */ k) => lines.reduce((s, l) => s + (l[k] ?? 0), 0);
  const worst = lines.reduce((w, l) => ((l.max_ms ?? 0) > (w.max_ms ?? 0) ? l : w), lines[0]);
  return { seconds: lines.length, samples: sum('samples'), late_1ms: sum('late_1ms'), late_10ms: sum('late_10ms'),
    late_100ms: sum('late_100ms'), max_ms: worst.max_ms ?? 0, max_t: worst.t };
}

/**
 * The drop counters' increases from the last line at or before fromS (else the first) to the last line.
 * @param {string} text uml-links.jsonl @param {number} fromS
 * @returns {GuestDrops | null}
 */
export function linkDrops(text, fromS) {
  const lines = wholeLines(text);
  if (!lines.length) return null;
  const before = lines.filter((l) => l.t <= fromS);
  const base = before.length ? before[before.length - 1] : lines[0];
  const last = lines[lines.length - 1];
  /** @type {Record<string, number>} */
  const drops = {};
  /** @type {string[]} */
  const unreadable = [];
  /** @param {string} name @param {any} end @param {any} start  start undefined: counts from 0 */
  const count = (name, end, start) => {
    if (typeof end !== 'number' || start === null || (start !== undefined && typeof start !== 'number')) unreadable.push(name);
    else if (end - (start ?? 0) > 0) drops[name] = end - (start ?? 0);
  };
  for (const [dev, counters] of Object.entries(last.devices ?? {})) {
    for (const c of DROP_COUNTERS) {
      // A device the base line does not name yet (renamed from vecN after it) counts from 0.
      count(`${dev}.${c}`, /** @type {any} */ (counters)[c], base.devices?.[dev] ? base.devices[dev][c] : undefined);
    }
  }
  count('softnet_dropped', last.softnet_dropped, base.softnet_dropped);
  return { seconds: Math.round(last.t - base.t), drops, unreadable };
}

/**
 * How the lateness probe covered [fromS, toS] (epoch s; the call), from its summaries (uml-timer.jsonl, lateness.js):
 * those whose second ends in (fromS, toS + 1] (the one just after the end holds the end's last second), and ping's
 * own silences in them.
 * @param {string} text uml-timer.jsonl @param {number} fromS @param {number} toS
 * @returns {ProbeCoverage | null} null: no summary in the window
 */
export function probeCoverage(text, fromS, toS) {
  const lines = wholeLines(text).filter((l) => l.t > fromS && l.t <= toS + 1);
  if (!lines.length) return null;
  let maxSummaryGap = lines[0].t - fromS;
  let maxGap = -Infinity, gapFrom = /** @type {number | null} */ (null);
  const silence = (/** @type {number} */ ms, /** @type {number} */ from) => {
    if (ms > maxGap) { maxGap = ms; gapFrom = from; }
  };
  lines.forEach((l, i) => {
    if (i) maxSummaryGap = Math.max(maxSummaryGap, l.t - lines[i - 1].t);
    // A silence that ended in this second, and the one still going at its end (ping stopped, never to resume).
    if (typeof l.gap_ms === 'number' && typeof l.gap_from_t === 'number') silence(l.gap_ms, l.gap_from_t);
    if (typeof l.last_line_t === 'number') silence((Math.min(l.t, toS) - l.last_line_t) * 1000, l.last_line_t);
    else silence((Math.min(l.t, toS) - fromS) * 1000, fromS); // ping has said nothing yet
  });
  maxSummaryGap = Math.max(maxSummaryGap, toS - lines[lines.length - 1].t);
  const r3 = (/** @type {number} */ v) => Math.round(v * 1000) / 1000;
  const stamped = lines.some((l) => 'last_line_t' in l); // older summaries had no time of ping's own
  return { from_s: fromS, to_s: toS, summaries: lines.length, first_t: lines[0].t, last_t: lines[lines.length - 1].t,
    max_summary_gap_s: r3(maxSummaryGap), max_gap_ms: stamped ? r3(Math.max(0, maxGap)) : null, gap_from_t: stamped ? gapFrom : null };
}
