// @ts-check
// A chain of bottlenecks' nftables table and route rules (netem/chain.js): the lines, the order the base chains put
// the hops in each way, nft's own check of them (-c: parsed and checked against the kernel, nothing applied), and bad
// values refused before nft sees them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chainTableRuleset, hopName, hopQueueNum, routeCounters, routeRuleLines } from '../chain.js';

const flow = /** @type {const} */ ({ proto: 'udp', src: '10.0.1.2', sport: 40000, dst: '10.0.2.2', dport: 50000 });

test('each hop has a base chain per direction; a -> b crosses hop 0 first, b -> a the last hop first', () => {
  const lines = chainTableRuleset(3).trim().split('\n');
  const priority = (/** @type {string} */ chain) => Number(lines.find((l) => l.includes(` ${chain} `))?.match(/priority (-?\d+);/)?.[1]);
  const forward = [0, 1, 2].map((h) => priority(`hop${h}_forward`));
  const reverse = [0, 1, 2].map((h) => priority(`hop${h}_reverse`));
  assert.deepEqual(forward, [...forward].sort((x, y) => x - y));
  assert.deepEqual(reverse, [...reverse].sort((x, y) => y - x));
  assert.ok(forward.every((p) => p < -150), 'before the single bottleneck\'s mangle chain');
  assert.deepEqual([hopQueueNum(0, 'forward'), hopQueueNum(2, 'reverse')], [10, 22]);
  assert.equal(hopName(1, 'reverse'), 'hop1-reverse');
});

test('a flow\'s rules: each hop of its path queues it, both ways, to that hop\'s bottleneck; nft accepts them', () => {
  const rules = routeRuleLines(flow, [1, 2], 3);
  assert.equal(rules, [
    'add rule ip rtclab_hops hop1_forward iifname "r-eth0" oifname "r-eth1" ip saddr 10.0.1.2 ip daddr 10.0.2.2 ip protocol udp udp sport 40000 udp dport 50000 counter queue num 11',
    'add rule ip rtclab_hops hop1_reverse iifname "r-eth1" oifname "r-eth0" ip saddr 10.0.2.2 ip daddr 10.0.1.2 ip protocol udp udp sport 50000 udp dport 40000 counter queue num 21',
    'add rule ip rtclab_hops hop2_forward iifname "r-eth0" oifname "r-eth1" ip saddr 10.0.1.2 ip daddr 10.0.2.2 ip protocol udp udp sport 40000 udp dport 50000 counter queue num 12',
    'add rule ip rtclab_hops hop2_reverse iifname "r-eth1" oifname "r-eth0" ip saddr 10.0.2.2 ip daddr 10.0.1.2 ip protocol udp udp sport 50000 udp dport 40000 counter queue num 22',
  ].join('\n') + '\n');
  const anyPort = routeRuleLines({ proto: 'tcp', src: '10.0.1.2', dst: '10.0.2.2', dport: 5201 }, [0], 1);
  assert.match(anyPort, /ip protocol tcp tcp dport 5201 counter queue num 10\n/);
  assert.match(anyPort, /ip protocol tcp tcp sport 5201 counter queue num 20\n$/);
  const r = spawnSync('nft', ['-c', '-f', '-'], { input: chainTableRuleset(3) + rules + anyPort, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('bad values are refused naming them', () => {
  assert.throws(() => routeRuleLines(flow, [3], 3), /path \[3\] is not hops of the chain \(0 to 2\)/);
  assert.throws(() => routeRuleLines(flow, [], 3), /path \[\] is not hops/);
  assert.throws(() => routeRuleLines({ ...flow, src: '10.0.1.2; flush ruleset' }, [0], 1), /is not an IPv4 address/);
  assert.throws(() => routeRuleLines({ ...flow, dport: 70000 }, [0], 1), /port 70000 is not 1-65535/);
  assert.throws(() => routeRuleLines({ ...flow, proto: /** @type {any} */ ('icmp') }, [0], 1), /protocol "icmp" is not udp or tcp/);
});

test('rule counters are read from nft -j output, with their chain', () => {
  const json = JSON.stringify({ nftables: [{ metainfo: {} }, { table: {} }, { chain: {} },
    { rule: { chain: 'hop0_forward', handle: 4, expr: [{ match: {} }, { counter: { packets: 12, bytes: 9000 } }, { queue: { num: 10 } }] } }] });
  assert.deepEqual(routeCounters(json), [{ chain: 'hop0_forward', rule: 'handle 4', packets: 12, bytes: 9000 }]);
});
