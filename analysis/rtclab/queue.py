"""The forward bottleneck's queue over time, from the emulator's own counters (read by rundir.queue_samples), in
bytes, packets and ms at the link rate. Series are [t seconds since call start, value]."""

from __future__ import annotations

from typing import Any

import numpy as np

from .rundir import RunDir, queue_samples


def _summary(values: list[float]) -> dict[str, float | None]:
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()) if v.size else None, "max": float(v.max()) if v.size else None}


def analyse(run: RunDir, t0: float) -> dict[str, Any] | None:
    source, samples = queue_samples(run)
    if not samples:
        return None
    fixed = run.scenario.forward.schedule if run.scenario else None
    fixed_kbit = fixed[0][1] if fixed and len(fixed) == 1 else None
    rows = [(s.t - t0, s.queue_bytes, s.queue_packets, s.rate_kbit) for s in samples]
    delay = [(t, b * 8 / rate) for t, b, _, k in rows if (rate := k or fixed_kbit)]  # bytes / kbit/s = ms
    return {
        "source": source,
        "queue_bytes": _summary([b for _, b, _, _ in rows]),
        "queue_packets": _summary([p for _, _, p, _ in rows if p is not None]),  # of the samples that say
        "queue_delay_ms": _summary([d for _, d in delay]),
        "series": {"queue_bytes": [[round(t, 3), b] for t, b, _, _ in rows],
                   "queue_delay_ms": [[round(t, 3), round(d, 3)] for t, d in delay]},
    }
