// @ts-check
// Killing a run at any point (SIGINT, SIGTERM, SIGKILL), then `clean`, leaves no namespace, veth, nft/iptables
// rule, state or process of the run behind.
import { test } from '../test-support/lane.js';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { newId } from '../names.js';
import { newRunDir, bottleneckBuilt } from '../test-support/net.js';
import { leftovers, runPids } from '../test-support/leftovers.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
const HARNESS_LIKE = fileURLToPath(new URL('../test-support/harness-like.js', import.meta.url));
// Without the bottleneck binary the kernel backend (delay 0) still exercises every other kind of leftover.
const BACKEND = bottleneckBuilt ? 'userspace' : 'kernel';

/**
 * Start a process, kill it with `signal` once `when` says so, collecting the run's pids meanwhile.
 * @param {string[]} argv @param {string} id @param {NodeJS.Signals} signal
 * @param {'namespaces' | 'processes' | 'after-up'} when kill once the namespaces exist, once the run's first
 *   process (a bottleneck, or tcpdump) runs, or once the process printed its id / "up"
 */
async function startAndKill(argv, id, signal, when) {
  const p = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => p.on('exit', resolve));
  /** @type {Set<number>} */
  const pids = new Set();
  const deadline = Date.now() + 20000;
  const ready = () => (when === 'after-up' ? /^up$/m.test(out)
    : when === 'namespaces' ? existsSync(`/run/netns/rtclab-${id}-a`) : runPids(id).length > 0);
  while (!ready() && Date.now() < deadline && p.exitCode === null) {
    runPids(id).forEach((x) => pids.add(x));
    await new Promise((r) => setTimeout(r, 25));
  }
  runPids(id).forEach((x) => pids.add(x));
  assert.equal(p.exitCode, null, `process exited before it could be killed: ${out}`);
  p.kill(signal);
  await exited;
  runPids(id).forEach((x) => pids.add(x));
  return { pids: [...pids], out };
}

/** @param {string} id */
function clean(id) {
  return execFileSync(process.execPath, [CLI, 'clean', id]).toString();
}

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGKILL'])) {
  for (const when of /** @type {const} */ (['namespaces', 'processes'])) {
    test(`cli up killed by ${signal} once its ${when} exist, then clean: nothing left`, { timeout: 40000 }, async (t) => {
      const id = newId();
      try {
        const { pids } = await startAndKill([CLI, 'up', '--id', id, '--backend', BACKEND], id, signal, when);
        t.diagnostic(`${pids.length} processes of the run seen; left before clean: ${leftovers(id, pids).join(', ') || 'nothing'}`);
        clean(id);
        assert.deepEqual(leftovers(id, pids), []);
      } finally {
        clean(id);
      }
    });
  }
  test(`a harness-like process (captures, cross traffic, bottleneck) killed by ${signal}, then clean: nothing left`, { timeout: 40000 }, async () => {
    const id = newId();
    try {
      const { pids } = await startAndKill([HARNESS_LIKE, id, newRunDir('kill'), BACKEND], id, signal, 'after-up');
      assert.ok(pids.length >= 4, `expected tcpdump x2, iperf3 x2 (+ bottlenecks), saw ${pids.length}`);
      clean(id);
      assert.deepEqual(leftovers(id, pids), []);
    } finally {
      clean(id);
    }
  });
}

test('cli up that finished (detached bottleneck), then clean: nothing left', { timeout: 30000 }, async () => {
  const id = newId();
  try {
    execFileSync(process.execPath, [CLI, 'up', '--id', id, '--backend', BACKEND]);
    const pids = runPids(id);
    if (BACKEND === 'userspace') assert.equal(pids.length, 2, 'two bottleneck processes outlive the CLI');
    clean(id);
    assert.deepEqual(leftovers(id, pids), []);
  } finally {
    clean(id);
  }
});
