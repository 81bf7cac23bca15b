// @ts-check
// One Chromium per host, launched inside the host's network namespace and driven over a pipe (its DevTools
// websocket would listen on the namespace's own loopback, out of the harness's reach).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Debian's real binary (/usr/bin/chromium is a shell wrapper around it); RTCLAB_CHROMIUM names another one. */
export function chromiumBinary() {
  const chosen = process.env.RTCLAB_CHROMIUM;
  if (chosen) {
    if (!fs.existsSync(chosen)) throw new Error(`Chromium not found at ${chosen} (RTCLAB_CHROMIUM)`);
    return chosen;
  }
  const candidates = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/google-chrome'];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(`Chromium not found (looked for ${candidates.join(', ')}); run scripts/setup.sh ` +
      'or set RTCLAB_CHROMIUM to a Chrome/Chromium binary');
  }
  return found;
}

/**
 * The command-line flags of one call browser: fake camera from the clip, no background traffic, no DNS, and ICE
 * candidates on every interface so media cannot silently move to the management link.
 * @param {{ clip: string, origin: string, mgmtPrefix: string, call: any }} o
 */
export function chromiumFlags({ clip, origin, mgmtPrefix, call }) {
  const flags = [
    '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
    '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
    `--use-file-for-fake-video-capture=${clip}`,
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
    '--disable-quic', '--autoplay-policy=no-user-gesture-required',
    `--unsafely-treat-insecure-origin-as-secure=${origin}`,
    `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE ${mgmtPrefix}*`,
    '--webrtc-ip-handling-policy=default_public_and_private_interfaces',
    // A hidden headless page must not be throttled: timers drive getStats and the encoder.
    '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
    '--disable-backgrounding-occluded-windows',
  ];
  if (call.field_trials) flags.push(`--force-fieldtrials=${call.field_trials}`);
  flags.push(...call.chrome_flags);
  return flags;
}

/**
 * Launches Chromium in a namespace.
 * @param {{ nsExec: string[], flags: string[], stderrFile: string }} o
 */
export async function launchInNamespace({ nsExec, flags, stderrFile }) {
  const binary = chromiumBinary();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rtclab-chromium-'));
  // puppeteer needs one executable path: a two-line wrapper enters the namespace and execs Chromium.
  const wrapper = path.join(profile, 'chromium-in-ns.sh');
  const quoted = nsExec.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec ${quoted} '${binary}' "$@" 2>>'${stderrFile}'\n`, { mode: 0o755 });
  // Loaded when first needed: it is the largest module of the harness, and a bad scenario never needs it.
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    executablePath: wrapper,
    pipe: true,
    headless: true,
    userDataDir: path.join(profile, 'profile'),
    args: flags,
    protocolTimeout: 60_000,
    handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false, // the harness tears down itself
  });
  const cleanupProfile = () => fs.rmSync(profile, { recursive: true, force: true });
  return { browser, cleanupProfile };
}
