// @ts-check
// A chain of bottlenecks' rules (netem/chain.js): each hop's stage, in the order packets cross the hops each way;
// the iptables commands for a flow's path; bad values refused before iptables sees them; the counters read back.
// That the kernel forwards a packet through the stages in this order is netem/test/chain.integration.test.js's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hopName, hopQueueNum, hopStage, MAX_HOPS, routeCounters, routeRules, STAGES } from '../chain.js';

const flow = /** @type {const} */ ({ proto: 'udp', src: '10.0.1.2', sport: 40000, dst: '10.0.2.2', dport: 50000 });

test('a -> b meets hop 0 at the first stage, b -> a the last hop; a stage names the interfaces it can see', () => {
  const at = (/** @type {number} */ hop, /** @type {'forward' | 'reverse'} */ d) => STAGES.indexOf(hopStage(hop, d, 3));
  assert.deepEqual([0, 1, 2].map((h) => at(h, 'forward')), [0, 1, 2]);
  assert.deepEqual([0, 1, 2].map((h) => at(h, 'reverse')), [2, 1, 0]);
  assert.deepEqual(STAGES.map((s) => `${s.table} ${s.chain}`), ['raw PREROUTING', 'mangle PREROUTING', 'mangle FORWARD',
    'filter FORWARD', 'security FORWARD', 'mangle POSTROUTING']);
  assert.equal(MAX_HOPS, 6);
  assert.throws(() => hopStage(0, 'forward', 7), /a chain of 7 hops: at most 6/);
  assert.deepEqual([hopQueueNum(0, 'forward'), hopQueueNum(2, 'reverse')], [10, 22]);
  assert.equal(hopName(1, 'reverse'), 'hop1-reverse');
});

test('a flow\'s rules: each hop of its path queues it, both ways, to that hop\'s bottleneck', () => {
  assert.deepEqual(routeRules(flow, [1, 2], 3).map((a) => a.join(' ')), [
    'iptables -w -t mangle -A PREROUTING -i r-eth0 -p udp -s 10.0.1.2 -d 10.0.2.2 --sport 40000 --dport 50000 -j NFQUEUE --queue-num 11',
    'iptables -w -t mangle -A PREROUTING -i r-eth1 -p udp -s 10.0.2.2 -d 10.0.1.2 --sport 50000 --dport 40000 -j NFQUEUE --queue-num 21',
    'iptables -w -t mangle -A FORWARD -i r-eth0 -o r-eth1 -p udp -s 10.0.1.2 -d 10.0.2.2 --sport 40000 --dport 50000 -j NFQUEUE --queue-num 12',
    'iptables -w -t raw -A PREROUTING -i r-eth1 -p udp -s 10.0.2.2 -d 10.0.1.2 --sport 50000 --dport 40000 -j NFQUEUE --queue-num 22',
  ]);
  const last = routeRules({ proto: 'tcp', src: '10.0.1.2', dst: '10.0.2.2', dport: 5201 }, [5], 6).map((a) => a.join(' '));
  assert.deepEqual(last, [
    'iptables -w -t mangle -A POSTROUTING -o r-eth1 -p tcp -s 10.0.1.2 -d 10.0.2.2 --dport 5201 -j NFQUEUE --queue-num 15',
    'iptables -w -t raw -A PREROUTING -i r-eth1 -p tcp -s 10.0.2.2 -d 10.0.1.2 --sport 5201 -j NFQUEUE --queue-num 25',
  ]);
});

test('bad values are refused naming them', () => {
  assert.throws(() => routeRules(flow, [3], 3), /path \[3\] is not hops of the chain \(0 to 2\)/);
  assert.throws(() => routeRules(flow, [], 3), /path \[\] is not hops/);
  assert.throws(() => routeRules({ ...flow, src: '10.0.1.2; flush ruleset' }, [0], 1), /is not an IPv4 address/);
  assert.throws(() => routeRules({ ...flow, dport: 70000 }, [0], 1), /port 70000 is not 1-65535/);
  assert.throws(() => routeRules({ ...flow, proto: /** @type {any} */ ('icmp') }, [0], 1), /protocol "icmp" is not udp or tcp/);
});

test('rule counters are read from iptables -L -v -x -n', () => {
  const listing = `Chain FORWARD (policy ACCEPT 12 packets, 900 bytes)
    pkts      bytes target     prot opt in     out     source               destination
     120    90000 NFQUEUE    17   --  r-eth0 r-eth1  10.0.1.2             10.0.2.2             udp spt:40000 dpt:50000 NFQUEUE num 12
       0        0 NFQUEUE    17   --  r-eth1 r-eth0  10.0.2.2             10.0.1.2             udp spt:50000 dpt:40000 NFQUEUE num 21
`;
  assert.deepEqual(routeCounters(listing, { table: 'mangle', chain: 'FORWARD' }), [
    { stage: 'mangle FORWARD', queue_num: 12, packets: 120, bytes: 90000 },
    { stage: 'mangle FORWARD', queue_num: 21, packets: 0, bytes: 0 }]);
});
