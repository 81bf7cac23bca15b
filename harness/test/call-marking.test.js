// @ts-check
// The DSCP rules a call asks for (harness/call-marking.js): the call's value on its 5-tuple, a track's own on its SSRCs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wantedMarks } from '../call-marking.js';

const A = { address: '10.0.1.2', port: 5000 };
const B = { address: '10.0.2.2', port: 6000 };
/** A call in the state its pages reported: pairs and tracks per side. @param {any} o */
const call = (o) => ({ call: { dscp: 46, tracks: [{ id: 'v1', dscp: 46 }, { id: 'v2', dscp: 34 }] }, marks: { a: [], b: [] },
  marked: new Set(), pairs: { a: { local: A, remote: B }, b: { local: B, remote: A } }, tracks: { a: null, b: null }, ...o });

test('the call\'s DSCP on its flow, and a track with its own DSCP on that track\'s SSRCs once they are reported', () => {
  const flow = { src: A.address, sport: A.port, dst: B.address, dport: B.port };
  assert.deepEqual(wantedMarks(call({}), 'a'), [{ ...flow, dscp: 46, track: null }]);
  const reported = call({ tracks: { a: [{ id: 'v1', ssrcs: [11] }, { id: 'v2', ssrcs: [22, 23] }], b: null } });
  assert.deepEqual(wantedMarks(reported, 'a'), [{ ...flow, dscp: 46, track: null }, { ...flow, dscp: 34, ssrcs: [22, 23], track: 'v2' }]);
  // From b, the flow runs the other way.
  assert.deepEqual(wantedMarks(call({}), 'b'), [{ src: B.address, sport: B.port, dst: A.address, dport: A.port, dscp: 46, track: null }]);
});

test('a peer-reflexive remote (address hidden) takes the other side\'s own local address; nothing before both are known', () => {
  const hidden = call({ pairs: { a: { local: A, remote: { address: '', port: 6000 } }, b: { local: B, remote: A } } });
  assert.deepEqual(wantedMarks(hidden, 'a')[0], { src: A.address, sport: A.port, dst: B.address, dport: B.port, dscp: 46, track: null });
  assert.deepEqual(wantedMarks(call({ pairs: { a: { local: A, remote: { address: '' } }, b: null } }), 'a'), []);
  assert.deepEqual(wantedMarks(call({ pairs: { a: null, b: null } }), 'a'), []);
});

test('a call that asks for 0 everywhere wants no rule', () => {
  assert.deepEqual(wantedMarks(call({ call: { dscp: 0, tracks: [{ id: 'v1', dscp: 0 }] } }), 'a'), []);
});
