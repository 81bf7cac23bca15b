"""Linux's PIE update timer, measured (bench/uml/pie-timer.mjs): from pie_sampler.py's lines, when sch_pie changed
its drop probability (one update per change while the queue stays above the target), the intervals between those
changes against Linux's period for the guest's HZ (ceil(tupdate x HZ) + 1 ticks) and against `tupdate` itself, and
whether each change is the step RFC 8033 / sch_pie.c computes from the delay read just before it.

usage: pie_timer.py RUN_DIR [--hz 100]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

TARGET_S = 0.020
ALPHA, BETA = 2 / 16, 20 / 16  # Linux's defaults, what pie-timer.mjs runs


def read_samples(path: Path) -> dict[str, np.ndarray]:
    """pie_sampler.py's lines: guest clock (s), probability in [0, 1), delay (s)."""
    d = np.loadtxt(path, ndmin=2)
    return {"t": d[:, 1], "prob": d[:, 3] / 2.0**64, "delay": d[:, 4] / 1e6}


def linux_period_s(tupdate_s: float, hz: int) -> float:
    return (math.ceil(round(tupdate_s * hz, 9)) + 1) / hz


def step(prob: float, qdelay: float, qdelay_old: float) -> float:
    """pie_calculate_probability()'s change from one update to the next (timestamps mode, no 250 ms boost)."""
    alpha, beta = ALPHA, BETA
    if prob < 0.1:
        alpha, beta, power = alpha / 2, beta / 2, 100
        while prob < 1 / power and power <= 1_000_000:
            alpha, beta, power = alpha / 4, beta / 4, power * 10
    delta = alpha * (qdelay - TARGET_S) + beta * (qdelay - qdelay_old)
    return min(delta, 0.02) if prob >= 0.1 else delta


def measure(samples: dict[str, np.ndarray], tupdate_s: float, hz: int) -> dict[str, Any]:
    t, prob, delay = samples["t"], samples["prob"], samples["delay"]
    changes = np.nonzero(np.diff(prob) != 0)[0] + 1
    gaps = np.diff(t[changes])
    # Consecutive updates only: a gap of several periods is the queue below the target, where nothing changes.
    within = gaps[gaps < 2.5 * linux_period_s(tupdate_s, hz)]
    steps = [(prob[i] - prob[i - 1], step(prob[i - 1], delay[i - 1], delay[j - 1]))
             for j, i in zip(changes[:-1], changes[1:]) if t[i] - t[j] < 2.5 * linux_period_s(tupdate_s, hz)]
    got, want = (np.array([s[k] for s in steps]) for k in (0, 1))
    return {
        "samples": int(len(t)), "sample_interval_ms": float(np.median(np.diff(t)) * 1e3),
        "updates": int(len(within)), "interval_ms": {
            "median": float(np.median(within) * 1e3), "mean": float(within.mean() * 1e3),
            "p10": float(np.percentile(within, 10) * 1e3), "p90": float(np.percentile(within, 90) * 1e3)},
        "tupdate_ms": tupdate_s * 1e3, "hz": hz, "linux_period_ms": linux_period_s(tupdate_s, hz) * 1e3,
        "step_correlation": float(np.corrcoef(got, want)[0, 1]),
        "step_median_abs_error": float(np.median(np.abs(got - want))), "step_median_abs": float(np.median(np.abs(got))),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--hz", type=int, default=None, help="the guest's CONFIG_HZ (default: pie-timer.json's backend)")
    args = p.parse_args(argv)
    info = json.loads((args.run_dir / "pie-timer.json").read_text())
    hz = args.hz or info["backend"].get("kernel_hz") or 100
    m = measure(read_samples(args.run_dir / "pie-samples.txt"), info["tupdate_ms"] / 1e3, hz)
    iv = m["interval_ms"]
    print(f"{m['updates']} updates, sampled every {m['sample_interval_ms']:.1f} ms: "
          f"interval median {iv['median']:.1f} ms (mean {iv['mean']:.1f}, p10 {iv['p10']:.1f}, p90 {iv['p90']:.1f}); "
          f"tupdate {m['tupdate_ms']:.0f} ms, Linux's period at HZ {hz}: {m['linux_period_ms']:.0f} ms")
    print(f"each step against sch_pie's formula from the delay read before it: "
          f"correlation {m['step_correlation']:.3f}, median |error| {m['step_median_abs_error']:.5f} "
          f"of median |step| {m['step_median_abs']:.5f}")
    print(json.dumps(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
