// @ts-check
// Helpers for integration tests: a network per test with a fresh run directory, always torn down.
import { mkdtempSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, execFileSync } from 'node:child_process';
import { createNetwork } from '../index.js';
import { BOTTLENECK_BIN } from '../userspace.js';

export const bottleneckBuilt = existsSync(BOTTLENECK_BIN);
export const SKIP_NO_BOTTLENECK = bottleneckBuilt ? false
  : `userspace bottleneck not built (${BOTTLENECK_BIN}); build it with cargo build --release in netem/bottleneck`;

/** Run directories of this test process: removed when it exits, unless RTCLAB_KEEP_TEST_RUNS=1. */
/** @type {string[]} */
const runDirs = [];
process.on('exit', () => {
  if (process.env.RTCLAB_KEEP_TEST_RUNS === '1') return;
  for (const d of runDirs) rmSync(d, { recursive: true, force: true });
});

/** @param {string} label */
export function newRunDir(label) {
  const dir = mkdtempSync(join(tmpdir(), `rtclab-test-${label}-`));
  runDirs.push(dir);
  return dir;
}

/**
 * Bring a network up, run fn, always tear down.
 * @template T
 * @param {any} scenario @param {'kernel' | 'userspace' | 'uml' | 'auto'} backend
 * @param {(net: import('../index.js').Network, runDir: string) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withNetwork(scenario, backend, fn) {
  const runDir = newRunDir(backend);
  const net = await createNetwork({ scenario, runDir, backend });
  try {
    return await fn(net, runDir);
  } finally {
    await net.down();
  }
}

/**
 * Run a command in a host's namespace to completion; resolves with its stdout.
 * @param {import('../index.js').Network} net @param {'a'|'r'|'b'} host @param {string[]} argv
 */
export function execIn(net, host, argv) {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = [...net.nsExec(host), ...argv];
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${argv.join(' ')} exited ${code}: ${err}`))));
  });
}

/**
 * iperf3 UDP from a to b for seconds at kbit (server in b); packet size len bytes of UDP payload.
 * @param {import('../index.js').Network} net
 * @param {{ kbit: number, seconds: number, len?: number, port?: number, tos?: number }} o
 */
export async function udpFlow(net, o) {
  const port = String(o.port ?? 5301);
  const server = spawn('ip', [...net.nsExec('b').slice(1), 'iperf3', '-s', '-1', '-B', '10.0.2.2', '-p', port], { stdio: 'ignore' });
  try {
    for (let i = 0; i < 100; i++) {
      const ss = execFileSync('ip', [...net.nsExec('b').slice(1), 'ss', '-Hlun', `sport = :${port}`]).toString()
        + execFileSync('ip', [...net.nsExec('b').slice(1), 'ss', '-Hltn', `sport = :${port}`]).toString();
      if (ss.trim()) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const args = ['iperf3', '-c', '10.0.2.2', '-p', port, '-u', '-b', `${o.kbit}k`, '-t', String(o.seconds), '-l', String(o.len ?? 1000)];
    if (o.tos !== undefined) args.push('-S', String(o.tos));
    return await execIn(net, 'a', args);
  } finally {
    server.kill('SIGKILL');
  }
}

/**
 * UDP datagrams from a to b (port 5301 by default) at a fixed pace, with no receiver and no control connection:
 * for links that drop packets at random, where iperf3's own TCP control connection can stall for tens of seconds.
 * @param {import('../index.js').Network} net
 * @param {{ count: number, interval_ms: number, len?: number, port?: number }} o
 */
export function udpPaced(net, o) {
  const sender = `
import socket, sys, time
count, interval, length, port = int(sys.argv[1]), float(sys.argv[2]) / 1000, int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
start = time.monotonic()
for i in range(count):
    time.sleep(max(0.0, start + i * interval - time.monotonic()))
    s.sendto(i.to_bytes(4, "big") * (length // 4), ("10.0.2.2", port))
`;
  return execIn(net, 'a', ['python3', '-c', sender, String(o.count), String(o.interval_ms), String(o.len ?? 500), String(o.port ?? 5301)]);
}
