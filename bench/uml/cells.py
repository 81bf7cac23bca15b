"""Runs bench/uml/cell.mjs: one network, one backend, a list of traffic patterns; the run directory gets cell.json."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_cell(run_dir: Path, backend: str, scenario: dict[str, Any], patterns: list[dict[str, Any]],
             gap_s: float) -> int:
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = {"backend": backend, "runDir": str(run_dir), "scenario": scenario, "gap_s": gap_s, "patterns": patterns}
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    t0 = time.monotonic()
    code = subprocess.call(["node", str(REPO / "bench" / "uml" / "cell.mjs"), str(spec_path)], cwd=REPO)
    print(f"{run_dir.name}: {time.monotonic() - t0:.0f} s, exit {code} -> {run_dir}", flush=True)
    return code
