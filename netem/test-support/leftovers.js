// @ts-check
// What a run left on the host: namespaces, root veths, the nft table, state, and given processes.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/**
 * @param {string} id @param {number[]} [pids] processes of the run that must be gone
 * @returns {string[]} descriptions of what is left (empty: clean)
 */
export function leftovers(id, pids = []) {
  const out = [];
  const ns = execFileSync('ip', ['netns', 'list']).toString();
  for (const line of ns.split('\n')) if (line.startsWith(`rtclab-${id}-`)) out.push(`namespace ${line.split(' ')[0]}`);
  const links = execFileSync('ip', ['-br', 'link']).toString();
  for (const line of links.split('\n')) if (line.startsWith(`rl${id}`)) out.push(`root veth ${line.split(/[ @]/)[0]}`);
  const tables = execFileSync('nft', ['list', 'tables']).toString();
  if (tables.includes(`rtclab_${id}`)) out.push(`nft table rtclab_${id}`);
  if (existsSync(`/run/rtclab/${id}.json`)) out.push(`state /run/rtclab/${id}.json`);
  for (const pid of pids) {
    const p = procStat(pid);
    // Gone, or a zombie: it has exited and holds nothing. A short command (ethtool, tc) whose parent was SIGKILLed is
    // re-parented to PID 1 and stays a zombie until PID 1 reaps it, which no cleanup of ours can hasten.
    if (!p || p.state === 'Z') continue;
    out.push(`process ${pid} (${p.comm}, state ${p.state}, parent ${p.ppid})`);
  }
  return out;
}

/** Command, state and parent of a process from /proc/PID/stat, or null when it is gone. @param {number} pid */
function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state, ppid };
  } catch {
    return null;
  }
}

/** Pids of every process in the run's namespaces now. @param {string} id */
export function runPids(id) {
  /** @type {number[]} */
  const pids = [];
  for (const h of ['a', 'r', 'b']) {
    try {
      pids.push(...execFileSync('ip', ['netns', 'pids', `rtclab-${id}-${h}`], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().split(/\s+/).filter(Boolean).map(Number));
    } catch { /* no namespace */ }
  }
  return pids;
}
