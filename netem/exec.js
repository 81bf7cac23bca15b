// @ts-check
// Running external commands (ip, tc, ethtool, nft, iptables) and checking them.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * @typedef {{ code: number, stdout: string, stderr: string }} RunResult
 */

/**
 * Run a command; never throws for a non-zero exit (the caller decides).
 * @param {string[]} argv
 * @param {{ input?: string, timeout_ms?: number }} [opts]
 * @returns {Promise<RunResult>}
 */
export function run(argv, opts = {}) {
  return new Promise((resolve) => {
    const child = execFile(argv[0], argv.slice(1), { timeout: opts.timeout_ms ?? 20000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        /** @type {any} */ const e = err;
        const code = e ? (typeof e.code === 'number' ? e.code : 127) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr || (e && !e.code ? e.message : '')) });
      });
    if (opts.input !== undefined && child.stdin) child.stdin.end(opts.input);
  });
}

/**
 * Run a command and throw an Error naming the command and its stderr if it fails.
 * @param {string[]} argv
 * @param {{ input?: string, timeout_ms?: number }} [opts]
 * @returns {Promise<string>} stdout
 */
export async function runChecked(argv, opts = {}) {
  const r = await run(argv, opts);
  if (r.code !== 0) {
    throw new Error(`\`${argv.join(' ')}\` failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  }
  return r.stdout;
}

/**
 * Run a plan (list of argv) in order, stopping at the first failure.
 * @param {string[][]} plan
 * @param {(msg: string) => void} [log]
 */
export async function runPlan(plan, log) {
  for (const argv of plan) {
    if (log) log(argv.join(' '));
    await runChecked(argv);
  }
}

/** @param {number} ms */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether process pid is still running: it exists and has not exited. An exited process stays a zombie until its
 * parent reaps it; a detached one's parent is init, which on some machines reaps only about once a second (the
 * firecracker VM's init here), so a teardown that waited on kill(pid, 0) alone waited a second per process.
 * @param {number} pid
 */
export function alive(pid) {
  try { process.kill(pid, 0); } catch { return false; }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'; // the state follows the command name: "pid (comm) S ..."
  } catch {
    return false; // gone between the two looks
  }
}
