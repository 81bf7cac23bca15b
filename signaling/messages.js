// @ts-check
/**
 * The signaling protocol: which events a client may send, their JSON schemas and size limits.
 * Every incoming message is checked here before the server acts on it or relays it.
 */
import { Ajv } from 'ajv';

/** Largest accepted message, as JSON text. Chrome's offers with audio + video are about 5-10 KiB. */
export const MAX_MESSAGE_BYTES = 64 * 1024;

const roomName = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' };
const sdp = { type: 'string', minLength: 1, maxLength: MAX_MESSAGE_BYTES - 1024 };

/** Schemas of the events a client sends; the server sends `joined`, `peer-joined`, `peer-left`, `left`, `error`. */
export const SCHEMAS = {
  join: {
    type: 'object',
    additionalProperties: false,
    required: ['room'],
    properties: { room: roomName, role: { enum: ['caller', 'callee'] } },
  },
  leave: { type: 'object', additionalProperties: false, properties: {} },
  offer: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'sdp'],
    properties: { type: { const: 'offer' }, sdp },
  },
  answer: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'sdp'],
    properties: { type: { const: 'answer' }, sdp },
  },
  candidate: {
    type: 'object',
    additionalProperties: false,
    required: ['candidate'],
    properties: {
      candidate: { type: 'string', maxLength: 1024 },
      sdpMid: { type: ['string', 'null'], maxLength: 64 },
      sdpMLineIndex: { type: ['integer', 'null'], minimum: 0, maximum: 1023 },
      usernameFragment: { type: ['string', 'null'], maxLength: 256 },
    },
  },
  bye: {
    type: 'object',
    additionalProperties: false,
    properties: { reason: { type: 'string', maxLength: 256 } },
  },
};

/** Events relayed unchanged to the other member of the room. */
export const RELAYED_EVENTS = ['offer', 'answer', 'candidate', 'bye'];

const ajv = new Ajv({ allErrors: true, strict: true });
/** @type {Record<string, import('ajv').ValidateFunction>} */
const validators = Object.fromEntries(Object.entries(SCHEMAS).map(([name, schema]) => [name, ajv.compile(schema)]));

/**
 * Check one incoming message.
 * @param {string} event
 * @param {unknown} payload `leave` and `bye` may come without one
 * @returns {{ ok: true, payload: any } | { ok: false, error: string }} error is a sentence naming the problem
 */
export function validateMessage(event, payload) {
  const validate = validators[event];
  if (!validate) return { ok: false, error: `unknown event "${event}" (expected one of: ${Object.keys(SCHEMAS).join(', ')})` };
  if (payload === undefined && (event === 'leave' || event === 'bye')) payload = {};
  let size_bytes;
  try {
    size_bytes = Buffer.byteLength(JSON.stringify(payload) ?? '');
  } catch {
    return { ok: false, error: `${event}: payload is not JSON-serialisable` };
  }
  if (size_bytes > MAX_MESSAGE_BYTES) {
    return { ok: false, error: `${event}: message is ${size_bytes} bytes, more than the limit of ${MAX_MESSAGE_BYTES}` };
  }
  if (!validate(payload)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(payload)'} ${e.message}`);
    return { ok: false, error: `${event}: ${problems.join('; ')}` };
  }
  return { ok: true, payload };
}
