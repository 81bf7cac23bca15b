// @ts-check
// A delay per flow (calls[].delay_ms, RFC 8867 5.5) through the real userspace bottleneck: three UDP flows share one
// queue, two of them with a delay of their own; from the captures, each flow's packets took its own delay, in both
// directions, and the third the link's.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { withNetwork, execIn, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { joinCaptures } from '../test-support/pcap.js';

/** Paced UDP datagrams from a bound source port: (count, interval ms, source port, destination address and port). */
const SENDER = `
import socket, sys, time
count, interval, sport, dst, dport = int(sys.argv[1]), float(sys.argv[2]) / 1000, int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", sport))
start = time.monotonic()
for i in range(count):
    time.sleep(max(0.0, start + i * interval - time.monotonic()))
    s.sendto(i.to_bytes(4, "big") * 100, (dst, dport))
`;

test('each flow of the table takes its own delay after the shared queue, both ways; the others the link\'s', { skip: SKIP_NO_BOTTLENECK }, async () => {
  const scenario = { network: { forward: { delay_ms: 50, rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 300 } }, reverse: { delay_ms: 50 } } };
  await withNetwork(scenario, 'userspace', async (net, runDir) => {
    await net.startCaptures({ snaplen: 128 });
    const inForce = await net.setFlowDelays([
      { a: '10.0.1.2:40001', b: '10.0.2.2:5301', delay_ms: 10 },
      { a: '10.0.2.2:5301', b: '10.0.1.2:40002', delay_ms: 150 }, // named from b's side: matched either way
    ]);
    assert.ok(inForce <= Date.now());
    const send = (/** @type {'a'|'b'} */ host, /** @type {number} */ sport, /** @type {string} */ dst, /** @type {number} */ dport) =>
      execIn(net, host, ['python3', '-c', SENDER, '200', '10', String(sport), dst, String(dport)]);
    // 3 x 400-byte datagrams every 10 ms: about 1 Mbit/s through 2 Mbit/s, so the queue stays short.
    await Promise.all([send('a', 40001, '10.0.2.2', 5301), send('a', 40002, '10.0.2.2', 5301), send('a', 40003, '10.0.2.2', 5301),
      send('b', 5301, '10.0.1.2', 40001)]);
    await new Promise((r) => setTimeout(r, 400));
    await net.stopCaptures();
    const rows = joinCaptures(join(runDir, 'capture-a.pcap'), join(runDir, 'capture-b.pcap'));
    const owds = (/** @type {string} */ direction, /** @type {number} */ port) => rows
      .filter((r) => r.direction === direction && r.proto === 17 && (direction === 'forward' ? r.sport : r.dport) === port && r.owd_ms !== null)
      .map((r) => /** @type {number} */ (r.owd_ms));
    for (const [direction, port, delay] of /** @type {const} */ ([['forward', 40001, 10], ['forward', 40002, 150], ['forward', 40003, 50], ['reverse', 40001, 10]])) {
      const owd = owds(direction, port);
      assert.equal(owd.length, 200, `${direction} ${port}: every datagram delivered`);
      const min = Math.min(...owd);
      // Never below its delay; its fastest packet within 3 ms of it (transmission at 2 Mbit/s and the hops).
      assert.ok(min >= delay && min < delay + 3, `${direction} ${port}: min OWD ${min.toFixed(2)} ms against its ${delay} ms`);
    }
  });
});
