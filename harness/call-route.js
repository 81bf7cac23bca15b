// @ts-check
/**
 * A call's path through a chain of bottlenecks (network.hops, docs/netem.md "A chain of bottlenecks"): once ICE has
 * selected its pair, netem's hop rules send the call's 5-tuple through the hops of `calls[].path`, both ways. Until
 * then its packets (ICE, DTLS) cross no hop; the check `hop_routes` makes a run invalid whose call was not routed
 * before its media started.
 */

/**
 * @typedef {{ call: any, pairs: { a: any, b: any }, route: { t: number, flow: import('../netem/chain.js').FlowMatch, path: number[] } | null,
 *   routing: boolean }} RoutedCall
 */

/**
 * The call's flow a -> b from the pairs its pages reported so far, or null until both ends are known (Chrome hides
 * a peer-reflexive remote's address: the other side's own local candidate is that address).
 * @param {{ a: any, b: any }} pairs
 * @returns {import('../netem/chain.js').FlowMatch | null}
 */
export function callFlow(pairs) {
  const src = pairs.a?.local?.address ? pairs.a.local : pairs.b?.remote;
  const dst = pairs.a?.remote?.address ? pairs.a.remote : pairs.b?.local;
  if (!src?.address || !dst?.address || !src.port || !dst.port) return null;
  return { proto: 'udp', src: src.address, sport: src.port, dst: dst.address, dport: dst.port };
}

/**
 * Routes the call once its flow is known (once per call), recording it in `c.route` and as an event `hop_route`.
 * @param {RoutedCall} c
 * @param {{ net: import('../netem/index.js').Network, event: (name: string, fields: any) => void,
 *   failWith: (message: string) => void }} run
 */
export function routeCall(c, { net, event, failWith }) {
  if (c.routing || !net.links.hops?.length) return;
  const flow = callFlow(c.pairs);
  if (!flow) return;
  c.routing = true;
  const path = c.call.path;
  net.routeFlow(flow, path).then(() => {
    c.route = { t: Date.now() / 1000, flow, path };
    event('hop_route', { call: c.call.id, path, ...flow });
  }, (/** @type {Error} */ err) => failWith(`routing call ${c.call.id} through hops ${JSON.stringify(path)} failed: ${err.message}`));
}

/**
 * Whether a call is ready as far as its route goes: no chain, or its 5-tuple routed through its hops (so that the
 * hops cross its media from t = 0: a page may report its pair after its first frames were decoded).
 * @param {RoutedCall} c @param {boolean} chained the scenario has network.hops
 */
export function routeReady(c, chained) {
  return !chained || c.route !== null;
}

/** The connect timeout's note on a call not yet routed ('' when it is ready). @param {RoutedCall} c @param {boolean} chained */
export function routeNotReady(c, chained) {
  return routeReady(c, chained) ? '' : '; not routed through its hops';
}

/**
 * The check `hop_routes` (a chain only): every call's 5-tuple was sent through its hops before its media started.
 * @param {RoutedCall[]} calls @param {number} t0_s epoch s of t = 0
 * @returns {[string, boolean, string]}
 */
export function hopRoutesCheck(calls, t0_s) {
  let ok = true;
  const parts = calls.map((c) => {
    const start = t0_s + c.call.start_s;
    if (!c.route) {
      ok = false;
      return `${c.call.id}: never routed (its packets crossed no hop)`;
    }
    const late = c.route.t > start;
    ok &&= !late;
    return `${c.call.id}: hops ${JSON.stringify(c.route.path)} ${late ? `${(c.route.t - start).toFixed(2)} s after` : 'before'} its media started`;
  });
  return ['hop_routes', ok, parts.join('; ')];
}

/**
 * What each hop rule queued by the end of the call (an event `hop_route_counters`), for a chain only.
 * @param {{ net: import('../netem/index.js').Network, event: (name: string, fields: any) => void }} run
 */
export async function recordRouteCounters({ net, event }) {
  if (net.links.hops?.length) event('hop_route_counters', { rules: await net.routeCounters() });
}
