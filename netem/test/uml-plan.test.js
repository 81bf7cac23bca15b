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
  assert.deepEqual(g.filter((c) => !c.startsWith('ethtool')), [
    'ip link set vec0 name r-eth0', 'ip addr add 10.0.1.1/24 dev r-eth0', 'ip link set r-eth0 up',
    'ip link set vec1 name r-eth1', 'ip addr add 10.0.2.1/24 dev r-eth1', 'ip link set r-eth1 up']);
  assert.ok(g.some((c) => /^ethtool -K r-eth0 .*tso off gso off gro off/.test(c)));
  const prefix = guestExecPrefix('abc123');
  assert.deepEqual(prefix.slice(2), ['/run/rtclab-uml/abc123/chan', '--']);
  assert.match(prefix[1], /netem\/uml\/exec\.js$/);
});

test('uml: --backend uml parses; what no tc plan can do is refused before anything is set up', { skip: umlUnavailable() ?? false }, async () => {
  assert.deepEqual(parseArgs(['up', '--backend', 'uml']), { cmd: 'up', backend: 'uml' });
  const ok = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'pie' } } } }).network;
  assert.deepEqual(await chooseBackend('uml', ok), { requested: 'uml', used: 'uml', reason: 'requested' });
  const jitter = normalizeScenario({ network: { forward: { delay_ms: 25, jitter_ms: 5 } } }).network;
  await assert.rejects(chooseBackend('uml', jitter), /uml backend: forward: cannot emulate jitter_ms > 0/);
});
