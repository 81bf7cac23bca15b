// @ts-check
/**
 * The DSCP a call asks for on its packets (docs/harness.md): once ICE has selected a side's pair, the call's value
 * on its 5-tuple and a track's own value on its SSRCs, set by netem's marking rules on the host the packets leave.
 * Nothing when the call asks for 0 everywhere (packets leave Chrome with 0).
 */

/**
 * RTCLAB_DSCP_MARKING=off leaves every packet as Chrome sent it (DSCP 0): to see what a scenario's DSCP buys, and
 * to show that the analyzer's dscp_marked check fails a run whose packets lack the DSCP it asked for.
 */
export const DSCP_MARKING = process.env.RTCLAB_DSCP_MARKING !== 'off';

/**
 * @typedef {import('../netem/marking.js').MarkRule & { track: string | null }} CallMarkRule
 * @typedef {{ call: any, pairs: { a: any, b: any }, tracks: { a: any[] | null, b: any[] | null },
 *   marks: { a: any[], b: any[] }, marked: Set<string> }} MarkedCall
 */

/**
 * The rules the call wants on its packets leaving `side`, from the pairs and tracks its pages reported so far;
 * none until that side's pair and its remote's address are known.
 * @param {MarkedCall} c @param {'a' | 'b'} side
 * @returns {CallMarkRule[]}
 */
export function wantedMarks(c, side) {
  const pair = c.pairs[side];
  // Chrome hides a peer-reflexive remote's address (""): the other side's own local candidate is that address.
  const remote = pair?.remote?.address ? pair.remote : c.pairs[side === 'a' ? 'b' : 'a']?.local;
  if (!pair?.local?.address || !remote?.address) return [];
  const flow = { src: pair.local.address, sport: pair.local.port, dst: remote.address, dport: remote.port };
  /** @type {CallMarkRule[]} */
  const wanted = [];
  if (c.call.dscp !== 0) wanted.push({ ...flow, dscp: c.call.dscp, track: null });
  for (const track of c.call.tracks) {
    const reported = (c.tracks[side] ?? []).find((/** @type {any} */ t) => t.id === track.id);
    if (track.dscp !== c.call.dscp && reported?.ssrcs?.length) wanted.push({ ...flow, dscp: track.dscp, ssrcs: reported.ssrcs, track: track.id });
  }
  return wanted;
}

/**
 * Sets each wanted rule not set before (once per rule), recording it in `c.marks` and as an event once netem set it.
 * @param {MarkedCall} c @param {'a' | 'b'} side
 * @param {{ net: import('../netem/index.js').Network, event: (name: string, fields: any) => void,
 *   failWith: (message: string) => void }} run
 */
export function markCall(c, side, { net, event, failWith }) {
  for (const { track, ...rule } of wantedMarks(c, side)) {
    const key = JSON.stringify(rule);
    if (c.marked.has(key)) continue;
    c.marked.add(key);
    const t = Date.now() / 1000;
    net.markFlow(side, rule).then(() => {
      c.marks[side].push({ t, track, ...rule });
      event('dscp_marking', { call: c.call.id, side, track, ...rule });
    }, (/** @type {Error} */ err) => failWith(`DSCP marking of call ${c.call.id} (${side}) failed: ${err.message}`));
  }
}

/**
 * What each host's marking rules marked (an event `dscp_marking_counters` per side), for calls that asked for DSCP.
 * @param {MarkedCall[]} calls
 * @param {{ net: import('../netem/index.js').Network, event: (name: string, fields: any) => void }} run
 */
export async function recordMarkCounters(calls, { net, event }) {
  for (const side of /** @type {const} */ (['a', 'b'])) {
    if (calls.some((c) => c.marks[side].length)) event('dscp_marking_counters', { side, rules: await net.markCounters(side) });
  }
}
