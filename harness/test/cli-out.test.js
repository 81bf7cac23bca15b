// @ts-check
// `npm run call -- --out DIR` with a directory that cannot be made or written: exit status 2 at once, naming the
// directory and why, before anything is set up (Node's recursive mkdir used to spin forever on /proc).
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
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

/** The namespaces now, by name (`ip netns list` adds "(id: N)" to some). */
const namespaces = () => new Set(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n')
  .map((l) => l.split(' ')[0]).filter(Boolean));

test('--out inside /proc or /sys fails at once with the reason, and sets nothing up', () => {
  const before = namespaces();
  for (const [out, reason] of [['/proc/x', 'ENOENT at /proc/x'], ['/sys/x/y', 'EPERM at /sys/x']]) {
    const r = callWithOut(out);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`--out: cannot create the directory ${out}: ${reason}`));
    assert.ok(r.seconds < 10, `took ${r.seconds} s`);
  }
  // None added (the fast tier runs no network beside it); other runs' namespaces may go meanwhile, not this CLI's doing.
  assert.deepEqual([...namespaces()].filter((n) => !before.has(n)), [], 'no namespace was made');
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
