// @ts-check
// How often Linux's own PIE updates its drop probability (docs/bottleneck.md, "PIE's update period"): a uml network
// at the C16 (c) link (10 Mbit/s, 25 ms each way, PIE target 20 ms), pie_sampler.py in the guest reading PIE's
// probability and delay every 2 ms, and REPS runs of constant-rate UDP at 1.2 x capacity (10 s each, 3 s apart),
// so that the queue stays above the target and the probability moves at every update. pie_timer.py reads the result.
//
//   node bench/uml/pie-timer.mjs RUN_DIR [TUPDATE_MS=30] [REPS=2]
// Writes RUN_DIR/pie-samples.txt (pie_sampler.py's lines), pie-timer.json (when each UDP run started and ended) and
// the run's captures. Run as root, under the machine's lock.
import { spawn } from 'node:child_process';
import { openSync, closeSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNetwork } from '../../netem/index.js';
import { sleep } from '../../netem/exec.js';
import { guestScript, channelDir } from '../../netem/uml/guest.js';

const SAMPLER = join(dirname(fileURLToPath(import.meta.url)), 'pie_sampler.py');
const B = '10.0.2.2';
const [runDir, tupdateArg = '30', repsArg = '2'] = process.argv.slice(2);
if (!runDir) {
  console.error('usage: node bench/uml/pie-timer.mjs RUN_DIR [TUPDATE_MS=30] [REPS=2]');
  process.exit(2);
}
mkdirSync(runDir, { recursive: true });
const scenario = { network: {
  forward: { delay_ms: 25, rate: { kbit: 10000 }, qdisc: { kind: 'pie', target_ms: 20, tupdate_ms: Number(tupdateArg), limit_packets: 1000 } },
  reverse: { delay_ms: 25 } } };

/** @param {string[]} argv @param {string} log */
function start(argv, log) {
  const fd = openSync(log, 'a');
  const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return p;
}

const net = await createNetwork({ scenario, runDir, backend: 'uml' });
const chan = channelDir(net.id);
const out = { backend: net.info.backend, tupdate_ms: Number(tupdateArg), runs: /** @type {any[]} */ ([]) };
try {
  await net.startCaptures();
  const r = await guestScript(chan, `nohup python3 -S -I ${SAMPLER} ${join(runDir, 'pie-samples.txt')} 0.002 </dev/null >${join(runDir, 'pie-sampler.log')} 2>&1 &\n`);
  if (r.code !== 0) throw new Error(`pie_sampler.py did not start in the guest: ${r.stderr}`);
  await sleep(5000); // python3 starts slowly over hostfs
  for (let i = 0; i < Number(repsArg); i++) {
    const port = 5202 + i;
    const log = join(runDir, 'iperf3.log');
    const server = start([...net.nsExec('b'), 'iperf3', '-s', '-1', '-B', B, '-p', String(port)], log);
    await sleep(1000);
    const t_start = Date.now() / 1000;
    const client = start([...net.nsExec('a'), 'iperf3', '-c', B, '-p', String(port), '-u', '-b', '12000k', '-l', '1200',
      '-t', '10', '--json', '--logfile', join(runDir, `iperf3-${i}.json`)], log);
    while (client.exitCode === null && client.signalCode === null) await sleep(50);
    out.runs.push({ port, t_start, t_end: Date.now() / 1000, exit: client.exitCode });
    server.kill();
    await sleep(3000);
  }
} finally {
  await guestScript(chan, 'pkill -f pie_sampler.py\n').catch(() => {});
  await net.stopCaptures();
  await net.down();
  writeFileSync(join(runDir, 'pie-timer.json'), JSON.stringify(out, null, 1));
}
