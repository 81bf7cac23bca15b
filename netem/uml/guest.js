// @ts-check
// The user-mode Linux guest of the uml backend (docs/netem.md, "uml"): a Linux 6.1 kernel as a process in namespace
// r, attached to r's two data veths with the vector driver's raw transport, its root the host's own file system
// (hostfs). Commands reach it through a channel directory (init.sh serves it): guestRun() and guestRunPlan() here,
// or the `nsExec` prefix guestExecPrefix() (netem/uml/exec.js) for a command from another process.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, renameSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UML_DIR } from '../names.js';
import { alive, sleep } from '../exec.js';

const HERE = dirname(fileURLToPath(import.meta.url));
export const INIT_SCRIPT = join(HERE, 'init.sh');
export const EXEC_SCRIPT = join(HERE, 'exec.js');
/** Debian's user-mode-linux package: the kernel binary and its modules. */
export const UML_BINARIES = ['/usr/bin/linux.uml', '/usr/bin/linux'];
export const UML_MODULES = '/usr/lib/uml/modules';
/**
 * Preloaded into the guest kernel (netem/uml/xstate-shim, built by scripts/setup.sh): on a host whose CPU has
 * AVX-512 or AMX, Debian's UML 6.1 cannot restore its processes' FPU state (the host refuses its fixed-size
 * PTRACE_SETREGSET) and panics at its first process; the shim hands the host the whole area. Elsewhere it passes
 * every call through.
 */
export const XSTATE_SHIM = join(HERE, 'xstate-shim', 'target', 'release', 'librtclab_uml_xstate.so');
/**
 * The guest runs at SCHED_FIFO, at the userspace bottleneck's priority (netem/bottleneck/src/realtime.rs), for the
 * same reason: its netem and TBF timers are the emulated path's clock. At the default priority, the two Chromiums'
 * start-up (both cores busy for a second or two) held them back 60-156 ms here and failed
 * bottleneck_lateness_bounded in 2 of 2 study runs; at SCHED_FIFO the same call's worst second was 7.6 ms late.
 * It boots at the default policy and is raised once it serves (raiseToFifo): booting is CPU-bound for a second or
 * two, and at SCHED_FIFO it held a CPU from everything at or below its priority (the userspace bottleneck of a test
 * in another lane stalled 270 ms while guests booted). The guest's later processes (tc, the channel's sh) inherit
 * the policy from its kernel's process; the kernel throttles SCHED_FIFO tasks at 95 % of a CPU, so a runaway guest
 * cannot lock the host.
 */
export const GUEST_FIFO_PRIORITY = 10;
/** Boot and module loading take 2-5 s here; a busy machine can take longer. */
const BOOT_TIMEOUT_MS = 60000;

/** The guest kernel binary, or null when user-mode Linux is not installed. */
export function umlBinary() {
  return UML_BINARIES.find((b) => existsSync(b)) ?? null;
}

/** Why this machine cannot run the uml backend (null: it can). */
export function umlUnavailable() {
  if (!umlBinary()) return `user-mode Linux is not installed (none of ${UML_BINARIES.join(', ')}): apt-get install user-mode-linux kmod`;
  if (!existsSync(UML_MODULES) || !readdirSync(UML_MODULES).length) return `no user-mode Linux modules in ${UML_MODULES}`;
  if (!existsSync(XSTATE_SHIM)) return `the guest's FPU shim is not built (${XSTATE_SHIM}): bash scripts/setup.sh`;
  if (/[\s:]/.test(XSTATE_SHIM)) return `the guest's FPU shim's path cannot be preloaded (white space or ':' in ${XSTATE_SHIM}): move the checkout`;
  if (!existsSync('/sbin/modprobe') && !existsSync('/usr/sbin/modprobe') && !existsSync('/usr/bin/modprobe')) return 'modprobe not found: apt-get install kmod';
  return null;
}

/** Everything of run id's guest on the host: the channel, UML's own umid directory. @param {string} id */
export const guestDir = (id) => join(UML_DIR, id);
/** @param {string} id */
export const channelDir = (id) => join(guestDir(id), 'chan');

/**
 * The command prefix that runs a command in the guest (like `ip netns exec NS`): exec.js writes it to the channel,
 * waits for the guest's answer, prints its output and exits with its status.
 * @param {string} id
 */
export const guestExecPrefix = (id) => [process.execPath, EXEC_SCRIPT, channelDir(id), '--'];

/** @param {string} s */
export const shQuote = (s) => `'${s.replaceAll("'", "'\\''")}'`;

/** A file's text, or fallback when it cannot be read. @param {string} file */
export function readOr(file, fallback = '') {
  try { return readFileSync(file, 'utf8'); } catch { return fallback; }
}

let seq = 0;

/**
 * Run argv in the guest through the channel; never throws for a non-zero exit (like exec.js's run()).
 * @param {string} chan channel directory @param {string[]} argv
 * @param {{ timeout_ms?: number }} [o]
 * @returns {Promise<import('../exec.js').RunResult>}
 */
export function guestRun(chan, argv, o = {}) {
  return guestScript(chan, `exec ${argv.map(shQuote).join(' ')}\n`, o);
}

/**
 * Run a sh script in the guest through the channel (one round trip); never throws for a non-zero exit.
 * @param {string} chan channel directory @param {string} script
 * @param {{ timeout_ms?: number }} [o]
 * @returns {Promise<import('../exec.js').RunResult>}
 */
export async function guestScript(chan, script, o = {}) {
  if (!existsSync(join(chan, 'ready'))) return { code: 127, stdout: '', stderr: `the uml guest is not serving ${chan}` };
  const pid = Number(readOr(join(chan, '..', 'guest.pid'), '0'));
  // Names sort by time: the guest serves them in that order. CLOCK_MONOTONIC is shared by every process.
  const name = join(chan, `${process.hrtime.bigint().toString().padStart(20, '0')}-${process.pid}-${seq++}`);
  writeFileSync(`${name}.tmp`, script);
  renameSync(`${name}.tmp`, `${name}.cmd`);
  const deadline = Date.now() + (o.timeout_ms ?? 20000);
  try {
    for (let i = 0; ; i++) {
      if (existsSync(`${name}.rc`)) {
        const code = Number(readOr(`${name}.rc`, '127').trim());
        return { code, stdout: readOr(`${name}.out`), stderr: readOr(`${name}.err`) };
      }
      if (Date.now() > deadline) return { code: 124, stdout: '', stderr: `no answer from the uml guest within ${o.timeout_ms ?? 20000} ms` };
      if (i % 20 === 0 && pid && !alive(pid)) return { code: 127, stdout: '', stderr: `the uml guest (pid ${pid}) is not running` };
      await sleep(i < 40 ? 2 : 10);
    }
  } finally {
    for (const ext of ['cmd', 'out', 'err', 'rc']) rmSync(`${name}.${ext}`, { force: true });
  }
}

/** Marks where each step of a plan script starts, in its stdout and stderr. */
const STEP = '@rtclab-step ';
/** Ends a batch's here-document. */
const BATCH_END = '@rtclab-batch';
/** Tools with a batch mode (`-batch -`: one command per line of stdin, stopping at the first that fails). */
const BATCH_TOOLS = new Set(['ip', 'tc']);
/** Arguments a batch line carries as they are (iproute2 splits its lines at white space and reads quotes). */
const PLAIN_ARG = /^[\w.:/@%+,=-]+$/;

/**
 * A plan's steps: runs of consecutive `ip` or `tc` commands become one `ip -batch -` or `tc -batch -` (in the guest
 * each process start costs about 0.1 s, its binary and libraries read over hostfs: the set-up's 25 commands took
 * 3.4 s one by one), every other command a step of its own.
 * @param {string[][]} plan
 * @returns {{ first: number, tool: string | null, commands: string[][] }[]} first: the plan index of its first command
 */
export function planSteps(plan) {
  /** @type {{ first: number, tool: string | null, commands: string[][] }[]} */
  const steps = [];
  plan.forEach((argv, i) => {
    const tool = BATCH_TOOLS.has(argv[0]) && argv.length > 1 && !argv[1].startsWith('-') && argv.slice(1).every((a) => PLAIN_ARG.test(a)) ? argv[0] : null;
    const last = steps.at(-1);
    if (tool && last?.tool === tool) last.commands.push(argv);
    else steps.push({ first: i, tool, commands: [argv] });
  });
  return steps;
}

/**
 * A plan (argv list) as one sh script that runs its steps (planSteps) in order and stops at the first that fails,
 * with its exit status; each step's output follows a line `@rtclab-step <index of its first command>` on stdout and
 * stderr.
 * @param {string[][]} plan
 */
export function planScript(plan) {
  return planSteps(plan).map(({ first, tool, commands }) => {
    const mark = `echo '${STEP}${first}'; echo '${STEP}${first}' >&2; `;
    if (!tool || commands.length === 1) return `${mark}${commands[0].map(shQuote).join(' ')} || exit $?\n`;
    return `${mark}${tool} -batch - <<'${BATCH_END}' || exit $?\n${commands.map((c) => c.slice(1).join(' ')).join('\n')}\n${BATCH_END}\n`;
  }).join('');
}

/**
 * What a step of a plan script wrote: the text after its step line, up to the next step's. @param {string} text
 * @param {number} i the plan index of the step's first command
 */
export function stepOutput(text, i) {
  const mark = `${STEP}${i}\n`;
  const at = text.lastIndexOf(mark);
  if (at < 0) return '';
  const rest = text.slice(at + mark.length);
  const next = rest.search(new RegExp(`^${STEP}\\d+$`, 'm'));
  return next < 0 ? rest : rest.slice(0, next);
}

/**
 * Run a plan in the guest in one round trip, stopping at the first failure; throws as runChecked does, naming the
 * command that failed and its stderr. The host starts no process; the guest one per step (planSteps).
 * @param {string} chan @param {string[][]} plan argv as in the guest (no prefix)
 * @param {(msg: string) => void} [log] each command, as runPlan logs them
 * @returns {Promise<import('../exec.js').RunResult>} what the script wrote (each step's part: stepOutput)
 */
export async function guestRunPlan(chan, plan, log) {
  if (!plan.length) return { code: 0, stdout: '', stderr: '' };
  for (const argv of plan) log?.(`(uml guest) ${argv.join(' ')}`);
  const r = await guestScript(chan, planScript(plan), { timeout_ms: 60000 });
  if (r.code !== 0) throw new Error(planFailure(plan, r));
  return r;
}

/**
 * Why a plan script failed, as runChecked says it: the command that failed (in a batch, the line iproute2 names:
 * "Command failed -:N"), its exit status and its stderr (else its stdout); or why the script did not run.
 * @param {string[][]} plan @param {import('../exec.js').RunResult} r the script's result
 */
export function planFailure(plan, r) {
  const marks = [...r.stdout.matchAll(new RegExp(`^${STEP}(\\d+)$`, 'gm'))];
  if (!marks.length) return `uml guest: the plan did not run (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`;
  const first = Number(marks[marks.length - 1][1]);
  let out = stepOutput(r.stderr, first).trim() || stepOutput(r.stdout, first).trim();
  let i = first;
  const line = /^Command failed -:(\d+)$/m.exec(out);
  const step = planSteps(plan).find((s) => s.first === first);
  if (line && step?.tool && step.commands.length > 1) {
    i = first + Number(line[1]) - 1;
    out = out.replace(line[0], '').trim();
  }
  return `\`${plan[i].join(' ')}\` failed in the uml guest (exit ${r.code}): ${out}`;
}

/**
 * Boot the guest in namespace nsR on the two data veths, and wait until it serves its channel.
 * @param {{ id: string, nsR: string, devs: string[], consoleLog: string, detached: boolean, mem_mb?: number,
 *   links?: string, onExit?: (code: number | null, signal: string | null) => void }} o
 *   devs: host interfaces in r the guest takes as vec0, vec1, ...; consoleLog: the guest's console (kernel messages,
 *   init's); detached: the guest outlives this Node process (the CLI's `up`); links: the file the guest's device
 *   counter probe writes (links_probe.py; none without it, or when the path has white space, which the kernel
 *   command line cannot carry); onExit: the guest ended on its own
 * @returns {Promise<{ pid: number, kernel: string, argv: string[] }>} kernel: uname -r in the guest
 */
export async function startGuest(o) {
  const why = umlUnavailable();
  if (why) throw new Error(`uml backend: ${why}`);
  const dir = guestDir(o.id);
  const chan = channelDir(o.id);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(chan, { recursive: true });
  const argv = ['ip', 'netns', 'exec', o.nsR, /** @type {string} */ (umlBinary()), `umid=rtclab-${o.id}`, `uml_dir=${dir}`,
    `mem=${o.mem_mb ?? 256}M`, 'rootfstype=hostfs', 'rootflags=/', 'rw', `init=${INIT_SCRIPT}`, 'con=null', 'con0=null,fd:1', 'ssl=null',
    ...o.devs.map((dev, i) => `vec${i}:transport=raw,ifname=${dev},depth=128`),
    `rtclab_chan=${chan}`, `rtclab_modules=${UML_MODULES}`];
  if (o.links && !/\s/.test(o.links)) argv.push(`rtclab_links=${o.links}`);
  const fd = openSync(o.consoleLog, 'a');
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', fd, fd], detached: true, env: { ...process.env, LD_PRELOAD: XSTATE_SHIM } });
  closeSync(fd);
  const pid = /** @type {number} */ (proc.pid);
  writeFileSync(join(dir, 'guest.pid'), String(pid));
  /** @type {{ code: number | null, signal: string | null } | null} */
  let exited = null;
  proc.on('exit', (code, signal) => {
    exited = { code, signal };
    o.onExit?.(code, signal);
  });
  if (o.detached) proc.unref();
  const deadline = Date.now() + BOOT_TIMEOUT_MS;
  // The console's last lines, without a panic's stack dump (its lines begin " [<address>]").
  const lastWords = () => readOr(o.consoleLog).trimEnd().split('\n').filter((l) => !/^\s*\[<[0-9a-f]+>\]|^ ?Stack:|^ [0-9a-f]{8} /.test(l)).slice(-4).join(' | ');
  while (!existsSync(join(chan, 'ready'))) {
    if (existsSync(join(chan, 'failed'))) throw new Error(`uml guest: ${readOr(join(chan, 'failed')).trim()} (console: ${o.consoleLog})`);
    const e = /** @type {{ code: number | null, signal: string | null } | null} */ (exited);
    if (e) throw new Error(`uml guest exited while booting (${e.signal ?? `exit code ${e.code}`}): ${lastWords()}`);
    if (Date.now() > deadline) throw new Error(`uml guest not ready within ${BOOT_TIMEOUT_MS / 1000} s: ${lastWords()}`);
    await sleep(20);
  }
  raiseToFifo(pid);
  return { pid, kernel: readOr(join(chan, 'ready')).trim(), argv };
}

/**
 * The guest's kernel process first (what it starts from now on inherits the policy), then every process it has
 * started (its guest processes are host processes below it), each with all its threads, to SCHED_FIFO
 * GUEST_FIFO_PRIORITY. @param {number} pid the guest kernel's process
 */
export function raiseToFifo(pid) {
  const chrt = (/** @type {number} */ p) => spawnSync('chrt', ['-a', '-f', '-p', String(GUEST_FIFO_PRIORITY), String(p)], { stdio: 'ignore' }).status === 0;
  if (!chrt(pid)) throw new Error(`uml guest: cannot set SCHED_FIFO ${GUEST_FIFO_PRIORITY} on its process ${pid}`);
  for (const p of descendants(pid)) chrt(p); // one may have exited meanwhile
}

/** Every process below pid, from the parent pids in /proc/PID/stat. @param {number} pid */
function descendants(pid) {
  /** @type {Map<number, number[]>} */
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readOr(`/proc/${name}/stat`);
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]); // after the command name: state, ppid
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid)?.push(Number(name));
  }
  const found = [];
  for (let queue = [pid]; queue.length;) {
    const next = children.get(/** @type {number} */ (queue.shift())) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/**
 * Stop the guest: SIGTERM (UML halts), then SIGKILL to everything still in its process group; remove its directory.
 * The namespace teardown kills whatever of it is left as well (every guest process lives in r).
 * @param {string} id @param {number | null} pid
 */
export async function stopGuest(id, pid) {
  if (pid && alive(pid)) {
    try { process.kill(-pid, 'SIGTERM'); } catch { /* gone */ }
    const deadline = Date.now() + 3000;
    while (alive(pid) && Date.now() < deadline) await sleep(20);
    try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
    while (alive(pid) && Date.now() < deadline + 2000) await sleep(20);
  }
  removeGuestDir(id);
}

/** @param {string} id */
export function removeGuestDir(id) {
  rmSync(guestDir(id), { recursive: true, force: true });
}

/** Ids that have a guest directory (a guest may be running, or left it after a SIGKILL). */
export function guestDirIds() {
  if (!existsSync(UML_DIR)) return [];
  return readdirSync(UML_DIR).filter((f) => /^[a-z0-9]{6}$/.test(f));
}
