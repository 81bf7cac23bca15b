// @ts-check
/**
 * Test helpers: a small Y4M clip and a Debian Chromium launched the way the harness does it (minus namespaces),
 * with the page's reports collected in memory.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import puppeteer from 'puppeteer-core';

const run = promisify(execFile);
export const CHROMIUM = process.env.RTCLAB_CHROMIUM ?? '/usr/bin/chromium';

/** @returns {Promise<{ dir: string, clip: string }>} a temporary directory with a 320x240 5 s testsrc2 clip */
export async function makeClip() {
  const dir = await mkdtemp(path.join(tmpdir(), 'rtclab-client-test-'));
  const clip = path.join(dir, 'clip.y4m');
  await run('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=15', '-t', '5', '-pix_fmt', 'yuv420p', clip]);
  return { dir, clip };
}

/**
 * @param {{ url: string, config: Record<string, unknown>, clip: string, workDir: string, name: string, manual?: boolean }} options
 *   manual: as a person would use the page: config in `?config=`, no `rtclabReport` (reports stays empty)
 * @returns {Promise<{ browser: import('puppeteer-core').Browser, page: import('puppeteer-core').Page,
 *   reports: { kind: string, payload: any, received_ms: number }[], console: string[] }>}
 */
export async function openPeer({ url, config, clip, workDir, name, manual = false }) {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    pipe: true,
    args: [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
      `--use-file-for-fake-video-capture=${clip}`, '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-quic', '--autoplay-policy=no-user-gesture-required',
      '--allow-loopback-in-peer-connection', `--user-data-dir=${path.join(workDir, `profile-${name}`)}`,
    ],
  });
  try {
    const page = await browser.newPage();
    /** @type {{ kind: string, payload: any, received_ms: number }[]} */
    const reports = [];
    /** @type {string[]} */
    const consoleLines = [];
    page.on('console', (message) => consoleLines.push(message.text()));
    page.on('pageerror', (error) => consoleLines.push(`pageerror: ${/** @type {Error} */ (error).message}`));
    if (manual) {
      await page.goto(`${url}?config=${encodeURIComponent(JSON.stringify(config))}`);
    } else {
      await page.exposeFunction('rtclabReport', (/** @type {string} */ kind, /** @type {any} */ payload) => {
        reports.push({ kind, payload, received_ms: Date.now() });
      });
      await page.evaluateOnNewDocument((c) => { /** @type {any} */ (window).rtclabConfig = c; }, config);
      await page.goto(url);
    }
    return { browser, page, reports, console: consoleLines };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/** @param {string} dir */
export const removeDir = (dir) => rm(dir, { recursive: true, force: true });
