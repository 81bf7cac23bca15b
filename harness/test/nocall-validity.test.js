// @ts-check
// The validity of a run without a call (`calls: []`): only the network's checks, judged over the run; and
// cross_traffic_ran, which every run with cross traffic gets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validityChecks } from '../validity.js';

const network = {
  dataPrefix: '10.0.', selectedPairs: [], calls: [], connectTimeoutS: 0, connectSeconds: null,
  cpuLimited: {}, samples: {}, bottleneckAlive: true,
  captures: { a: { packets: 5000, dropped_by_kernel: 0 }, b: { packets: 4900, dropped_by_kernel: 0 } },
  captureEnabled: true, hostCpuBusy: 0.4, eventLogs: null,
  crossTraffic: { expected: [0, 1], started: [0, 1], failed: [] },
};

test('a run without a call makes the network\'s checks only, over the run, and is valid when they pass', () => {
  const v = validityChecks(network);
  assert.equal(v.valid, true, JSON.stringify(v.checks));
  assert.deepEqual(v.checks.map((c) => c.name), ['bottleneck_alive', 'host_cpu_not_saturated', 'captures_complete',
    'cross_traffic_ran']);
  assert.match(v.checks[0].detail, /for the whole run$/);
  assert.match(v.checks[1].detail, /40% busy during the run/);
  assert.equal(v.checks[3].detail, '2 of 2 cross-traffic item(s) started, none failed during the run');
});

test('cross_traffic_ran fails for an item that never started and for a client that failed, naming them', () => {
  const v = validityChecks({ ...network, crossTraffic: { expected: [0, 1], started: [0],
    failed: ['iperf3 client 0 exited with code 1 (see iperf3-0-client.log)'] } });
  assert.equal(v.valid, false);
  const check = v.checks.find((c) => c.name === 'cross_traffic_ran');
  assert.equal(check?.ok, false);
  assert.equal(check?.detail, 'cross_traffic[1] never started; iperf3 client 0 exited with code 1 (see iperf3-0-client.log)');
});

test('a saturated host or a dead bottleneck still makes a run without a call invalid', () => {
  const failing = (/** @type {any} */ o) => validityChecks(o).checks.filter((c) => !c.ok).map((c) => c.name);
  assert.deepEqual(failing({ ...network, hostCpuBusy: 0.95 }), ['host_cpu_not_saturated']);
  assert.deepEqual(failing({ ...network, bottleneckAlive: false }), ['bottleneck_alive']);
  assert.deepEqual(failing({ ...network, captures: null }), ['captures_complete']);
});
