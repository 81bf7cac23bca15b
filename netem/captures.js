// @ts-check
// Packet captures with tcpdump inside a namespace: nanosecond pcap, both directions, counts parsed at stop.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

/**
 * Parse tcpdump's closing counts ("N packets captured", "N packets dropped by kernel").
 * @param {string} text
 */
export function parseTcpdumpCounts(text) {
  const num = (/** @type {RegExp} */ re) => { const m = re.exec(text); return m ? Number(m[1]) : null; };
  return { packets: num(/(\d+) packets? captured/), dropped_by_kernel: num(/(\d+) packets? dropped by kernel/) };
}

export class Capture {
  /**
   * @param {{ nsExec: string[], dev: string, file: string, logFile: string, snaplen: number,
   *   onExit?: (message: string) => void }} o
   *   onExit: tcpdump ended on its own while capturing (a full disk, a vanished interface), with its last words
   */
  constructor(o) {
    this.o = o;
    /** @type {import('node:child_process').ChildProcess | null} */
    this.proc = null;
    this.stderr = '';
    this.stopping = false;
    this.listening = false;
  }

  /** Start tcpdump and resolve once it says it is listening. */
  start(timeout_ms = 10000) {
    const { nsExec, dev, file, logFile, snaplen } = this.o;
    // -U: each packet written at once, so a killed run still has its packets; -Z root: write into root's dir.
    // --immediate-mode: packets reach tcpdump (and the file) at once, none left in the ring buffer at stop.
    // -B 65536: a 64 MiB kernel buffer (tcpdump's default 2 MiB dropped packets at 10k packets/s under load; measured in
    // bench/bottleneck/RESULTS.md).
    const argv = [...nsExec, 'tcpdump', '-i', dev, '-n', '-s', String(snaplen), '--time-stamp-precision=nano', '--immediate-mode',
      '-B', '65536', '-U', '-Z', 'root', '-w', file];
    // Own process group: a Ctrl-C meant for the harness does not end the capture before the harness stops it.
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.proc = proc;
    const log = createWriteStream(logFile);
    this.closed = new Promise((resolve) => proc.on('close', (code, signal) => {
      log.end();
      if (!this.stopping && this.listening) {
        const last = this.stderr.trim().split('\n').pop() ?? '';
        this.o.onExit?.(`the capture on ${dev} stopped during the run (${signal ? `killed by ${signal}` : `exit code ${code}`})${last ? `: ${last}` : ''}`);
      }
      resolve({ code, signal });
    }));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tcpdump on ${dev} did not start listening within ${timeout_ms} ms: ${this.stderr.trim()}`)), timeout_ms);
      proc.stderr?.on('data', (chunk) => {
        this.stderr += chunk;
        log.write(chunk);
        if (!this.listening && /listening on/.test(this.stderr)) { this.listening = true; clearTimeout(timer); resolve(undefined); }
      });
      proc.on('error', (e) => { clearTimeout(timer); reject(e); });
      proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`tcpdump on ${dev} exited (${code}): ${this.stderr.trim()}`)); });
    });
  }

  /** Stop (SIGINT, so tcpdump flushes and prints its counts) and return the counts. */
  async stop(timeout_ms = 5000) {
    this.stopping = true;
    if (!this.proc) return { packets: null, dropped_by_kernel: null };
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGINT');
    const timer = setTimeout(() => this.proc?.kill('SIGKILL'), timeout_ms);
    await this.closed;
    clearTimeout(timer);
    return parseTcpdumpCounts(this.stderr);
  }
}
