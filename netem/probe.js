// @ts-check
// Which qdiscs, devices and tc actions this kernel has: each is tried for real in a scratch namespace
// (rtclab-<id>-p), because module lists lie in containers and VMs without /lib/modules.
import { run, runChecked } from './exec.js';
import { newId, nsName } from './names.js';
import { teardown } from './cleanup.js';

/** Each feature and the command(s) that show it exists, run inside the scratch namespace on veth x0 (peer x1). */
const TRIALS = {
  tbf: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'tbf', 'rate', '1mbit', 'burst', '1514', 'limit', '10000']],
  pfifo: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'pfifo']],
  bfifo: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'bfifo']],
  codel: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'codel']],
  pie: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'pie']],
  sfq: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'sfq']],
  fq_codel: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'fq_codel']],
  dualpi2: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'dualpi2']],
  prio: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'prio']],
  netem: [['tc', 'qdisc', 'add', 'dev', 'x0', 'root', 'netem', 'delay', '1ms']],
  ifb: [['ip', 'link', 'add', 'ifbprobe', 'type', 'ifb']],
  ingress: [['tc', 'qdisc', 'add', 'dev', 'x1', 'handle', 'ffff:', 'ingress']],
  u32: [['tc', 'qdisc', 'add', 'dev', 'x1', 'handle', 'ffff:', 'ingress'],
    ['tc', 'filter', 'add', 'dev', 'x1', 'parent', 'ffff:', 'protocol', 'ip', 'u32', 'match', 'ip', 'dsfield', '0xb8', '0xfc', 'flowid', '1:1']],
  mirred: [['tc', 'qdisc', 'add', 'dev', 'x1', 'handle', 'ffff:', 'ingress'],
    ['tc', 'filter', 'add', 'dev', 'x1', 'parent', 'ffff:', 'protocol', 'all', 'u32', 'match', 'u32', '0', '0',
      'action', 'mirred', 'egress', 'redirect', 'dev', 'x0']],
};
export const FEATURES = Object.keys(TRIALS);

/** @type {Promise<Set<string>> | null} */
let cached = null;

/**
 * The set of kernel features (see FEATURES) that work here. Probed once per process.
 * @param {string} [id] the run the probe is for: its scratch namespace is then rtclab-<id>-p, removed with the run
 *   if this process is killed while probing
 * @returns {Promise<Set<string>>}
 */
export function probeKernel(id) {
  if (!cached) cached = doProbe(id ?? newId());
  return cached;
}

/** @param {string} id */
async function doProbe(id) {
  const ns = nsName(id, 'p');
  /** @type {Set<string>} */
  const have = new Set();
  try {
    await runChecked(['ip', 'netns', 'add', ns]);
    const inNs = (/** @type {string[]} */ argv) => ['ip', 'netns', 'exec', ns, ...argv];
    await runChecked(inNs(['ip', 'link', 'add', 'x0', 'type', 'veth', 'peer', 'name', 'x1']));
    for (const [feature, trial] of Object.entries(TRIALS)) {
      let ok = true;
      for (const argv of trial) {
        if ((await run(inNs(argv))).code !== 0) { ok = false; break; }
      }
      if (ok) have.add(feature);
      // Undo: root and ingress qdiscs off both ends, the probe ifb gone.
      for (const dev of ['x0', 'x1']) {
        await run(inNs(['tc', 'qdisc', 'del', 'dev', dev, 'root']));
        await run(inNs(['tc', 'qdisc', 'del', 'dev', dev, 'ingress']));
      }
      await run(inNs(['ip', 'link', 'del', 'ifbprobe']));
    }
  } finally {
    await teardown(id);
  }
  return have;
}

/**
 * Which of the needed features this kernel lacks.
 * @param {string[]} needs @param {Set<string>} have
 */
export const missingFeatures = (needs, have) => needs.filter((f) => !have.has(f));
