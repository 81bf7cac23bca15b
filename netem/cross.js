// @ts-check
// Cross traffic: TCP flows through the bottleneck on the scenario's schedule, congestion control set explicitly.
// kind tcp: long-lived iperf3 flows; the server runs in the receiving namespace (b for forward, a for reverse), the
// client in the other. kind tcp_short: RFC 8868 5.1's downloads (netem/short_tcp.py); the server, which sends the data,
// runs in the sending namespace (a for forward), the downloading client in the other.
import { spawn } from 'node:child_process';
import { openSync, closeSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, runChecked, sleep } from './exec.js';
import { DATA } from './names.js';
import { mulberry32 } from './seeded-random.js';

const BASE_PORT = 5201;

/**
 * Where each cross-traffic item's iperf3 listens and which host sends: the manifest's `topology.cross_traffic`, so
 * that readers (the analyzer's phase bounds) find an item's packets without knowing how the ports are chosen.
 * @param {any[]} items normalized cross_traffic
 * @returns {{ n: number, port: number, server_host: 'a'|'b', client_host: 'a'|'b' }[]}
 */
export function crossTrafficEndpoints(items) {
  return items.map(endpoint);
}

/** @param {any} item @param {number} n */
function endpoint(item, n) {
  const forward = (item.direction ?? 'forward') === 'forward';
  // The host that sends the data: iperf3's client, short_tcp.py's server.
  const sender = /** @type {'a'|'b'} */ (forward ? 'a' : 'b');
  const receiver = /** @type {'a'|'b'} */ (forward ? 'b' : 'a');
  return item.kind === 'tcp_short' ? { n, port: BASE_PORT + n, server_host: sender, client_host: receiver }
    : { n, port: BASE_PORT + n, server_host: receiver, client_host: sender };
}

const SHORT_TCP = join(dirname(fileURLToPath(import.meta.url)), 'short_tcp.py');

/** At most this many downloads are drawn per item (an idle mean far below the run's length would be a mistake). */
const MAX_DOWNLOADS = 100000;

/**
 * RFC 8868 5.1's short flows of a tcp_short item, drawn from its seed: per flow the idle time before each download
 * and the download's size. A flow among the first `initially_on` starts with a download (idle 0), the others with an
 * idle time; idle times are exponential with mean idle_mean_s, sizes uniform integers in [min, max] of size_bytes.
 * Each flow draws from its own stream (seed and flow index), and enough steps are drawn that the idle times alone
 * outlast the item's length.
 * @param {any} item normalized tcp_short item @param {number} length_s how long it runs
 * @returns {{ flows: { idle_s: number, size_bytes: number }[][] }}
 */
export function planShortFlows(item, length_s) {
  const [min, max] = item.size_bytes;
  let total = 0;
  const flows = [];
  for (let i = 0; i < item.flows; i++) {
    const random = mulberry32((item.seed + Math.imul(i + 1, 0x9e3779b9)) >>> 0);
    const steps = [];
    let idle_sum = 0;
    while (idle_sum <= length_s) {
      const idle_s = steps.length === 0 && i < item.initially_on ? 0 : -item.idle_mean_s * Math.log(1 - random());
      const size_bytes = min + Math.floor(random() * (max - min + 1));
      steps.push({ idle_s, size_bytes });
      idle_sum += idle_s;
      if (++total > MAX_DOWNLOADS) throw new Error(`cross_traffic: tcp_short draws more than ${MAX_DOWNLOADS} downloads (idle_mean_s ${item.idle_mean_s} against ${length_s} s)`);
    }
    flows.push(steps);
  }
  return { flows };
}

/**
 * The iperf3 server and client commands of cross-traffic item n (without the namespace prefix).
 * @param {any} item normalized cross_traffic entry @param {number} n @param {number} duration_s the call's length
 * @param {string} runDir
 */
export function planCrossTraffic(item, n, duration_s, runDir) {
  const { port, server_host: serverHost, client_host: clientHost } = endpoint(item, n);
  const serverAddr = DATA[serverHost];
  const start_s = item.start_s ?? 0;
  const stop_s = item.stop_s ?? duration_s;
  const length_s = Math.max(0, stop_s - start_s);
  if (item.kind === 'tcp_short') {
    const cc = item.congestion_control ?? 'cubic';
    return {
      port, start_s, stop_s, length_s, serverHost, clientHost,
      plan: planShortFlows(item, length_s), planFile: join(runDir, `short-tcp-${n}.plan.json`),
      server: ['python3', '-S', '-I', SHORT_TCP, 'serve', '--bind', serverAddr, '--port', String(port),
        '--congestion-control', cc, '--dscp', String(item.dscp ?? 0)],
      // --stop-at-ns is added when it starts (the run's t0 is known then).
      client: ['python3', '-S', '-I', SHORT_TCP, 'fetch', '--server', serverAddr, '--port', String(port),
        '--plan', join(runDir, `short-tcp-${n}.plan.json`), '--out', join(runDir, `short-tcp-${n}.jsonl`),
        '--congestion-control', cc],
    };
  }
  return {
    port, start_s, stop_s, length_s, serverHost, clientHost,
    server: ['iperf3', '-s', '-1', '-B', serverAddr, '-p', String(port)],
    client: ['iperf3', '-c', serverAddr, '-p', String(port), '-t', String(length_s), '-P', String(item.flows ?? 1),
      '-C', item.congestion_control ?? 'cubic', '--dscp', String(item.dscp ?? 0), '--json',
      '--logfile', join(runDir, `iperf3-${n}.json`)],
  };
}

/**
 * The namespaces whose net.ipv4.tcp_ecn becomes 1 (request ECN on outgoing connections): those sending items with
 * `ecn: true`. The others keep Linux's default 2 (no ECN on outgoing connections, ECN when the peer asks), which
 * also lets every receiving side answer ECN. The setting is per namespace, so items sent from one namespace must agree.
 * @param {any[]} items normalized cross_traffic @returns {Map<'a'|'b', 0 | 1>} per sending namespace: 1 = set it
 */
export function ecnSysctls(items) {
  /** @type {Map<'a'|'b', 0 | 1>} */
  const out = new Map();
  for (const [n, item] of items.entries()) {
    const host = (item.direction ?? 'forward') === 'forward' ? 'a' : 'b';
    const want = item.ecn ? 1 : 0;
    if (out.has(host) && out.get(host) !== want) {
      throw new Error(`cross_traffic[${n}].ecn: ${item.ecn} disagrees with an earlier item sent from namespace ${host}: net.ipv4.tcp_ecn is one setting per namespace, so give all items of one direction the same ecn`);
    }
    out.set(host, want);
  }
  return out;
}

export class CrossTraffic {
  /**
   * @param {{ items: any[], duration_s: number, runDir: string, nsExec: (host: 'a'|'r'|'b') => string[],
   *   onEvent?: (event: object) => void }} o
   */
  constructor(o) {
    this.o = o;
    /** @type {import('node:child_process').ChildProcess[]} */
    this.procs = [];
    /** @type {NodeJS.Timeout[]} */
    this.timers = [];
  }

  /** @param {string[]} argv @param {string} logFile */
  spawn(argv, logFile) {
    const fd = openSync(logFile, 'a');
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    this.procs.push(proc);
    return proc;
  }

  /**
   * Start every server now (and wait until each listens), each client at t0_ms + start_s.
   * @param {number} t0_ms
   */
  async start(t0_ms) {
    const { items, duration_s, runDir, nsExec } = this.o;
    for (const [host, value] of ecnSysctls(items)) {
      if (value === 1) await runChecked([...nsExec(host), 'sysctl', '-q', '-w', 'net.ipv4.tcp_ecn=1']);
    }
    for (const [n, item] of items.entries()) {
      const p = planCrossTraffic(item, n, duration_s, runDir);
      if (p.length_s <= 0) continue;
      const tool = item.kind === 'tcp_short' ? 'short-tcp' : 'iperf3';
      if (p.plan) writeFileSync(/** @type {string} */ (p.planFile), JSON.stringify(p.plan) + '\n');
      this.spawn([...nsExec(p.serverHost), ...p.server], join(runDir, `${tool}-${n}-server.log`));
      await this.waitListening(p.serverHost, p.port);
      const stopAt = p.plan ? ['--stop-at-ns', String(BigInt(Math.round((t0_ms + p.stop_s * 1000) * 1000)) * 1000n)] : [];
      const timer = setTimeout(() => {
        if (this.stopped) return;
        const proc = this.spawn([...nsExec(p.clientHost), ...p.client, ...stopAt], join(runDir, `${tool}-${n}-client.log`));
        this.o.onEvent?.({ event: 'cross_traffic_started', n, kind: item.kind, flows: item.flows, congestion_control: item.congestion_control, direction: item.direction, ecn: item.ecn ?? false });
        proc.on('exit', (code) => this.o.onEvent?.({ event: 'cross_traffic_stopped', n, kind: item.kind, tool, exit_code: code }));
      }, Math.max(0, t0_ms + p.start_s * 1000 - Date.now()));
      this.timers.push(timer);
    }
  }

  /** @param {'a'|'b'} host @param {number} port */
  async waitListening(host, port, timeout_ms = 5000) {
    const deadline = Date.now() + timeout_ms;
    while (Date.now() < deadline) {
      const r = await run([...this.o.nsExec(host), 'ss', '-Hltn', `sport = :${port}`]);
      if (r.stdout.trim()) return;
      await sleep(20);
    }
    throw new Error(`iperf3 server in ${host} did not listen on port ${port} within ${timeout_ms} ms`);
  }

  /** Stop clients first (SIGINT: iperf3 still writes its JSON), then servers. */
  async stop(timeout_ms = 3000) {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    const running = this.procs.filter((p) => p.exitCode === null && p.signalCode === null);
    for (const p of running) p.kill('SIGINT');
    const deadline = Date.now() + timeout_ms;
    while (running.some((p) => p.exitCode === null && p.signalCode === null) && Date.now() < deadline) await sleep(20);
    for (const p of running) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
}
