/**
 * The page's configuration: `window.rtclabConfig` (set by the harness before the page's scripts run) or, for manual
 * use, `?config=<URI-encoded JSON>`. It must be complete: the page has no defaults of its own (the scenario schema,
 * scenarios/schema.json, is the only source of defaults, and the harness injects the validated scenario's values).
 * A missing or out-of-range field is an error naming it, with the schema's own bounds.
 */
import { VIDEO_CODECS } from './codecs.js';

/**
 * The schema's constraints on the `call` fields the page uses, in JSON Schema's own words (a test checks that they
 * equal scenarios/schema.json's). The other fields of `call` (video_clip, chrome_flags, ...) are the harness's.
 */
export const CALL_FIELDS = Object.freeze({
  codec: { enum: VIDEO_CODECS },
  red_fec: { type: 'boolean' },
  width: { type: 'integer', minimum: 16, maximum: 7680 },
  height: { type: 'integer', minimum: 16, maximum: 4320 },
  fps: { type: 'integer', minimum: 1, maximum: 120 },
  max_bitrate_kbps: { type: ['number', 'null'], exclusiveMinimum: 0 },
  degradation_preference: { enum: ['balanced', 'maintain-framerate', 'maintain-resolution'] },
  audio: { type: 'boolean' },
  direction: { enum: ['both', 'forward'] },
  local_preview: { type: 'boolean' },
  priority: { enum: ['very-low', 'low', 'medium', 'high'] },
  network_priority: { enum: ['very-low', 'low', 'medium', 'high'] },
  start_s: { type: 'number', minimum: 0 },
});

/** The schema's constraints on each (normalised, complete) item of `call.tracks`. */
export const TRACK_FIELDS = Object.freeze({
  id: { type: 'string' },
  priority: { enum: ['very-low', 'low', 'medium', 'high'] },
  network_priority: { enum: ['very-low', 'low', 'medium', 'high'] },
  max_bitrate_kbps: { type: ['number', 'null'], exclusiveMinimum: 0 },
});

/**
 * `frames_read_every`: the per-frame record of what the remote video presents (client/frames.js), the stamp read on
 * every N-th presented frame; 0 records nothing. Not a scenario field but the harness's (harness/run.js), and the
 * one field the page may go without: absent, no frame is recorded (a page asked for nothing records nothing).
 */
export const FRAMES_READ_EVERY = Object.freeze({ type: 'integer', minimum: 0, maximum: 1000 });

/**
 * `frames_sample_every`: the whole picture of every N-th presented frame (I420) is sent to the harness for picture
 * quality (client/frames.js, docs/metrics.md "quality"); 0 sends none. `frames_sample_path`: where on the server that
 * served the page the samples go (the harness's upload route, signaling/server.js), null: nowhere. Both the
 * harness's, and both may be absent (0 and null).
 */
export const FRAMES_SAMPLE_EVERY = Object.freeze({ type: 'integer', minimum: 0, maximum: 1000 });

/** The schema's `getstats.interval_ms`. */
export const GETSTATS_INTERVAL_MS = Object.freeze({ type: 'integer', minimum: 100, maximum: 60000 });

/**
 * @typedef {{ type?: string | string[], enum?: readonly unknown[], minimum?: number, maximum?: number,
 *   exclusiveMinimum?: number }} Rule
 */

/**
 * @param {unknown} value @param {string} type a JSON Schema type
 */
function hasType(value, type) {
  switch (type) {
    case 'null': return value === null;
    case 'boolean': return typeof value === 'boolean';
    case 'integer': return Number.isInteger(value);
    case 'number': return typeof value === 'number' && Number.isFinite(value);
    case 'string': return typeof value === 'string';
    default: throw new Error(`config: no check for type ${type}`);
  }
}

/**
 * What the value must be, when it breaks the rule; null when it keeps it.
 * @param {unknown} value @param {Rule} rule
 */
function breaks(value, rule) {
  if (rule.enum) return rule.enum.includes(value) ? null : `one of ${rule.enum.join(', ')}`;
  const types = [rule.type ?? []].flat();
  const bounds = [
    rule.minimum !== undefined ? `>= ${rule.minimum}` : '',
    rule.exclusiveMinimum !== undefined ? `> ${rule.exclusiveMinimum}` : '',
    rule.maximum !== undefined ? `<= ${rule.maximum}` : '',
  ].filter(Boolean).join(' and ');
  const expected = types.map((t) => (t === 'null' ? 'null' : `${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t}${bounds && t !== 'boolean' ? ` ${bounds}` : ''}`)).join(' or ');
  if (!types.some((t) => hasType(value, t))) return expected;
  if (typeof value !== 'number') return null;
  const inRange = (rule.minimum === undefined || value >= rule.minimum)
    && (rule.exclusiveMinimum === undefined || value > rule.exclusiveMinimum)
    && (rule.maximum === undefined || value <= rule.maximum);
  return inRange ? null : expected;
}

/**
 * @typedef {{ codec: string, red_fec: boolean, width: number, height: number, fps: number,
 *   max_bitrate_kbps: number | null, degradation_preference: RTCDegradationPreference | string, audio: boolean, direction: 'both' | 'forward',
 *   local_preview: boolean,
 *   priority: RTCPriorityType, network_priority: RTCPriorityType, tracks: TrackSettings[], start_s: number }} CallSettings
 *   start_s: above 0, the call's media starts switched off (a call that joins later)
 * @typedef {{ id: string, priority: RTCPriorityType, network_priority: RTCPriorityType,
 *   max_bitrate_kbps: number | null }} TrackSettings
 * @typedef {{ room: string, role: 'caller' | 'callee' | null, call: CallSettings & Record<string, unknown>,
 *   getstats_interval_ms: number, candidate_prefix: string | null, frames_read_every?: number,
 *   frames_sample_every?: number, frames_sample_path?: string | null }} PageConfig
 *   frames_read_every, frames_sample_every: absent = 0, frames_sample_path: absent = null; readConfig always returns them
 */

/**
 * @param {unknown} injected window.rtclabConfig (undefined when not set)
 * @param {string} search location.search
 * @returns {PageConfig}
 * @throws {Error} naming the missing or bad field
 */
export function readConfig(injected, search) {
  /** @type {any} */
  let raw = injected;
  if (raw === undefined || raw === null) {
    const text = new URLSearchParams(search).get('config');
    if (text === null) {
      throw new Error('config: none given (the harness sets window.rtclabConfig; by hand, open the page with ' +
        '?config=<complete JSON>, see docs/client.md)');
    }
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new Error(`config: ?config= is not valid JSON (${/** @type {Error} */ (error).message})`);
    }
  }
  const isObject = (/** @type {unknown} */ v) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(raw)) throw new Error('config: must be a JSON object');
  /** @param {string} field @param {unknown} value @param {string | null} expected */
  const check = (field, value, expected) => {
    if (value === undefined) throw new Error(`config: ${field} is missing (the config must be complete)`);
    if (expected) throw new Error(`config: ${field} must be ${expected}, got ${JSON.stringify(value)}`);
  };
  const room = /^[A-Za-z0-9_.-]{1,64}$/;
  check('room', raw.room, typeof raw.room === 'string' && room.test(raw.room) ? null : '1-64 characters of A-Z a-z 0-9 _ . -');
  check('role', raw.role, [null, 'caller', 'callee'].includes(raw.role) ? null : '"caller", "callee" or null');
  check('call', raw.call, isObject(raw.call) ? null : 'an object');
  for (const [field, rule] of Object.entries(CALL_FIELDS)) check(`call.${field}`, raw.call[field], breaks(raw.call[field], rule));
  const tracks = raw.call.tracks;
  check('call.tracks', tracks, Array.isArray(tracks) && tracks.length > 0 && tracks.every(isObject) ? null : 'a non-empty list of objects');
  tracks.forEach((/** @type {any} */ track, /** @type {number} */ i) => {
    for (const [field, rule] of Object.entries(TRACK_FIELDS)) check(`call.tracks[${i}].${field}`, track[field], breaks(track[field], rule));
  });
  check('getstats_interval_ms', raw.getstats_interval_ms, breaks(raw.getstats_interval_ms, GETSTATS_INTERVAL_MS));
  check('candidate_prefix', raw.candidate_prefix,
    raw.candidate_prefix === null || typeof raw.candidate_prefix === 'string' ? null : 'a string or null');
  const framesReadEvery = raw.frames_read_every ?? 0;
  check('frames_read_every', framesReadEvery, breaks(framesReadEvery, FRAMES_READ_EVERY));
  const framesSampleEvery = raw.frames_sample_every ?? 0;
  check('frames_sample_every', framesSampleEvery, breaks(framesSampleEvery, FRAMES_SAMPLE_EVERY));
  const framesSamplePath = raw.frames_sample_path ?? null;
  check('frames_sample_path', framesSamplePath,
    framesSamplePath === null || (typeof framesSamplePath === 'string' && /^\/[A-Za-z0-9_\/-]{1,200}$/.test(framesSamplePath))
      ? null : 'null or an absolute path of A-Z a-z 0-9 _ - /');
  return {
    room: raw.room,
    role: raw.role,
    call: raw.call,
    getstats_interval_ms: raw.getstats_interval_ms,
    candidate_prefix: raw.candidate_prefix,
    frames_read_every: framesReadEvery,
    frames_sample_every: framesSampleEvery,
    frames_sample_path: framesSamplePath,
  };
}
