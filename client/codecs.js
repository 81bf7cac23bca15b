/**
 * Codec lists for setCodecPreferences: exactly the scenario's codec, its retransmission (rtx), and RED/ULPFEC only
 * when asked. Without this Chrome offers every codec and wraps VP8 in RED whenever both sides offer RED/ULPFEC.
 * Pure functions: tested in Node (client/test/helpers.test.js).
 */

/** Video codec names of the scenario schema, as they appear after `video/` in a mimeType. */
export const VIDEO_CODECS = ['VP8', 'VP9', 'H264', 'AV1'];

/** @typedef {{ mimeType: string, clockRate: number, channels?: number, sdpFmtpLine?: string }} CodecCapability */

const sameMime = (/** @type {CodecCapability} */ codec, /** @type {string} */ mimeType) =>
  codec.mimeType.toLowerCase() === mimeType.toLowerCase();

/**
 * @param {CodecCapability[]} receiveCapabilities RTCRtpReceiver.getCapabilities('video').codecs (setCodecPreferences
 *   takes entries of this list)
 * @param {CodecCapability[]} sendCapabilities RTCRtpSender.getCapabilities('video').codecs: profiles this browser
 *   cannot encode (e.g. VP9 profile 1) are left out, since both peers send what they receive
 * @param {string} codecName VP8 | VP9 | H264 | AV1
 * @param {boolean} redFec also keep video/red and video/ulpfec
 * @returns {CodecCapability[]} the chosen codec's profiles (browser's order), then rtx, then red/ulpfec if asked
 */
export function chooseVideoCodecs(receiveCapabilities, sendCapabilities, codecName, redFec) {
  if (!VIDEO_CODECS.includes(codecName)) throw new Error(`unknown video codec "${codecName}" (expected one of ${VIDEO_CODECS.join(', ')})`);
  const key = (/** @type {CodecCapability} */ c) => `${c.mimeType.toLowerCase()} ${c.sdpFmtpLine ?? ''}`;
  const sendable = new Set(sendCapabilities.map(key));
  const media = receiveCapabilities.filter((c) => sameMime(c, `video/${codecName}`) && sendable.has(key(c)));
  if (media.length === 0) {
    const both = [...new Set(receiveCapabilities.filter((c) => sendable.has(key(c))).map((c) => c.mimeType))].join(', ');
    throw new Error(`this browser cannot both send and receive video codec ${codecName} (it can: ${both})`);
  }
  const rtx = receiveCapabilities.filter((c) => sameMime(c, 'video/rtx'));
  const fec = redFec ? receiveCapabilities.filter((c) => sameMime(c, 'video/red') || sameMime(c, 'video/ulpfec')) : [];
  return [...media, ...rtx, ...fec];
}

/**
 * Opus only (the one audio codec both Chromium peers use), plus audio/red after it when red_fec is set
 * (listed after opus, as Chrome offers it by default: negotiated but not used for sending).
 * @param {CodecCapability[]} capabilities RTCRtpReceiver.getCapabilities('audio').codecs
 * @param {boolean} redFec
 * @returns {CodecCapability[]}
 */
export function chooseAudioCodecs(capabilities, redFec) {
  const opus = capabilities.filter((c) => sameMime(c, 'audio/opus'));
  if (opus.length === 0) throw new Error('this browser has no audio/opus codec');
  const red = redFec ? capabilities.filter((c) => sameMime(c, 'audio/red')) : [];
  return [...opus, ...red];
}

/**
 * Codec names (`VP8`, `red`, `rtx`, ...) of the payload types in an SDP's first m-section of `kind`.
 * Used to verify what was actually negotiated.
 * @param {string} sdp
 * @param {'audio' | 'video'} kind
 * @returns {string[]}
 */
export function sdpCodecNames(sdp, kind) {
  const sections = sdp.split(/\r?\nm=/).slice(1);
  const section = sections.find((s) => s.startsWith(`${kind} `));
  if (!section) return [];
  const names = [...section.matchAll(/^a=rtpmap:\d+ ([^/\r\n]+)\//gm)].map((m) => m[1]);
  return [...new Set(names)];
}
