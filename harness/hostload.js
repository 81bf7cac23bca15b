// @ts-check
// How busy the host's CPUs were over the call. A saturated host delays the bottleneck's releases and the browsers'
// encoders: the network, not the machine, must be what a run measures. A run pinned to a set of CPUs (a study's
// `--parallel N`) is judged by the CPUs it was given: other runs' load must stay on theirs.
import fs from 'node:fs';

/** @typedef {{busy: number, total: number}} CpuTime cumulative clock ticks */

/** @param {string[]} fields user nice system idle iowait irq softirq steal (guest time is already counted in user) @returns {CpuTime} */
function cpuTime(fields) {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number);
  const total = user + nice + system + idle + iowait + irq + softirq + (steal ?? 0);
  return { busy: total - idle - iowait, total };
}

/** Cumulative CPU time of all CPUs from /proc/stat: {busy, total} in clock ticks. */
export function readCpuTimes(stat = fs.readFileSync('/proc/stat', 'utf8')) {
  return cpuTime(stat.split('\n')[0].trim().split(/\s+/).slice(1));
}

/** Cumulative CPU time of each CPU from /proc/stat's cpuN lines, by CPU number. @returns {Record<number, CpuTime>} */
export function readPerCpuTimes(stat = fs.readFileSync('/proc/stat', 'utf8')) {
  /** @type {Record<number, CpuTime>} */
  const perCpu = {};
  for (const line of stat.split('\n')) {
    const m = /^cpu([0-9]+)\s+(.*)$/.exec(line.trim());
    if (m) perCpu[Number(m[1])] = cpuTime(m[2].trim().split(/\s+/));
  }
  return perCpu;
}

/** Share of CPU time that was busy between two readings (0..1). @param {CpuTime} a @param {CpuTime} b */
export function busyFraction(a, b) {
  const total = b.total - a.total;
  return total > 0 ? (b.busy - a.busy) / total : 0;
}

/**
 * Share of the listed CPUs' time that was busy between two per-CPU readings (0..1).
 * @param {Record<number, CpuTime>} a @param {Record<number, CpuTime>} b @param {number[]} cpus
 */
export function cpuSetBusyFraction(a, b, cpus) {
  let busy = 0;
  let total = 0;
  for (const c of cpus) {
    if (!a[c] || !b[c]) continue; // a CPU offline at either reading did no work for the run
    busy += b[c].busy - a[c].busy;
    total += b[c].total - a[c].total;
  }
  return total > 0 ? busy / total : 0;
}

/** "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11] (the kernel's CPU list format). @param {string} list */
export function parseCpuList(list) {
  /** @type {number[]} */
  const cpus = [];
  for (const part of list.trim().split(',').filter(Boolean)) {
    const m = /^([0-9]+)(?:-([0-9]+))?$/.exec(part.trim());
    if (!m) throw new Error(`not a CPU list: "${list}"`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let c = lo; c <= hi; c++) cpus.push(c);
  }
  return cpus;
}

/**
 * The CPUs this process may run on, when that is fewer than the online CPUs (it was pinned, e.g. with taskset by a
 * study's --parallel executor; its children, browsers and bottleneck included, inherit the set); else null.
 * @param {string} [status] /proc/self/status @param {string} [online] /sys/devices/system/cpu/online
 * @returns {number[] | null}
 */
export function pinnedCpus(status = fs.readFileSync('/proc/self/status', 'utf8'),
  online = fs.readFileSync('/sys/devices/system/cpu/online', 'utf8')) {
  const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(status);
  if (!m) return null;
  const allowed = parseCpuList(m[1]);
  const all = new Set(parseCpuList(online));
  return allowed.filter((c) => all.has(c)).length < all.size ? allowed : null;
}
