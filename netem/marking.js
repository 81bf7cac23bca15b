// @ts-check
// DSCP marking on the wire: nftables rules in a sender's namespace that set the DSCP of a flow's packets as they
// leave the host (postrouting), matched on the flow's 5-tuple and, for one track of a bundled connection, on the RTP
// SSRC. Chromium 156 on Linux does not mark WebRTC packets itself (docs/multiflow.md), so the lab does. The table
// lives inside the run's namespace and goes with it.

/** The table in each sender's namespace (family ip: the data path is IPv4 only). */
export const MARK_TABLE = 'rtclab_dscp';

/**
 * @typedef {{ src: string, sport: number, dst: string, dport: number, dscp: number, ssrcs?: number[] }} MarkRule
 *   a UDP flow from src:sport to dst:dport; ssrcs: only RTP packets with one of these SSRCs (none: every packet)
 */

/** The table and its chain, created once per namespace (mangle priority, after routing). */
export function markTableRuleset() {
  return `add table ip ${MARK_TABLE}
add chain ip ${MARK_TABLE} postrouting { type filter hook postrouting priority mangle; policy accept; }
`;
}

/** @param {string} address */
function checkAddress(address) {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) throw new Error(`DSCP marking: "${address}" is not an IPv4 address`);
  return address;
}

/** @param {number} port */
function checkPort(port) {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`DSCP marking: port ${port} is not 1-65535`);
  return port;
}

/**
 * One rule as an `nft add rule` line. The SSRC of RTP (SRTP keeps the header in the clear) is bytes 8-11 of the UDP
 * payload: bits 128-159 from the start of the UDP header (nft's @th). A rule with SSRCs comes after the flow's own
 * rule, so it wins for those packets (the last `dscp set` applies). Each rule counts what it marked.
 * @param {MarkRule} r
 */
export function markRuleLine(r) {
  if (!Number.isInteger(r.dscp) || r.dscp < 0 || r.dscp > 63) throw new Error(`DSCP marking: dscp ${r.dscp} is not 0-63`);
  const flow = `ip saddr ${checkAddress(r.src)} ip daddr ${checkAddress(r.dst)} udp sport ${checkPort(r.sport)} udp dport ${checkPort(r.dport)}`;
  const ssrcs = (r.ssrcs ?? []).map((s) => {
    if (!Number.isInteger(s) || s < 0 || s > 0xffffffff) throw new Error(`DSCP marking: SSRC ${s} is not a 32-bit number`);
    return `0x${s.toString(16).padStart(8, '0')}`;
  });
  const bySsrc = ssrcs.length ? ` @th,128,32 { ${ssrcs.join(', ')} }` : '';
  return `add rule ip ${MARK_TABLE} postrouting ${flow}${bySsrc} counter ip dscp set ${r.dscp}\n`;
}

/**
 * The packets each rule of a namespace's table has marked, from `nft -j list table`.
 * @param {string} json the output of `nft -j list table ip rtclab_dscp`
 * @returns {{ rule: string, packets: number, bytes: number }[]}
 */
export function ruleCounters(json) {
  /** @type {{ rule: string, packets: number, bytes: number }[]} */
  const out = [];
  for (const item of JSON.parse(json).nftables ?? []) {
    const rule = item.rule;
    if (!rule) continue;
    const counter = (rule.expr ?? []).find((/** @type {any} */ e) => e.counter)?.counter;
    out.push({ rule: `handle ${rule.handle}`, packets: counter?.packets ?? 0, bytes: counter?.bytes ?? 0 });
  }
  return out;
}
