"""The uml guest's late seconds against the hypervisor's steal: for each second the lateness probe summarised
(uml-timer.jsonl; its line at t covers the second before t), the host's steal time in that second (cpu.jsonl: the
sample whose interval overlaps it most; steal in cores, /proc/stat). A late second is one with an answer more than
10 ms late or ping silent for more than 50 ms (the thresholds of uml_timer_on_time and uml_probe_covered at the 5 ms
probe); if the guest's late timers come from the virtual machine's own stalls, its late seconds carry the steal.

    .venv/bin/python bench/uml/steal_lateness.py RUN_DIR [RUN_DIR...]

Prints one line per run and one for all of them: the late and the other seconds, the mean steal in each and the
share of each with at least STOLEN cores stolen; then the late seconds, worst first, in s since the call's start (the
manifest's timings.call_start)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

LATE_MS = 10.0
SILENT_MS = 50.0
STOLEN = 0.1  # cores: a tenth of a CPU taken in the second


def seconds(run: Path) -> list[tuple[float, float, float, bool]]:
    """(end of the second, probe max ms, steal cores, late) for each second of uml-timer.jsonl with a cpu sample."""
    samples = [s for s in map(json.loads, (run / "cpu.jsonl").read_text().splitlines())
               if s.get("kind") == "sample"]
    out = []
    for line in (run / "uml-timer.jsonl").read_text().splitlines():
        s = json.loads(line)
        start, end = s["t"] - 1.0, s["t"]
        overlap = [(min(end, c["t"]) - max(start, c["t"] - c["dt"]), c) for c in samples]
        share, cpu = max(overlap, key=lambda x: x[0], default=(0.0, None))
        if cpu is None or share <= 0:
            continue
        late = s["max_ms"] > LATE_MS or (s.get("gap_ms") or 0.0) > SILENT_MS
        out.append((end, s["max_ms"], cpu["host"].get("steal", 0.0), late))
    return out


def summary(label: str, rows: list[tuple[float, float, float, bool]]) -> str:
    def part(name: str, sel: list[tuple[float, float, float, bool]]) -> str:
        if not sel:
            return f"{name} 0"
        steal = [r[2] for r in sel]
        stolen = sum(1 for v in steal if v >= STOLEN)
        return (f"{name} {len(sel)}: steal mean {sum(steal) / len(steal):.3f} cores, {stolen} "
                f"({100 * stolen / len(sel):.0f} %) with >= {STOLEN:g}")
    late, others = [r for r in rows if r[3]], [r for r in rows if not r[3]]
    return f"{label}: {part('late seconds', late)}; {part('others', others)}"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: bench/uml/steal_lateness.py RUN_DIR [RUN_DIR...]", file=sys.stderr)
        return 2
    every: list[tuple[float, float, float, bool]] = []
    late: list[tuple[float, float, str]] = []  # (probe max ms, steal, where) of every late second
    for name in argv:
        if not all((Path(name) / f).is_file() for f in ("uml-timer.jsonl", "cpu.jsonl")):
            print(f"{name}: no uml-timer.jsonl or no cpu.jsonl (not a run of the uml backend?)")
            continue
        rows = seconds(Path(name))
        print(summary(name, rows))
        every += rows
        t0 = json.loads((Path(name) / "manifest.json").read_text()).get("timings", {}).get("call_start") or 0.0
        late += [(max_ms, steal, f"{name} second ending {end - t0:.1f} s into the call")
                 for end, max_ms, steal, is_late in rows if is_late]
    if len(argv) > 1:
        print(summary("all runs", every))
    for max_ms, steal, where in sorted(late, key=lambda x: -x[0]):
        print(f"  {where}: probe max {max_ms:.1f} ms, steal {steal:.2f} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
