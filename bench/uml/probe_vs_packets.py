"""The uml lateness probe against the call's own packets: for each second in which the probe (uml-timer.jsonl) saw an
answer more than 10 ms late, how late the call's reverse packets through the same guest were in that second (their
one-way delay beyond the run's minimum, from packets.parquet: the reverse direction has no rate limit, so beyond its
propagation delay a reverse packet waits only for the guest). A guest whose timers stall delays both; a probe that
reads late on its own shows a late second with punctual packets.

    .venv/bin/python bench/uml/probe_vs_packets.py RUN_DIR [RUN_DIR...]

Needs analysed runs of the uml backend (rtclab analyze writes packets.parquet)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from rtclab.stats import percentile

LATE_MS = 10.0


def compare(run: Path) -> None:
    t0 = json.loads((run / "manifest.json").read_text())["timings"]["call_start"]
    cols = pq.read_table(run / "packets.parquet", columns=["direction", "t_send_ns", "owd_ns"]).to_pydict()
    reverse = np.array([d == "reverse" and o is not None for d, o in zip(cols["direction"], cols["owd_ns"])])
    owd_ms = np.array([o for o, r in zip(cols["owd_ns"], reverse) if r], dtype=float) / 1e6
    sent_s = np.array([t for t, r in zip(cols["t_send_ns"], reverse) if r], dtype=float) / 1e9 - t0
    extra = owd_ms - owd_ms.min()
    print(f"{run}: {len(owd_ms)} reverse packets, extra one-way delay p99.9 {percentile(extra, 99.9):.1f} ms, "
          f"max {extra.max():.1f} ms, {int((extra > LATE_MS).sum())} over {LATE_MS:g} ms")
    for line in (run / "uml-timer.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["max_ms"] <= LATE_MS:
            continue
        end = s["t"] - t0  # the summary covers the second before t
        in_second = (sent_s >= end - 1) & (sent_s < end)
        worst = f"{extra[in_second].max():.1f}" if in_second.any() else "-"
        print(f"  {end - 1:6.1f}-{end:6.1f} s: probe max {s['max_ms']:5.1f} ms ({s['late_10ms']} of {s['samples']} "
              f"answers over {LATE_MS:g} ms); reverse packets {int(in_second.sum())}, max extra {worst} ms")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for arg in sys.argv[1:]:
        compare(Path(arg))
