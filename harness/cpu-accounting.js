// @ts-check
// Where a run's CPU goes: every process the run started (the harness's descendants), sampled from /proc once a
// second, grouped by what it is (each browser's processes by type, the bottleneck per direction, each capture,
// iperf3, the harness itself), beside the host's own totals from /proc/stat. Written to cpu.jsonl in the run
// directory (format in docs/run-directory.md); the analyzer summarises it. A run is only valid when the machine had
// CPU to spare, and nobody can make a run cheaper without knowing what it spends.
import fs from 'node:fs';
import os from 'node:os';

/** The kernel's clock tick (USER_HZ): 100 on every Linux architecture that rtclab runs on. */
export const CLOCK_TICKS_PER_S = 100;

/** @typedef {{ pid: number, ppid: number, comm: string, ticks: number, start: number }} ProcStat */

/**
 * One /proc/PID/stat line: pid, parent, command name, CPU time used (utime + stime, in clock ticks) and start time.
 * The command name is in parentheses and may itself hold spaces or parentheses: the fields after it start at the
 * last ')'.
 * @param {string} line @returns {ProcStat | null}
 */
export function parseProcStat(line) {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = line.slice(close + 2).split(' ');
  // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15, starttime 22.
  const ppid = Number(rest[1]);
  const ticks = Number(rest[11]) + Number(rest[12]);
  const start = Number(rest[19]);
  if (!Number.isFinite(ppid) || !Number.isFinite(ticks)) return null;
  return { pid: Number(line.slice(0, open).trim()), ppid, comm: line.slice(open + 1, close), ticks, start };
}

/** Chromium's `--utility-sub-type` services, by the role rtclab names them. */
const CHROMIUM_UTILITIES = /** @type {const} */ ([
  ['network.mojom.NetworkService', 'network'],
  ['audio.mojom.AudioService', 'audio'],
  ['video_capture.mojom.VideoCaptureService', 'video-capture'],
  ['storage.mojom.StorageService', 'storage'],
]);

/**
 * A Chromium process's role from its command line: the browser itself has no --type; the others are renderers, the
 * GPU process, the zygotes and utility processes named by their service.
 * @param {string[]} argv
 */
export function chromiumRole(argv) {
  const type = argv.find((a) => a.startsWith('--type='))?.slice('--type='.length);
  if (type === undefined) return 'browser';
  if (type === 'renderer') return 'renderer';
  if (type === 'gpu-process') return 'gpu';
  if (type === 'zygote') return 'zygote';
  if (type === 'utility') {
    const sub = argv.find((a) => a.startsWith('--utility-sub-type='))?.slice('--utility-sub-type='.length) ?? '';
    return CHROMIUM_UTILITIES.find(([service]) => sub === service)?.[1] ?? 'utility';
  }
  return 'other';
}

/**
 * The group of a process the run started, `<component>/<role>` (docs/run-directory.md, cpu.jsonl).
 * @param {{ pid: number, argv: string[], comm: string, browserKey: string | null, harnessPid: number }} p
 *   browserKey: the call side whose browser this process descends from (a, b, c2-a ...), null when none
 */
export function processGroup({ pid, argv, comm, browserKey, harnessPid }) {
  if (pid === harnessPid) return 'harness/node';
  if (browserKey !== null) return `chromium-${browserKey}/${chromiumRole(argv)}`;
  const exe = argv[0] ?? comm;
  if (exe.endsWith('rtclab-bottleneck') || comm === 'rtclab-bottlene') {
    const config = argv[argv.indexOf('--config') + 1] ?? '';
    return `bottleneck/${/reverse/.test(config) ? 'reverse' : 'forward'}`;
  }
  // The uml backend's guest: its kernel and every guest process are host processes named linux.uml.
  if (comm === 'linux.uml' || exe.endsWith('linux.uml')) return 'bottleneck/uml';
  if (comm === 'tcpdump') return `capture/${argv[argv.indexOf('-i') + 1]?.startsWith('b-') ? 'b' : 'a'}`;
  if (comm === 'iperf3') return `iperf3/${argv.includes('-s') ? 'server' : 'client'}`;
  // Short TCP flows (netem/short_tcp.py, cross_traffic kind tcp_short): python3 running that script.
  const script = argv.findIndex((a) => a.endsWith('short_tcp.py'));
  if (script >= 0) return `short-tcp/${argv[script + 1] === 'serve' ? 'server' : 'client'}`;
  // The scenario's cpu_load (harness/cpu-load.js): stress-ng and its workers (--keep-name: all named stress-ng).
  if (comm.startsWith('stress-ng') || exe.endsWith('stress-ng')) return 'cpu-load/stress-ng';
  return 'harness/other';
}

/**
 * The host's CPU time from /proc/stat's first line, in clock ticks, by kind.
 * @param {string} stat
 */
export function hostTicks(stat) {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { user: user + nice, system, irq, softirq, steal: steal ?? 0, idle: idle + iowait };
}

/**
 * Samples the CPU of a process tree (the harness and everything it started) into a JSON-lines file.
 *
 *   const cpu = new CpuAccounting({ file: path.join(runDir, 'cpu.jsonl') });
 *   cpu.start();                      // a header line, then a sample every interval
 *   cpu.nameBrowser(pid, 'a');        // a Chromium launched for side a: it and its children are chromium-a/...
 *   await cpu.stop();                 // one last sample; idempotent
 */
export class CpuAccounting {
  /** @type {Map<number, { start: number, ticks: number, group: string, comm: string }>} processes seen, by pid */
  #known = new Map();
  /** @type {Map<number, string>} browser root pid -> call side key */
  #browsers = new Map();
  /** @type {ReturnType<typeof hostTicks> | null} */
  #lastHost = null;
  #lastTime = 0;
  /** @type {NodeJS.Timeout | null} */
  #timer = null;
  #fd = -1;
  /** A browser was named since the last reading: its processes seen before may need their group again. */
  #regroup = false;

  /**
   * @param {{ file: string, interval_ms?: number, rootPid?: number, proc?: string }} o
   *   rootPid: the tree's root (this process); proc: where procfs is mounted (tests)
   */
  constructor({ file, interval_ms = 1000, rootPid = process.pid, proc = '/proc' }) {
    this.file = file;
    this.interval_ms = interval_ms;
    this.rootPid = rootPid;
    this.proc = proc;
  }

  start() {
    if (this.#fd >= 0) return;
    this.#fd = fs.openSync(this.file, 'a');
    this.#write({ kind: 'header', t: Date.now() / 1000, interval_s: this.interval_ms / 1000, cpus: os.cpus().length,
      clock_ticks_per_s: CLOCK_TICKS_PER_S, harness_pid: this.rootPid });
    this.sample();
    this.#timer = setInterval(() => this.sample(), this.interval_ms);
    this.#timer.unref();
  }

  /** @param {number | undefined} pid @param {string} key */
  nameBrowser(pid, key) {
    if (pid) this.#browsers.set(pid, key);
    this.#regroup = true;
  }

  /** One last sample (what ran since the previous one), then the file is closed. Safe to call more than once. */
  async stop() {
    if (this.#fd < 0) return;
    if (this.#timer) clearInterval(this.#timer);
    this.sample();
    fs.closeSync(this.#fd);
    this.#fd = -1;
  }

  /** Reads the process table and the host's totals; writes a sample line (from the second reading on). */
  sample() {
    if (this.#fd < 0) return;
    const now = Date.now() / 1000;
    let host;
    try {
      host = hostTicks(fs.readFileSync(`${this.proc}/stat`, 'utf8'));
    } catch {
      return; // no procfs: nothing to account
    }
    const table = this.#processTable();
    const tree = this.#descendants(table);
    /** @type {Record<string, number>} */
    const groups = {};
    /** @type {Record<string, number>} */
    const procs = {};
    const first = this.#lastHost === null;
    const dt = now - this.#lastTime;
    for (const p of tree) {
      let known = this.#known.get(p.pid);
      if (known && known.start !== p.start) known = undefined; // the pid was reused by a new process
      if (!known) {
        const argv = this.#argv(p.pid);
        const group = processGroup({ pid: p.pid, argv, comm: p.comm, browserKey: this.#browserKey(p, table), harnessPid: this.rootPid });
        // Seen at the first reading: only what it does from now on counts. Later: it started since the last reading.
        known = { start: p.start, ticks: first ? p.ticks : 0, group, comm: p.comm };
        this.#known.set(p.pid, known);
        this.#write({ kind: 'process', t: now, pid: p.pid, ppid: p.ppid, group, comm: p.comm, cmd: argv.join(' ').slice(0, 300) });
      }
      // A process seen before its exec (`ip netns exec` that becomes iperf3 or stress-ng) has another name now.
      if ((this.#regroup || known.comm !== p.comm) && known.group === 'harness/other') {
        known.comm = p.comm;
        const argv = this.#argv(p.pid);
        const group = processGroup({ pid: p.pid, argv, comm: p.comm, browserKey: this.#browserKey(p, table), harnessPid: this.rootPid });
        if (group !== known.group) {
          known.group = group;
          this.#write({ kind: 'process', t: now, pid: p.pid, ppid: p.ppid, group, comm: p.comm, cmd: argv.join(' ').slice(0, 300) });
        }
      }
      const used = p.ticks - known.ticks;
      known.ticks = p.ticks;
      if (first || used <= 0 || dt <= 0) continue;
      const cores = used / CLOCK_TICKS_PER_S / dt;
      procs[p.pid] = round(cores);
      groups[known.group] = (groups[known.group] ?? 0) + cores;
    }
    if (!first && this.#lastHost && dt > 0) {
      const last = this.#lastHost;
      const rate = (/** @type {keyof typeof host} */ k) => round((host[k] - last[k]) / CLOCK_TICKS_PER_S / dt);
      const busy = ['user', 'system', 'irq', 'softirq', 'steal'].reduce((s, k) => s + host[/** @type {keyof typeof host} */ (k)] - last[/** @type {keyof typeof host} */ (k)], 0);
      this.#write({ kind: 'sample', t: now, dt: round(dt),
        host: { busy: round(busy / CLOCK_TICKS_PER_S / dt), user: rate('user'), system: rate('system'), irq: rate('irq'),
          softirq: rate('softirq'), steal: rate('steal') },
        groups: Object.fromEntries(Object.entries(groups).map(([g, c]) => [g, round(c)])), procs });
    }
    this.#regroup = false;
    this.#lastHost = host;
    this.#lastTime = now;
  }

  /** @returns {Map<number, ProcStat>} every process of the host, by pid */
  #processTable() {
    /** @type {Map<number, ProcStat>} */
    const table = new Map();
    for (const name of fs.readdirSync(this.proc)) {
      if (!/^[0-9]+$/.test(name)) continue;
      try {
        const p = parseProcStat(fs.readFileSync(`${this.proc}/${name}/stat`, 'utf8'));
        if (p) table.set(p.pid, p);
      } catch { /* exited while we read */ }
    }
    return table;
  }

  /** The root and every process below it. @param {Map<number, ProcStat>} table */
  #descendants(table) {
    /** @type {Map<number, number[]>} */
    const children = new Map();
    for (const p of table.values()) {
      const list = children.get(p.ppid);
      if (list) list.push(p.pid); else children.set(p.ppid, [p.pid]);
    }
    /** @type {ProcStat[]} */
    const out = [];
    const stack = [this.rootPid];
    while (stack.length) {
      const pid = /** @type {number} */ (stack.pop());
      const p = table.get(pid);
      if (p) out.push(p);
      stack.push(...(children.get(pid) ?? []));
    }
    return out;
  }

  /** The side of the browser a process belongs to (itself or an ancestor is a named browser). @param {ProcStat} p @param {Map<number, ProcStat>} table */
  #browserKey(p, table) {
    for (let q = /** @type {ProcStat | undefined} */ (p); q && q.pid !== this.rootPid; q = table.get(q.ppid)) {
      const key = this.#browsers.get(q.pid);
      if (key !== undefined) return key;
    }
    return null;
  }

  /** @param {number} pid @returns {string[]} */
  #argv(pid) {
    try {
      // Chromium rewrites its command line as one space-separated string (its process title): split on both.
      return fs.readFileSync(`${this.proc}/${pid}/cmdline`, 'utf8').split(/[\0 ]/).filter(Boolean);
    } catch {
      return [];
    }
  }

  /** @param {object} record */
  #write(record) {
    try {
      fs.writeSync(this.#fd, `${JSON.stringify(record)}\n`);
    } catch { /* a full disk is the recorder's to report; accounting is not worth failing the run for */ }
  }
}

const round = (/** @type {number} */ x) => Math.round(x * 10000) / 10000;
