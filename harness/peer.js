// @ts-check
/**
 * One side of a call: a Debian Chromium (launched by harness/browser.js) with the test page open, and the page
 * protocol around it. Runs (harness/run.js) and the client's tests use this one class, so tests launch Chromium
 * exactly as runs do.
 *
 * The page protocol (docs/client.md): before the page's scripts run, `window.rtclabConfig` holds the complete page
 * config ({@link PageConfig}); the page calls `window.rtclabReport(kind, payload)` for everything it learns and
 * awaits it. Manual mode opens the page as a person would: config in `?config=`, no `rtclabReport`.
 *
 * Usage (teardown registered before anything can fail, so an interrupted open still closes the browser):
 *
 *   const peer = new Peer({
 *     name: 'a',
 *     flags: chromiumFlags({ clip, origin, mgmtPrefix: '10.99.', call: scenario.call }),
 *     nsExec: network.nsExec('a'),                 // omit to run on the host's network
 *     logFile: path.join(runDir, 'browser-a.log'),
 *     onReport: (kind, payload) => { ... },        // each report of the page, in order
 *     onExit: (reason) => fail(`browser a exited during the run: ${reason}`), // never called for close()
 *   });
 *   teardown.push('browser a', () => peer.close());
 *   await peer.open(`${origin}/`, { room, role: 'caller', call: scenario.call,
 *     getstats_interval_ms: scenario.getstats.interval_ms, candidate_prefix: '10.0.' });
 *   ... peer.page (puppeteer Page) for anything else ...
 *   await peer.close();                            // idempotent; kills after 5 s; removes the profile
 */
import fs from 'node:fs';
import { launchChromium } from './browser.js';
import { openInternals, saveDump } from './webrtc-internals.js';

/** How long the page gets to load. */
const LOAD_TIMEOUT_MS = 30_000;

/**
 * What the page needs, complete (the page has no defaults of its own and refuses a missing or out-of-range field):
 * room, role, call (the validated scenario's `call`, schema defaults filled in), getstats_interval_ms (the
 * scenario's `getstats.interval_ms`), candidate_prefix. Defined by the page's own reader, client/config.js.
 * @typedef {import('../client/config.js').PageConfig} PageConfig
 */

/**
 * @typedef {'stats' | 'state' | 'selected-pair' | 'media' | 'error' | 'frames'} ReportKind
 * @typedef {(kind: ReportKind, payload: any) => void | Promise<void>} ReportHandler
 *   the page waits for it to return (or its promise to settle) before it goes on
 */

/**
 * @typedef {object} PeerOptions
 * @property {string} name names this peer in messages ('a', 'caller')
 * @property {string[]} flags Chromium's flags: harness/browser.js's chromiumFlags(), plus any extra
 * @property {string[]} [nsExec] command prefix that enters a network namespace, e.g. ['ip', 'netns', 'exec', NS];
 *   absent or empty: the host's network
 * @property {string} logFile console lines, page errors and Chromium's stderr are appended to it
 * @property {ReportHandler} [onReport] receives every report of the page (not in manual mode)
 * @property {(pid: number | null) => void} [onLaunched] called once the browser process runs, with its pid
 * @property {(reason: string) => void} [onExit] called once if the browser dies or disconnects before close(), with
 *   how it ended ('killed by SIGKILL', 'exit status 1', 'the DevTools pipe closed'); the log file says why
 * @property {string | null} [webrtcInternals] where saveWebrtcInternals() saves Chrome's chrome://webrtc-internals
 *   dump (harness/webrtc-internals.js); the page is then opened before the call's page. Absent or null: not opened
 */

export class Peer {
  /** @type {PeerOptions} */
  #options;
  /** @type {Promise<Awaited<ReturnType<typeof launchChromium>>> | null} */
  #launch = null;
  /** @type {import('puppeteer-core').Page | null} */
  #page = null;
  /** @type {Promise<void> | null} */
  #closing = null;
  /** The chrome://webrtc-internals tab, when options.webrtcInternals asks for the dump. @type {import('puppeteer-core').Page | null} */
  #internals = null;
  /**
   * What saveWebrtcInternals() saved, or why nothing; null before it ran or when no dump is asked for.
   * @type {import('./webrtc-internals.js').InternalsDump | null}
   */
  internalsDump = null;
  /**
   * How the browser died ('killed by SIGKILL', 'exit status 1', 'the DevTools pipe closed'), or null while it lives
   * or once close() closed it. @type {string | null}
   */
  exitReason = null;
  /** The browser's own temporary directory (profile and launcher), removed by close(). @type {string | null} */
  profileDir = null;

  /** @param {PeerOptions} options */
  constructor(options) {
    this.#options = options;
  }

  get name() { return this.#options.name; }

  /** The browser process's pid once launched (its renderers and services are its descendants), else null. */
  pid = /** @type {number | null} */ (null);

  /** The open page (puppeteer), for tests and anything the protocol does not cover. */
  get page() {
    if (!this.#page) throw new Error(`peer ${this.name}: no page (open() has not finished)`);
    return this.#page;
  }

  /**
   * Launches Chromium and opens the page at `url` with `config`; resolves once the page has loaded. Call it once.
   * On failure the browser stays up until close(), which the caller always calls.
   * @param {string} url the page, e.g. http://10.99.0.1:PORT/
   * @param {PageConfig} config
   * @param {{ manual?: boolean }} [mode] manual: config in `?config=`, no rtclabReport (as a person opens it)
   */
  async open(url, config, { manual = false } = {}) {
    if (this.#launch) throw new Error(`peer ${this.name}: open() called twice`);
    if (this.#closing) throw new Error(`peer ${this.name}: closed`);
    const { logFile, nsExec, flags } = this.#options;
    this.#launch = launchChromium({ nsExec, flags, stderrFile: logFile });
    const { browser, profileDir } = await this.#launch;
    this.profileDir = profileDir;
    this.pid = browser.process()?.pid ?? null;
    this.#options.onLaunched?.(this.pid);
    if (this.#closing) throw new Error(`peer ${this.name}: closed while opening`);
    browser.on('disconnected', () => { this.#died(browser); });
    // Before the call's page: the internals page records only the peer connections created after it opened.
    if (this.#options.webrtcInternals) this.#internals = await openInternals(browser);

    const page = await browser.newPage();
    this.#page = page;
    const log = (/** @type {string} */ line) => fs.appendFileSync(logFile, `${line}\n`);
    page.on('console', (message) => log(`[console.${message.type()}] ${message.text()}`));
    page.on('pageerror', (error) => log(`[pageerror] ${error instanceof Error ? error.message : String(error)}`));
    if (manual) {
      const withConfig = new URL(url);
      withConfig.searchParams.set('config', JSON.stringify(config));
      await page.goto(withConfig.href, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS });
      return;
    }
    const onReport = this.#options.onReport ?? (() => {});
    await page.exposeFunction('rtclabReport', (/** @type {ReportKind} */ kind, /** @type {any} */ payload) => onReport(kind, payload));
    await page.evaluateOnNewDocument((/** @type {PageConfig} */ c) => { /** @type {any} */ (window).rtclabConfig = c; }, config);
    await page.goto(url, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS });
  }

  /**
   * Makes Chrome write its webrtc-internals dump to options.webrtcInternals (nothing when it asks for none), and sets
   * internalsDump to what was saved or why nothing was. Never throws: a dump that cannot be had is the check
   * webrtc_internals_saved's to judge.
   */
  async saveWebrtcInternals() {
    const file = this.#options.webrtcInternals;
    if (!file) return;
    try {
      const launched = await this.#launch;
      if (!launched || !this.#internals) throw new Error('its chrome://webrtc-internals page was never opened');
      if (this.exitReason) throw new Error(`the browser had exited (${this.exitReason})`);
      this.internalsDump = await saveDump(launched.browser, this.#internals, file);
    } catch (err) {
      this.internalsDump = { file: null, error: /** @type {Error} */ (err).message };
    }
  }

  /**
   * Closes the browser (killed if it has not closed within 5 s) and removes its profile. Safe in any state: before,
   * during or after open(), after the browser died, and more than once.
   * @returns {Promise<void>}
   */
  close() {
    this.#closing ??= (async () => {
      const launched = await this.#launch?.catch(() => null);
      await launched?.close();
    })();
    return this.#closing;
  }

  /** @param {import('puppeteer-core').Browser} browser */
  async #died(browser) {
    if (this.#closing || this.exitReason) return;
    this.exitReason = 'the DevTools pipe closed';
    // The pipe closes before the process is reaped: wait a moment to say how it ended.
    const proc = browser.process();
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      await new Promise((resolve) => { proc.once('exit', resolve); setTimeout(resolve, 1000); });
    }
    if (proc?.signalCode) this.exitReason = `killed by ${proc.signalCode}`;
    else if (proc?.exitCode != null) this.exitReason = `exit status ${proc.exitCode}`;
    this.#options.onExit?.(this.exitReason);
  }
}
