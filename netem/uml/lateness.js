// @ts-check
// The uml guest kernel's timer lateness, measured from the host without any guest process (docs/netem.md, "The
// guest's health"). A third vector device joins the guest to a small veth pair in r that carries nothing else; the
// guest's egress on it is `netem delay 5ms`. The host pings the guest there every 5 ms: the guest kernel answers
// in its receive softirq and the answer leaves through netem's timer, so RTT - 5 ms is how late the guest kernel
// received the request and fired that timer: what the data path's netem and TBF suffer, on the host's clock.
// (A sleep loop in a guest process also waits for UML's ptraced process switches, scheduled by the host apart from
// the kernel's thread: it read stalls of 100-400 ms that no packet of the call showed.)
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GUEST_FIFO_PRIORITY } from './guest.js';

/**
 * The probe's link: a veth pair in r (hostDev with the host's address; peerDev, which the guest takes as a vector
 * device and names guestDev) in a /30 that no other address of rtclab's is in (data 10.0., management 10.99.).
 * Fixed MACs with permanent neighbour entries on both sides: no ARP in the measurement.
 */
export const LATENESS_LINK = Object.freeze({
  hostDev: 'r-lat0', peerDev: 'r-lat1', guestDev: 'lat0',
  host: '10.98.0.1', guest: '10.98.0.2', prefix: 30,
  hostMac: '02:72:74:63:00:01', guestMac: '02:72:74:63:00:02',
  // Every 5 ms: a request the guest took in late was often taken in only with the next request, so the probe read
  // about one interval late where the data path was not (every 20 ms: answers 20-28 ms late beside 5 CUBIC flows in
  // seconds where no reverse packet through the guest was 10 ms late; every 5 ms: 10.4 ms at most; bench/uml/RESULTS.md).
  // RTCLAB_UML_PROBE_INTERVAL_MS: another interval, for bench/uml/probe-interval.sh.
  delay_ms: 5, interval_ms: Number(process.env.RTCLAB_UML_PROBE_INTERVAL_MS) || 5,
});

/** A request with no answer after this long counts as a sample this late (it cannot vanish from the summary). */
const NO_ANSWER_MS = 1000;

/**
 * Folds ping's output into one summary a second (uml-timer.jsonl): {t, samples, late_1ms, late_10ms, late_100ms,
 * max_ms, gap_ms, gap_from_t, last_line_t}, the answers of the second before t and their lateness (RTT - delay_ms);
 * gap_ms the longest silence of ping between two of its lines (ping -D's own times) whose second line came in that
 * second, from gap_from_t (null: no line came), last_line_t ping's time of its latest line so far (epoch s; null: none
 * yet), the probe's coverage
 * (health.js probeCoverage). Pure but for the clock it is given.
 * @param {number} delayMs the netem delay on the guest's side
 */
export function latenessCounter(delayMs) {
  /** seq -> when ping said it had no answer yet (ms) */
  const pending = new Map();
  /** seqs already counted as unanswered: their late answers are not counted again */
  const gaveUp = new Set();
  let samples = 0, late1 = 0, late10 = 0, late100 = 0, worst = 0;
  /** ping's own time of its latest line (ms, from -D), and the longest silence between two of its lines this second */
  let lastLineMs = /** @type {number | null} */ (null), gapMs = /** @type {number | null} */ (null), gapFromMs = 0;
  /** @param {number} lateMs */
  const add = (lateMs) => {
    samples++;
    late1 += lateMs > 1 ? 1 : 0;
    late10 += lateMs > 10 ? 1 : 0;
    late100 += lateMs > 100 ? 1 : 0;
    worst = Math.max(worst, lateMs);
  };
  return {
    /** One line of `ping -n -O` output, read at nowMs. @param {string} line @param {number} nowMs */
    line(line, nowMs) {
      // ping -D stamps each line with its own clock: the probe's gaps are ping's, not this reader's.
      const stamp = /^\[(\d+(?:\.\d+)?)\]/.exec(line);
      if (stamp) {
        const at = Number(stamp[1]) * 1000;
        if (lastLineMs !== null && at - lastLineMs > (gapMs ?? -1)) {
          gapMs = at - lastLineMs;
          gapFromMs = lastLineMs;
        }
        lastLineMs = at;
      }
      const reply = /icmp_seq=(\d+) .*time=([\d.]+) ms/.exec(line);
      if (reply) {
        const seq = Number(reply[1]);
        pending.delete(seq);
        if (gaveUp.delete(seq)) return;
        add(Math.max(0, Number(reply[2]) - delayMs));
        return;
      }
      const none = /no answer yet for icmp_seq=(\d+)/.exec(line);
      if (none && !pending.has(Number(none[1]))) pending.set(Number(none[1]), nowMs);
    },
    /**
     * ping was silent for gapMs (more than NO_ANSWER_MS) until a line came: one sample that late, or, when a summary
     * already counted this silence, only its length. @param {number} gapMs @param {boolean} counted
     */
    silence(gapMs, counted) {
      if (counted) worst = Math.max(worst, gapMs);
      else add(gapMs);
    },
    /** The summary of the second ending at nowMs; resets. @param {number} nowMs */
    second(nowMs) {
      for (const [seq, since] of pending) {
        if (nowMs - since < NO_ANSWER_MS) continue;
        pending.delete(seq);
        gaveUp.add(seq);
        add(nowMs - since);
      }
      if (gaveUp.size > 1000) gaveUp.clear(); // seqs wrap at 65536; a lost answer never comes
      const out = { t: Math.round(nowMs) / 1000, samples, late_1ms: late1, late_10ms: late10, late_100ms: late100,
        max_ms: Math.round(worst * 1000) / 1000, gap_ms: gapMs === null ? null : Math.round(gapMs * 1000) / 1000,
        gap_from_t: gapMs === null ? null : Math.round(gapFromMs * 1000) / 1e6,
        last_line_t: lastLineMs === null ? null : Math.round(lastLineMs * 1000) / 1e6 };
      samples = late1 = late10 = late100 = worst = 0;
      gapMs = null;
      return out;
    },
  };
}

/**
 * Ping the guest from r and append a summary a second to outFile until stop(). If ping falls silent (it died, or
 * nothing answers at all), each silent second counts one sample as late as the silence is long.
 * @param {{ hostNsExec: string[], outFile: string, detached?: boolean, log?: (msg: string) => void,
 *   onExit?: () => void, target?: string, intervalMs?: number }} o  target: what to ping (the guest; a test pings
 *   another); intervalMs: ping's interval (LATENESS_LINK.interval_ms; a test pinging a host that answers at once
 *   gives more than 10: below a clock tick iputils' ping spins on sched_yield while nothing is in flight, a whole
 *   CPU at the guest's SCHED_FIFO priority; the guest's 5 ms delay keeps a request in flight); hostNsExec: prefix for
 *   r on the host ([] when already there); onExit: ping ended on its own; detached: ping and this summary outlive the
 *   Node process (the CLI's `up`: the summary then runs in its own process, this module's main)
 * @returns {{ pid: number | undefined, stop: () => void }}
 */
export function startLatenessProbe(o) {
  const L = LATENESS_LINK;
  if (o.detached) {
    // In r, as ping: the teardown's kill of r's processes ends it too.
    const argv = [...o.hostNsExec, process.execPath, fileURLToPath(import.meta.url), o.outFile];
    const p = spawn(argv[0], argv.slice(1), { stdio: 'ignore', detached: true });
    p.unref();
    return { pid: p.pid, stop: () => { try { process.kill(/** @type {number} */ (p.pid), 'SIGTERM'); } catch { /* gone */ } } };
  }
  // -O: a request unanswered when the next goes out is reported; -s 16: room for ping's send time stamp.
  // At the guest's SCHED_FIFO priority: ping stamps its send time in user space before it sends, and a ping
  // preempted in between on a busy host would read as a late guest.
  // -D: each line stamped with ping's own clock (the probe's coverage).
  const argv = [...o.hostNsExec, 'chrt', '-f', String(GUEST_FIFO_PRIORITY), 'ping', '-n', '-D', '-O', '-i', String((o.intervalMs ?? L.interval_ms) / 1000),
    '-s', '16', o.target ?? L.guest];
  // A group of its own, as the guest's: a Ctrl-C to the owner's group must not end the measurement before the teardown.
  const ping = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const counter = latenessCounter(L.delay_ms);
  let lastHeard = Date.now();
  let silenceCounted = false; // a summary counted the silence going on
  let stopped = false;
  createInterface({ input: /** @type {import('node:stream').Readable} */ (ping.stdout) }).on('line', (line) => {
    const now = Date.now();
    // A silence between two lines counts when the first line after it comes, whatever the summaries' phase: a
    // summary sees a silence only when it spans one of their ticks by more than NO_ANSWER_MS.
    if (now - lastHeard > NO_ANSWER_MS) counter.silence(now - lastHeard, silenceCounted);
    lastHeard = now;
    silenceCounted = false;
    counter.line(line, now);
  });
  let stderr = '';
  ping.stderr?.on('data', (d) => { stderr = (stderr + d).slice(-500); });
  ping.on('exit', (code, signal) => {
    if (stopped) return;
    o.log?.(`uml lateness probe: ping exited (${signal ?? `exit code ${code}`}): ${stderr.trim()}`);
    o.onExit?.();
  });
  const timer = setInterval(() => {
    const now = Date.now();
    const s = counter.second(now);
    if (now - lastHeard > NO_ANSWER_MS) {
      // Silence: not even "no answer yet" lines. Counted, so that a dead probe cannot pass for an idle guest.
      s.samples++; s.late_1ms++; s.late_10ms++; s.late_100ms++;
      s.max_ms = Math.max(s.max_ms, now - lastHeard);
      silenceCounted = true;
    }
    try { appendFileSync(o.outFile, JSON.stringify(s) + '\n'); } catch { /* the run directory went away */ }
  }, 1000);
  return {
    pid: ping.pid,
    stop() {
      stopped = true;
      clearInterval(timer);
      ping.kill('SIGKILL');
    },
  };
}

// The detached form, run in r: node netem/uml/lateness.js OUT_FILE  (ends on SIGTERM, or when ping ends)
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outFile = process.argv[2];
  if (!outFile) {
    console.error('usage: node netem/uml/lateness.js OUT_FILE');
    process.exit(2);
  }
  const probe = startLatenessProbe({ hostNsExec: [], outFile, onExit: () => { probe.stop(); process.exit(1); } });
  process.on('SIGTERM', () => { probe.stop(); process.exit(0); });
}
