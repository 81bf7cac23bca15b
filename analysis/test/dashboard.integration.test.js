// @ts-check
// The dashboard of a synthetic 60 s run (with the receiving page's per-frame record and a 1 s stall: the frame panel
// and a freeze), opened in real headless Chromium: it must load with no console error and show every chart with data.
// The time to ready (all plots drawn) is printed and written as a measure, not bounded: it is the machine's speed as
// much as the page's (1.0-1.3 s on one 2-vCPU machine, 2.0-2.3 s on another: bench/analysis/RESULTS.md).
// Run: node --test analysis/test/   (needs .venv from the setup, and /usr/bin/chromium)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';
import { measure } from '../../netem/test-support/measure.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = process.env.RTCLAB_PYTHON ?? join(root, '.venv', 'bin', 'python');
const chromium = process.env.CHROME_PATH ?? '/usr/bin/chromium';
// A few loads, each time printed; the fastest is the measure (one load can be slow for reasons outside the page).
const LOADS = 3;

/** @param {string[]} args */
function rtclab(...args) {
  return execFileSync(python, ['-m', 'rtclab.cli', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

test('dashboard of a 60 s run loads in Chromium without errors, every chart with data', async (t) => {
  assert.ok(existsSync(python), `${python} missing: run the setup (python3 -m venv .venv ...) first`);
  const dir = mkdtempSync(join(tmpdir(), 'rtclab-dash-'));
  const run = join(dir, 'run');
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    rtclab('synth', run, '--duration', '60', '--frames', '--stall', '30', '31');
    rtclab('analyze', run, '-q');
    const page = await browser.newPage();
    /** @type {string[]} */
    const errors = [];
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('requestfailed', (req) => errors.push(`request failed: ${req.url()}`));
    /** @type {string[]} */
    const external = [];
    page.on('request', (req) => { if (!req.url().startsWith('file:')) external.push(req.url()); });
    await page.goto(pathToFileURL(join(run, 'dashboard.html')).href, { waitUntil: 'load' });
    await page.waitForFunction('window.rtclabReady !== undefined', { timeout: 10000 });
    const readyMs = /** @type {number} */ (await page.evaluate('window.rtclabReady'));
    const times = [readyMs];
    for (let i = 1; i < LOADS; i++) {
      const again = await browser.newPage();
      await again.goto(pathToFileURL(join(run, 'dashboard.html')).href, { waitUntil: 'load' });
      await again.waitForFunction('window.rtclabReady !== undefined', { timeout: 10000 });
      times.push(/** @type {number} */ (await again.evaluate('window.rtclabReady')));
      await again.close();
    }
    const bestMs = Math.min(...times);
    measure(t, 'dashboard.synth60.best_ready_ms', bestMs, 1);
    const charts = await page.evaluate(() => Array.from(document.querySelectorAll('.chart')).map((el) => {
      const gd = /** @type {any} */ (el);
      const data = gd.data ?? [];
      const count = (/** @type {any} */ tr) => Math.max((tr.x ?? []).length, (tr.y ?? []).length);
      const points = data.reduce((/** @type {number} */ n, /** @type {any} */ tr) => n + count(tr), 0);
      // Every y axis (one per stacked panel) must carry at least one trace with points.
      const axes = Object.keys(gd.layout ?? {}).filter((k) => /^yaxis\d*$/.test(k)).map((k) => k.replace('axis', ''));
      const empty = axes.filter((a) => !data.some((/** @type {any} */ tr) => (tr.yaxis ?? 'y') === a && count(tr) > 0));
      const rects = (gd.layout?.shapes ?? []).filter((/** @type {any} */ s) => s.type === 'rect').length;
      return { id: el.id, traces: data.length, points, panels: axes.length, empty, rects,
        drawn: el.querySelector('.main-svg') !== null };
    }));
    assert.deepEqual(errors, [], 'console errors');
    assert.deepEqual(external, [], 'the page must not load anything from the network');
    const ids = charts.map((c) => c.id);
    assert.deepEqual(ids, ['timeseries', 'owd', 'cdf']);
    // rates, congestion controller, RTT/Tq, frames at b, loss events, fps, resolution, CPU per component (cpu.jsonl)
    assert.equal(charts[0].panels, 8, JSON.stringify(charts[0]));
    assert.equal(charts[0].rects, 1, 'the stall is one freeze, shaded over the stack');
    for (const c of charts) {
      assert.ok(c.traces > 0 && c.points > 0 && c.drawn, `chart ${c.id} has no data: ${JSON.stringify(c)}`);
      assert.deepEqual(c.empty, [], `chart ${c.id} has panels without data`);
    }
    const shown = times.map((t) => t.toFixed(0)).join(', ');
    console.log(`# dashboard ready in ${shown} ms with ${charts.length} charts, `
      + `${charts.reduce((n, c) => n + c.points, 0)} points`);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
