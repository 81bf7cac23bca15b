// @ts-check
// A stand-in for the harness in kill tests: brings a network up with captures and cross traffic, says "up",
// then waits to be killed. It handles no signals (the worst case: everything it started is left behind).
import { createNetwork } from '../index.js';

const [id, runDir, backend] = process.argv.slice(2);
const scenario = {
  duration_s: 60,
  network: { forward: { delay_ms: backend === 'kernel' ? 0 : 10, rate: { kbit: 2000 }, qdisc: { kind: 'fifo', limit_ms: 100 } }, reverse: { delay_ms: backend === 'kernel' ? 0 : 10 } },
  cross_traffic: [{ kind: 'tcp', flows: 2, congestion_control: 'cubic', direction: 'forward', start_s: 0, stop_s: null, dscp: 0 }],
};
const net = await createNetwork({ id, scenario, runDir, backend: /** @type {any} */ (backend) });
await net.startCaptures({ snaplen: 256 });
await net.startSchedules(Date.now());
console.log('up');
setInterval(() => {}, 1000);
