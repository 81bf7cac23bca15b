// @ts-check
// Per-process CPU accounting (harness/cpu-accounting.js): /proc parsing, how processes are grouped, and a real
// sampling of a busy child process checked against the child's own account of its CPU time (getrusage).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CpuAccounting, chromiumRole, hostTicks, parseProcStat, processGroup } from '../cpu-accounting.js';

test('a /proc/PID/stat line: a command name with spaces and parentheses does not shift the fields', () => {
  // Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ... starttime
  const line = '4321 (Web Content) (x)) S 77 4321 4321 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 987654 1000 50';
  assert.deepEqual(parseProcStat(line), { pid: 4321, ppid: 77, comm: 'Web Content) (x)', ticks: 325, start: 987654 });
  assert.equal(parseProcStat('garbage'), null);
});

test('the host line of /proc/stat: idle and iowait apart from the busy kinds', () => {
  assert.deepEqual(hostTicks('cpu  100 5 50 1000 20 3 7 1 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n'),
    { user: 105, system: 50, irq: 3, softirq: 7, steal: 1, idle: 1020 });
});

test("Chromium's processes by role, from the command lines Chromium 156 shows", () => {
  const split = (/** @type {string} */ s) => s.split(' ');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --allow-pre-commit-input --headless=new')), 'browser');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=renderer --crashpad-handler-pid=0')), 'renderer');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=gpu-process --no-sandbox')), 'gpu');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=zygote --no-zygote-sandbox')), 'zygote');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=utility --utility-sub-type=network.mojom.NetworkService')), 'network');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=utility --utility-sub-type=audio.mojom.AudioService')), 'audio');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=utility --utility-sub-type=video_capture.mojom.VideoCaptureService')), 'video-capture');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=utility --utility-sub-type=storage.mojom.StorageService')), 'storage');
  assert.equal(chromiumRole(split('/usr/lib/chromium/chromium --type=utility --utility-sub-type=data_decoder.mojom.DataDecoderService')), 'utility');
});

test('the run\'s other processes by component and role', () => {
  const group = (/** @type {string} */ cmd, comm = path.basename(cmd.split(' ')[0]).slice(0, 15)) =>
    processGroup({ pid: 2, argv: cmd.split(' '), comm, browserKey: null, harnessPid: 1 });
  assert.equal(processGroup({ pid: 1, argv: ['node'], comm: 'node', browserKey: null, harnessPid: 1 }), 'harness/node');
  assert.equal(processGroup({ pid: 2, argv: ['/usr/lib/chromium/chromium', '--type=renderer'], comm: 'chromium', browserKey: 'c2-a', harnessPid: 1 }), 'chromium-c2-a/renderer');
  assert.equal(group('/x/target/release/rtclab-bottleneck --queue-num 0 --config /r/bottleneck-forward.json'), 'bottleneck/forward');
  assert.equal(group('/x/target/release/rtclab-bottleneck --queue-num 1 --config /r/bottleneck-reverse.json'), 'bottleneck/reverse');
  assert.equal(group('/usr/bin/linux.uml umid=rtclab-x mem=256M rootfstype=hostfs'), 'bottleneck/uml');
  assert.equal(processGroup({ pid: 3, argv: [], comm: 'linux.uml', browserKey: null, harnessPid: 1 }), 'bottleneck/uml');
  assert.equal(group('tcpdump -i a-eth0 -n -s 256 -w /r/capture-a.pcap'), 'capture/a');
  assert.equal(group('tcpdump -i b-eth0 -n -s 256 -w /r/capture-b.pcap'), 'capture/b');
  assert.equal(group('iperf3 -s -p 5201 -1'), 'iperf3/server');
  assert.equal(group('iperf3 -c 10.0.2.2 -p 5201 -t 10'), 'iperf3/client');
  assert.equal(group('python3 -S -I netem/short_tcp.py serve --bind 10.0.1.2 --port 5201'), 'short-tcp/server');
  assert.equal(group('python3 -S -I netem/short_tcp.py fetch --server 10.0.1.2 --port 5201'), 'short-tcp/client');
  assert.equal(group('tc qdisc show'), 'harness/other');
});

test('a busy child is accounted to its group, to within a clock tick of its own getrusage', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-cpu-'));
  const file = path.join(dir, 'cpu.jsonl');
  const cpu = new CpuAccounting({ file, interval_ms: 200 });
  try {
    cpu.start();
    // Busy for 1.5 s, then says its own CPU time (user + system, from getrusage) and stays alive for a last sample.
    const child = spawn(process.execPath, ['-e', `
      const end = Date.now() + 1500; let x = 0; while (Date.now() < end) x += Math.sqrt(x + 1);
      const u = process.cpuUsage(); console.log(JSON.stringify({ cpu_s: (u.user + u.system) / 1e6 }));
      setTimeout(() => {}, 1500);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    cpu.nameBrowser(child.pid, 'a');
    const own = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d)))));
    await new Promise((resolve) => setTimeout(resolve, 450)); // two more samples while it idles
    await cpu.stop();
    child.kill();
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[0].kind, 'header');
    assert.equal(lines[0].harness_pid, process.pid);
    const seen = lines.filter((l) => l.kind === 'process' && l.pid === child.pid);
    assert.equal(seen.at(-1).group, 'chromium-a/browser');
    const samples = lines.filter((l) => l.kind === 'sample');
    const accounted = samples.reduce((s, l) => s + (l.procs[String(child.pid)] ?? 0) * l.dt, 0);
    // Ticks are 10 ms; the child's last moments before it printed may fall either side of a reading.
    assert.ok(Math.abs(accounted - own.cpu_s) <= 0.03 + 0.02 * own.cpu_s,
      `accounted ${accounted.toFixed(3)} s, the child's own getrusage ${own.cpu_s.toFixed(3)} s`);
    for (const l of samples) {
      const sum = Object.entries(l.procs).filter(([pid]) => Number(pid) === child.pid).reduce((s, [, c]) => s + c, 0);
      assert.ok(Math.abs((l.groups['chromium-a/browser'] ?? 0) - sum) < 1e-3, 'a group is the sum of its processes');
      // /proc/stat counts whole 10 ms ticks: a reading can be a tick per CPU off at each end of the interval.
      const slack = (2 * os.cpus().length * 0.01) / l.dt + 0.02;
      assert.ok(l.host.busy >= 0 && l.host.busy <= os.cpus().length + slack, `host busy ${l.host.busy} cores over ${l.dt} s`);
    }
  } finally {
    await cpu.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a process seen before its exec (ip netns exec ... stress-ng) is grouped again by what it became', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-cpu-'));
  const file = path.join(dir, 'cpu.jsonl');
  // A program named stress-ng (sleep under that name): the shell is seen first, then becomes it.
  fs.symlinkSync(fs.realpathSync('/bin/sleep'), path.join(dir, 'stress-ng'));
  const cpu = new CpuAccounting({ file, interval_ms: 100 });
  try {
    cpu.start();
    const child = spawn('sh', ['-c', `sleep 0.4; exec ${path.join(dir, 'stress-ng')} 0.5`], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('exit', resolve));
    await cpu.stop();
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const seen = lines.filter((l) => l.kind === 'process' && l.pid === child.pid);
    assert.deepEqual(seen.map((l) => [l.comm, l.group]), [['sh', 'harness/other'], ['stress-ng', 'cpu-load/stress-ng']]);
  } finally {
    await cpu.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
