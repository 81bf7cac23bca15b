#!/usr/bin/env node
// @ts-check
// How late each backend applies a link's scheduled changes (capacity and delay steps), as its events measure it
// (netem/steps.js; docs/netem.md, "Scheduled changes"): the spread behind the validity check schedule_applied's bound
// (harness/validity.js MAX_STEP_LATE_MS). For each backend, one network whose forward link steps its capacity and its
// delay every EVERY seconds (2 by default; a delay step half way between two capacity steps), STEPS times each, with a
// UDP flow through it; prints each kind's late_ms (min, median, p95,
// max) and the failures, and writes every event to OUT/<backend>.jsonl.
//   sudo node bench/bottleneck/steps.mjs [--steps 30] [--every 2] [--backends userspace,kernel,uml] [--load N] [--out DIR]
// (--every 0.5 overloads the uml guest: each staged step starts sh, bash and tc in it, and at four a second they
// queued behind each other in its channel, seconds late; scenarios step seconds apart.)
// --load N: N busy loops (`sh -c 'while :; do :; done'`) beside it, as a second test would load the machine.
// The kernel backend needs netem for the delay steps: where the host has none, it gets the capacity steps alone.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNetwork } from '../../netem/index.js';
import { probeKernel } from '../../netem/probe.js';
import { udpFlow } from '../../netem/test-support/net.js';

const { values } = parseArgs({ options: { steps: { type: 'string', default: '30' }, backends: { type: 'string', default: 'userspace,kernel,uml' },
  load: { type: 'string', default: '0' }, every: { type: 'string', default: '2' }, out: { type: 'string' } } });
const STEPS = Number(values.steps);
const EVERY_S = Number(values.every);
const out = values.out ?? mkdtempSync(join(tmpdir(), 'rtclab-bench-steps.'));
mkdirSync(out, { recursive: true });

/** The link: capacity 1000 <-> 2000 kbit/s and delay 20 <-> 30 ms, alternating, a step of each every EVERY_S s. */
function link(withDelay = true) {
  const at = (/** @type {number} */ i) => Math.round((1 + i * EVERY_S) * 1000) / 1000;
  return {
    delay_ms: withDelay ? 20 : 0,
    rate: { schedule: [{ at_s: 0, kbit: 1000 }, ...Array.from({ length: STEPS }, (_, i) => ({ at_s: at(i), kbit: i % 2 ? 1000 : 2000 }))] },
    delay_schedule: withDelay ? Array.from({ length: STEPS }, (_, i) => ({ at_s: at(i) + EVERY_S / 2, delay_ms: i % 2 ? 20 : 30 })) : [],
    qdisc: { kind: 'fifo', limit_ms: 100 },
  };
}

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];

const load = Array.from({ length: Number(values.load) }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
try {
  console.log(`steps: ${STEPS} capacity and ${STEPS} delay steps per backend, every ${EVERY_S} s; ${load.length} busy loop(s) beside; events in ${out}`);
  for (const backend of /** @type {('userspace' | 'kernel' | 'uml')[]} */ (values.backends?.split(',') ?? [])) {
    const withDelay = backend !== 'kernel' || (await probeKernel()).has('netem');
    const scenario = { network: { forward: link(withDelay), reverse: { delay_ms: 0 } } };
    const t0_ms = Date.now() + (backend === 'uml' ? 10000 : 3000);
    const net = await createNetwork({ scenario, runDir: mkdtempSync(join(out, `${backend}-`)), backend, t0_ms });
    /** @type {any[]} */
    const events = [];
    net.on('event', (e) => { if (e.event === 'capacity_change' || e.event === 'delay_change') events.push(e); });
    try {
      await net.startSchedules(t0_ms);
      await new Promise((r) => setTimeout(r, Math.max(0, t0_ms - Date.now())));
      await udpFlow(net, { kbit: 1500, seconds: 1 + STEPS * EVERY_S + 1, len: 1000 });
      await net.schedulesSettled();
    } finally {
      await net.down();
    }
    for (const e of events) appendFileSync(join(out, `${backend}.jsonl`), JSON.stringify(e) + '\n');
    for (const kind of ['capacity_change', 'delay_change']) {
      const mine = events.filter((e) => e.event === kind);
      if (!mine.length) continue;
      const late = mine.filter((e) => e.ok).map((e) => e.late_ms).sort((a, b) => a - b);
      const failed = mine.filter((e) => !e.ok);
      console.log(`${backend} ${kind}: ${mine.length} steps, late_ms min ${late[0]?.toFixed(2)} median ${quantile(late, 0.5)?.toFixed(2)} ` +
        `p95 ${quantile(late, 0.95)?.toFixed(2)} max ${late[late.length - 1]?.toFixed(2)}; ${failed.length} failed` +
        (failed.length ? `: ${failed[0].error}` : ''));
    }
  }
} finally {
  for (const p of load) p.kill('SIGKILL');
}
