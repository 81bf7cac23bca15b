"""The decision rules of `rtclab findings`, one function per kind (`decide_range`, `decide_difference`,
`decide_trend`, and `decide` for a claim), so that other tools (a sample-size planner: study/plan.py) judge an
interval exactly as the page does; each rule in words (RULES, printed on the page), the measures' natural bounds and
the trend's fit (docs/studies.md, "Findings")."""

from __future__ import annotations

import math
from typing import Any

from .study.tdist import t_quantile

AGREES, DEVIATES, INCONCLUSIVE, NOT_RUN = "agrees", "deviates", "inconclusive", "not run"


Bounds = tuple[float | None, float | None]
UNIT_INTERVAL: Bounds = (0.0, 1.0)
NON_NEGATIVE: Bounds = (0.0, None)
UNBOUNDED: Bounds = (None, None)
# What a metric cannot be outside of, whatever was measured: a ratio of a part to its whole lies in [0, 1] (Jain's
# index too), a delay, a rate or a ratio of rates is at least 0. A confidence interval reaching past a bound is clipped
# to it (decide_range), so a point is not inconclusive only because a t-interval left the possible values.
NATURAL_BOUNDS: dict[str, Bounds] = {
    **{m: UNIT_INTERVAL for m in ("jain_index", "media_jain_index", "loss_ratio_bytes", "loss_ratio_packets",
                                  "utilisation", "bottleneck_utilisation", "converged_fraction", "overusing_fraction",
                                  "freeze_time_ratio", "never_shown_ratio", "replay_update_agreement")},
    **{m: NON_NEGATIVE for m in ("queuing_delay_ms_mean", "queuing_delay_ms_p50", "queuing_delay_ms_p95",
                                 "owd_ms_mean", "jitter_ms", "throughput_bps", "send_rate_bps", "received_bps",
                                 "call_throughput_bps", "call_share_of_fair_share", "tcp_share_of_fair_share",
                                 "rate_to_target_ratio", "convergence_time_s", "reaction_time_down_s",
                                 "reaction_time_up_s", "ramp_up_s", "regain_fair_share_s", "n_dd", "overuse_events",
                                 "glass_to_glass_ms_p50", "glass_to_glass_ms_p95", "every_frame_delay_ms_p50",
                                 "every_frame_delay_ms_p95", "every_frame_delay_ms_p99")},
}


def natural_bounds(measure: dict[str, Any]) -> Bounds:
    """The values the measure can take at all (NATURAL_BOUNDS): shares in [0, 1], the reachable-target ratio >= 0."""
    if "share" in measure:
        return UNIT_INTERVAL
    if "rfc8867" in measure:
        return NON_NEGATIVE
    return NATURAL_BOUNDS.get(str(measure.get("metric")), UNBOUNDED)



def claim_band(c: dict[str, Any]) -> tuple[float | None, float | None]:
    lo, hi = c["range"]
    return (None if lo is None else float(lo), None if hi is None else float(hi))


RULES = {
    "range": "each point's 95 % confidence interval of the mean (Student t over its runs), clipped to the measure's "
             "natural bounds, against the band [lo, hi]: agrees when the interval lies inside it, deviates when it "
             "lies wholly outside, inconclusive when it straddles an edge",
    "trend": "a least-squares line through every run's value against the sweep's parameter x (every point, each run "
             "one observation: the points' means weighted by their n, the residual pooled over the runs' scatter "
             "and the means' distance from the line) and the Student t 95 % confidence interval of its slope (N - 2 "
             "degrees of freedom): agrees when the interval lies wholly on the claimed side of 0, deviates when it "
             "lies wholly on the other side, inconclusive when it contains 0; it needs two x values and N >= 3 runs",
    "difference": "B - A, the same point in two studies or two points of one study, and its Welch 95 % confidence "
                  "interval against the band [lo, hi] the claim allows (an open end: only a lower or an upper "
                  "bound): agrees inside, deviates wholly outside, inconclusive when it straddles an edge",
    "bounds": "natural bounds: a measure that cannot leave [0, 1] (a loss ratio, a utilisation, a share, Jain's "
              "index) or cannot be negative (a delay, a rate, a ratio of rates) has its range interval clipped to "
              "them before it is judged, so that a t-interval crossing a bound no measurement can cross does not "
              "make a point inconclusive by itself; the page marks a clipped interval",
    "common": "always inconclusive when a point has no value, when its measure matches nothing in the runs read (no "
              "such flow, phase or selected flow), or when it uses INVALID runs (aggregate --accept-invalid): "
              "INVALID runs are counted and shown, never taken as evidence; range and difference claims also when "
              "a point has fewer than min_n runs (no interval)",
}


def clip(lo: float, hi: float, bounds: Bounds) -> tuple[float, float, bool]:
    """The interval clipped to the natural bounds, and whether that changed it."""
    a, b = bounds
    lo2, hi2 = lo, hi
    if a is not None:
        lo2, hi2 = max(lo2, a), max(hi2, a)
    if b is not None:  # an interval wholly past a bound (a damaged value) collapses onto it
        lo2, hi2 = min(lo2, b), min(hi2, b)
    return lo2, hi2, (lo2, hi2) != (lo, hi)


def _against_band(lo: float, hi: float, band: tuple[float | None, float | None]) -> str:
    a, b = band
    above_a = a is None or a <= lo
    below_b = b is None or hi <= b
    if above_a and below_b:
        return AGREES
    if (b is not None and lo > b) or (a is not None and hi < a):
        return DEVIATES
    return INCONCLUSIVE


def decide_range(lo: float | None, hi: float | None, band: tuple[float | None, float | None],
                 bounds: Bounds = UNBOUNDED) -> str:
    """A point's interval, clipped to the measure's natural bounds, against the band [a, b] (None: an open end):
    inside agrees, disjoint deviates, else inconclusive; no interval is inconclusive."""
    if lo is None or hi is None:
        return INCONCLUSIVE
    lo, hi, _ = clip(lo, hi, bounds)
    return _against_band(lo, hi, band)


def decide_difference(lo: float | None, hi: float | None, band: tuple[float | None, float | None]) -> str:
    """The interval of B - A against the band the claim allows (None: an open end): as decide_range, unclipped (a
    difference of two bounded values is bounded only by their whole span, which no band here reaches)."""
    if lo is None or hi is None:
        return INCONCLUSIVE
    return _against_band(lo, hi, band)


def decide_trend(lo: float | None, hi: float | None, direction: str) -> str:
    """The slope's interval against the claimed direction: wholly on its side of 0 agrees, wholly on the other
    deviates, containing 0 (or none) is inconclusive."""
    if lo is None or hi is None:
        return INCONCLUSIVE
    sign = 1.0 if direction == "increasing" else -1.0
    lo, hi = sorted((sign * lo, sign * hi))
    return AGREES if lo > 0 else DEVIATES if hi < 0 else INCONCLUSIVE


def decide(claim: dict[str, Any], lo: float | None, hi: float | None) -> str:
    """A claim's rule on one interval (a point's CI, a difference's, or a trend's slope)."""
    if claim["kind"] == "range":
        return decide_range(lo, hi, claim_band(claim), natural_bounds(claim["measure"]))
    if claim["kind"] == "difference":
        return decide_difference(lo, hi, claim_band(claim))
    return decide_trend(lo, hi, claim["direction"])


def interval_verdict(lo: float | None, hi: float | None, ref: list[float | None]) -> str:
    """An interval [lo, hi] against [a, b], neither clipped: inside agrees, disjoint deviates, else inconclusive."""
    return decide_difference(lo, hi, (ref[0], ref[1]))


def trend_fit(xs: list[float], stats: list[dict[str, Any]]) -> dict[str, Any]:
    """The least-squares slope of every run's value on x, from each point's x, mean, sd and n (a point of n runs
    with the same x): slope = sum n (x - xbar)(mean - ybar) / sum n (x - xbar)^2; residual sum of squares = sum
    (n - 1) sd^2 + sum n (mean - line)^2 over N - 2 degrees of freedom; the slope's 95 % CI with Student's t. The
    interval is None with fewer than two x values or N < 3; residual_sd = sqrt(residual sum of squares / (N - 2)),
    the s of the interval (a sample-size planner reads it)."""
    pts = [(x, st) for x, st in zip(xs, stats) if st.get("n")]
    n_runs = sum(int(st["n"]) for _, st in pts)
    out: dict[str, Any] = {"slope": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None,
                           "residual_sd": None, "df": n_runs - 2, "n_runs": n_runs, "n_points": len(pts)}
    if len({x for x, _ in pts}) < 2:
        return out
    xbar = sum(st["n"] * x for x, st in pts) / n_runs
    ybar = sum(st["n"] * st["mean"] for _, st in pts) / n_runs
    sxx = sum(st["n"] * (x - xbar) ** 2 for x, st in pts)
    slope = sum(st["n"] * (x - xbar) * (st["mean"] - ybar) for x, st in pts) / sxx
    out["slope"] = slope
    if n_runs < 3:
        return out
    sse = sum((st["n"] - 1) * (st["sd"] or 0.0) ** 2 for _, st in pts) + \
        sum(st["n"] * (st["mean"] - ybar - slope * (x - xbar)) ** 2 for x, st in pts)
    residual_sd = math.sqrt(sse / (n_runs - 2))
    hw = t_quantile(0.975, n_runs - 2) * residual_sd / math.sqrt(sxx)
    out.update(ci95_low=slope - hw, ci95_high=slope + hw, ci95_half_width=hw, residual_sd=residual_sd)
    return out
