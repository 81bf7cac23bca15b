/**
 * The page's configuration: `window.rtclabConfig` (set by the harness before the page's scripts run) or, for
 * manual use, `?config=<URI-encoded JSON>`. Missing fields take the scenario schema's defaults.
 */
import { VIDEO_CODECS } from './codecs.js';

export const CALL_DEFAULTS = Object.freeze({
  codec: 'VP8',
  red_fec: false,
  width: 1280,
  height: 720,
  fps: 30,
  max_bitrate_kbps: null,
  degradation_preference: 'balanced',
  audio: true,
});

const DEGRADATION_PREFERENCES = ['balanced', 'maintain-framerate', 'maintain-resolution'];

/**
 * @param {unknown} injected window.rtclabConfig (undefined when not set)
 * @param {string} search location.search
 * @returns {{ room: string, role: 'caller' | 'callee' | null, call: typeof CALL_DEFAULTS & Record<string, unknown>,
 *   getstats_interval_ms: number, candidate_prefix: string | null }}
 * @throws {Error} naming the bad field
 */
export function readConfig(injected, search) {
  /** @type {any} */
  let raw = injected;
  if (raw === undefined || raw === null) {
    const text = new URLSearchParams(search).get('config');
    if (text === null) raw = {};
    else {
      try {
        raw = JSON.parse(text);
      } catch (error) {
        throw new Error(`config: ?config= is not valid JSON (${/** @type {Error} */ (error).message})`);
      }
    }
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error('config: must be a JSON object');
  const call = { ...CALL_DEFAULTS, ...(raw.call ?? {}) };
  const config = {
    room: raw.room ?? 'rtclab',
    role: raw.role ?? null,
    call,
    getstats_interval_ms: raw.getstats_interval_ms ?? 1000,
    candidate_prefix: raw.candidate_prefix ?? null,
  };
  const fail = (/** @type {string} */ field, /** @type {string} */ expected) => {
    throw new Error(`config: ${field} must be ${expected}, got ${JSON.stringify(field.split('.').reduce((o, k) => o?.[k], /** @type {any} */ (config)))}`);
  };
  if (typeof config.room !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(config.room)) fail('room', '1-64 characters of A-Z a-z 0-9 _ . -');
  if (config.role !== null && config.role !== 'caller' && config.role !== 'callee') fail('role', '"caller" or "callee"');
  if (!VIDEO_CODECS.includes(call.codec)) fail('call.codec', `one of ${VIDEO_CODECS.join(', ')}`);
  if (typeof call.red_fec !== 'boolean') fail('call.red_fec', 'a boolean');
  for (const field of ['width', 'height', 'fps']) {
    if (!Number.isInteger(call[field]) || call[field] < 1) fail(`call.${field}`, 'a positive integer');
  }
  if (call.max_bitrate_kbps !== null && !(typeof call.max_bitrate_kbps === 'number' && call.max_bitrate_kbps > 0)) {
    fail('call.max_bitrate_kbps', 'a positive number or null');
  }
  if (!DEGRADATION_PREFERENCES.includes(call.degradation_preference)) fail('call.degradation_preference', `one of ${DEGRADATION_PREFERENCES.join(', ')}`);
  if (typeof call.audio !== 'boolean') fail('call.audio', 'a boolean');
  if (!Number.isInteger(config.getstats_interval_ms) || config.getstats_interval_ms < 50) fail('getstats_interval_ms', 'an integer >= 50');
  if (config.candidate_prefix !== null && typeof config.candidate_prefix !== 'string') fail('candidate_prefix', 'a string or null');
  return config;
}
