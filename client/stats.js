/**
 * Helpers over one getStats() sample (an array of standard RTCStats objects). Pure functions, tested in Node.
 */

/**
 * The candidate pair the ICE transport uses now.
 * @param {any[]} stats
 * @returns {{ local: CandidateInfo, remote: CandidateInfo } | null}
 * @typedef {{ address: string, port: number, protocol: string, candidateType: string }} CandidateInfo
 */
export function selectedCandidatePair(stats) {
  const byId = new Map(stats.map((s) => [s.id, s]));
  const transport = stats.find((s) => s.type === 'transport' && s.selectedCandidatePairId);
  const pair = transport ? byId.get(transport.selectedCandidatePairId) : undefined;
  if (!pair) return null;
  const local = byId.get(pair.localCandidateId);
  const remote = byId.get(pair.remoteCandidateId);
  if (!local || !remote) return null;
  /** @returns {CandidateInfo} */
  const info = (/** @type {any} */ c) => ({ address: c.address ?? c.ip, port: c.port, protocol: c.protocol, candidateType: c.candidateType });
  return { local: info(local), remote: info(remote) };
}

/** @param {{ local: CandidateInfo, remote: CandidateInfo } | null} pair */
export function pairKey(pair) {
  if (!pair) return '';
  const side = (/** @type {CandidateInfo} */ c) => `${c.protocol}:${c.address}:${c.port}/${c.candidateType}`;
  return `${side(pair.local)} <-> ${side(pair.remote)}`;
}

/**
 * Sum of RTP bytes (payload + headers) over stats of one type, with the newest timestamp among them.
 * @param {any[]} stats @param {'outbound-rtp' | 'inbound-rtp'} type
 */
function rtpBytes(stats, type) {
  const field = type === 'outbound-rtp' ? ['bytesSent', 'headerBytesSent'] : ['bytesReceived', 'headerBytesReceived'];
  let bytes = 0;
  let timestamp_ms = 0;
  for (const s of stats) {
    if (s.type !== type) continue;
    bytes += (s[field[0]] ?? 0) + (s[field[1]] ?? 0);
    timestamp_ms = Math.max(timestamp_ms, s.timestamp ?? 0);
  }
  return { bytes, timestamp_ms };
}

/** @param {any[]} prev @param {any[]} cur @param {'outbound-rtp' | 'inbound-rtp'} type */
function bitrateKbps(prev, cur, type) {
  const a = rtpBytes(prev, type);
  const b = rtpBytes(cur, type);
  const dt_ms = b.timestamp_ms - a.timestamp_ms;
  if (dt_ms <= 0 || b.bytes < a.bytes) return null;
  return ((b.bytes - a.bytes) * 8) / dt_ms; // bits per ms = kbit/s
}

/**
 * The few numbers the page shows a person watching.
 * @param {any[] | null} prev previous sample (null for the first)
 * @param {any[]} cur
 */
export function liveNumbers(prev, cur) {
  const video = (/** @type {string} */ type) => cur.find((s) => s.type === type && s.kind === 'video');
  const outVideo = video('outbound-rtp');
  const inVideo = video('inbound-rtp');
  const pairId = cur.find((s) => s.type === 'transport' && s.selectedCandidatePairId)?.selectedCandidatePairId;
  const pair = cur.find((s) => s.id === pairId);
  const remoteInbound = cur.find((s) => s.type === 'remote-inbound-rtp' && s.kind === 'video');
  const rtt_s = pair?.currentRoundTripTime ?? remoteInbound?.roundTripTime;
  const resolution = (/** @type {any} */ s) => (s?.frameWidth ? `${s.frameWidth}x${s.frameHeight}` : null);
  const codec = (/** @type {any} */ s) => cur.find((c) => c.id === s?.codecId)?.mimeType ?? null;
  return {
    send_kbps: prev ? bitrateKbps(prev, cur, 'outbound-rtp') : null,
    receive_kbps: prev ? bitrateKbps(prev, cur, 'inbound-rtp') : null,
    rtt_ms: rtt_s === undefined ? null : rtt_s * 1000,
    send_fps: outVideo?.framesPerSecond ?? null,
    receive_fps: inVideo?.framesPerSecond ?? null,
    send_resolution: resolution(outVideo),
    receive_resolution: resolution(inVideo),
    send_codec: codec(outVideo),
    receive_codec: codec(inVideo),
    quality_limitation: outVideo?.qualityLimitationReason ?? null,
  };
}
