// @ts-check
// The call command as the end-to-end tests run it (`node harness/cli.js`), and what they read of its run directory.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../cli.js', import.meta.url));

/**
 * Runs the call CLI; `during` may act on the running process.
 * @param {string[]} args @param {{env?: Record<string,string>, during?: (child: import('node:child_process').ChildProcess, out: () => string) => void}} [o]
 * @returns {Promise<{code: number|null, stderr: string}>}
 */
export function runCli(args, { env = {}, during } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', (d) => { stderr += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    during?.(child, () => stderr);
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** Namespaces, root-side links and processes a run with this id could have left. @param {string} id */
export function leftovers(id) {
  const found = [];
  const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (netns.includes(`rtclab-${id}-`)) found.push(`namespaces: ${netns.trim()}`);
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  if (links.includes(`rl${id}`)) found.push('root-side management links');
  const procs = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n')
    .filter((l) => l.includes(`rtclab-${id}-`) || (l.includes('rtclab-bottleneck') && l.includes(id)));
  if (procs.length) found.push(`processes: ${procs.join(' | ')}`);
  return found;
}

/** True once the run's media flows and its schedules have started. @param {string} dir */
export const callStarted = (dir) => {
  try { return fs.readFileSync(path.join(dir, 'events.jsonl'), 'utf8').includes('"event":"call_start"'); } catch { return false; }
};
export const manifestOf = (/** @type {string} */ dir) => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
export const jsonl = (/** @type {string} */ file) => fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
/** A JSONL file's last line, or null when the file is missing or empty. @param {string} file */
export const lastLine = (file) => (fs.existsSync(file) && fs.statSync(file).size > 0 ? jsonl(file).at(-1) : null);
