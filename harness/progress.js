// @ts-check
// The progress line during a call (or a run without one): one line rewritten in place on a terminal, a line every 10 s otherwise (CI logs).

const fmt = (/** @type {number|null|undefined} */ v, digits = 0) => (v == null ? '-' : v.toFixed(digits));

/** @param {NodeJS.WriteStream} stream */
export function progressPrinter(stream) {
  const tty = Boolean(stream.isTTY);
  let lastPhase = '';
  let lastLineAt = 0;
  let open = false;
  /** @param {any} p */
  const print = (p) => {
    if (p.phase !== 'call') {
      if (p.phase !== lastPhase) {
        if (open) { stream.write('\n'); open = false; }
        stream.write(`  ${p.phase}...\n`);
      }
      lastPhase = p.phase;
      return;
    }
    lastPhase = p.phase;
    const line = p.calls === 0
      ? `  run ${fmt(p.elapsed_s)}/${fmt(p.elapsed_s + p.remaining_s)} s (no call: the network and its cross traffic)`
      : `  call ${fmt(p.elapsed_s)}/${fmt(p.elapsed_s + p.remaining_s)} s | send ${fmt(p.send_kbps)} kbit/s | ` +
        `recv ${fmt(p.recv_kbps)} kbit/s | RTT ${fmt(p.rtt_ms)} ms | ${fmt(p.fps)} fps ${p.height ? `${p.height}p` : ''}`;
    if (tty) { stream.write(`\r\x1b[K${line}`); open = true; }
    else if (Date.now() - lastLineAt >= 10_000 || p.remaining_s <= 0) { stream.write(line + '\n'); lastLineAt = Date.now(); }
  };
  print.done = () => { if (open) stream.write('\n'); open = false; };
  return print;
}
