// @ts-check
// Golden tests of the kernel backend's command plans: what `tc` is asked to do for each discipline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { planKernel, planKernelSchedule, planDelaySchedule, kernelNeeds, tcKinds, tcLeafArgs } from '../kernel.js';
import { kernelShortcomings } from '../backend.js';
import { FEATURES } from '../probe.js';
import { normalizeScenario, QDISC_KINDS } from '../../scenarios/model.js';

/** A link as the scenario model normalises it. @param {any} link @param {string} [_field] */
const normalizeLink = (link, _field) => normalizeScenario({ network: { forward: link } }).network.forward;

const O = { ingressDev: 'r-eth0', ifb: 'ifb-fwd', nsExec: ['ip', 'netns', 'exec', 'R'] };
/** @param {any} link */
const plan = (link) => planKernel(normalizeLink(link, 'l'), 'r-eth1', O).map((argv) => {
  assert.deepEqual(argv.slice(0, 4), O.nsExec);
  return argv.slice(4).join(' ');
});
const TBF_1M = (/** @type {number} */ limit) => `tc qdisc add dev r-eth1 root handle 1: tbf rate 1000kbit burst 3028 limit ${limit}`;
const IFB = [
  'ip link add ifb-fwd type ifb',
  'ip link set ifb-fwd up',
  'tc qdisc add dev r-eth0 handle ffff: ingress',
  'tc filter add dev r-eth0 parent ffff: protocol ip u32 match u32 0 0 action mirred egress redirect dev ifb-fwd',
];

test('fifo limit_ms: TBF root with a bfifo of the same byte limit (tbf change keeps the child\'s limit)', () => {
  assert.deepEqual(plan({ delay_ms: 0, rate: { kbit: 1000 }, qdisc: { kind: 'fifo', limit_ms: 300 } }), [
    TBF_1M(37500), 'tc qdisc add dev r-eth1 parent 1:1 handle 10: bfifo limit 37500']);
});

test('fifo in packets with delay: pfifo under TBF, netem on the IFB fed by r-eth0\'s ingress', () => {
  assert.deepEqual(plan({ delay_ms: 25, rate: { kbit: 1000 } }), [
    TBF_1M(1000), 'tc qdisc add dev r-eth1 parent 1:1 handle 10: pfifo limit 1000', ...IFB,
    'tc qdisc add dev ifb-fwd root handle 1: netem limit 1000 delay 25000us']);
});

test('codel, pie, sfq, fq_codel: the discipline as TBF\'s child with tc\'s parameters', () => {
  const child = (/** @type {any} */ qdisc) => plan({ delay_ms: 0, rate: { kbit: 1000 }, qdisc });
  assert.deepEqual(child({ kind: 'codel', target_ms: 13 }), [TBF_1M(3028),
    'tc qdisc add dev r-eth1 parent 1:1 handle 10: codel limit 1000 target 13000us interval 100000us noecn']);
  assert.deepEqual(child({ kind: 'pie', target_ms: 20, tupdate_ms: 30, ecn: true }), [TBF_1M(3028),
    'tc qdisc add dev r-eth1 parent 1:1 handle 10: pie limit 1000 target 20000us tupdate 30000us alpha 2 beta 20 ecn']);
  assert.deepEqual(child({ kind: 'sfq', limit_ms: 300 }), [TBF_1M(3028),
    'tc qdisc add dev r-eth1 parent 1:1 handle 10: sfq limit 25 quantum 1514 perturb 0 divisor 1024']);
  assert.deepEqual(child({ kind: 'fq_codel', target_ms: 13 }), [TBF_1M(3028),
    'tc qdisc add dev r-eth1 parent 1:1 handle 10: fq_codel limit 10240 flows 1024 quantum 1514 target 13000us interval 100000us ecn']);
});

test('dualpi2: tc-dualpi2\'s arguments, but refused by the kernel and uml backends (no kernel here has sch_dualpi2)', () => {
  const link = normalizeLink({ delay_ms: 0, rate: { kbit: 1000 }, qdisc: { kind: 'dualpi2', drop_on_overload: false } }, 'l');
  assert.equal(tcLeafArgs(link.qdisc).join(' '), 'dualpi2 limit 10000 target 15000us tupdate 16000us alpha 0.16 beta 3.2 '
    + 'coupling_factor 2 step_thresh 1000us min_qlen_step 0 overflow drop_dequeue l4s_ect');
  const { needs, unsupported } = kernelNeeds(link);
  assert.deepEqual(needs, ['dualpi2', 'tbf']);
  assert.deepEqual(unsupported, ['dualpi2 (no kernel here has sch_dualpi2: this host\'s is built without it, Debian 12\'s user-mode Linux is 6.1; use the userspace backend)']);
  assert.throws(() => planKernel(link, 'r-eth1', O), /kernel backend cannot emulate dualpi2/);
  // Even a kernel whose probe found dualpi2 is not chosen: `auto` then picks the userspace bottleneck.
  const links = { forward: link, reverse: normalizeLink({ delay_ms: 0 }, 'r') };
  assert.deepEqual(kernelShortcomings(links, new Set(FEATURES)), [`forward: cannot emulate ${unsupported[0]}`]);
});

test('prio: prio qdisc mapping every skb priority to the last band, a child per band, ARP to the first, u32 DSCP filters', () => {
  assert.deepEqual(plan({ delay_ms: 0, rate: { kbit: 18000 }, qdisc: { kind: 'prio', bands: [
    { dscp: [46, 34], qdisc: { kind: 'fifo' } },
    { qdisc: { kind: 'fq_codel', quantum_bytes: 300, limit_packets: 800, target_ms: 2, interval_ms: 50, ecn: false } }] } }), [
    'tc qdisc add dev r-eth1 root handle 1: tbf rate 18000kbit burst 3028 limit 3028',
    'tc qdisc add dev r-eth1 parent 1:1 handle 10: prio bands 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1',
    'tc qdisc add dev r-eth1 parent 10:1 handle 20: pfifo limit 1000',
    'tc qdisc add dev r-eth1 parent 10:2 handle 21: fq_codel limit 800 flows 1024 quantum 300 target 2000us interval 50000us noecn',
    'tc filter add dev r-eth1 parent 10: protocol arp prio 2 u32 match u32 0 0 flowid 10:1',
    'tc filter add dev r-eth1 parent 10: protocol ip prio 1 u32 match ip dsfield 0xb8 0xfc flowid 10:1',
    'tc filter add dev r-eth1 parent 10: protocol ip prio 1 u32 match ip dsfield 0x88 0xfc flowid 10:1']);
});

test('delay and loss only (no rate): just the IFB netem, limit sized for 10x a 10 Gbit/s of 64-byte packets', () => {
  assert.deepEqual(plan({ delay_ms: 25, loss_percent: 1 }), [...IFB, 'tc qdisc add dev ifb-fwd root handle 1: netem limit 488282 delay 25000us loss 1%']);
  assert.deepEqual(plan({ delay_ms: 0 }), []);
});

test('jitter: netem delay in the middle of [delay, delay + jitter], half of it as netem\'s jitter, and a rate that keeps order', () => {
  assert.deepEqual(plan({ delay_ms: 10, jitter_ms: 10 }), [...IFB, 'tc qdisc add dev ifb-fwd root handle 1: netem limit 390625 delay 15000us 5000us rate 10gbit']);
  assert.deepEqual(plan({ delay_ms: 0, jitter_ms: 4 }).slice(-1), ['tc qdisc add dev ifb-fwd root handle 1: netem limit 78125 delay 2000us 2000us rate 10gbit']);
});

test('capacity schedule: a tbf change per step after the first, with the same burst and limit', () => {
  const link = normalizeLink({ delay_ms: 0, rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 10, kbit: 500 }, { at_s: 20, kbit: 2000 }] }, qdisc: { kind: 'fifo', limit_ms: 300 } }, 'l');
  assert.deepEqual(planKernelSchedule(link, 'r-eth1', []).map((s) => [s.at_s, s.argv.join(' ')]), [
    [10, 'tc qdisc change dev r-eth1 root handle 1: tbf rate 500kbit burst 3028 limit 37500'],
    [20, 'tc qdisc change dev r-eth1 root handle 1: tbf rate 2000kbit burst 3028 limit 37500']]);
});

test('delay schedule: the delay line kept in order (netem rate) and a netem change per step, its limit for the longest delay', () => {
  const link = normalizeLink({ delay_ms: 0, delay_schedule: [{ at_s: 10, delay_ms: 100 }, { at_s: 20, delay_ms: 5 }], loss_percent: 1 }, 'l');
  // A link whose delay starts at 0 still gets its delay line: a later step needs it.
  assert.deepEqual(plan({ delay_ms: 0, delay_schedule: [{ at_s: 10, delay_ms: 100 }] }).slice(-1),
    ['tc qdisc add dev ifb-fwd root handle 1: netem limit 1953125 delay 0us rate 10gbit']);
  assert.deepEqual(planDelaySchedule(link, 'ifb-fwd', []).map((s) => [s.at_s, s.delay_ms, s.argv.join(' ')]), [
    [10, 100, 'tc qdisc change dev ifb-fwd root handle 1: netem limit 1953125 delay 100000us rate 10gbit loss 1%'],
    [20, 5, 'tc qdisc change dev ifb-fwd root handle 1: netem limit 1953125 delay 5000us rate 10gbit loss 1%']]);
});

test('what the kernel backend needs and refuses', () => {
  assert.deepEqual(kernelNeeds(normalizeLink({ delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'codel' } }, 'l')),
    { needs: ['codel', 'ifb', 'ingress', 'mirred', 'netem', 'tbf', 'u32'], unsupported: [] });
  const links = { forward: normalizeLink({ delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'fq_codel' } }, 'f'), reverse: normalizeLink({ delay_ms: 0 }, 'r') };
  assert.deepEqual(kernelShortcomings(links, new Set(['tbf', 'pfifo', 'bfifo', 'ifb', 'ingress', 'u32', 'mirred'])),
    ['forward: needs fq_codel, netem for the qdisc, delay_ms/jitter_ms/loss_percent > 0; this kernel lacks them']);
  assert.deepEqual(kernelShortcomings(links, new Set(['tbf', 'fq_codel', 'netem', 'ifb', 'ingress', 'u32', 'mirred'])), []);
});

test('a trace: tc has no trace player, so the kernel (and uml) backend refuses it, naming it', () => {
  const fifo = { kind: 'fifo', limit_packets: 1000 };
  const links = { forward: normalizeLink({ delay_ms: 20, rate: { trace: 'Verizon-LTE-short.down' }, qdisc: fifo }, 'f'),
    reverse: normalizeLink({ delay_ms: 20, rate: { trace: 'Verizon-LTE-short.up', trace_offset_ms: 5 }, qdisc: fifo }, 'r') };
  assert.deepEqual(kernelShortcomings(links, new Set(['tbf', 'pfifo', 'bfifo', 'netem', 'ifb', 'ingress', 'u32', 'mirred'])), [
    'forward: cannot emulate a rate trace (tc has no trace player; use the userspace backend)',
    'reverse: cannot emulate a rate trace (tc has no trace player; use the userspace backend)']);
  assert.throws(() => planKernel(links.forward, 'r-eth1', { ingressDev: 'r-eth0', ifb: 'ifb-fwd', nsExec: [] }),
    /^Error: kernel backend cannot emulate a rate trace/);
});

test('every discipline of the schema has a tc plan, a kernel probe and a module in the uml guest', () => {
  const initSh = fs.readFileSync(new URL('../uml/init.sh', import.meta.url), 'utf8');
  for (const kind of QDISC_KINDS) {
    const qdisc = kind === 'prio' ? { kind, bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }] } : { kind };
    const link = { delay_ms: 0, rate: { kbit: 1000 }, qdisc };
    // A kind the kernel backend refuses (dualpi2: test above) still has its tc arguments.
    if (kernelNeeds(normalizeLink(link, 'l')).unsupported.length) assert.ok(tcLeafArgs(normalizeLink(link, 'l').qdisc).length > 1, kind);
    else assert.ok(plan(link).some((c) => c.includes('handle 10: ')), `${kind}: no discipline in the plan`);
    for (const tc of tcKinds(normalizeLink(link, 'l').qdisc)) {
      assert.ok(FEATURES.includes(tc), `${kind}: netem/probe.js has no trial of ${tc}`);
      // pfifo and bfifo are built into every kernel; the other qdiscs are modules the guest must load.
      if (tc !== 'pfifo' && tc !== 'bfifo') assert.match(initSh, new RegExp(`\\bsch_${tc}\\b`), `${kind}: netem/uml/init.sh loads no sch_${tc}`);
    }
  }
});

test('Gilbert-Elliott loss: netem\'s loss gemodel with all four parameters, on the delay line even without a delay', () => {
  assert.deepEqual(plan({ delay_ms: 0, loss_gemodel: { p_percent: 1, r_percent: 30, bad_loss_percent: 80, good_loss_percent: 0.5 } }),
    [...IFB, 'tc qdisc add dev ifb-fwd root handle 1: netem limit 1000 delay 0us loss gemodel 1% 30% 80% 0.5%']);
  // Only p given: netem's defaults written out (r = 100 - p, 1-h = 100, 1-k = 0), so tc's own never apply.
  assert.deepEqual(plan({ delay_ms: 20, loss_gemodel: { p_percent: 2.5 } }).slice(-1),
    ['tc qdisc add dev ifb-fwd root handle 1: netem limit 390625 delay 20000us loss gemodel 2.5% 97.5% 100% 0%']);
  // A delay step's netem change keeps the model.
  const link = normalizeLink({ delay_ms: 5, delay_schedule: [{ at_s: 10, delay_ms: 50 }], loss_gemodel: { p_percent: 1, r_percent: 20 } }, 'l');
  assert.deepEqual(planDelaySchedule(link, 'ifb-fwd', []).map((s) => s.argv.join(' ')),
    ['tc qdisc change dev ifb-fwd root handle 1: netem limit 976563 delay 50000us rate 10gbit loss gemodel 1% 20% 100% 0%']);
});

test('Gilbert-Elliott loss needs netem: refused with the reason on a kernel without it (this host\'s), run where netem is (uml)', () => {
  const ge = normalizeLink({ delay_ms: 0, loss_gemodel: { p_percent: 1 } }, 'l');
  assert.deepEqual(kernelNeeds(ge), { needs: ['ifb', 'ingress', 'mirred', 'netem', 'u32'], unsupported: [] });
  const links = { forward: ge, reverse: normalizeLink({ delay_ms: 0 }, 'r') };
  assert.deepEqual(kernelShortcomings(links, new Set(['tbf', 'pfifo', 'bfifo', 'ifb', 'ingress', 'u32', 'mirred'])),
    ['forward: needs netem for delay_ms/jitter_ms/loss_percent > 0, loss_gemodel (netem\'s loss gemodel); this kernel lacks them']);
  assert.deepEqual(kernelShortcomings(links, new Set(FEATURES)), []);
});

test('outages: refused by the kernel and uml backends (netem has no loss model in time)', () => {
  const link = normalizeLink({ delay_ms: 10, outage: { mean_on_ms: 5000, mean_off_ms: 200 } }, 'l');
  const { unsupported } = kernelNeeds(link);
  assert.deepEqual(unsupported, ['on/off outages (`outage`: netem has no loss model in time, only per packet; use the userspace backend)']);
  assert.throws(() => planKernel(link, 'r-eth1', O), /kernel backend cannot emulate on\/off outages/);
  const links = { forward: link, reverse: normalizeLink({ delay_ms: 0 }, 'r') };
  assert.deepEqual(kernelShortcomings(links, new Set(FEATURES)), [`forward: cannot emulate ${unsupported[0]}`]);
});
