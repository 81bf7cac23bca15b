// @ts-check
// What the uml guest's health probes recorded, over a window of the run: its kernel's timer lateness
// (uml-timer.jsonl, lateness.js on the host) and the packets its devices and input backlog dropped outside the qdiscs
// (uml-links.jsonl, links_probe.py in the guest). Pure functions of the files' text; the validity checks read their
// results (harness/validity.js).

/**
 * @typedef {{ seconds: number, samples: number, late_1ms: number, late_10ms: number, late_100ms: number, max_ms: number }} GuestTimer
 *   the answers to the host's pings in the window: how many, how many more than 1, 10, 100 ms late, the latest
 * @typedef {{ seconds: number, drops: Record<string, number> }} GuestDrops
 *   increases over the window of every drop counter that moved: `<device>.<counter>` or `softnet_dropped`
 * @typedef {{ timer: GuestTimer | null, drops: GuestDrops | null }} GuestHealth  null: the probe wrote no line in the window
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
  return { seconds: lines.length, samples: sum('samples'), late_1ms: sum('late_1ms'), late_10ms: sum('late_10ms'),
    late_100ms: sum('late_100ms'), max_ms: Math.max(...lines.map((l) => l.max_ms ?? 0)) };
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
  for (const [dev, counters] of Object.entries(last.devices ?? {})) {
    for (const c of DROP_COUNTERS) {
      // A device the base line does not name yet (renamed from vecN after it) counts from 0.
      const d = (/** @type {any} */ (counters)[c] ?? 0) - (base.devices?.[dev]?.[c] ?? 0);
      if (d > 0) drops[`${dev}.${c}`] = d;
    }
  }
  const softnet = (last.softnet_dropped ?? 0) - (base.softnet_dropped ?? 0);
  if (softnet > 0) drops.softnet_dropped = softnet;
  return { seconds: Math.round(last.t - base.t), drops };
}
