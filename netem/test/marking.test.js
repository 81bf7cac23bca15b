// @ts-check
// DSCP marking rules (netem/marking.js): the nftables lines, checked by nft itself (-c: parsed and checked against
// the kernel, nothing applied), and bad values refused before nft sees them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { markRuleLine, markTableRuleset, ruleCounters } from '../marking.js';

const flow = { src: '10.0.1.2', sport: 40000, dst: '10.0.2.2', dport: 50000 };

test('a flow rule and a track rule (SSRCs at bits 128-159 of the UDP header on) are what nft accepts', () => {
  const call = markRuleLine({ ...flow, dscp: 46 });
  const track = markRuleLine({ ...flow, dscp: 10, ssrcs: [0x075bcd15, 4000000000] });
  assert.equal(call, 'add rule ip rtclab_dscp postrouting ip saddr 10.0.1.2 ip daddr 10.0.2.2 udp sport 40000 udp dport 50000 counter ip dscp set 46\n');
  assert.match(track, / @th,128,32 \{ 0x075bcd15, 0xee6b2800 \} counter ip dscp set 10\n$/);
  const r = spawnSync('nft', ['-c', '-f', '-'], { input: markTableRuleset() + call + track, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('bad values are refused naming them', () => {
  assert.throws(() => markRuleLine({ ...flow, dscp: 64 }), /dscp 64 is not 0-63/);
  assert.throws(() => markRuleLine({ ...flow, src: '10.0.1.2; flush ruleset', dscp: 46 }), /is not an IPv4 address/);
  assert.throws(() => markRuleLine({ ...flow, sport: 0, dscp: 46 }), /port 0 is not 1-65535/);
  assert.throws(() => markRuleLine({ ...flow, dscp: 46, ssrcs: [-1] }), /SSRC -1 is not a 32-bit number/);
});

test('rule counters are read from nft -j output', () => {
  const json = JSON.stringify({ nftables: [{ metainfo: {} }, { table: {} },
    { rule: { handle: 3, expr: [{ match: {} }, { counter: { packets: 120, bytes: 90000 } }, { mangle: {} }] } }] });
  assert.deepEqual(ruleCounters(json), [{ rule: 'handle 3', packets: 120, bytes: 90000 }]);
});
