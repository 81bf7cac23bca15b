// @ts-check
// One network, one backend, several traffic patterns in a row (bench/uml/README.md): brings the network up through
// netem's API, captures both sides for the whole run, plays each pattern (a constant-rate UDP flow and/or CUBIC flows,
// all iperf3, a -> b), and records when each pattern ran, the qdisc and link counters before and after it, and the CPU
// of namespace r (the guest, or the userspace bottlenecks). The numbers are computed afterwards from the run
// directory by measure.py. One network per discipline rather than per pattern: booting a guest costs 5-6 s.
//
//   node bench/uml/cell.mjs SPEC.json      SPEC: {backend, runDir, scenario, patterns: [...], gap_s}
//   pattern: {name, seconds, udp?: {kbit, len, dscp}, tcp?: {flows, ecn}}
// Writes runDir/cell.json. Run as root, under the machine's lock (bench/uml/diff.py and limits.py do).
import { readFileSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createNetwork } from '../../netem/index.js';
import { run, runChecked, sleep } from '../../netem/exec.js';
import { guestRun, channelDir } from '../../netem/uml/guest.js';

const B = '10.0.2.2';
const CLK_TCK = 100; // USER_HZ on Linux: /proc/PID/stat counts in 1/100 s

/**
 * CPU seconds of every process in namespace r, with what they reaped (cutime, cstime): the UML guest runs its
 * own processes (tc, sh) as host processes that come and go.
 * @param {string} ns
 */
async function cpuSeconds(ns) {
  const r = await run(['ip', 'netns', 'pids', ns]);
  let ticks = 0;
  for (const pid of r.stdout.split('\n').filter(Boolean)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]); // utime stime cutime cstime
    } catch { /* exited */ }
  }
  return ticks / CLK_TCK;
}

/**
 * Counters that say where packets went: the qdiscs' own (`tc -s -j qdisc show`) and the links' (`ip -s -j link`),
 * in the guest under uml, in r's host namespace otherwise (the userspace bottleneck's own are in its log).
 * @param {import('../../netem/index.js').Network} net @param {string} backend
 */
async function counters(net, backend) {
  if (backend === 'uml') {
    const chan = channelDir(net.id);
    const q = await guestRun(chan, ['tc', '-s', '-j', 'qdisc', 'show'], { timeout_ms: 10000 });
    const l = await guestRun(chan, ['ip', '-s', '-j', 'link', 'show'], { timeout_ms: 10000 });
    return { qdiscs: q.code === 0 ? JSON.parse(q.stdout) : null, links: l.code === 0 ? JSON.parse(l.stdout) : null,
      host_links: JSON.parse(await runChecked([...net.nsExec('r'), 'ip', '-s', '-j', 'link', 'show'])),
      sockets: await packetSockets(net) };
  }
  return { qdiscs: null, links: null, host_links: JSON.parse(await runChecked([...net.nsExec('r'), 'ip', '-s', '-j', 'link', 'show'])),
    sockets: [] };
}

/**
 * The host's packet sockets in r (the guest's vector driver's raw sockets): per socket its protocol (`*` = all,
 * `[2048]` = IPv4), device, receive queue and drops (`ss`'s skmem d): packets the host dropped because the guest
 * did not read them in time.
 * @param {import('../../netem/index.js').Network} net
 */
async function packetSockets(net) {
  const r = await run([...net.nsExec('r'), 'ss', '-0', '-m', '-n', '-H']);
  return r.stdout.split('\n').filter((l) => l.startsWith('p_raw')).map((l) => {
    const f = l.trim().split(/\s+/);
    const [proto, dev] = f[3].split(':');
    return { proto, dev, recv_q: Number(f[1]), drops: Number(/[(,]d(\d+)/.exec(l)?.[1] ?? 'NaN') };
  });
}

/** @param {string[]} argv @param {string} log */
function start(argv, log) {
  const fd = openSync(log, 'a');
  const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return p;
}

/** @param {import('node:child_process').ChildProcess} p @param {number} ms */
async function waitExit(p, ms) {
  const deadline = Date.now() + ms;
  while (p.exitCode === null && p.signalCode === null && Date.now() < deadline) await sleep(50);
  if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
}

/** @param {import('../../netem/index.js').Network} net @param {number} port */
async function waitListening(net, port) {
  for (let i = 0; i < 250; i++) {
    const r = await run([...net.nsExec('b'), 'ss', '-Hltn', `sport = :${port}`]);
    if (r.stdout.trim()) return;
    await sleep(20);
  }
  throw new Error(`iperf3 server on port ${port} did not listen`);
}

/**
 * One pattern: servers in b, then the clients in a at once. ECN for the TCP flows is net.ipv4.tcp_ecn in a (1:
 * request it), put back to Linux's default 2 afterwards.
 * @param {import('../../netem/index.js').Network} net @param {any} pat @param {number} i @param {string} runDir
 */
async function playPattern(net, pat, i, runDir) {
  const procs = [];
  const servers = [];
  const log = join(runDir, `iperf3-${pat.name}.log`);
  if (pat.tcp) {
    await runChecked([...net.nsExec('a'), 'sysctl', '-q', '-w', `net.ipv4.tcp_ecn=${pat.tcp.ecn ? 1 : 2}`]);
    const port = 5201 + 2 * i;
    servers.push(start([...net.nsExec('b'), 'iperf3', '-s', '-1', '-B', B, '-p', String(port)], log));
    await waitListening(net, port);
    procs.push(() => start([...net.nsExec('a'), 'iperf3', '-c', B, '-p', String(port), '-t', String(pat.seconds),
      '-P', String(pat.tcp.flows), '-C', 'cubic', '--json', '--logfile', join(runDir, `iperf3-${pat.name}-tcp.json`)], log));
  }
  if (pat.udp) {
    const port = 5202 + 2 * i;
    servers.push(start([...net.nsExec('b'), 'iperf3', '-s', '-1', '-B', B, '-p', String(port)], log));
    await waitListening(net, port);
    procs.push(() => start([...net.nsExec('a'), 'iperf3', '-c', B, '-p', String(port), '-u', '-b', `${pat.udp.kbit}k`,
      '-l', String(pat.udp.len), '-S', String(pat.udp.dscp << 2), '-t', String(pat.seconds), '--json', '--logfile',
      join(runDir, `iperf3-${pat.name}-udp.json`)], log));
  }
  const before = { t: Date.now() / 1000, ...await counters(net, net.info.backend.used), cpu_s: await cpuSeconds(net.namespaces.r) };
  const t_start = Date.now() / 1000;
  const clients = procs.map((f) => f());
  for (const c of clients) await waitExit(c, pat.seconds * 1000 + 15000);
  const t_end = Date.now() / 1000;
  const cpu_end = await cpuSeconds(net.namespaces.r);
  for (const s of servers) await waitExit(s, 3000);
  return { ...pat, t_start, t_end, cpu_s: cpu_end - before.cpu_s, before, client_exit: clients.map((c) => c.exitCode) };
}

async function main() {
  const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const net = await createNetwork({ scenario: spec.scenario, runDir: spec.runDir, backend: spec.backend });
  const out = { backend: net.info.backend, id: net.id, scenario: spec.scenario, patterns: /** @type {any[]} */ ([]),
    captures: /** @type {any} */ (null), error: /** @type {string | null} */ (null) };
  /** @type {any[]} */
  const failures = [];
  net.on('failure', (f) => failures.push(f));
  try {
    await net.startCaptures();
    for (const [i, pat] of spec.patterns.entries()) {
      out.patterns.push(await playPattern(net, pat, i, spec.runDir));
      // Queues drain and AQM state goes idle before the next pattern (CoDel forgets its count after 16 intervals).
      await sleep(spec.gap_s * 1000);
      out.patterns.at(-1).after = { t: Date.now() / 1000, ...await counters(net, net.info.backend.used) };
    }
  } catch (e) {
    out.error = String(e instanceof Error ? e.stack : e);
  } finally {
    out.captures = await net.stopCaptures();
    await net.down();
  }
  if (failures.length) out.error = `${out.error ?? ''} ${JSON.stringify(failures)}`.trim();
  writeFileSync(join(spec.runDir, 'cell.json'), JSON.stringify(out, null, 1));
  if (out.error) {
    console.error(`cell: ${out.error}`);
    process.exitCode = 1;
  }
}

await main();
