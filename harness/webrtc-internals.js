// @ts-check
// Chrome's own chrome://webrtc-internals dump of a call (scenario `call.webrtc_internals`; docs/harness.md, "Chrome's
// webrtc-internals dump"). The page records only the peer connections created after it opened, so it is opened in the
// call's browser before the call's page; when the browser closes at the call's end, the page's button `Download the
// "webrtc-internals dump"` makes Chrome write its dump (gzipped JSON), which the browser downloads where the harness
// told it to (CDP Browser.setDownloadBehavior). The file is Chrome's, byte for byte; the harness only reads back what
// it holds, for the manifest and the check webrtc_internals_saved.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export const INTERNALS_URL = 'chrome://webrtc-internals';
/** The page's dump button and its "Compress result" checkbox (Chromium's webrtc_internals.html and dump_creator.js). */
const DUMP_BUTTON = 'dump-click-target';
const COMPRESS_CHECKBOX = 'dump-checkbox';
/** How long Chrome gets to write the dump: a 1000 s call's dump of two peer connections is a few MB. */
const SAVE_TIMEOUT_MS = 30_000;
const LOAD_TIMEOUT_MS = 30_000;
/**
 * How long the save waits for the page's first stats newer than the moment it was asked for, so that the dump covers
 * the call to its end: Chrome sends the page its getStats once a second, each about a second after its timestamp.
 */
const FRESH_STATS_TIMEOUT_MS = 4000;

/**
 * What the manifest says of a saved dump (`calls[].webrtc_internals.<side>`), or why there is none.
 * @typedef {{ file: string, bytes: number, peer_connections: number, stats_series: number, last_point_at: number | null,
 *   saved_at: number } | { file: null, error: string }} InternalsDump
 *   peer_connections: the dump's PeerConnections; stats_series: their stats series together; last_point_at: Unix
 *   seconds of the newest point of any series (null: none); saved_at: Unix seconds when the harness asked for it
 */

/**
 * Opens chrome://webrtc-internals in a tab of its own; throws, naming the page, when it has no dump button.
 * @param {import('puppeteer-core').Browser} browser
 * @returns {Promise<import('puppeteer-core').Page>}
 */
export async function openInternals(browser) {
  const page = await browser.newPage();
  await page.goto(INTERNALS_URL, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS });
  const hasButton = await page.evaluate((id) => document.getElementById(id) !== null, DUMP_BUTTON);
  if (!hasButton) {
    throw new Error(`${INTERNALS_URL} has no dump button (#${DUMP_BUTTON}): this Chromium's page is not the one the harness knows`);
  }
  return page;
}

/**
 * Makes Chrome write its dump and moves it to `file` (readable by all; Chrome's download is private). The download
 * goes to a hidden directory beside `file`, removed afterwards.
 * @param {import('puppeteer-core').Browser} browser @param {import('puppeteer-core').Page} page the internals tab
 * @param {string} file @param {number} [timeoutMs]
 * @returns {Promise<InternalsDump>} throws with the reason when Chrome wrote none
 */
export async function saveDump(browser, page, file, timeoutMs = SAVE_TIMEOUT_MS) {
  const dir = path.join(path.dirname(file), `.${path.basename(file)}.download`);
  fs.mkdirSync(dir, { recursive: true });
  const cdp = await browser.target().createCDPSession();
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  try {
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dir, eventsEnabled: true });
    const done = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`Chrome wrote no dump within ${timeoutMs / 1000} s`)), timeoutMs);
      cdp.on('Browser.downloadProgress', (e) => {
        if (e.state === 'completed') resolve(e);
        else if (e.state === 'canceled') reject(new Error("Chrome canceled the dump's download"));
      });
    });
    const saved_at = Date.now() / 1000;
    await statsSince(page, saved_at * 1000);
    await page.evaluate((button, checkbox) => {
      // Compressed, Chrome's own default, set so that the file is always gzip whatever the page remembers.
      /** @type {HTMLInputElement} */ (document.getElementById(checkbox)).checked = true;
      /** @type {HTMLElement} */ (document.getElementById(button)).click();
    }, DUMP_BUTTON, COMPRESS_CHECKBOX);
    await done;
    const written = fs.readdirSync(dir).filter((n) => !n.endsWith('.crdownload'));
    if (written.length !== 1) throw new Error(`Chrome's download directory holds ${written.length} files (${written.join(', ')}), not its one dump`);
    fs.renameSync(path.join(dir, written[0]), file);
    fs.chmodSync(file, 0o644);
    return { file: path.basename(file), ...describeDump(file), saved_at };
  } finally {
    clearTimeout(timer);
    await cdp.detach().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Waits (at most FRESH_STATS_TIMEOUT_MS) until the page holds a stats point stamped at or after `sinceMs`; a page that
 * gets none in that time is dumped as it is (the manifest's last_point_at says how far it reaches).
 * @param {import('puppeteer-core').Page} page @param {number} sinceMs
 */
async function statsSince(page, sinceMs) {
  const deadline = Date.now() + FRESH_STATS_TIMEOUT_MS;
  while (Date.now() < deadline) {
    // Every stats object's own timestamps are a series of the page's store, `<id>-timestamp` (stats_graph_helper.js);
    // polled from here: a chrome:// page's policy forbids the string functions puppeteer's waitForFunction makes.
    const newest = await page.evaluate(() => Math.max(0, ...Object.values(/** @type {any} */ (window).peerConnectionDataStore ?? {})
      .flatMap((record) => Object.entries(record.toJSON().stats))
      .filter(([key, series]) => key.endsWith('-timestamp') && series.getCount() > 0)
      .map(([, series]) => Number(series.toJSON().endTime))));
    if (newest >= sinceMs) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What a saved dump holds: its size, its peer connections and their stats series (the time series of every stats
 * object's attributes). Throws, naming the file, when it is not gzipped JSON with a PeerConnections object.
 * @param {string} file
 */
export function describeDump(file) {
  const raw = fs.readFileSync(file);
  let doc;
  try {
    doc = JSON.parse(zlib.gunzipSync(raw).toString('utf8'));
  } catch (err) {
    throw new Error(`${path.basename(file)} is not Chrome's gzipped JSON dump: ${/** @type {Error} */ (err).message}`);
  }
  const pcs = doc && typeof doc.PeerConnections === 'object' && doc.PeerConnections !== null ? Object.values(doc.PeerConnections) : null;
  if (!pcs) throw new Error(`${path.basename(file)} has no PeerConnections object: not a webrtc-internals dump`);
  const series = pcs.flatMap((pc) => Object.values(pc?.stats ?? {}));
  // A series' endTime is a JavaScript Date as JSON (an ISO date) in Chromium 156's dump.
  const ends = series.map((x) => new Date(x?.endTime).getTime()).filter(Number.isFinite);
  return { bytes: raw.length, peer_connections: pcs.length, stats_series: series.length,
    last_point_at: ends.length ? Math.max(...ends) / 1000 : null };
}

/**
 * @typedef {{ call: { webrtc_internals?: boolean }, files: { a: string, b: string },
 *   peers: { a: { internalsDump: InternalsDump | null } | null, b: { internalsDump: InternalsDump | null } | null } }} CallDumps
 */

/**
 * A call's entry of the manifest's `calls[].webrtc_internals`: each side's dump as its peer saved it (null: not
 * saved), or null when the call asked for none.
 * @param {CallDumps} c
 * @returns {{ a: InternalsDump | null, b: InternalsDump | null } | null}
 */
export function callDumps(c) {
  return c.call.webrtc_internals ? { a: c.peers.a?.internalsDump ?? null, b: c.peers.b?.internalsDump ?? null } : null;
}

/**
 * Every dump the run's calls asked for, by the key of each browser's files (a, b, <call>-a, ...); null when no call
 * asked for one.
 * @param {CallDumps[]} calls
 * @returns {Record<string, InternalsDump | null> | null}
 */
export function askedDumps(calls) {
  const asked = calls.flatMap((c) => {
    const dumps = callDumps(c);
    return dumps ? [[c.files.a, dumps.a], [c.files.b, dumps.b]] : [];
  });
  return asked.length ? Object.fromEntries(asked) : null;
}
