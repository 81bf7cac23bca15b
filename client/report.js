/**
 * Reports to the harness through `window.rtclabReport(kind, payload)`, a function the harness exposes with
 * puppeteer's exposeFunction. Absent (manual use): the page keeps working and only logs to the console.
 */

/**
 * @param {'stats' | 'state' | 'selected-pair' | 'media' | 'error' | 'frames'} kind
 * @param {Record<string, unknown>} payload
 * @returns {Promise<void>} resolves once the harness has the report (so a slow harness slows the page down
 *   instead of letting reports pile up in memory)
 */
export async function report(kind, payload) {
  if (kind !== 'stats' && kind !== 'frames') console.log(`rtclab ${kind} ${JSON.stringify(payload)}`);
  const send = /** @type {any} */ (globalThis).rtclabReport;
  if (typeof send !== 'function') return;
  try {
    await send(kind, payload);
  } catch (error) {
    console.error(`rtclab: rtclabReport(${kind}) failed: ${/** @type {Error} */ (error).message}`);
  }
}

/** @param {unknown} error */
export function reportError(error) {
  const message = error instanceof Error ? error.message : String(error);
  return report('error', { t_ms: Date.now(), message });
}
