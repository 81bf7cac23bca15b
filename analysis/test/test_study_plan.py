"""`rtclab study plan`'s arithmetic (rtclab.study.plan, chi2dist): the sample size per point from a pilot's variance
against independent computations (printed t and chi-square table values, the closed forms of the chi-square CDF for 1
and 2 degrees of freedom, the normal approximation n = ((z(0.975) + z(power)) s / d)^2, and simulations with numpy
of the interval the plan promises, judged by findings' own rule: a range clipped at natural bounds, a difference of
two points of one study, a trend's slope over every run). The plan from pilot studies and its run: in
test_study_plan_pilots.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtclab import verdicts
from rtclab.study import chi2dist, tdist
from rtclab.study import plan as repplan
from rtclab.study.compare import welch
from rtclab.study.tdist import t_quantile
from stat_tables import CHI2_020, T80, T975, Z80, Z975, by_table, sxx

REPO = Path(__file__).resolve().parents[2]

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


def test_the_densities_are_the_closed_forms_and_the_quantiles_take_a_few_cdf_evaluations() -> None:
    """The densities Newton's steps divide by (tdist.invert_cdf): Cauchy's for t with 1 df, the normal's limit for a
    large df, exp(-x/2) / 2 for chi-square with 2 df; each is the CDF's slope (a central difference). With them a
    quantile costs a few CDF evaluations (bisection took about 55), and still lands where the CDF reaches p."""
    for t in (-3.0, 0.0, 0.7, 12.7):
        assert tdist.t_pdf(t, 1) == pytest.approx(1 / (math.pi * (1 + t * t)), rel=1e-12)
        assert tdist.t_pdf(t, 1e7) == pytest.approx(math.exp(-t * t / 2) / math.sqrt(2 * math.pi), rel=1e-5)
    for x in (0.1, 1.0, 5.0):
        assert chi2dist.chi2_pdf(x, 2) == pytest.approx(math.exp(-x / 2) / 2, rel=1e-12)
    for df in (1.0, 3.5, 12.0, 90.0):
        for x in (0.3, 1.5, 4.0):
            h = 1e-5
            assert tdist.t_pdf(x, df) == pytest.approx((tdist.t_cdf(x + h, df) - tdist.t_cdf(x - h, df)) / (2 * h),
                                                       rel=1e-6)
            assert chi2dist.chi2_pdf(x, df) == pytest.approx(
                (chi2dist.chi2_cdf(x + h, df) - chi2dist.chi2_cdf(x - h, df)) / (2 * h), rel=1e-6)
    for p, df in [(0.975, 1), (0.975, 4), (0.8, 9.3), (0.975, 57.2), (0.999, 300)]:
        calls: list[float] = []

        def cdf(x: float, df: float = df, calls: list[float] = calls) -> float:
            calls.append(x)
            return tdist.t_cdf(x, df)
        q = tdist.invert_cdf(cdf, lambda x, df=df: tdist.t_pdf(x, df), p, 1.0)
        assert len(calls) <= 15, (p, df, len(calls))
        assert tdist.t_cdf(q, df) == pytest.approx(p, abs=1e-14)


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
