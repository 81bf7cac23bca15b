// @ts-check
// The uml backend's plans (pure): the host side of r, the guest's interfaces, the exec prefix; and what it refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planHostSide, planGuestSide, planGuestSetup, offloadsStillOn, GUEST_DEVICES } from '../uml/backend.js';
import { guestExecPrefix, umlUnavailable, planScript, planFailure, planSteps } from '../uml/guest.js';
import { planKernelNetwork } from '../kernel-backend.js';
import { chooseBackend } from '../backend.js';
import { parseArgs } from '../cli-args.js';
import { normalizeScenario } from '../../scenarios/model.js';

test('uml: host side of r loses forwarding and addresses; the guest takes r\'s names, addresses, offloads off', () => {
  assert.deepEqual(planHostSide(['ip', 'netns', 'exec', 'R']).map((c) => c.slice(4).join(' ')), [
    'sysctl -q -w net.ipv4.ip_forward=0', 'ip addr flush dev r-eth0', 'ip addr flush dev r-eth1',
    // The lateness probe's own link: a veth pair in a /30 of its own, both MACs fixed, no ARP.
    'ip link add r-lat0 address 02:72:74:63:00:01 type veth peer name r-lat1', 'ip addr add 10.98.0.1/30 dev r-lat0',
    'ip link set r-lat0 up', 'ip link set r-lat1 up', 'ip neigh replace 10.98.0.2 lladdr 02:72:74:63:00:02 dev r-lat0 nud permanent']);
  assert.deepEqual(GUEST_DEVICES, ['r-eth0', 'r-eth1', 'r-lat1']);
  const g = planGuestSide().map((c) => c.join(' '));
  assert.deepEqual(g.filter((c) => !c.startsWith('ethtool')), [
    'ip link set vec0 name r-eth0', 'ip addr add 10.0.1.1/24 dev r-eth0', 'ip link set r-eth0 up',
    'ip link set vec1 name r-eth1', 'ip addr add 10.0.2.1/24 dev r-eth1', 'ip link set r-eth1 up',
    'ip link set vec2 name lat0 address 02:72:74:63:00:02', 'ip addr add 10.98.0.2/30 dev lat0', 'ip link set lat0 up',
    'ip neigh replace 10.98.0.1 lladdr 02:72:74:63:00:01 dev lat0 nud permanent', 'tc qdisc add dev lat0 root netem delay 5ms']);
  // Offloads off after up (the vector driver turns TSO/GRO on when the device opens), then checked.
  for (const dev of ['r-eth0', 'r-eth1']) {
    const off = g.findIndex((c) => c.startsWith(`ethtool -K ${dev} `));
    assert.ok(off > g.indexOf(`ip link set ${dev} up`), g.join('\n'));
    assert.match(g[off], /tso off gso off gro off/);
    assert.ok(g.indexOf(`ethtool -k ${dev}`) > off, g.join('\n'));
  }
  // The kernel backend's plan goes to the guest without a prefix, with the interfaces' in one script (below): every
  // command of both, ip first (the ifb devices before the tc commands that redirect to them), tc last, so that the
  // guest starts one ip, four ethtool and one tc (batches: planSteps).
  const links = normalizeScenario({ network: { forward: { delay_ms: 10, rate: { kbit: 2000 }, qdisc: { kind: 'codel' } }, reverse: { delay_ms: 10 } } }).network;
  const kernel = planKernelNetwork(links, []);
  assert.ok(kernel.every((c) => c[0] === 'tc' || c[0] === 'ip'));
  const setup = planGuestSetup(links);
  assert.deepEqual([...setup].sort(), [...planGuestSide(), ...kernel].sort(), 'every command of both, once');
  assert.deepEqual(planSteps(setup).map((st) => st.tool ?? setup[st.first][0]), ['ip', 'ethtool', 'ethtool', 'ethtool', 'ethtool', 'tc']);
  for (const ifb of ['ifb-fwd', 'ifb-rev']) {
    const made = setup.findIndex((c) => c.join(' ') === `ip link add ${ifb} type ifb`);
    assert.ok(made >= 0 && made < setup.findIndex((c) => c.includes(ifb) && c[0] === 'tc'), ifb);
  }
  // The offloads read back from ethtool -k's own output, step by step.
  const out = { code: 0, stderr: '', stdout: setup.map((c, i) => {
    if (c[0] !== 'ethtool' || c[1] !== '-k') return '';
    return `@rtclab-step ${i}\nFeatures for ${c[2]}:\ntcp-segmentation-offload: off\ngeneric-receive-offload: ${c[2] === 'r-eth1' ? 'on' : 'off'}\n`;
  }).join('') };
  assert.deepEqual(offloadsStillOn(setup, out), ['r-eth1: generic-receive-offload is still on']);
  assert.deepEqual(offloadsStillOn(setup, { ...out, stdout: out.stdout.replaceAll(': on', ': off') }), []);
  const prefix = guestExecPrefix('abc123');
  assert.deepEqual(prefix.slice(2), ['/run/rtclab-uml/abc123/chan', '--']);
  assert.match(prefix[1], /netem\/uml\/exec\.js$/);
});

test('uml: --backend uml parses; what no tc plan can do is refused before anything is set up', { skip: umlUnavailable() ?? false }, async () => {
  assert.deepEqual(parseArgs(['up', '--backend', 'uml']), { cmd: 'up', backend: 'uml' });
  const ok = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { kbit: 1000 }, qdisc: { kind: 'pie' } } } }).network;
  assert.deepEqual(await chooseBackend('uml', ok), { requested: 'uml', used: 'uml', reason: 'requested' });
  // A link with steps is taken, and the reason says up front that the run will most likely not be valid.
  const stepped = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { schedule: [{ at_s: 0, kbit: 1000 }, { at_s: 4, kbit: 2000 }] } } } }).network;
  assert.match((await chooseBackend('uml', stepped)).reason, /^requested; its capacity or delay steps are usually applied 40-140 ms late .* INVALID/);
  const delayed = normalizeScenario({ network: { reverse: { delay_ms: 25, delay_schedule: [{ at_s: 3, delay_ms: 50 }] } } }).network;
  assert.match((await chooseBackend('uml', delayed)).reason, /INVALID/);
  const metered = normalizeScenario({ network: { forward: { delay_ms: 25, rate: { kbit: 10000 }, qdisc: { kind: 'prio',
    meters: [{ dscp: [46], per: 'flow', window_ms: 150, limit_kbit: 2000, action: { kind: 'ce_all', hold_ms: 2000 } }],
    bands: [{ dscp: [46], qdisc: { kind: 'fifo' } }, { qdisc: { kind: 'fifo' } }] } } } }).network;
  await assert.rejects(chooseBackend('uml', metered), /uml backend: forward: cannot emulate prio meters/);
});

test('uml: a plan is one sh script that runs its commands in order and stops at the first failure', async () => {
  const { run } = await import('../exec.js');
  const plan = [['echo', "it's"], ['sh', '-c', 'echo to-err >&2; exit 3'], ['echo', 'never']];
  const r = await run(['sh', '-c', planScript(plan)]);
  assert.equal(r.code, 3);
  assert.equal(r.stdout, "@rtclab-step 0\nit's\n@rtclab-step 1\n");
  assert.equal(r.stderr, '@rtclab-step 0\n@rtclab-step 1\nto-err\n');
  // The error names the failing command and its stderr, as runChecked's does.
  assert.equal(planFailure(plan, r), "`sh -c echo to-err >&2; exit 3` failed in the uml guest (exit 3): to-err");
  const missing = [['true'], ['no-such-command-rtclab', 'x']];
  const m = await run(['sh', '-c', planScript(missing)]);
  assert.match(planFailure(missing, m), /^`no-such-command-rtclab x` failed in the uml guest \(exit 127\): .*not found/);
  assert.equal(planFailure(plan, { code: 127, stdout: '', stderr: 'the uml guest (pid 1) is not running' }),
    'uml guest: the plan did not run (exit 127): the uml guest (pid 1) is not running');
});

test('uml: runs of ip or tc commands in a plan are one batch each; a failure names the command on its line', async () => {
  const { run } = await import('../exec.js');
  const plan = [['ip', 'link', 'show', 'lo'], ['ip', 'route', 'get', '127.0.0.1'], ['tc', 'qdisc', 'show', 'dev', 'lo'],
    ['ip', '-n', 'x', 'link'], ['echo', 'a b'], ['ip', 'link', 'show', "it's"], ['ip', 'link', 'show', 'lo']];
  assert.deepEqual(planSteps(plan).map((s) => [s.first, s.tool, s.commands.length]),
    [[0, 'ip', 2], [2, 'tc', 1], [3, null, 1], [4, null, 1], [5, null, 1], [6, 'ip', 1]]);
  const ok = await run(['sh', '-c', planScript(plan.slice(0, 3))]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^@rtclab-step 0\n1: lo:[^]*\nlocal 127\.0\.0\.1 dev lo[^]*@rtclab-step 2\n/);
  // The second of three batched commands fails: the batch stops there and the error names it.
  const failing = [['ip', 'link', 'show', 'lo'], ['ip', 'link', 'show', 'rtclab-no-such-dev'], ['ip', 'link', 'set', 'lo', 'up']];
  const r = await run(['sh', '-c', planScript(failing)]);
  assert.notEqual(r.code, 0);
  assert.match(planFailure(failing, r), /^`ip link show rtclab-no-such-dev` failed in the uml guest \(exit 1\): .*rtclab-no-such-dev.*does not exist/s);
});
