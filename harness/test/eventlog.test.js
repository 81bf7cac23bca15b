// @ts-check
// The harness's side of the RTC event log: the framing scan of a log file (recorder.js scanEventLog), the move into
// the run directory (collectEventLogs) and the validity check event_log_complete (validity.js).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scanEventLog, collectEventLogs } from '../recorder.js';
import { validityChecks } from '../validity.js';

// Two whole protobuf fields: the v2 begin event (field 16, 3 bytes) and an outgoing RTP batch (field 3, 2 bytes).
const LOG = Buffer.from([0x82, 0x01, 0x03, 0x08, 0x01, 0x10, 0x1a, 0x02, 0x08, 0x05]);

test('a whole log is complete; one cut mid-field is complete up to its last whole field', () => {
  assert.deepEqual(scanEventLog(LOG), { complete_bytes: LOG.length, begins_with_log_start: true });
  assert.deepEqual(scanEventLog(LOG.subarray(0, LOG.length - 1)), { complete_bytes: 6, begins_with_log_start: true });
  assert.deepEqual(scanEventLog(LOG.subarray(6)), { complete_bytes: 4, begins_with_log_start: false });
  assert.deepEqual(scanEventLog(Buffer.alloc(0)), { complete_bytes: 0, begins_with_log_start: false });
});

test('logs move into the run directory in Chrome\'s numbering, readable, and the directory goes', () => {
  const run = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-eventlog-test-'));
  try {
    const from = path.join(run, '.eventlog-a');
    fs.mkdirSync(from);
    fs.writeFileSync(path.join(from, 'event_log_20261123_1903_7_10.log'), LOG, { mode: 0o600 });
    fs.writeFileSync(path.join(from, 'event_log_20261123_1903_7_2.log'), LOG.subarray(0, 8), { mode: 0o600 });
    const files = collectEventLogs(run, 'a', from);
    assert.deepEqual(files.map((f) => [f.file, f.bytes, f.complete_bytes]),
      [['eventlog-a.log', 8, 6], ['eventlog-a.2.log', LOG.length, LOG.length]]);
    assert.equal(fs.statSync(path.join(run, 'eventlog-a.log')).mode & 0o777, 0o644);
    assert.equal(fs.existsSync(from), false);
    assert.deepEqual(collectEventLogs(run, 'a', from), []);
  } finally {
    fs.rmSync(run, { recursive: true, force: true });
  }
});

const base = {
  dataPrefix: '10.0.', selectedPairs: [], framesDecoded: { a: 1, b: 1 }, connectTimeoutS: 20, connectSeconds: 1,
  cpuLimited: {}, samples: {}, bottleneckAlive: null, captures: null, captureEnabled: false,
};
const file = (/** @type {string} */ name, bytes = 100, complete = bytes, begins = true) =>
  ({ file: name, bytes, complete_bytes: complete, begins_with_log_start: begins });
const check = (/** @type {any} */ eventLogs) => validityChecks({ ...base, eventLogs }).checks.find((c) => c.name === 'event_log_complete');

test('event_log_complete: both sides whole, or the reason it fails', () => {
  assert.equal(check({ a: [file('eventlog-a.log')], b: [file('eventlog-b.log')] })?.ok, true);
  assert.match(/** @type {any} */ (check({ a: [file('eventlog-a.log')], b: [] })).detail, /b wrote no RTC event log/);
  assert.match(/** @type {any} */ (check({ a: [file('eventlog-a.log', 100, 90)], b: [file('eventlog-b.log')] })).detail,
    /eventlog-a.log is cut short: 10 of its 100 bytes/);
  assert.match(/** @type {any} */ (check({ a: [file('eventlog-a.log', 0)], b: [file('eventlog-b.log')] })).detail, /empty/);
  assert.match(/** @type {any} */ (check({ a: [file('eventlog-a.log', 50, 50, false)], b: [file('eventlog-b.log')] })).detail,
    /does not start with the log's start event/);
  assert.equal(check(null), undefined); // not recorded: no check
});
