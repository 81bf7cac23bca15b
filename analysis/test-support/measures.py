"""How a real-call test reports a value one of its assertions bounds, so that bench/reliability/spreads.mjs can gather
its spread over many runs: a line `measure: NAME=VALUE` printed and, when RTCLAB_MEASURES_FILE is set, appended to that
file too (pytest keeps a passing test's output to itself, so inside scripts/test.sh the file is the only way out).
NAME is `<area>.<backend-or-case>.<what>` with its unit last (`outage.covered_s`); a value that could not be measured
is written `null`, never a number. netem/test-support/measure.js is the same for the Node tests."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any


def measure_line(name: str, value: float | None, digits: int = 3) -> str:
    if not re.fullmatch(r"[\w.:-]+", name):
        raise ValueError(f"measure name {name!r}: only letters, digits, _ . : -")
    text = f"{value:.{digits}f}" if isinstance(value, (int, float)) and math.isfinite(value) else "null"
    return f"measure: {name}={text}"


def measure(name: str, value: float | None, digits: int = 3) -> None:
    """Prints the value's line and appends it, whole in one write, to RTCLAB_MEASURES_FILE when that is set."""
    line = measure_line(name, value, digits)
    print(line)
    path = os.environ.get("RTCLAB_MEASURES_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def measure_run_timing(prefix: str, run: Path) -> None:
    """The values behind a run's timing validity checks (harness/validity.js; their bounds in
    harness/validity-bounds.json), as the run recorded them: the host's CPU over the call, the connect time (a run
    with a call), each userspace bottleneck's release lateness (its stats file's last line, written at its exit: the
    whole run) and the captures' kernel drops. harness/test/call.e2e.test.js reports the same for its call."""
    manifest = json.loads((run / "manifest.json").read_text())
    measure(f"{prefix}.host_cpu_busy_fraction", manifest.get("host_cpu_busy_fraction"), 4)
    if manifest.get("calls"):
        events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines() if x]
        connected: dict[str, Any] = next((e for e in events if e.get("event") == "call_connected"), {})
        measure(f"{prefix}.connect_s", connected.get("seconds_after_pages_loaded"), 3)
    for direction in ("forward", "reverse"):
        stats = run / f"bottleneck-{direction}.stats.jsonl"
        lines = stats.read_text().splitlines() if stats.exists() else []
        c: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        measure(f"{prefix}.{direction}_max_lateness_ms", c.get("max_lateness_ms"), 3)
        forwarded = c.get("forwarded")
        measure(f"{prefix}.{direction}_late_10ms_pct",
                100 * c["released_late_10ms"] / forwarded if forwarded and "released_late_10ms" in c else None, 4)
        measure(f"{prefix}.{direction}_late_100ms", c.get("released_late_100ms"), 0)
    captures = manifest.get("captures") or {}
    drops = [c.get("dropped_by_kernel") for c in captures.values()] if isinstance(captures, dict) else []
    measure(f"{prefix}.capture_drops", sum(drops) if drops and None not in drops else None, 0)
