"""`rtclab study plan` (rtclab.study.plan, chi2dist) and `rtclab study run --repetitions-from`: the sample size per
point from a pilot's variance against independent computations (printed t and chi-square table values, the closed
forms of the chi-square CDF for 1 and 2 degrees of freedom, the normal approximation n = ((z(0.975) + z(power)) s /
d)^2, and simulations with numpy of the interval the plan promises, judged by findings' own rule: a range clipped
at natural bounds, a difference of two points of one study, a trend's slope over every run), on small pilot studies
made with the study writers and runs whose metrics.json hold chosen values; damaged and empty pilots, a claim with no
point in the pilot, the cap, the cost, and the per-point repetitions through plan.json, the attempt scan and the
aggregation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtclab import verdicts
from rtclab.study import aggregate as agg
from rtclab.study import chi2dist, provenance, studydir
from rtclab.study import plan as repplan
from rtclab.study.compare import welch
from rtclab.study.tdist import t_quantile
from rtclab_study import __main__ as cli
from rtclab_study import plan as planmod
from rtclab_study import runner, spec

REPO = Path(__file__).resolve().parents[2]

# Printed tables (any statistics textbook): Student's t quantiles by degrees of freedom ...
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 18: 2.101}
T80 = {1: 1.376, 2: 1.061, 3: 0.978, 4: 0.941, 5: 0.920, 6: 0.906, 7: 0.896, 8: 0.889, 9: 0.883, 10: 0.879,
       11: 0.876, 12: 0.873, 13: 0.870, 14: 0.868, 18: 0.862}
# ... and the chi-square's lower 20 % points (the table's "area to the right 0.80" column).
CHI2_020 = {1: 0.0642, 2: 0.446, 3: 1.005, 4: 1.649, 5: 2.343, 9: 5.380, 10: 6.179}
Z975, Z80 = 1.959964, 0.841621  # the normal quantiles of the textbook formula n = ((z(1-a/2) + z(power)) s / d)^2


def by_table(d: float, s_upper: float) -> int:
    """The fewest n (2..11) with (t(0.975, n-1) + t(0.80, n-1)) s / sqrt(n) <= d, from the printed t table."""
    return next(n for n in range(2, 12) if (T975[n - 1] + T80[n - 1]) * s_upper / math.sqrt(n) <= d)


# ---- the distributions ---------------------------------------------------------------------------------------------

def test_chi2_quantile_against_closed_forms_and_the_table() -> None:
    for p in (0.05, 0.2, 0.5, 0.8, 0.975):
        assert chi2dist.chi2_quantile(p, 2) == pytest.approx(-2 * math.log(1 - p), rel=1e-9)  # 1 - exp(-x/2)
    for x in (0.01, 0.0642, 0.5, 1.0, 3.84, 10.0):
        assert chi2dist.chi2_cdf(x, 1) == pytest.approx(math.erf(math.sqrt(x / 2)), rel=1e-10)
    for df, q in CHI2_020.items():
        assert chi2dist.chi2_quantile(0.2, df) == pytest.approx(q, abs=6e-4), df
    assert chi2dist.chi2_quantile(0.95, 1) == pytest.approx(3.841, abs=1e-3)
    with pytest.raises(ValueError):
        chi2dist.chi2_quantile(1.0, 3)
    with pytest.raises(ValueError):
        chi2dist.chi2_quantile(0.5, 0)


def test_sd_upper_limit_is_exceeded_by_sigma_one_time_in_five() -> None:
    """Browne's correction: the 80 % upper limit from n = 5 values lies above the true SD in 80 % of pilots (here:
    simulated normal pilots), and equals s * sqrt(4 / chi2(0.2, 4)) of the table."""
    assert repplan.sd_upper_limit(2.0, 5, 0.8) == pytest.approx(2.0 * math.sqrt(4 / CHI2_020[4]), rel=5e-4)
    assert repplan.sd_upper_limit(2.0, 5, 0.0) == 2.0
    rng = np.random.default_rng(1995)
    samples = rng.normal(10.0, 3.0, size=(40_000, 5))
    s = samples.std(axis=1, ddof=1)
    factor = repplan.sd_upper_limit(1.0, 5, 0.8)
    assert np.mean(s * factor >= 3.0) == pytest.approx(0.80, abs=0.01)


# ---- the sample size -----------------------------------------------------------------------------------------------

UNBOUNDED = {"flow": "forward:video", "metric": "a_metric_without_bounds"}  # verdicts.natural_bounds: none
ONE_EDGE = {"id": "r", "kind": "range", "range": [0.0, 1e6], "measure": UNBOUNDED}  # mean 5: the upper edge is out of
BAND = {"id": "b", "kind": "range", "range": [0.0, 10.0], "measure": UNBOUNDED}  # reach; a band: both edges 5 away
T90 = {10: 1.372, 11: 1.363, 12: 1.356}  # t(0.90, df) of the printed table


def test_runs_needed_against_the_t_table_and_the_normal_approximation() -> None:
    # s / d = 1 (mean 5 above the edge 0, s 5), power 0.8: by the t table n = 10 (n = 9: (2.306 + 0.889)^2 = 10.2 >
    # 9; n = 10: (2.262 + 0.883)^2 = 9.9 <= 10); the normal approximation's 7.85 is its lower bound.
    n = repplan.runs_needed(ONE_EDGE, 5.0, [5.0], 0.8, cap=100, min_n=2)
    assert n == by_table(5.0, 5.0) == 10
    assert n >= ((Z975 + Z80) * 1.0) ** 2
    # Large n: the t quantiles approach the normal's, n within a few runs above the textbook formula.
    s_over_d = 3.5
    normal = ((Z975 + Z80) * s_over_d) ** 2
    n = repplan.runs_needed(ONE_EDGE, 5.0, [5.0 * s_over_d], 0.8, cap=200, min_n=2)
    assert n is not None and normal <= n <= normal + 3
    # Power 0.5: t(0.5) = 0, the interval's own half-width t(0.975, n-1) s / sqrt(n) <= d.
    n = repplan.runs_needed(ONE_EDGE, 5.0, [5.0], 0.5, cap=100, min_n=2)
    assert n == next(k for k in range(2, 12) if T975[k - 1] / math.sqrt(k) <= 1.0) == 7
    # Two edges equally near (a band around the mean): each may be straddled half as often, 0.1: by the table the
    # fewest n with (t(0.975, n-1) + t(0.90, n-1)) s / sqrt(n) <= d is 13 (n = 12: (2.201 + 1.363) / sqrt(12) > 1).
    assert (2.201 + 1.363) / math.sqrt(12) > 1 >= (2.179 + T90[12]) / math.sqrt(13)
    assert repplan.runs_needed(BAND, 5.0, [5.0], 0.8, cap=100, min_n=2) == 13


def simulated_power(claim_range: tuple[float, float], n: int, t975: float, seed: int) -> float:
    """The share of 60000 simulated studies of n runs (true mean 5, SD 5) whose 95 % interval, with the printed t,
    is decided against the band: inside it, or wholly outside."""
    x = np.random.default_rng(seed).normal(5.0, 5.0, size=(60_000, n))
    hw = t975 * x.std(axis=1, ddof=1) / math.sqrt(n)
    lo, hi = x.mean(axis=1) - hw, x.mean(axis=1) + hw
    a, b = claim_range
    return float(np.mean(((lo >= a) & (hi <= b)) | (hi < a) | (lo > b)))


def test_the_measure_has_no_natural_bounds() -> None:
    assert verdicts.natural_bounds(UNBOUNDED) == verdicts.UNBOUNDED


def test_the_planned_n_decides_with_its_power_in_simulated_studies() -> None:
    """The promise: with the planned n the study's 95 % interval is decided in about 80 % of studies when the true
    value is the pilot's; with one run fewer in fewer. One edge at 1 SD: n = 10; a band with both edges at 1 SD:
    n = 13, where the one-edge n = 10 would decide only about 60 % of the time."""
    assert simulated_power((0.0, 1e6), 10, T975[9], 1) >= 0.79
    assert simulated_power((0.0, 1e6), 9, T975[8], 2) < 0.80
    assert simulated_power((0.0, 10.0), 13, 2.179, 3) >= 0.79
    assert simulated_power((0.0, 10.0), 10, T975[9], 4) < 0.70


def test_a_mean_on_the_edge_cannot_be_decided_and_a_zero_sd_needs_min_n() -> None:
    assert repplan.runs_needed(BAND, 10.0, [1.0], 0.8, cap=1000, min_n=2) is None
    assert repplan.runs_needed(BAND, 3.0, [0.0], 0.8, cap=30, min_n=3) == 3


def test_difference_uses_welch() -> None:
    """Two SDs: SE = sqrt((sA^2 + sB^2) / n), df Welch's; equal SDs give df = 2 (n - 1), as the pooled t."""
    assert repplan.welch_df([2.0, 2.0], 5) == pytest.approx(8.0)
    assert repplan.welch_df([2.0, 0.0], 5) == pytest.approx(4.0)
    diff = {"id": "d", "kind": "difference", "pairs": [["a", "b"]], "range": [0.0, None], "measure": UNBOUNDED}
    # B - A = 6, SDs 2 and 2, one edge (0; an open end is none): by the table n = 4 (df 6), not 3 (df 4).
    assert (2.776 + 0.941) * math.sqrt(8 / 3) > 6 >= (2.447 + 0.906) * math.sqrt(8 / 4)
    assert repplan.runs_needed(diff, 6.0, [2.0, 2.0], 0.8, cap=30, min_n=2) == 4
    # Wholly below the band deviates, decided as well: the side does not matter.
    assert repplan.runs_needed(diff, -6.0, [2.0, 2.0], 0.8, cap=30, min_n=2) == 4


LOSS = {"flow": "forward:video", "metric": "loss_ratio_bytes"}  # natural bounds [0, 1]
SHARE = {"share": "c1/v1"}  # [0, 1]
DELAY = {"flow": "forward:video", "metric": "queuing_delay_ms_mean"}  # >= 0
JAIN = {"flow": "rfc8867", "metric": "media_jain_index"}  # [0, 1]


@pytest.mark.parametrize("kind, band, measure, live", [
    ("range", [0, 0.001], LOSS, [0.001]),  # a loss band from 0: 0 is the bound, never straddled once clipped
    ("range", [0.01, None], LOSS, [0.01]),  # an open band has one edge
    ("range", [0.45, 0.55], SHARE, [0.45, 0.55]),
    ("range", [0.9, 1.0], JAIN, [0.9]),  # Jain's index cannot pass 1
    ("range", [-0.5, 2.0], SHARE, []),  # both edges past the bounds: every clipped interval agrees
    ("range", [0, 50], DELAY, [50.0]),
    ("range", [-1, 1], UNBOUNDED, [-1.0, 1.0]),
    ("difference", [0, None], LOSS, [0.0]),  # a difference is not clipped
    ("difference", [-10, 10], DELAY, [-10.0, 10.0]),
])
def test_the_edges_planned_for_are_those_findings_rule_can_leave_open(kind: str, band: list[float | None],
                                                                     measure: dict[str, Any],
                                                                     live: list[float]) -> None:
    """edges() against verdicts.decide itself: a narrow interval around a band edge is inconclusive exactly for the
    edges the planner plans for."""
    claim = {"id": "e", "kind": kind, "range": band, "measure": measure}
    assert repplan.edges(claim) == live
    for e in (float(x) for x in band if x is not None):
        straddled = verdicts.decide(claim, e - 1e-6, e + 1e-6) == verdicts.INCONCLUSIVE
        assert straddled == (e in live), e


def test_a_band_no_interval_can_straddle_needs_min_n() -> None:
    claim = {"id": "s", "kind": "range", "range": [-0.5, 2.0], "measure": SHARE}
    assert repplan.runs_needed(claim, 0.5, [0.3], 0.8, cap=30, min_n=3) == 3


def simulated_range(claim: dict[str, Any], n: int, mean: float, sd: float, seed: int) -> float:
    """The share of 40000 simulated studies of n normal runs whose 95 % t interval verdicts.decide judges decided."""
    x = np.random.default_rng(seed).normal(mean, sd, size=(40_000, n))
    hw = t_quantile(0.975, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
    m = x.mean(axis=1)
    return float(np.mean([verdicts.decide(claim, lo, hi) != verdicts.INCONCLUSIVE for lo, hi in zip(m - hw, m + hw)]))


def test_a_range_clipped_at_a_natural_bound_is_planned_for_its_one_edge() -> None:
    """A loss band [0, 0.01], true mean 0.004, SD 0.006: the t interval often reaches below 0, but clipped there
    (verdicts.decide_range) only the edge 0.01 can leave it open, so n is the one-edge n (s / d = 1: 10 by the t
    table). Simulated studies judged by verdicts.decide decide in about 80 % of cases with it, and in fewer with one
    run less; planned as if 0 were an edge (the unclipped rule), n would be larger."""
    claim = {"id": "loss", "kind": "range", "range": [0, 0.01], "measure": LOSS}
    n = repplan.runs_needed(claim, 0.004, [0.006], 0.8, cap=100, min_n=2)
    assert n == by_table(0.006, 0.006) == 10
    unclipped = repplan.runs_needed({**claim, "measure": UNBOUNDED}, 0.004, [0.006], 0.8, cap=100, min_n=2)
    assert unclipped is not None and unclipped > n
    assert simulated_range(claim, n, 0.004, 0.006, seed=5) >= 0.79
    assert simulated_range(claim, n - 1, 0.004, 0.006, seed=6) < 0.80


def simulated_difference(claim: dict[str, Any], n: int, means: tuple[float, float], sds: tuple[float, float],
                         seed: int) -> float:
    """The share of 40000 simulated studies (n runs at each point of the pair) whose B - A Welch interval
    verdicts.decide judges decided. The intervals by numpy (t at Welch's df rounded to 0.01, where t moves by less
    than 1e-4), the first 200 also by compare.welch, as findings computes them, which must agree."""
    rng = np.random.default_rng(seed)
    a = rng.normal(means[0], sds[0], size=(40_000, n))
    b = rng.normal(means[1], sds[1], size=(40_000, n))
    va, vb = a.var(axis=1, ddof=1) / n, b.var(axis=1, ddof=1) / n
    df = np.round((va + vb) ** 2 / ((va ** 2 + vb ** 2) / (n - 1)), 2)
    t = {d: t_quantile(0.975, float(d)) for d in np.unique(df)}
    diff = b.mean(axis=1) - a.mean(axis=1)
    hw = np.array([t[d] for d in df]) * np.sqrt(va + vb)
    for k in range(200):
        w = welch({"mean": a[k].mean(), "sd": a[k].std(ddof=1), "n": n},
                  {"mean": b[k].mean(), "sd": b[k].std(ddof=1), "n": n})
        assert w["diff"] == pytest.approx(diff[k]) and w["ci95_half_width"] == pytest.approx(hw[k], rel=1e-4)
    return float(np.mean([verdicts.decide(claim, lo, hi) != verdicts.INCONCLUSIVE
                          for lo, hi in zip(diff - hw, diff + hw)]))


def test_a_difference_of_two_points_of_one_study_decides_with_its_power() -> None:
    """B - A of a pair of points (SDs 1 and 3: Welch), true difference 2, band [0, null]: n per point near the normal
    approximation ((1.96 + 0.84) / d)^2 (sA^2 + sB^2) = 19.6, a few runs above it for t; simulated studies judged by
    findings' rule decide in about 80 % of cases with it, in fewer with one run less at each point."""
    claim = {"id": "d", "kind": "difference", "pairs": [["a", "b"]], "range": [0, None], "measure": LOSS}
    n = repplan.runs_needed(claim, 2.0, [1.0, 3.0], 0.8, cap=100, min_n=2)
    normal = ((Z975 + Z80) / 2.0) ** 2 * (1.0 + 9.0)
    assert n is not None and normal <= n <= normal + 3
    assert simulated_difference(claim, n, (1.0, 3.0), (1.0, 3.0), seed=7) >= 0.79
    assert simulated_difference(claim, n - 1, (1.0, 3.0), (1.0, 3.0), seed=8) < 0.80


SWEEP_X = [math.log10(t) for t in (5, 25, 100, 250)]  # a log-scale sweep's x (the CoDel target sweep, quick)


def sxx(xs: list[float]) -> float:
    return float(np.sum((np.array(xs) - np.mean(xs)) ** 2))


def simulated_trend(claim: dict[str, Any], n: int, slope: float, sd: float, seed: int) -> float:
    """The share of 40000 simulated sweeps (n runs at each x of SWEEP_X, values on a line of the given slope plus
    normal noise) whose slope interval verdicts.decide judges decided; the interval a least-squares fit over every
    run, computed here with numpy (the first studies also through verdicts.trend_fit, which must agree)."""
    x = np.repeat(np.array(SWEEP_X), n)
    y = 3.0 + slope * x + np.random.default_rng(seed).normal(0.0, sd, size=(40_000, x.size))
    xc = x - x.mean()
    b = (y * xc).sum(axis=1) / (xc ** 2).sum()
    resid = y - y.mean(axis=1, keepdims=True) - b[:, None] * xc
    se = np.sqrt((resid ** 2).sum(axis=1) / (x.size - 2) / (xc ** 2).sum())
    hw = t_quantile(0.975, x.size - 2) * se
    for k in range(3):
        per_point = y[k].reshape(len(SWEEP_X), n)
        stats = [{"mean": v.mean(), "sd": v.std(ddof=1) if n > 1 else None, "n": n} for v in per_point]
        fit = verdicts.trend_fit(SWEEP_X, stats)
        assert fit["slope"] == pytest.approx(b[k]) and fit["ci95_half_width"] == pytest.approx(hw[k])
    return float(np.mean([verdicts.decide(claim, lo, hi) != verdicts.INCONCLUSIVE for lo, hi in zip(b - hw, b + hw)]))


def test_a_trend_is_planned_for_its_slope_over_every_point() -> None:
    """A log-scale sweep at 5, 25, 100, 250, true slope -1.6 per decade, residual SD 1: the slope's SE with n runs
    per point is s / sqrt(n Sxx) on 4n - 2 df, so by the t table n is the fewest with (t(.975, 4n-2) + t(.8, 4n-2)) s
    / sqrt(n Sxx) <= 1.6 (n = 3). Simulated sweeps judged as findings judges a trend (increasing claimed: a falling
    slope deviates, decided too) decide in about 80 % with it, fewer with one run less per point; a trend starts from
    N >= 3 runs, not from min_n."""
    claim = {"id": "t", "kind": "trend", "direction": "increasing", "x": {"param": "target", "scale": "log"},
             "measure": LOSS}
    design = repplan.Slope(tuple(SWEEP_X))
    assert design.sxx == pytest.approx(sxx(SWEEP_X))
    n = repplan.runs_needed(claim, -1.6, [1.0], 0.8, cap=30, min_n=5, slope=design)
    by_t = next(k for k in (1, 2, 3, 4)
                if (T975[4 * k - 2] + T80[4 * k - 2]) * 1.0 / math.sqrt(k * sxx(SWEEP_X)) <= 1.6)
    assert n == by_t == 3
    assert simulated_trend(claim, n, -1.6, 1.0, seed=9) >= 0.79
    assert simulated_trend(claim, n - 1, -1.6, 1.0, seed=10) < 0.80
    # A steep slope needs one run per point (4 runs, 2 df): the trend rule has no min_n.
    assert repplan.runs_needed(claim, 50.0, [2.0], 0.8, cap=30, min_n=5, slope=design) == 1
    # Two points need 2 runs each at least (N >= 3).
    assert repplan.runs_needed(claim, 1e6, [2.0], 0.8, cap=30, min_n=2, slope=repplan.Slope((0.0, 1.0))) == 2


def test_a_kind_the_planner_does_not_know_is_said() -> None:
    (e,) = repplan.estimates({"id": "m", "kind": "monotone", "measure": LOSS, "studies": ["x"], "points": ["*"]}, {},
                             repplan.TargetStudy("x", "x.yaml", ["p"], {"p": 10.0}, 3).as_study())
    assert e.why.startswith("the planner cannot plan for a claim of kind 'monotone'") and e.points == []


# ---- pilots --------------------------------------------------------------------------------------------------------

def metrics(queue_ms: float) -> dict[str, Any]:
    return {"run": {"id": "r", "duration_s": 10.0, "call_start": 0.0},
            "phases": [{"name": "all", "start_s": 0.0, "end_s": 10.0, "cross_traffic": False}],
            "flows": [{"id": 0, "direction": "forward", "kind": "video", "ssrc": 1, "dscp": 0, "packets_sent": 100,
                       "queuing_delay_ms": {"mean": queue_ms}, "loss_ratio_bytes": 0.0, "phases": {}}],
            "fairness": {"all": {"connections": [], "jain_index": 1.0}}}


def study_file(tmp: Path, name: str, points: list[str], repetitions: int = 3, duration_s: float = 10,
               delays: list[int] | None = None) -> Path:
    """Named points, or with `delays` a sweep of the one-way delay (axis `delay`: points delay-10, ...)."""
    f = tmp / f"{name}.yaml"
    body = ("axes:\n  - {path: network.forward.delay_ms, name: delay, values: [" + ", ".join(map(str, delays))
            + "]}\n" if delays else "points:\n" + "".join(f"  - {{name: {p}}}\n" for p in points))
    f.write_text(f"name: {name}\nbase: {{duration_s: {duration_s}}}\nrepetitions: {repetitions}\nmax_attempts: 2\n"
                 + body)
    return f


def make_pilot(tmp: Path, name: str, runs: dict[str, list[float]], wall_s: float | None = None,
               invalid: dict[str, int] | None = None, delays: list[int] | None = None) -> Path:
    """A pilot study directory: one valid attempt per value (its queuing delay), `invalid` INVALID first attempts at
    a point, each attempt's end record with `wall_s`; study.json by the aggregation. With `delays`, the points are
    that sweep's (runs keyed delay-10, ...)."""
    f = study_file(tmp, name, list(runs), repetitions=max(len(v) for v in runs.values()), delays=delays)
    out = tmp / name
    planmod.write(planmod.make(spec.load(f)), out)
    log = []
    for point, values in runs.items():
        for rep, v in enumerate(values, start=1):
            outcomes = (["invalid"] if rep <= (invalid or {}).get(point, 0) else []) + ["valid"]
            for attempt, outcome in enumerate(outcomes, start=1):
                d = studydir.attempt_dir(out, point, rep, attempt)
                d.mkdir(parents=True)
                (d / "manifest.json").write_text(json.dumps({
                    "status": "complete", "id": d.name, "git_commit": "0" * 40,
                    "validity": {"valid": outcome == "valid",
                                 "checks": [{"name": "host_cpu_not_saturated", "ok": outcome == "valid",
                                             "detail": "x"}]}}))
                (d / "metrics.json").write_text(json.dumps(metrics(v)))
                key = {"point": point, "rep": rep, "attempt": attempt}
                log += [{"event": "start", **key}, {"event": "end", **key, "exit_code": 0, "wall_s": wall_s}]
    (out / "attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log) if wall_s is not None else "")
    agg.aggregate(out, analyse_missing=False)
    return out


QUEUE = {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}


def claims_file(tmp: Path, claims: list[dict[str, Any]], min_n: int = 2) -> Path:
    base = {"source": "s", "says": "s", "study_file": "x.yaml", "measure": QUEUE, "band_why": "a test's band"}
    f = tmp / "claims.yaml"
    f.write_text(json.dumps({"rule": {"min_n": min_n}, "claims": [{**base, **c} for c in claims]}))
    return f


def target(f: Path) -> repplan.TargetStudy:
    """The planned study as `rtclab study plan` reads it (its points with their params, labels and settings)."""
    return cli.planned_target(spec.load(f), f)


@pytest.fixture(scope="module")
def pilots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plan")
    return {"tmp": tmp,
            # clear: mean 12, s 2; edge: mean 50 on the band's edge; one: a single run (no SD); retried: an INVALID
            # first attempt in each repetition (two attempts per valid run)
            "a": make_pilot(tmp, "p-a", {"clear": [10, 12, 14], "edge": [48, 50, 52], "one": [5],
                                         "retried": [20, 21, 22]}, wall_s=25.0, invalid={"retried": 3}),
            "b": make_pilot(tmp, "p-b", {"clear": [14, 16, 18], "edge": [50, 50, 50]}, wall_s=25.0),
            "nowall": make_pilot(tmp, "p-nowall", {"clear": [10, 12, 14]})}


def test_plan_per_claim_and_point(pilots: dict[str, Path]) -> None:
    tmp = pilots["tmp"]
    # The full study has a point the pilot lacks (a quick variant's fewer points) and 4 repetitions per point.
    full = study_file(tmp, "p-a-full", ["clear", "edge", "one", "retried", "extra"], repetitions=4, duration_s=100)
    claims = claims_file(tmp, [
        {"id": "band", "studies": ["p-a-full", "p-a"], "kind": "range", "points": ["*"], "range": [0, 50]},
        {"id": "nowhere", "studies": ["p-a"], "kind": "range", "points": ["absent-*"], "range": [0, 50]},
        {"id": "other-study", "studies": ["p-zzz"], "kind": "range", "points": ["*"], "range": [0, 50]}])
    plan = repplan.make([pilots["a"]], target(full), claims, power=0.8, cap=30, ucl=0.8)
    assert plan.claims == ["band", "nowhere"]  # the claim of another study is not read
    rows = {(r.claim, r.estimate): r for r in plan.rows}
    clear = rows[("band", "clear")]
    assert clear.pilot_n == [3] and clear.mean == pytest.approx(12.0) and clear.sds == [pytest.approx(2.0)]
    s_upper = 2.0 * math.sqrt(2 / CHI2_020[2])
    assert clear.sds_upper == [pytest.approx(s_upper, rel=5e-4)]
    # A queuing delay cannot be negative: the band's edge 0 is its natural bound, and the clipped interval never
    # straddles it, so the distance is to 50.
    assert clear.distance == pytest.approx(38.0)
    assert clear.n_needed == by_table(38.0, s_upper) == 3
    assert rows[("band", "edge")].n_needed is None and rows[("band", "edge")].why == "cannot decide with <= 30 runs"
    assert rows[("band", "edge")].distance == pytest.approx(0.0)
    assert "pilot n = 1: no SD" in rows[("band", "one")].why and rows[("band", "one")].n_needed is None
    assert "not a point of the pilot" in rows[("band", "extra")].why
    assert rows[("nowhere", "-")].why == "p-a-full has no point matching absent-*"
    # The plan per point: the claim's n, the cap for an undecidable one, the study file's count where no SD.
    retried = rows[("band", "retried")]
    assert retried.n_needed == by_table(29.0, 1.0 * math.sqrt(2 / CHI2_020[2])) == 2
    assert plan.repetitions == {"clear": 3, "edge": 30, "one": 4, "retried": 2, "extra": 4}
    assert "cannot decide" in plan.reasons["edge"] and "the study file's count" in plan.reasons["one"]


def test_cost_from_the_pilots_wall_times(pilots: dict[str, Path]) -> None:
    """Machine time = runs x (call + the pilot's wall time per attempt beyond its call) x its attempts per valid run;
    the pilot's calls are 10 s, its attempts 25 s: 15 s over; 13 attempts for 10 valid runs."""
    tmp = pilots["tmp"]
    full = study_file(tmp, "p-a-cost", ["clear", "edge", "one", "retried"], repetitions=3, duration_s=60)
    claims = claims_file(tmp, [{"id": "band", "studies": ["p-a"], "kind": "range", "points": ["*"],
                                "range": [0, 50]}])
    plan = repplan.make([pilots["a"]], target(full), claims)
    assert plan.overhead_s == pytest.approx(15.0) and plan.attempts_per_run == pytest.approx(13 / 10)
    total = sum(plan.repetitions.values())
    assert repplan.call_s(plan.target, plan.repetitions) == pytest.approx(total * 60)
    assert repplan.machine_s(plan, plan.repetitions) == pytest.approx(total * 75 * 1.3)
    assert repplan.machine_s(plan, repplan.fixed(plan)) == pytest.approx(12 * 75 * 1.3)
    doc = repplan.to_json(plan)
    assert doc["cost"]["study_file"] == {"runs": 12, "call_s": 720.0, "machine_s": pytest.approx(12 * 75 * 1.3)}
    text = repplan.text(plan)
    assert "the study file's 3 per point: 12 runs, 12m00s of calls" in text
    # A pilot without wall times: the machine time is said to be not measured, never 0.
    nowall = repplan.make([pilots["nowall"]], target(study_file(tmp, "p-nowall", ["clear"])),
                          claims_file(tmp, [{"id": "band", "studies": ["p-nowall"], "kind": "range",
                                             "points": ["*"], "range": [0, 50]}]))
    assert nowall.overhead_s is None and repplan.machine_s(nowall, nowall.repetitions) is None
    assert "machine time not measured" in repplan.text(nowall)


def test_difference_claim_needs_both_pilots(pilots: dict[str, Path]) -> None:
    tmp = pilots["tmp"]
    claims = claims_file(tmp, [{"id": "diff", "studies": ["p-a"], "against": ["p-b"], "kind": "difference",
                                "points": ["clear"], "range": [-20, 20]}])
    t = target(study_file(tmp, "p-a", ["clear", "edge", "one", "retried"]))
    alone = repplan.make([pilots["a"]], t, claims)
    assert alone.rows[0].why == "its pilot was not given" and alone.repetitions["clear"] == 3
    both = repplan.make([pilots["a"], pilots["b"]], t, claims)
    r = both.rows[0]
    assert r.estimate == "B - A at clear" and r.mean == pytest.approx(4.0) and r.distance == pytest.approx(16.0)
    # Both SDs are 2: by the table (df = 2 (n - 1)) the fewest n with (t(.975) + t(.8)) sqrt(2 u^2 / n) <= 16.
    u = 2.0 * math.sqrt(2 / CHI2_020[2])
    assert r.n_needed == next(n for n in range(2, 6)
                              if (T975[2 * (n - 1)] + T80[2 * (n - 1)]) * math.sqrt(2 * u * u / n) <= 16.0) == 3


def test_difference_of_two_points_of_one_study(pilots: dict[str, Path]) -> None:
    """pairs: B - A of two points of the pilot's study, Welch's SE from both points' SDs, the n at both points."""
    tmp = pilots["tmp"]
    claims = claims_file(tmp, [
        {"id": "pair", "studies": ["p-a"], "kind": "difference", "pairs": [["clear", "retried"], ["clear", "absent"]],
         "range": [0, None]},
        {"id": "nopair", "studies": ["p-a"], "kind": "difference", "pairs": [["one", "absent"]], "range": [0, None]}])
    plan = repplan.make([pilots["a"]], target(study_file(tmp, "p-a", ["clear", "edge", "one", "retried"])), claims)
    rows = {r.claim: r for r in plan.rows}
    r = rows["pair"]  # the pair the study lacks (clear / absent) is not read, as findings.pairs_of
    assert r.estimate == "retried - clear" and r.points == ["clear", "retried"] and r.mean == pytest.approx(9.0)
    f = math.sqrt(2 / CHI2_020[2])  # both pilot points have 3 runs
    assert r.sds == [pytest.approx(2.0), pytest.approx(1.0)]
    assert r.sds_upper == [pytest.approx(2.0 * f, rel=5e-4), pytest.approx(1.0 * f, rel=5e-4)]
    assert r.distance == pytest.approx(9.0)  # to the one edge, 0 (the open end is none)
    # By the t table, with Welch's df between whole numbers (t falls as df grows): n = 4 decides (df 4.4 >= 4),
    # n = 3 does not (df 2.9 < 3).
    a, b = (2.0 * f) ** 2, (1.0 * f) ** 2

    def df(n: int) -> float:
        return (a + b) ** 2 / ((a * a + b * b) / (n - 1))

    assert df(4) >= 4 and (T975[4] + T80[4]) * math.sqrt((a + b) / 4) <= 9.0
    assert df(3) < 3 and (T975[3] + T80[3]) * math.sqrt((a + b) / 3) > 9.0
    assert r.n_needed == 4 and plan.repetitions["clear"] == plan.repetitions["retried"] == 4
    assert rows["nopair"].why == "p-a has no pair of points one / absent"


SWEEP_PILOT = {"delay-10": [10.0, 13.0], "delay-40": [12.0, 15.0], "delay-160": [20.0, 18.0]}


def test_trend_reads_every_point_of_the_sweep(tmp_path: Path) -> None:
    """A trend's slope over every run (x = log10 of the delay): the pilot's slope and residual SD are those of a
    least-squares fit over its runs (numpy here), the residual's upper limit on N - 2 = 4 df, the design the planned
    study's five points (two the pilot lacks), and n from the t table on 5n - 2 df; every point of the sweep gets
    it, the middle ones too."""
    pilot = make_pilot(tmp_path, "p-sweep", SWEEP_PILOT, delays=[10, 40, 160])
    (tmp_path / "full").mkdir()
    full = study_file(tmp_path / "full", "p-sweep", [], delays=[10, 20, 40, 80, 160])
    claims = claims_file(tmp_path, [{"id": "up", "studies": ["p-sweep"], "kind": "trend", "direction": "increasing",
                                     "points": ["delay-*"], "x": {"param": "delay", "scale": "log"}}])
    plan = repplan.make([pilot], target(full), claims)
    (r,) = plan.rows
    xs = [math.log10(float(p.split("-")[1])) for p, v in SWEEP_PILOT.items() for _ in v]
    ys = [y for v in SWEEP_PILOT.values() for y in v]
    slope, icept = np.polyfit(xs, ys, 1)
    resid_sd = math.sqrt(sum((y - icept - slope * x) ** 2 for x, y in zip(xs, ys)) / (len(ys) - 2))
    assert r.estimate == "slope (per decade of delay)" and r.pilot_n == [6]
    assert r.mean == pytest.approx(slope) and r.sds == [pytest.approx(resid_sd)]
    u = resid_sd * math.sqrt(4 / CHI2_020[4])
    assert r.sds_upper == [pytest.approx(u, rel=5e-4)] and r.distance == pytest.approx(slope)
    design = [math.log10(d) for d in (10, 20, 40, 80, 160)]
    assert r.points == ["delay-10", "delay-20", "delay-40", "delay-80", "delay-160"]
    n = next(k for k in (1, 2, 3, 4)
             if (T975[5 * k - 2] + T80[5 * k - 2]) * u / math.sqrt(k * sxx(design)) <= slope)
    assert r.n_needed == n == 3
    assert plan.repetitions == {p: 3 for p in r.points}
    assert "pilot: 6 runs at 3 points; the plan: 5 points" in r.note and "notes:" in repplan.text(plan)
    # Without its points' x (a planned study whose points say no delay) the trend has no design, and says so.
    bare = repplan.TargetStudy("p-sweep", "f.yaml", r.points, {p: 10.0 for p in r.points}, 3)
    (r2,) = repplan.make([pilot], bare, claims).rows
    assert r2.n_needed is None and "fewer than two x values among the points of p-sweep" in r2.why


def test_the_cap(pilots: dict[str, Path]) -> None:
    tmp = pilots["tmp"]
    claims = claims_file(tmp, [{"id": "tight", "studies": ["p-a"], "kind": "range", "points": ["clear"],
                                "range": [11, 50]}])  # mean 12, 1 from the edge: about 60 runs
    t = target(study_file(tmp, "p-a", ["clear", "edge", "one", "retried"]))
    capped = repplan.make([pilots["a"]], t, claims, cap=10)
    assert capped.rows[0].why == "cannot decide with <= 10 runs" and capped.repetitions["clear"] == 10
    wide = repplan.make([pilots["a"]], t, claims, cap=500)
    n = wide.rows[0].n_needed
    assert n is not None and n > 10 and wide.repetitions["clear"] == n
    with pytest.raises(repplan.PlanError, match="below the rule's min_n"):
        repplan.make([pilots["a"]], t, claims, cap=1)


def test_damaged_and_empty_pilots(pilots: dict[str, Path], tmp_path: Path) -> None:
    claims = claims_file(tmp_path, [{"id": "band", "studies": ["p-a"], "kind": "range", "points": ["*"],
                                     "range": [0, 50]}])
    t = target(study_file(tmp_path, "p-a", ["clear"]))
    with pytest.raises(repplan.PlanError, match="holds no plan.json"):
        repplan.make([tmp_path], t, claims)
    d = tmp_path / "damaged"
    d.mkdir()
    (d / "plan.json").write_text("{}")
    with pytest.raises(repplan.PlanError, match="holds no study.json"):
        repplan.make([d], t, claims)
    (d / "study.json").write_text('{"points": [')
    with pytest.raises(repplan.PlanError, match="study.json unreadable"):
        repplan.make([d], t, claims)
    # A pilot whose every attempt was INVALID: nothing to estimate from.
    empty = make_pilot(tmp_path, "p-empty", {"clear": [1.0]}, invalid={"clear": 1})
    for r in (empty / "runs" / "clear").iterdir():
        if r.name == "1-2":
            m = json.loads((r / "manifest.json").read_text())
            m["validity"]["valid"] = False
            (r / "manifest.json").write_text(json.dumps(m))
    agg.aggregate(empty, analyse_missing=False)
    with pytest.raises(repplan.PlanError, match="has no run used"):
        repplan.make([empty], t, claims)
    with pytest.raises(repplan.PlanError, match="no claim of .* reads study 'p-a'"):
        repplan.make([pilots["a"]], t, claims_file(tmp_path, [{"id": "x", "studies": ["other"], "kind": "range",
                                                                "points": ["*"], "range": [0, 1]}]))
    with pytest.raises(repplan.PlanError, match="--power"):
        repplan.make([pilots["a"]], t, claims, power=1.0)


def test_cli_plan_write_and_errors(pilots: dict[str, Path], tmp_path: Path) -> None:
    f = study_file(tmp_path, "p-a", ["clear", "edge", "one", "retried"], repetitions=3)
    claims = claims_file(tmp_path, [{"id": "band", "studies": ["p-a"], "kind": "range", "points": ["*"],
                                     "range": [0, 50]}])
    out = tmp_path / "PLAN.json"
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "plan", str(pilots["a"]), "--claims", str(claims),
                        "--study", str(f), "--write", str(out)], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "band" in r.stdout and "n needed" in r.stdout and "cannot decide with <= 30 runs" in r.stdout
    doc = json.loads(out.read_text())
    assert doc["format"] == repplan.PLAN_FORMAT and doc["study"] == "p-a"
    assert doc["repetitions"] == {"clear": 3, "edge": 30, "one": 3, "retried": 2}
    assert doc["method"]["power"] == 0.8 and doc["method"]["sd_upper_confidence"] == 0.8
    bad = subprocess.run([sys.executable, "-m", "rtclab_study", "plan", str(tmp_path), "--claims", str(claims),
                          "--study", str(f)], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "holds no plan.json" in bad.stderr


# ---- running the plan ----------------------------------------------------------------------------------------------

def test_run_takes_per_point_repetitions_from_a_plan(pilots: dict[str, Path], tmp_path: Path) -> None:
    f = study_file(tmp_path, "p-a", ["clear", "edge", "one", "retried"], repetitions=3)
    path = tmp_path / "PLAN.json"
    plan_doc = {"format": repplan.PLAN_FORMAT, "format_version": 1, "study": "p-a",
                "repetitions": {"clear": 4, "edge": 1, "one": 3, "retried": 2},
                "pilots": [{"study": "p-a", "dir": str(pilots["a"])}], "method": {"power": 0.8}}
    path.write_text(json.dumps(plan_doc))
    study = spec.load(f)
    cli.apply_repetitions_plan(study, path)
    p = planmod.make(study)
    counts: dict[str, int] = {}
    for r in p.order:
        counts[r.point] = counts.get(r.point, 0) + 1
    assert counts == plan_doc["repetitions"]
    assert sorted((r.point, r.rep) for r in p.order) == sorted(
        (pt, k) for pt, n in plan_doc["repetitions"].items() for k in range(1, n + 1))
    out = tmp_path / "study"
    planmod.write(p, out)
    written = json.loads((out / "plan.json").read_text())
    assert written["repetitions"] == 3 and written["repetitions_per_point"] == plan_doc["repetitions"]
    assert written["repetitions_from"]["sha256"] and written["repetitions_from"]["study_file_repetitions"] == 3
    assert studydir.planned_repetitions(written) == plan_doc["repetitions"]
    assert set(studydir.scan(out, list(counts), studydir.planned_repetitions(written))) == {
        (pt, k) for pt, n in plan_doc["repetitions"].items() for k in range(1, n + 1)}
    # The aggregation reads the same counts: a point's missing repetitions are its own count's.
    doc = agg.aggregate(out, analyse_missing=False)
    assert len(doc["missing"]) == 10 and doc["plan"]["repetitions_per_point"] == plan_doc["repetitions"]
    # The findings page's provenance names the plan, and its command runs it again.
    prov = provenance.read(out, doc, written)
    cmd = provenance.command("p-a", prov, [])
    assert f"--repetitions-from {path}" in cmd
    (line,) = [x for x in provenance.markdown("p-a", str(out), prov, 0, 0, []) if x.startswith("- repetitions:")]
    assert f"`{path}`" in line and written["repetitions_from"]["sha256"][:12] in line and "power 0.8" in line
    assert "in place of the study file's 3 per point" in line
    # The pilot's directory is refused: its runs would count in the study's intervals.
    with pytest.raises(runner.StudyDirError, match="pilot's directory"):
        runner.check_not_pilot(study, pilots["a"])
    runner.check_not_pilot(study, out)


@pytest.mark.parametrize("change, problem", [
    ({"study": "other"}, "plans study 'other', not 'p-a'"),
    ({"repetitions": {"clear": 2}}, "points of the study it has no count for: edge"),
    ({"repetitions": {"clear": 2, "edge": 0, "zz": 1}}, "edge: 0 is not a positive whole number"),
    ({"format": "x"}, "not a repetitions plan"),
])
def test_a_plan_that_does_not_fit_the_study_is_refused(tmp_path: Path, change: dict[str, Any], problem: str) -> None:
    f = study_file(tmp_path, "p-a", ["clear", "edge"], repetitions=3)
    path = tmp_path / "PLAN.json"
    path.write_text(json.dumps({"format": repplan.PLAN_FORMAT, "study": "p-a",
                                "repetitions": {"clear": 2, "edge": 5}, **change}))
    with pytest.raises(spec.StudyError, match=problem):
        cli.apply_repetitions_plan(spec.load(f), path)
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "run", str(f), "--repetitions-from", str(path),
                        "--dry-run"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and problem.split(":")[0] in r.stderr and "nothing was run" in r.stderr
