// @ts-check
// The userspace bottleneck's latest counters as the harness reads them while the bottleneck still writes its stats
// file (the validity check bottleneck_on_time): only whole lines count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserspaceBottleneck } from '../userspace.js';

const bottleneck = () => {
  const runDir = mkdtempSync(join(tmpdir(), 'rtclab-counters-'));
  const link = /** @type {any} */ ({ qdisc: { kind: 'fifo' } });
  return { runDir, b: new UserspaceBottleneck({ nsExec: [], direction: 'forward', link, runDir, t0_ns: 0n }) };
};

test('lastCounters: the last whole line, not one the writer thread is still writing', () => {
  const { runDir, b } = bottleneck();
  const stats = join(runDir, 'bottleneck-forward.stats.jsonl');
  assert.equal(b.lastCounters(), null, 'no file yet');
  writeFileSync(stats, '{"forwarded": 10, "released_late_10ms": 0}\n{"forwarded": 20, "released_la');
  assert.deepEqual(b.lastCounters(), { forwarded: 10, released_late_10ms: 0 });
  writeFileSync(stats, '{"forwarded": 10}\n{"forwarded": 20, "released_late_10ms": 1}\n');
  assert.deepEqual(b.lastCounters(), { forwarded: 20, released_late_10ms: 1 });
  writeFileSync(stats, '{"forwarded": 2');
  assert.equal(b.lastCounters(), null, 'only a partial first line');
  writeFileSync(stats, 'not json\n');
  assert.equal(b.lastCounters(), null, 'a damaged line');
});
