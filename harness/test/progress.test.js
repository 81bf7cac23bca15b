// @ts-check
// The progress line: a call's shows its rates, RTT and frames; a run without a call says so instead of blank fields.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { progressPrinter } from '../progress.js';

/** A non-terminal stream (as in CI logs) that keeps what was written. */
function fakeStream() {
  const out = { text: '', isTTY: false, write(/** @type {string} */ s) { out.text += s; return true; } };
  return out;
}

test('a call\'s progress line shows rates, RTT, frame rate and height; stages print once', () => {
  const s = fakeStream();
  const print = progressPrinter(/** @type {any} */ (s));
  print({ phase: 'network' });
  print({ phase: 'network' });
  print({ phase: 'call', elapsed_s: 10, remaining_s: 0, send_kbps: 812.4, recv_kbps: 790, rtt_ms: 61, fps: 29.6, height: 360 });
  assert.equal(s.text, '  network...\n  call 10/10 s | send 812 kbit/s | recv 790 kbit/s | RTT 61 ms | 30 fps 360p\n');
});

test('a run without a call says so instead of printing empty call fields', () => {
  const s = fakeStream();
  const print = progressPrinter(/** @type {any} */ (s));
  print({ phase: 'call', elapsed_s: 15, remaining_s: 0, calls: 0 });
  assert.equal(s.text, '  run 15/15 s (no call: the network and its cross traffic)\n');
});
