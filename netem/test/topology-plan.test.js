// @ts-check
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planTopology, nftRuleset } from '../topology.js';
import { names, mgmtAddresses, NS_RE, ROOT_VETH_RE } from '../names.js';

test('names follow the convention cleanup relies on', () => {
  const n = names('k3x9q2');
  assert.deepEqual(n.namespaces, { a: 'rtclab-k3x9q2-a', r: 'rtclab-k3x9q2-r', b: 'rtclab-k3x9q2-b' });
  assert.deepEqual(n.rootVeths, { a: 'rlk3x9q2a', b: 'rlk3x9q2b' });
  assert.ok(n.rootVeths.a.length <= 15, 'interface names fit IFNAMSIZ');
  assert.ok(NS_RE.test(n.namespaces.r) && ROOT_VETH_RE.test(n.rootVeths.b));
  assert.deepEqual(mgmtAddresses(7), { a: { root: '10.99.7.1', host: '10.99.7.2' }, b: { root: '10.99.7.5', host: '10.99.7.6' } });
  assert.throws(() => names('K3X'), /must be 6 characters/);
});

test('topology plan: data path a - r - b, a and b route everything via r and r has no default route, offloads off, management /30s', () => {
  const plan = planTopology('k3x9q2', 7).map((argv) => argv.join(' '));
  for (const line of [
    'ip link add a-eth0 netns rtclab-k3x9q2-a type veth peer name r-eth0 netns rtclab-k3x9q2-r',
    'ip link add b-eth0 netns rtclab-k3x9q2-b type veth peer name r-eth1 netns rtclab-k3x9q2-r',
    'ip -n rtclab-k3x9q2-a addr add 10.0.1.2/24 dev a-eth0',
    'ip -n rtclab-k3x9q2-r addr add 10.0.1.1/24 dev r-eth0',
    'ip -n rtclab-k3x9q2-r addr add 10.0.2.1/24 dev r-eth1',
    'ip -n rtclab-k3x9q2-b addr add 10.0.2.2/24 dev b-eth0',
    'ip -n rtclab-k3x9q2-a route add default via 10.0.1.1',
    'ip -n rtclab-k3x9q2-b route add default via 10.0.2.1',
    'ip netns exec rtclab-k3x9q2-r sysctl -q -w net.ipv4.ip_forward=1',
    'ip addr add 10.99.7.1/30 dev rlk3x9q2a',
    'ip -n rtclab-k3x9q2-a addr add 10.99.7.2/30 dev m-eth0',
    'ip addr add 10.99.7.5/30 dev rlk3x9q2b',
    'ip -n rtclab-k3x9q2-b addr add 10.99.7.6/30 dev m-eth0',
  ]) assert.ok(plan.includes(line), `missing: ${line}`);
  assert.deepEqual(plan.filter((l) => /route add default/.test(l)).length, 2, 'default routes in a and b only');
  assert.ok(!plan.some((l) => /-r route add|rtclab-k3x9q2-r ip route/.test(l)), 'no route in r but its connected subnets');
  for (const dev of ['a-eth0', 'r-eth0', 'r-eth1', 'b-eth0']) {
    assert.ok(plan.some((l) => l.includes(`ethtool -K ${dev} tx off sg off tso off gso off gro off lro off`)), `offloads off on ${dev}`);
  }
  assert.match(nftRuleset('k3x9q2'), /iifname "rlk3x9q2\*" drop\n\s+oifname "rlk3x9q2\*" drop/);
});
