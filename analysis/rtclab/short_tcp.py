"""RFC 8867 5.7's short TCP flows (cross_traffic kind tcp_short): each download's completion time as the downloading
client recorded it (short-tcp-<n>.jsonl, netem/short_tcp.py), summarised per item for metrics.json `short_tcp`
(docs/metrics.md, "Short TCP flows")."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .rundir import RunDir
from .scenario import Scenario


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Downloads started, completed, not completed (by reason), and the completed ones' completion times (s)."""
    done = [float(r["completion_s"]) for r in records if r.get("completed") and r.get("completion_s") is not None]
    reasons: dict[str, int] = {}
    for r in records:
        if not r.get("completed"):
            why = str(r.get("reason") or "no reason recorded")
            reasons[why] = reasons.get(why, 0) + 1
    return {
        "downloads": len(records),
        "completed": len(done),
        "not_completed": reasons,
        "bytes_completed": int(sum(int(r["size_bytes"]) for r in records if r.get("completed"))),
        "completion_s": {"count": len(done), "p50": _percentile(done, 50), "p95": _percentile(done, 95),
                         "mean": float(np.mean(done)) if done else None, "max": max(done) if done else None},
    }


def analyse(run: RunDir, scenario: Scenario | None) -> list[dict[str, Any]] | None:
    """Per tcp_short item of the scenario its summary, or its `error` (file missing or unreadable) with the summary
    null; None when the scenario has no tcp_short item."""
    items = [n for n, c in enumerate(scenario.cross_traffic if scenario else []) if c.kind == "tcp_short"]
    if not items:
        return None
    out: list[dict[str, Any]] = []
    for n in items:
        path = run.file(f"short-tcp-{n}.jsonl")
        entry: dict[str, Any] = {"item": n, "file": path.name, "error": None, "summary": None}
        try:
            records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            entry["error"] = f"{path.name} unreadable ({type(e).__name__}): the item's completion times are missing"
            run.problems.append(entry["error"])
            out.append(entry)
            continue
        entry["summary"] = summarise(records)
        out.append(entry)
    return out
