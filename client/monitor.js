/**
 * Stage 4 of a call: watching it. The selected candidate pair (reported when it changes), the getStats loop that
 * streams every full report, and the moment remote video is first decoded. Each loop ends when `signal` aborts.
 */
import { report } from './report.js';
import { pairKey, selectedCandidatePair } from './stats.js';

/** @param {RTCPeerConnection} pc @returns {Promise<any[]>} one getStats sample as a list */
const sample = async (pc) => [...(await pc.getStats()).values()];

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reports the transport's selected candidate pair each time it changes. */
export class SelectedPairWatcher {
  #lastKey = '';

  /** @param {RTCPeerConnection} pc */
  constructor(pc) {
    this.pc = pc;
  }

  /** @param {any[]} [stats] a sample already taken; without it a new one is taken */
  async check(stats) {
    const pair = selectedCandidatePair(stats ?? await sample(this.pc));
    const key = pairKey(pair);
    if (pair && key !== this.#lastKey) {
      this.#lastKey = key;
      await report('selected-pair', { t_ms: Date.now(), ...pair });
    }
  }
}

/**
 * getStats every `interval_ms` on a fixed cadence; a slow sample (or a slow `onSample`) delays the next one instead
 * of overlapping it. Each sample is reported whole as `stats`, then handed to `onSample` with the one before it (the
 * only sample the page keeps).
 * @param {{ pc: RTCPeerConnection, interval_ms: number, signal: AbortSignal,
 *   onSample: (stats: any[], previous: any[] | null) => Promise<void> }} o
 */
export async function runStatsLoop({ pc, interval_ms, signal, onSample }) {
  let due_ms = performance.now();
  /** @type {any[] | null} */
  let previous = null;
  while (!signal.aborted) {
    const stats = await sample(pc);
    const t_ms = Date.now();
    if (signal.aborted) break;
    await report('stats', { t_ms, report: stats });
    await onSample(stats, previous);
    previous = stats;
    due_ms = Math.max(due_ms + interval_ms, performance.now());
    await sleep(due_ms - performance.now());
  }
}

/**
 * Resolves with the remote video's framesDecoded once it is above 0, polled every 20 ms (the stats interval may be
 * a second; the harness's call setup time and its t = 0 depend on this moment); with null if `signal` aborts first.
 * @param {{ pc: RTCPeerConnection, signal: AbortSignal }} o
 * @returns {Promise<number | null>}
 */
export async function mediaFlowing({ pc, signal }) {
  while (!signal.aborted) {
    const stats = await sample(pc);
    const framesDecoded = stats.find((s) => s.type === 'inbound-rtp' && s.kind === 'video')?.framesDecoded ?? 0;
    if (framesDecoded > 0) return framesDecoded;
    await sleep(20);
  }
  return null;
}
