// @ts-check
// `npm run call -- --out DIR` with a directory that cannot be made or written: exit status 2 at once, naming the
// directory and why, before anything is set up (Node's recursive mkdir used to spin forever on /proc).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../cli.js', import.meta.url));

/** @param {string} out */
function callWithOut(out) {
  const started = Date.now();
  const r = spawnSync(process.execPath, [cli, '--out', out, '--duration', '1'], { encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, stderr: r.stderr, seconds: (Date.now() - started) / 1000 };
}

/**
 * The CLI with --out in a mount namespace of its own, whose /run/netns (where `ip netns add` puts a network namespace)
 * is an empty tmpfs: what it leaves there is what it made, whatever other runs do on the host meanwhile (the real
 * tier's network tests may run beside this one). Null when this process cannot make such a namespace (not root).
 * @param {string} out
 */
function callIsolated(out) {
  const started = Date.now();
  const script = 'mkdir -p /run/netns && mount -t tmpfs rtclab-test /run/netns || exit 90; '
    + '"$0" "$1" --out "$2" --duration 1; rc=$?; echo "=== made: $(ls -A /run/netns)"; exit $rc';
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, process.execPath, cli, out],
    { encoding: 'utf8', timeout: 20_000 });
  if (r.status === 90 || r.error) return null;
  const made = /=== made: (.*)$/m.exec(r.stdout)?.[1].split(/\s+/).filter(Boolean) ?? null;
  return { code: r.status, stderr: r.stderr, seconds: (Date.now() - started) / 1000, made };
}

test('--out inside /proc or /sys fails at once with the reason, and sets nothing up', (t) => {
  for (const [out, reason] of [['/proc/x', 'ENOENT at /proc/x'], ['/sys/x/y', 'EPERM at /sys/x']]) {
    const r = callIsolated(out) ?? callWithOut(out);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`--out: cannot create the directory ${out}: ${reason}`));
    assert.ok(r.seconds < 10, `took ${r.seconds} s`);
    if ('made' in r) assert.deepEqual(r.made, [], 'no namespace was made');
    else t.diagnostic('not root: whether a namespace was made is not checked');
  }
});

test('--out on a read-only filesystem, or on a file, fails at once with the reason', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-ro-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir]).status === 0;
  if (!mounted) return t.skip('cannot mount a tmpfs here (needs root)');
  try {
    const r = callWithOut(path.join(dir, 'run'));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--out: cannot create the directory .*\/run: EROFS/);
    const file = path.join(os.tmpdir(), `rtclab-file-${process.pid}`);
    fs.writeFileSync(file, '');
    const f = callWithOut(path.join(file, 'run'));
    fs.unlinkSync(file);
    assert.equal(f.code, 2, f.stderr);
    assert.match(f.stderr, /--out: cannot create the directory .*: ENOTDIR/);
  } finally {
    spawnSync('umount', [dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
