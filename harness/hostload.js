// @ts-check
// How busy the host's CPUs were over the call. A saturated host delays the bottleneck's releases and the browsers'
// encoders: the network, not the machine, must be what a run measures.
import fs from 'node:fs';

/** Cumulative CPU time of all CPUs from /proc/stat: {busy, total} in clock ticks. */
export function readCpuTimes(stat = fs.readFileSync('/proc/stat', 'utf8')) {
  const fields = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const total = user + nice + system + idle + iowait + irq + softirq + (steal ?? 0);
  return { busy: total - idle - iowait, total };
}

/** Share of CPU time that was busy between two readings (0..1). @param {{busy: number, total: number}} a @param {{busy: number, total: number}} b */
export function busyFraction(a, b) {
  const total = b.total - a.total;
  return total > 0 ? (b.busy - a.busy) / total : 0;
}
