"""The forward bottleneck's queue over time, from the emulator's own counters: `bottleneck-forward.stats.jsonl`
(userspace backend) or `qdisc-stats.jsonl` (kernel backend, `tc -s -j qdisc` of the router). Series are
[t seconds since call start, value]."""

from __future__ import annotations

from typing import Any

import numpy as np

from .rundir import RunDir, read_jsonl

FORWARD_DEV = "r-eth1"  # the router's interface towards b: where the forward bottleneck sits


def _summary(values: list[float]) -> dict[str, float | None]:
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()) if v.size else None, "max": float(v.max()) if v.size else None}


def analyse(run: RunDir, t0: float) -> dict[str, Any] | None:
    path = run.file("bottleneck-forward.stats.jsonl")
    rows: list[tuple[float, float, float, float | None]] = []  # t, bytes, packets, rate kbit
    source = None
    if path.exists():
        source = path.name
        for r in read_jsonl(path, run.problems):
            if isinstance(r.get("t"), (int, float)) and isinstance(r.get("queue_bytes"), (int, float)):
                rows.append((r["t"] - t0, float(r["queue_bytes"]), float(r.get("queue_packets") or 0),
                             r.get("rate_kbit") if isinstance(r.get("rate_kbit"), (int, float)) else None))
    elif run.file("qdisc-stats.jsonl").exists():
        source = "qdisc-stats.jsonl"
        for r in read_jsonl(run.file("qdisc-stats.jsonl"), run.problems):
            qdiscs = [q for q in (r.get("qdiscs") or []) if isinstance(q, dict) and q.get("dev") == FORWARD_DEV]
            if not isinstance(r.get("t"), (int, float)) or not qdiscs:
                continue
            # The root qdisc's backlog counts its children's; fall back to the largest one when no root is marked.
            root = next((q for q in qdiscs if q.get("root")), None) or max(qdiscs, key=lambda q: q.get("backlog") or 0)
            rows.append((r["t"] - t0, float(root.get("backlog") or 0), float(root.get("qlen") or 0), None))
    if not rows:
        return None
    cap = ((run.scenario.get("network") or {}).get("forward") or {}).get("rate") or {}
    fixed_kbit = cap.get("kbit") if isinstance(cap, dict) else None
    delay = [(t, b * 8 / (k or fixed_kbit)) for t, b, _, k in rows if (k or fixed_kbit)]  # bytes / rate = ms
    return {
        "source": source,
        "queue_bytes": _summary([b for _, b, _, _ in rows]),
        "queue_packets": _summary([p for _, _, p, _ in rows]),
        "queue_delay_ms": _summary([d for _, d in delay]),
        "series": {"queue_bytes": [[round(t, 3), b] for t, b, _, _ in rows],
                   "queue_delay_ms": [[round(t, 3), round(d, 3)] for t, d in delay]},
    }
