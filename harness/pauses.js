// @ts-check
// A call's scheduled pauses (scenario calls[].pauses, RFC 8867 5.8): at at_s its sending sides switch every encoding
// off, at resume_s on again, on the same connection (the page's setSending: setParameters, no renegotiation). When a
// side's setParameters has resolved, a call_pause or call_resume event records it with how late that was after the
// scheduled time (late_ms): what the analyzer's check pauses_took_effect reads beside the wire (docs/harness.md).

/**
 * @typedef {{ call: any, peers: { a: import('./peer.js').Peer | null, b: import('./peer.js').Peer | null } }} PausedCall
 *   call: the normalised scenario call (its id, direction, pauses)
 */

/**
 * Schedules every call's pauses and resumes, counted from t = 0 (start_ms); returns the timers, for the caller to
 * clear at teardown.
 * @param {PausedCall[]} calls
 * @param {number} start_ms epoch ms of t = 0
 * @param {{ event: (name: string, fields: object) => void, failWith: (message: string) => void }} o
 * @returns {NodeJS.Timeout[]}
 */
export function schedulePauses(calls, start_ms, { event, failWith }) {
  const timers = [];
  for (const c of calls) {
    const sides = /** @type {('a' | 'b')[]} */ (c.call.direction === 'forward' ? ['a'] : ['a', 'b']);
    c.call.pauses.forEach((/** @type {{at_s: number, resume_s: number}} */ p, /** @type {number} */ k) => {
      for (const [name, at_s, on] of /** @type {const} */ ([['call_pause', p.at_s, false], ['call_resume', p.resume_s, true]])) {
        const due_ms = start_ms + at_s * 1000;
        timers.push(setTimeout(() => {
          for (const side of sides) {
            c.peers[side]?.page.evaluate((/** @type {boolean} */ v) => /** @type {any} */ (window).rtclab.call.setSending(v), on)
              .then(() => event(name, { call: c.call.id, pause: k, at_s, side, late_ms: Math.round((Date.now() - due_ms) * 10) / 10 }))
              .catch((/** @type {Error} */ err) => failWith(`call ${c.call.id} could not ${on ? 'resume' : 'pause'} at ${at_s} s: ${err.message}`));
          }
        }, Math.max(0, due_ms - Date.now())));
      }
    });
  }
  return timers;
}
