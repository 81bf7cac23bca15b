// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeLink, normalizeNetwork, qdiscKinds, LinkError } from '../link.js';

test('default network is the default scenario\'s: 1 Mbit/s fifo 300 ms forward, 25 ms each way, reverse unlimited', () => {
  const n = normalizeNetwork(undefined);
  assert.deepEqual(n.forward, { delay_ms: 25, jitter_ms: 0, loss_percent: 0, rate: { kbit: 1000, burst_bytes: 3028 }, qdisc: { kind: 'fifo', limit_bytes: 37500 } });
  assert.deepEqual(n.reverse, { delay_ms: 25, jitter_ms: 0, loss_percent: 0, rate: null, qdisc: { kind: 'fifo', limit_packets: 1000 } });
});

test('every discipline gets Linux\'s defaults', () => {
  const q = (/** @type {any} */ qdisc) => normalizeLink({ rate: { kbit: 1000 }, qdisc }, 'l').qdisc;
  assert.deepEqual(q({ kind: 'codel' }), { kind: 'codel', target_ms: 5, interval_ms: 100, limit_packets: 1000, ecn: false });
  assert.deepEqual(q({ kind: 'pie' }), { kind: 'pie', target_ms: 15, tupdate_ms: 15, alpha: 2, beta: 20, limit_packets: 1000, ecn: false });
  assert.deepEqual(q({ kind: 'sfq' }), { kind: 'sfq', limit_packets: 127, quantum_bytes: 1514, perturb_s: 0, divisor: 1024 });
  assert.deepEqual(q({ kind: 'fq_codel' }), { kind: 'fq_codel', target_ms: 5, interval_ms: 100, limit_packets: 10240, quantum_bytes: 1514, flows: 1024, ecn: true });
  assert.deepEqual(q({ kind: 'fifo' }), { kind: 'fifo', limit_packets: 1000 });
  assert.deepEqual(q(undefined), { kind: 'fifo', limit_packets: 1000 });
});

test('fifo limit_ms becomes bytes at the first rate; sfq limit_ms becomes 1514-byte packets', () => {
  assert.deepEqual(normalizeLink({ rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 300 } }, 'l').qdisc, { kind: 'fifo', limit_bytes: 75000 });
  const sched = { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 10, kbit: 3000 }] };
  assert.equal(normalizeLink({ rate: sched, qdisc: { kind: 'fifo', limit_ms: 300 } }, 'l').qdisc.limit_bytes, 37500);
  assert.equal(normalizeLink({ rate: { kbit: 1000 }, qdisc: { kind: 'sfq', limit_ms: 300 } }, 'l').qdisc.limit_packets, 25);
  assert.equal(normalizeLink({ rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_bytes: 5000 } }, 'l').qdisc.limit_bytes, 5000);
});

test('normalizing twice changes nothing', () => {
  const once = normalizeNetwork({ forward: { rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fq_codel', target_ms: 2 } }] } } });
  assert.deepEqual(normalizeNetwork(once), once);
});

test('errors name the field and the allowed values', () => {
  const bad = (/** @type {any} */ link, /** @type {RegExp} */ re) => assert.throws(() => normalizeLink(link, 'network.forward'), (e) => e instanceof LinkError && re.test(e.message));
  bad({ qdisc: { kind: 'codle' } }, /^network\.forward\.qdisc\.kind: "codle" is not one of fifo, codel, pie, sfq, fq_codel, prio$/);
  bad({ qdisc: { kind: 'codel', targt_ms: 5 } }, /^network\.forward\.qdisc\.targt_ms: is not a parameter of codel; allowed: kind, target_ms, interval_ms, limit_packets, ecn$/);
  bad({ qdisc: { kind: 'codel', target_ms: -1 } }, /^network\.forward\.qdisc\.target_ms: -1 must be > 0$/);
  bad({ qdisc: { kind: 'fifo', limit_ms: 300 } }, /qdisc\.limit_ms: needs a constant or scheduled rate/);
  bad({ rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_ms: 300, limit_packets: 10 } }, /give only one of limit_packets, limit_bytes, limit_ms/);
  bad({ rate: { kbit: 1000, schedule: [{ at_s: 0, kbit: 1 }] } }, /rate: needs exactly one of kbit, schedule, trace/);
  bad({ rate: { schedule: [{ at_s: 1, kbit: 1000 }] } }, /rate\.schedule\[0\]\.at_s: the schedule must start at 0/);
  bad({ rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 5, kbit: 10 }, { at_s: 5, kbit: 20 }] } }, /rate\.schedule\[2\]\.at_s: must be later/);
  bad({ rate: { trace: 'no-such-trace.txt' } }, /rate\.trace: file .*no-such-trace\.txt does not exist/);
  bad({ rate: { kbit: 1000, burst_bytes: 100 } }, /rate\.burst_bytes: 100 must be >= 1514/);
  bad({ delay_ms: 'x' }, /delay_ms: "x" is not a number/);
  bad({ rate: { kbit: 1000 }, qdisc: { kind: 'fq_codel', ecn: 'yes' } }, /qdisc\.ecn: "yes" is not true or false/);
  bad({ qdisc: { kind: 'codel' } }, /^network\.forward\.qdisc: codel needs a rate: without a rate limit nothing ever queues$/);
});

test('prio: only the last band without dscp, no DSCP twice, no prio inside prio', () => {
  const prio = (/** @type {any} */ bands) => normalizeLink({ rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands } }, 'n');
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'fifo' } }, { dscp: [0], qdisc: { kind: 'fifo' } }]), /n\.qdisc\.bands\[1\]\.dscp: the last band takes every packet/);
  assert.throws(() => prio([{ qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }]), /n\.qdisc\.bands\[0\]\.dscp: every band but the last needs/);
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'fifo' } }, { dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }]), /bands\[1\]\.dscp\[0\]: DSCP 46 is already in band 0/);
  assert.throws(() => prio([{ dscp: [46], qdisc: { kind: 'prio' } }, { qdisc: { kind: 'fifo' } }]), /bands\[0\]\.qdisc\.kind: "prio" is not one of fifo, codel, pie, sfq, fq_codel$/);
  assert.throws(() => prio([{ qdisc: { kind: 'fifo' } }]), /bands: must be a list of 2 to 16 bands/);
  const ok = prio([{ dscp: [46, 34], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fq_codel', quantum_bytes: 300, limit_packets: 800, target_ms: 2, interval_ms: 50, ecn: false } }]);
  assert.deepEqual(qdiscKinds(ok.qdisc), ['prio', 'fifo', 'fq_codel']);
  assert.deepEqual(ok.qdisc.bands[1].qdisc, { kind: 'fq_codel', target_ms: 2, interval_ms: 50, limit_packets: 800, quantum_bytes: 300, flows: 1024, ecn: false });
});
