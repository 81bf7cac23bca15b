// @ts-check
/**
 * A call's own propagation delay (`calls[].delay_ms`, RFC 8867 5.5): once ICE has selected the call's pair, its
 * 5-tuple goes into the userspace bottleneck's flow table, whose delay line then gives the call's packets, both ways,
 * the call's delay instead of the links' (docs/netem.md, "Delay per call"). The table holds every delayed call known
 * so far and is handed over whole each time a call's pair becomes known.
 */

/**
 * The call's flow as the bottleneck matches it, or null until side a's pair and its remote's address are known.
 * @param {{ call: any, pairs: { a: any, b: any } }} c
 * @returns {import('../netem/userspace.js').FlowDelay | null}
 */
export function callFlowDelay(c) {
  if (c.call.delay_ms === null || c.call.delay_ms === undefined) return null;
  const pair = c.pairs.a;
  // Chrome hides a peer-reflexive remote's address (""): b's own local candidate is that address.
  const remote = pair?.remote?.address ? pair.remote : c.pairs.b?.local;
  if (!pair?.local?.address || !remote?.address) return null;
  return { a: `${pair.local.address}:${pair.local.port}`, b: `${remote.address}:${remote.port}`, delay_ms: c.call.delay_ms };
}

/**
 * @typedef {{ call: any, pairs: { a: any, b: any }, delay: { flow: import('../netem/userspace.js').FlowDelay,
 *   in_force_t: number | null } | null }} DelayedCall
 */

/**
 * Hands the bottleneck the table of every delayed call whose flow is known, once a call's flow becomes known (or
 * changes). Each call's `delay.in_force_t` is set once a table with its flow is in force, and an event says so.
 * @param {DelayedCall[]} calls
 * @param {{ net: import('../netem/index.js').Network, event: (name: string, fields: any) => void,
 *   failWith: (message: string) => void }} run
 */
export function applyCallDelays(calls, { net, event, failWith }) {
  const changed = calls.filter((c) => {
    const flow = callFlowDelay(c);
    if (!flow || JSON.stringify(flow) === JSON.stringify(c.delay?.flow)) return false;
    c.delay = { flow, in_force_t: null };
    return true;
  });
  if (!changed.length) return;
  const table = calls.filter((c) => c.delay).map((c) => /** @type {any} */ (c.delay).flow);
  net.setFlowDelays(table).then((in_force_ms) => {
    for (const c of changed) {
      if (!c.delay) continue;
      c.delay.in_force_t = in_force_ms / 1000;
      event('call_delay', { call: c.call.id, ...c.delay.flow, in_force_t: c.delay.in_force_t });
    }
  }, (/** @type {Error} */ err) => failWith(`the delay of call ${changed.map((c) => c.call.id).join(', ')} could not be applied: ${err.message}`));
}

/** What the connect timeout says of a call whose own delay is not in force ('' otherwise). @param {DelayedCall} c */
export function delayNotReady(c) {
  return delayReady(c) ? '' : `; its own delay of ${c.call.delay_ms} ms not in force`;
}

/** Whether a call is ready as far as its delay goes: no delay of its own, or its flow's delay in force. @param {DelayedCall} c */
export function delayReady(c) {
  return c.call.delay_ms === null || c.call.delay_ms === undefined || (c.delay?.in_force_t ?? null) !== null;
}
