"""The one percentile rule of rtclab, used by the analyzer and the benchmarks' scripts alike: linear interpolation
between closest ranks (numpy's default, Hyndman and Fan's type 7): for sorted values v[0..n-1], the q-th percentile
is v[i] + (v[i+1] - v[i]) * f with q/100 * (n - 1) = i + f."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

PERCENTILES = (5, 25, 50, 75, 90, 95, 99)


def percentile(values: Iterable[float] | np.ndarray, q: float) -> float | None:
    """The q-th percentile (0..100) of `values` by the rule above; None when there are none."""
    v = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    return float(np.percentile(v, q)) if v.size else None


def percentiles(values: Iterable[float] | np.ndarray, qs: Sequence[float] | np.ndarray) -> list[float] | None:
    """The percentiles `qs` (0..100) of `values` by the rule above; None when there are none."""
    v = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    return [float(x) for x in np.percentile(v, list(qs))] if v.size else None


def distribution(values: np.ndarray, qs: Sequence[float] = PERCENTILES) -> dict[str, float | int | None]:
    """count, min, mean, sd (population), the percentiles `qs` (as p5, p25, ...), max."""
    n = int(values.size)
    if n == 0:
        return {"count": 0, "min": None, "mean": None, "sd": None, **{f"p{q:g}": None for q in qs}, "max": None}
    out: dict[str, float | int | None] = {"count": n, "min": float(values.min()), "mean": float(values.mean()),
                                          "sd": float(values.std())}
    out.update({f"p{q:g}": float(x) for q, x in zip(qs, np.percentile(values, list(qs)))})
    out["max"] = float(values.max())
    return out
