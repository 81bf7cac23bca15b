"""One row per run directory of bench/freezes (RESULTS.md): the frames presented and decoded over the getStats span,
the freezes as shown, as Chrome counts and by getStats' own counters over that span, and what the rule before
as Chrome counts existed gave (the record alone, every gap over 5 s a pause).
  .venv/bin/python bench/freezes/summarize.py /tmp/freezes-bench/control-1 /tmp/freezes-bench/outages-1 ..."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rtclab import freezes


def old_rule(run: Path, m: dict, lo_ms: float, hi_ms: float) -> tuple[int, float]:
    """Freezes in the span by the record alone, gaps over 5 s taken for pauses (freezes.py before as Chrome counts)."""
    t0 = m["run"]["call_start"] * 1000
    end = t0 + m["run"]["duration_s"] * 1000
    recs = [json.loads(x) for x in (run / "frames-b.jsonl").read_text().splitlines()]
    shown = [r for r in recs if r.get("kind") == "frame" and isinstance(r.get("presentation_ms"), (int, float))
             and isinstance(r.get("expected_display_ms"), (int, float)) and t0 <= r["expected_display_ms"] < end]
    times = freezes.with_missed_frames([float(r["presentation_ms"]) for r in shown],
                                       [r.get("presented_frames") for r in shown])
    found = [(t, g) for t, g in freezes.chrome_freezes(times) if lo_ms < t + g <= hi_ms]
    return len(found), sum(g for _, g in found)


def main(runs: list[str]) -> None:
    print("| run | smoothing | valid | span s | presented / decoded | put back | as shown | as Chrome counts | "
          "getStats | as Chrome - getStats | old rule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for arg in runs:
        run = Path(arg)
        name = run.parent.name if run.name == "run" else run.name  # a test's tmp_path/run: its test's directory
        m = json.loads((run / "metrics.json").read_text())
        manifest = json.loads((run / "manifest.json").read_text())
        flags = (manifest.get("scenario") or {}).get("call", {}).get("chrome_flags") or []
        fz = m["frames"]["b"]["freezes"]
        g = fz["getstats"]
        t0 = m["run"]["call_start"] * 1000
        old = old_rule(run, m, t0 + g["start_s"] * 1000, t0 + g["end_s"] * 1000)
        diff = g["as_chrome_freezes_ms"] - g["freezes_ms"]
        pct = f" ({100 * diff / g['freezes_ms']:+.2f} %)" if g["freezes_ms"] else ""
        print(f"| {name} | {'off' if '--disable-rtc-smoothness-algorithm' in flags else 'on'} | "
              f"{manifest['validity']['valid']} | {g['start_s']:.1f}-{g['end_s']:.1f} | "
              f"{g['presented']} / {g['frames_decoded']:.0f} | {fz['as_chrome']['put_back_frames']} | "
              f"{g['record_freeze_count']}, {g['record_freezes_ms']:.0f} ms | "
              f"{g['as_chrome_freeze_count']}, {g['as_chrome_freezes_ms']:.0f} ms | "
              f"{g['freeze_count']:.0f}, {g['freezes_ms']:.0f} ms | "
              f"{g['as_chrome_freeze_count'] - g['freeze_count']:+.0f}, {diff:+.0f} ms{pct} | "
              f"{old[0]}, {old[1]:.0f} ms |")


if __name__ == "__main__":
    main(sys.argv[1:])
