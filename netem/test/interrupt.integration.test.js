// @ts-check
// An interrupt while a network is being set up leaves nothing of the run, in whichever phase of the set-up it lands:
// netem's CLI `up` (Ctrl-C to its process group) and createNetwork's signal (the harness's path), for the userspace
// backend and, where user-mode Linux is installed, the uml backend; and a network torn down while its captures or
// cross traffic are starting. Deterministic: `up` reports each phase (SETUP_PHASES) and, with RTCLAB_NETEM_HOLD_AT,
// waits in that phase until the signal comes, so the signal lands in the phase on a fast or a slow machine; the
// step of that phase then runs (a set-up step in flight when the signal came), and must be undone too. Before the
// fix, `up` tore the network down beside a set-up that went on, and a bottleneck the set-up started meanwhile was
// left running with its namespace and state gone.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNetwork, SETUP_PHASES, SetupInterrupted } from '../index.js';
import { newId } from '../names.js';
import { cliRunDir } from '../state.js';
import { loadScenario } from '../../scenarios/model.js';
import { newRunDir, SKIP_NO_BOTTLENECK } from '../test-support/net.js';
import { leftovers, runPids } from '../test-support/leftovers.js';
import { umlUnavailable } from '../uml/guest.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
const SKIP_UML = umlUnavailable() ?? false;

/**
 * Everything of run `id` still on the host: leftovers() (namespaces, root veths, nft table, state, the given pids),
 * its management subnet reservation, its uml guest directory, and any process whose command line names the run.
 * @param {string} id @param {number[]} [pids]
 */
function everythingLeft(id, pids = []) {
  const out = leftovers(id, pids);
  const named = spawnSync('pgrep', ['-af', id], { encoding: 'utf8' }).stdout.trim();
  if (named) out.push(...named.split('\n').map((l) => `process naming the run: ${l.slice(0, 200)}`));
  const mgmt = '/run/rtclab/mgmt';
  for (const f of existsSync(mgmt) ? readdirSync(mgmt) : []) {
    try { if (readFileSync(join(mgmt, f), 'utf8').trim() === id) out.push(`mgmt reservation ${f}`); } catch { /* released meanwhile */ }
  }
  if (existsSync(`/run/rtclab-uml/${id}`)) out.push(`uml guest directory /run/rtclab-uml/${id}`);
  return out;
}

/** @param {string} id */
function clean(id) {
  execFileSync(process.execPath, [CLI, 'clean', id]);
}

/**
 * Start `net up`, wait until it holds in `phase`, Ctrl-C its process group (as a terminal does), wait for it to exit.
 * @param {string} id @param {'userspace' | 'uml'} backend @param {string} phase
 */
async function interruptUp(id, backend, phase) {
  const p = spawn(process.execPath, [CLI, 'up', '--id', id, '--backend', backend],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, RTCLAB_NETEM_HOLD_AT: phase } });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })));
  const held = new Promise((resolve) => p.stderr.on('data', (d) => {
    out += d;
    if (out.includes(`set-up phase ${phase}\n`)) resolve(undefined);
  }));
  await Promise.race([held, exited]);
  assert.equal(p.exitCode, null, `up ended before it reached phase ${phase}: ${out}`);
  const pids = runPids(id);
  process.kill(-(/** @type {number} */ (p.pid)), 'SIGINT');
  const end = await exited;
  return { end, out, pids };
}

/**
 * What the step of each phase leaves in the CLI's run directory once it ran: proof that the step in flight when the
 * signal came did start its processes (which must be gone again).
 * @param {'userspace' | 'uml'} backend @param {string} phase
 */
function startedFiles(backend, phase) {
  if (phase !== 'backend' && phase !== 'state') return [];
  return backend === 'uml' ? ['uml-console.log'] : ['bottleneck-forward.log', 'bottleneck-reverse.log'];
}

for (const backend of /** @type {const} */ (['userspace', 'uml'])) {
  const skip = backend === 'uml' ? SKIP_UML : SKIP_NO_BOTTLENECK;
  for (const phase of SETUP_PHASES) {
    test(`${backend}: net up interrupted (SIGINT) in set-up phase ${phase}: it exits 130 and nothing of the run is left`,
      { skip, timeout: 120_000 }, async (t) => {
        const id = newId();
        try {
          const { end, out, pids } = await interruptUp(id, backend, phase);
          t.diagnostic(out.trim().split('\n').slice(-2).join(' | '));
          assert.deepEqual(end, { code: 130, signal: null }, out);
          assert.match(out, new RegExp(`up ${id} interrupted by SIGINT: nothing of it is left`));
          assert.doesNotMatch(out, new RegExp(`^${id}$`, 'm'), 'an interrupted up does not print the id of a network it left up');
          for (const f of startedFiles(backend, phase)) assert.ok(existsSync(join(cliRunDir(id), f)), `the ${phase} step ran: ${f}`);
          assert.deepEqual(everythingLeft(id, pids), []);
        } finally {
          clean(id);
        }
      });
  }
}

test('createNetwork aborted by its signal in each set-up phase (the harness\'s path): SetupInterrupted, nothing left',
  { skip: SKIP_NO_BOTTLENECK, timeout: 120_000 }, async (t) => {
    const scenario = loadScenario();
    for (const phase of SETUP_PHASES) {
      const id = newId();
      const controller = new AbortController();
      try {
        // Aborted as the phase begins: its step runs (in flight when the signal came), then nothing more starts.
        const setUp = createNetwork({ id, scenario, runDir: newRunDir('interrupt'), backend: 'userspace', signal: controller.signal,
          onPhase: (p) => { if (p === phase) controller.abort('SIGINT'); } });
        await assert.rejects(setUp, (e) => e instanceof SetupInterrupted && /interrupted by SIGINT/.test(e.message));
        assert.deepEqual(everythingLeft(id), [], `interrupted in phase ${phase}`);
        t.diagnostic(`${phase}: nothing left`);
      } finally {
        clean(id);
      }
    }
  });

test('a network torn down while its captures and cross traffic start: both settle, then nothing is left, and nothing more starts',
  { skip: SKIP_NO_BOTTLENECK, timeout: 60_000 }, async () => {
    const scenario = { duration_s: 30, network: { forward: { delay_ms: 5 }, reverse: { delay_ms: 5 } },
      cross_traffic: [0, 1].map(() => ({ kind: 'tcp', flows: 1, direction: 'forward', start_s: 0 })) };
    const net = await createNetwork({ scenario, runDir: newRunDir('interrupt'), backend: 'userspace' });
    const id = net.id;
    try {
      const captures = net.startCaptures({ snaplen: 128 });
      const down = net.down();
      await captures; // settles (tcpdump listening) before down stops it
      await down;
      assert.deepEqual(everythingLeft(id), []);
      await assert.rejects(net.startCaptures(), /being torn down/);
      await assert.rejects(net.startSchedules(), /being torn down/);
    } finally {
      clean(id);
    }
    const net2 = await createNetwork({ scenario, runDir: newRunDir('interrupt'), backend: 'userspace' });
    try {
      // Two iperf3 servers, each waited for: down() comes while the first is starting.
      const schedules = net2.startSchedules(Date.now());
      const down = net2.down();
      await schedules;
      await down;
      assert.deepEqual(everythingLeft(net2.id), []);
    } finally {
      clean(net2.id);
    }
  });
