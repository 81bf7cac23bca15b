// @ts-check
// The uml backend's plans (pure): the host side of r, the guest's interfaces, the exec prefix; and what it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planHostSide, planGuestSide } from '../uml/backend.js';
import { guestExecPrefix, umlUnavailable } from '../uml/guest.js';
import { chooseBackend } from '../backend.js';
import { parseArgs } from '../cli-args.js';
import { normalizeScenario } from '../../scenarios/model.js';

test('uml: host side of r loses forwarding and addresses; the guest takes r\'s names, addresses, offloads off', () => {
  assert.deepEqual(planHostSide(['ip', 'netns', 'exec', 'R']).map((c) => c.slice(4).join(' ')), [
    'sysctl -q -w net.ipv4.ip_forward=0', 'ip addr flush dev r-eth0', 'ip addr flush dev r-eth1']);
  const g = planGuestSide(['G', '--']).map((c) => c.slice(2).join(' '));
  assert.deepEqual(g.filter((c) => !c.startsWith('ethtool') && !c.startsWith('sh')), [
    'ip link set vec0 name r-eth0', 'ip addr add 10.0.1.1/24 dev r-eth0', 'ip link set r-eth0 up',
    'ip link set vec1 name r-eth1', 'ip addr add 10.0.2.1/24 dev r-eth1', 'ip link set r-eth1 up']);
  // Offloads off after up (the vector driver turns TSO/GRO on when the device opens), then checked.
  const up = g.indexOf('ip link set r-eth0 up');
  assert.match(g[up + 1], /^ethtool -K r-eth0 .*tso off gso off gro off/);
  assert.match(g[up + 2], /^sh -c .*generic-receive-offload/);
  const prefix = guestExecPrefix('abc123');
  assert.deepEqual(prefix.slice(2), ['/run/rtclab-uml/abc123/chan', '--']);
  assert.match(prefix[1], /netem\/uml\/exec\.js$/);
});

test('uml: --backend uml parses; what no tc plan can do is refused before anything is set up', { skip: umlUnavailable() ?? false }, async () => {
  assert.deepEqual(parseArgs(['up', '--backend', 'uml']), { cmd: 'up', backend: 'uml' });
  const ok = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'pie' } } } }).network;
  assert.deepEqual(await chooseBackend('uml', ok), { requested: 'uml', used: 'uml', reason: 'requested' });
  const metered = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { kbit: 10000 }, qdisc: { kind: 'prio',
    meters: [{ dscp: [46], per: 'flow', window_ms: 150, limit_kbit: 2000, action: { kind: 'ce_all', hold_ms: 2000 } }],
    bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }] } } } }).network;
  await assert.rejects(chooseBackend('uml', metered), /uml backend: forward: cannot emulate prio meters/);
});
