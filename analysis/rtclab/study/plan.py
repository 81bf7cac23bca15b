"""`rtclab study plan DIR`: the repetitions per point a study needs for each claim of studies/findings.yaml that reads
it to be decided, from a pilot's measured variance (sample-size planning from a pilot, fixed before the study runs;
docs/studies.md, "Planning repetitions from a pilot").

For every claim that reads the planned study and every interval its verdict judges (findings.py's rules: a point's
mean for a range claim, clipped at the measure's natural bounds; B - A of two points of one study or of one point in
two studies for a difference claim; the least-squares slope over every run of the sweep for a trend), the pilot gives
the estimate's value and its per-run standard deviation(s) (a trend: the pilot fit's residual SD). The SD is replaced
by its 100(1 - gamma) % upper confidence limit (Browne 1995), and n per point is the smallest number of runs at which
the 95 % interval is decided (straddles none of the edges the rule can leave it on) with probability `power` when the
true value is the pilot's (`decision_power`; for one edge this is n >= ((t(1 - alpha/2, df) + t(power, df)) SE(1) /
d)^2, d the distance to the edge). n is searched from the rule's least n up to the cap; beyond it the estimate "cannot
decide with <= cap runs". The pilot's runs only estimate the SD: the planned study runs into a directory of its own
and its runs alone make the interval.

The rule is findings.py's, called, not restated: which points and pairs a claim reads (`points_of`, `pairs_of`), the
sweep's x (`x_of`), the pilot's values (`measure_point`), the trend's fit (`trend_fit`), the natural bounds
(`natural_bounds`, `clip`) and the verdict of a zero-width interval (`decide`). What is the planner's own is the
interval's sampling model: how its half-width shrinks with n (`interval_model`) and the chance that it straddles an
edge (`decision_power`). Nothing here runs anything."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import findings, verdicts
from .chi2dist import chi2_quantile
from .tdist import t_cdf, t_quantile

ALPHA = 0.05  # the findings' intervals are 95 %
DEFAULT_POWER = 0.8
DEFAULT_UCL = 0.8  # the SD's one-sided upper confidence limit: 80 %, as Browne (1995)
DEFAULT_CAP = 30
PLAN_FORMAT = "rtclab-repetitions-plan"
PLAN_FORMAT_VERSION = 1
TREND_MIN_RUNS = 3  # verdicts.trend_fit: a slope's interval needs N >= 3 runs (N - 2 degrees of freedom)


class PlanError(Exception):
    """A pilot or claims file that cannot be planned from (the CLI exits 2 with this message)."""


# ---- the sample size -----------------------------------------------------------------------------------------------

def sd_upper_limit(sd: float, n: int, confidence: float) -> float:
    """The one-sided `confidence` upper confidence limit of a normal population's SD from a sample's SD over n values
    (n - 1 degrees of freedom): sd_upper_limit_df."""
    if n < 2:
        raise ValueError(f"an SD needs 2 values at least (got n = {n})")
    return sd_upper_limit_df(sd, n - 1, confidence)


def sd_upper_limit_df(sd: float, df: int, confidence: float) -> float:
    """The one-sided `confidence` upper confidence limit of a normal SD from an estimate s on df degrees of freedom:
    s * sqrt(df / chi2(1 - confidence, df)), since df s^2 / sigma^2 is chi-square with df degrees of freedom (a
    sample's SD: df = n - 1; a regression's residual SD over N runs: N - 2)."""
    if df < 1:
        raise ValueError(f"an SD needs 1 degree of freedom at least (got {df})")
    if confidence <= 0:  # no correction: the pilot's SD as it is
        return sd
    return sd * math.sqrt(df / chi2_quantile(1.0 - confidence, df))


def welch_df(sds: list[float], n: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of means, each over n runs."""
    num = sum(s * s for s in sds) ** 2
    den = sum(s ** 4 for s in sds) / (n - 1)
    return (n - 1) * len(sds) if den == 0 else num / den  # all SDs 0: the pooled df (the width is 0 anyway)


@dataclass(frozen=True)
class Slope:
    """A trend's design: the planned study's sweep points' x (log10 of the parameter on a log scale), every run of a
    point one observation at its x (verdicts.trend_fit)."""
    xs: tuple[float, ...]

    @property
    def sxx(self) -> float:
        """The sum over the points of (x - xbar)^2: with n runs at each, the fit's Sxx is n times it."""
        xbar = sum(self.xs) / len(self.xs)
        return sum((x - xbar) ** 2 for x in self.xs)

    def least_n(self) -> int:
        """The fewest runs per point that give the slope an interval (N = n k >= 3)."""
        return max(1, math.ceil(TREND_MIN_RUNS / len(self.xs)))


def interval_model(sds: list[float], n: int, slope: Slope | None = None) -> tuple[float, float]:
    """(SE, df) of the estimate's 95 % interval with n runs per point: one mean, s / sqrt(n) on n - 1 df; a
    difference of two means (compare.welch), sqrt((sA^2 + sB^2) / n) on Welch's df; a trend's slope
    (verdicts.trend_fit), s / sqrt(n Sxx) on n k - 2 df, s the residual SD."""
    if slope is not None:
        return sds[0] / math.sqrt(n * slope.sxx), float(n * len(slope.xs) - 2)
    se = math.sqrt(sum(s * s for s in sds) / n)
    return se, float(n - 1) if len(sds) == 1 else welch_df(sds, n)


def decision_power(claim: dict[str, Any], mean: float, sds: list[float], n: int, slope: Slope | None = None) -> float:
    """The probability that the claim's 95 % interval over n runs per point is decided when the estimate's true value
    is `mean` and its per-run SDs `sds`: 1 - the sum over the rule's edges e (`edges`) of the probability that the
    interval straddles e, 1 - T_df(|mean - e| / SE - t(1 - alpha/2, df)), SE and df by `interval_model` (the t
    approximation behind n = ((t(1 - alpha/2) + t(power)) s / d)^2, to which it reduces for one edge and one mean;
    with two edges near, as a band's, each must be missed less often)."""
    se, df = interval_model(sds, n, slope)
    if se == 0.0:  # every pilot run gave the same value (on the line): a zero-width interval, judged by the rule
        return 1.0 if verdicts.decide(claim, mean, mean) != verdicts.INCONCLUSIVE else 0.0
    t_a = t_quantile(1.0 - ALPHA / 2.0, df)
    miss = sum(1.0 - t_cdf(abs(mean - e) / se - t_a, df) for e in edges(claim))
    return max(0.0, 1.0 - miss)


def runs_needed(claim: dict[str, Any], mean: float, sds: list[float], power: float, cap: int,
                min_n: int, slope: Slope | None = None) -> int | None:
    """The fewest runs per point (from the least n the rule judges, to cap) at which the claim's interval is decided
    with probability `power` (decision_power); None when even cap runs do not reach it. A range or difference claim
    starts at the rule's min_n (and 2, an SD); a trend at the n that gives N >= 3 runs (verdicts.trend_fit; min_n is
    not a trend's rule)."""
    first = slope.least_n() if slope is not None else max(min_n, 2)
    for n in range(first, cap + 1):
        if decision_power(claim, mean, sds, n, slope) >= power:
            return n
    return None


# ---- the rule: what makes an interval decided (findings.py's, called) ---------------------------------------------

def edges(claim: dict[str, Any]) -> list[float]:
    """The values the claim's interval can straddle, each leaving its verdict inconclusive (verdicts.decide): for a
    range, the band's finite edges strictly inside the measure's natural bounds (verdicts.decide_range clips the
    interval to them first, so an edge on a bound or past it, such as 0 of a loss band [0, x], is never straddled);
    for a difference, the band's finite edges (decide_difference does not clip); for a trend, 0 (the slope's interval
    must exclude it, on either side)."""
    if claim["kind"] == "trend":
        return [0.0]
    band = [float(e) for e in claim["range"] if e is not None]  # an open end ([lo, null]) is no edge
    if claim["kind"] != "range":
        return band
    bounds = verdicts.natural_bounds(claim["measure"])
    return [e for e in band if _straddled_after_clipping(e, bounds)]


def _straddled_after_clipping(e: float, bounds: verdicts.Bounds) -> bool:
    """Whether an interval around e still holds e strictly inside once clipped to the bounds (verdicts.clip): false
    exactly when e lies on a bound or beyond it, whatever the interval's width (1 here)."""
    lo, hi, _ = verdicts.clip(e - 1.0, e + 1.0, bounds)
    return lo < e < hi


@dataclass
class Estimate:
    """One interval a claim's verdict judges, what the planned study needs for it, and the pilot's statistics."""
    label: str  # a point; "B - A" of a pair or "B - A at point"; "slope ..."
    points: list[str]  # the planned study's points it needs n runs at
    pilot_n: list[int | None] = field(default_factory=list)  # per pilot point (a trend: its runs in all)
    value: float | None = None  # the pilot's estimate: a mean, B - A, or the slope
    sds: list[float | None] = field(default_factory=list)  # the pilot's SD of each part (a trend: the residual SD)
    sd_df: list[int] = field(default_factory=list)  # their degrees of freedom
    slope: Slope | None = None  # a trend's design
    why: str = ""  # why it cannot be planned; empty when it can
    note: str = ""  # what else the row should say (points left out of a fit, an interval no edge can leave open)
    few_runs: bool = False  # why is too few runs for an SD (a point's n < 2, a slope's N < 3), not missing data


def estimates(claim: dict[str, Any], pilots: dict[str, findings.Study], target: findings.Study) -> list[Estimate]:
    """The intervals a claim's verdict judges in the planned study `target`, with their pilot statistics: per point
    (range), per pair or shared point (difference), or one slope over the sweep (trend)."""
    own = _study_of(claim["studies"], pilots)
    measure = claim["measure"]
    kind = claim["kind"]
    if kind == "range":
        return [_of_means(p, [p], [_pilot_point(own, p, measure)]) for p in findings.points_of(target, claim["points"])]
    if kind == "difference" and claim.get("pairs"):
        return [_of_means(f"{b} - {a}", [a, b], [_pilot_point(own, a, measure), _pilot_point(own, b, measure)])
                for a, b in findings.pairs_of(target, claim["pairs"])]
    if kind == "difference":
        other = _study_of(claim.get("against") or [], pilots)
        return [_of_means(f"B - A at {p}", [p], [_pilot_point(own, p, measure), _pilot_point(other, p, measure)])
                for p in findings.points_of(target, claim["points"])]
    if kind == "trend":
        return [_trend(claim, own, target)] if findings.points_of(target, claim["points"]) else []
    return [Estimate("-", [], why=f"the planner cannot plan for a claim of kind {kind!r} (it plans range, difference "
                                  "and trend claims)")]


def _study_of(names: list[str], pilots: dict[str, findings.Study]) -> findings.Study | None:
    return next((pilots[n] for n in names if n in pilots), None)


@dataclass
class PilotPoint:
    point: str
    stat: dict[str, Any] | None  # measure_point's mean, sd, n; None when there is no value to use
    why: str  # why not, when stat is None (or its SD is missing)


def _pilot_point(s: findings.Study | None, point: str, measure: dict[str, Any]) -> PilotPoint:
    """The pilot's statistic at a point, or why there is none to plan from (as findings judges a point: no value, a
    measure that matches nothing, INVALID runs used)."""
    if s is None:
        return PilotPoint(point, None, "its pilot was not given")
    if point not in findings.points_of(s, ["*"]):
        return PilotPoint(point, None, f"not a point of the pilot {s.name}")
    m = findings.measure_point(s, point, measure)
    if m["unmatched"]:
        return PilotPoint(point, None, f"the measure matches nothing in the pilot: {m['unmatched']}")
    if m["stat"] is None:
        return PilotPoint(point, None, "no value in the pilot (no valid run)")
    if m["invalid_used"]:
        return PilotPoint(point, None, f"the pilot uses {m['invalid_used']} INVALID run(s)")
    return PilotPoint(point, m["stat"], "")


def _of_means(label: str, points: list[str], parts: list[PilotPoint]) -> Estimate:
    """A mean (one part) or B - A (two parts, the second B), from each part's pilot mean and SD."""
    e = Estimate(label, points, pilot_n=[None if p.stat is None else int(p.stat["n"]) for p in parts],
                 sds=[None if p.stat is None else p.stat.get("sd") for p in parts])
    named = len({p.point for p in parts}) > 1  # a pair: say which of its points
    e.why = next((f"{p.point}: {p.why}" if named else p.why for p in parts if p.why), "")
    if not e.why:
        short = next((p for p in parts if p.stat is not None and (p.stat["n"] < 2 or p.stat.get("sd") is None)), None)
        if short is not None:
            assert short.stat is not None
            e.why = (f"{short.point}: " if named else "") + \
                f"pilot n = {short.stat['n']}: no SD (the pilot needs 2 runs at least here)"
            e.few_runs = True
    means = [float(p.stat["mean"]) for p in parts if p.stat is not None]
    if len(means) == len(parts):
        e.value = means[0] if len(means) == 1 else means[1] - means[0]
    if not e.why:
        e.sd_df = [int(p.stat["n"]) - 1 for p in parts if p.stat is not None]
    return e


def _trend(claim: dict[str, Any], own: findings.Study | None, target: findings.Study) -> Estimate:
    """The slope over every point of the planned sweep: its design from the planned points' x, its value and
    residual SD from verdicts.trend_fit over the pilot's points."""
    xspec = claim["x"]
    log = xspec.get("scale", "linear") == "log"
    per = f"per decade of {xspec['param']}" if log else f"per unit of {xspec['param']}"

    def x_at(s: findings.Study, p: str) -> float | None:
        x = findings.x_of(s, p, xspec["param"])
        return None if x is None or (log and x <= 0) else math.log10(x) if log else x

    no_x = f"no {'positive ' if log else ''}number for x = {xspec['param']}"
    planned = [(p, x_at(target, p)) for p in findings.points_of(target, claim["points"])]
    xs = [x for _, x in planned if x is not None]
    e = Estimate(f"slope ({per})", [p for p, x in planned if x is not None])
    notes = [f"{p} left out of the design ({no_x} in {target.name})" for p, x in planned if x is None]
    if len(set(xs)) < 2:
        e.why = f"fewer than two x values among the points of {target.name} the claim reads: no slope"
        return e
    e.slope = Slope(tuple(xs))
    if own is None:
        e.why = "its pilot was not given"
        return e
    fit_xs: list[float] = []
    stats: list[dict[str, Any]] = []
    for p in findings.points_of(own, claim["points"]):
        pp, x = _pilot_point(own, p, claim["measure"]), x_at(own, p)
        if pp.stat is None and ("INVALID" in pp.why or "matches nothing" in pp.why):
            e.why = f"{p}: {pp.why}"  # as findings: these make the whole trend inconclusive
            return e
        if pp.stat is None or x is None:
            notes.append(f"pilot {p} left out of the fit ({pp.why or no_x})")
            continue
        fit_xs.append(x)
        stats.append(pp.stat)
    fit = verdicts.trend_fit(fit_xs, stats)
    e.pilot_n = [int(fit["n_runs"])]
    e.value = fit["slope"]
    e.note = "; ".join([f"pilot: {fit['n_runs']} runs at {fit['n_points']} points; the plan: {len(xs)} points"]
                       + notes)
    if fit["slope"] is None:
        e.why = f"the pilot has fewer than two x values with a value ({own.name}): no slope"
    elif fit["residual_sd"] is None:
        e.why = f"the pilot's {fit['n_runs']} runs give the slope no interval ({TREND_MIN_RUNS} runs needed)"
        e.few_runs = True
    else:
        e.sds, e.sd_df = [float(fit["residual_sd"])], [int(fit["df"])]
    return e


# ---- the plan ------------------------------------------------------------------------------------------------------

@dataclass
class TargetStudy:
    """The study the plan is for, as its study file says (the CLI loads it)."""
    name: str
    file: str  # relative to the repository root
    points: list[str]
    duration_s: dict[str, float]  # each point's call, s
    repetitions: int  # the study file's fixed count
    # Each point as plan.json will describe it ({name, params, labels, settings}): where findings.x_of finds a
    # sweep's x. Without them a trend claim has no design (said in its row).
    point_plans: list[dict[str, Any]] = field(default_factory=list)

    def as_study(self) -> findings.Study:
        """The planned study as findings reads a study's points (plan.json `points`), before it has any run."""
        described = {str(p.get("name")): p for p in self.point_plans}
        return findings.Study(Path(self.file), {"study": self.name, "points": [], "runs": []},
                              {"points": [described.get(p, {"name": p}) for p in self.points]})


@dataclass
class Row:
    claim: str
    kind: str
    estimate: str
    points: list[str]
    pilot_n: list[int | None]
    mean: float | None  # the estimate's pilot value (a mean, B - A, or a slope)
    sds: list[float | None]  # the pilot SD of each part (a trend: the fit's residual SD)
    sds_upper: list[float] | None  # their upper confidence limits, used for n
    distance: float | None  # from the mean to the nearest edge of the rule (band edge, or 0); None: no edge
    n_needed: int | None
    why: str  # empty when n_needed is a number
    note: str = ""


@dataclass
class Plan:
    target: TargetStudy
    pilots: list[findings.Study]
    claims_file: str
    power: float
    ucl: float
    cap: int
    min_n: int
    rows: list[Row]
    repetitions: dict[str, int]  # per point of the target study
    reasons: dict[str, str]  # per point: why that n
    overhead_s: float | None  # the pilot's mean wall time per attempt beyond its call (set-up, teardown, analysis)
    attempts_per_run: float | None  # the pilot's attempts per valid run (retries of invalid attempts)
    claims: list[str] = field(default_factory=list)  # the ids of the claims that read the study


def estimate_row(claim: dict[str, Any], e: Estimate, power: float, ucl: float, cap: int, min_n: int) -> Row:
    """The estimate judged: its distance to the rule's nearest edge and the runs per point that decide it (n_needed;
    None with why "cannot decide with <= cap runs"), or why it cannot be planned."""
    row = Row(claim=claim["id"], kind=claim["kind"], estimate=e.label, points=e.points, pilot_n=e.pilot_n,
              mean=e.value, sds=e.sds, sds_upper=None, distance=None, n_needed=None, why=e.why, note=e.note)
    if row.why:
        return row
    assert e.value is not None and all(s is not None for s in e.sds)
    row.sds_upper = [sd_upper_limit_df(float(s or 0.0), df, ucl) for s, df in zip(e.sds, e.sd_df)]
    near = edges(claim)
    if near:
        row.distance = min(abs(e.value - x) for x in near)
    else:
        row.note = "; ".join(x for x in (row.note, "no band edge inside the measure's natural bounds: the clipped "
                                         "interval is decided at any n") if x)
    row.n_needed = runs_needed(claim, e.value, row.sds_upper, power, cap, min_n, e.slope)
    if row.n_needed is None:
        row.why = f"cannot decide with <= {cap} runs"
    return row


def make(pilot_dirs: list[Path], target: TargetStudy, claims_file: Path, power: float = DEFAULT_POWER,
         cap: int = DEFAULT_CAP, ucl: float = DEFAULT_UCL) -> Plan:
    """The plan for `target` from the pilot(s): the first directory is the planned study's pilot, the others those of
    the studies its difference claims compare it with."""
    if not 0.5 <= power < 1.0:
        raise PlanError(f"--power must be in [0.5, 1) (got {power})")
    if not 0.0 <= ucl < 1.0:
        raise PlanError(f"the SD's upper confidence limit must be in [0, 1) (got {ucl})")
    if not pilot_dirs:
        raise PlanError("no pilot directory given")
    try:
        doc = findings.load_claims(claims_file)
        pilots = [findings.read_study(d) for d in pilot_dirs]
    except findings.FindingsError as e:
        raise PlanError(str(e)) from None
    except (OSError, UnicodeDecodeError, ValueError) as e:  # a damaged plan.json beside a readable study.json
        raise PlanError(f"a pilot's plan.json is unreadable: {e}") from None
    for s in pilots:
        if not any(r.get("used") for r in s.doc.get("runs") or []):
            raise PlanError(f"the pilot {s.dir} ({s.name}) has no run used (no valid run): nothing to estimate a "
                            "variance from; run the pilot until its points have valid runs")
    min_n = int((doc.get("rule") or {}).get("min_n", 2))
    if cap < max(min_n, 2):
        raise PlanError(f"--cap {cap} is below the rule's min_n ({min_n}) and 2: no interval")
    by_name = {s.name: s for s in pilots}
    first = pilots[0]
    names = {first.name, target.name}
    claims = [c for c in doc["claims"] if any(n in names for n in c["studies"]) or
              (c["kind"] == "difference" and any(n in names for n in c.get("against") or []))]
    if not claims:
        raise PlanError(f"no claim of {claims_file} reads study {' or '.join(repr(n) for n in sorted(names))}: "
                        "nothing to plan (each claim's `studies` and `against` name the studies it reads)")
    # The planned study's own name stands for the pilot's when the pilot is its quick variant.
    pilots_by_name = dict(by_name)
    pilots_by_name.setdefault(target.name, first)
    planned = target.as_study()
    rows = []
    for c in claims:
        found = estimates(c, pilots_by_name, planned)
        rows += [estimate_row(c, e, power, ucl, cap, min_n) for e in found]
        if not found:  # said, not skipped: a claim whose points the study does not have decides nothing here
            what = ("no pair of points " + ", ".join(f"{a} / {b}" for a, b in c["pairs"]) if c.get("pairs") else
                    "no point matching " + ", ".join(c["points"]))
            rows.append(Row(claim=c["id"], kind=c["kind"], estimate="-", points=[], pilot_n=[], mean=None, sds=[],
                            sds_upper=None, distance=None, n_needed=None, why=f"{target.name} has {what}"))
    reps, reasons = _per_point(target, rows, cap)
    overhead, ratio = _pilot_costs(first)
    return Plan(target=target, pilots=pilots, claims_file=str(claims_file), power=power, ucl=ucl, cap=cap,
                min_n=min_n, rows=rows, repetitions=reps, reasons=reasons, overhead_s=overhead,
                attempts_per_run=ratio, claims=[c["id"] for c in claims])


def _per_point(target: TargetStudy, rows: list[Row], cap: int) -> tuple[dict[str, int], dict[str, str]]:
    """Per point the largest n its claims need, capped at `cap`: an estimate that cannot be decided within the cap
    gets the cap (its interval as narrow as the budget allows); a point no estimate can plan for (no pilot SD) or that
    no claim's verdict reads keeps the study file's count."""
    reps: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for p in target.points:
        mine = [r for r in rows if p in r.points]
        planned = [r for r in mine if r.n_needed is not None]
        over = [r for r in mine if r.why.startswith("cannot decide")]
        if over:
            reps[p] = cap
            reasons[p] = f"the cap: {', '.join(sorted({r.claim for r in over}))} cannot decide with <= {cap} runs"
        elif planned:
            top = max(planned, key=lambda r: r.n_needed or 0)
            reps[p] = min(cap, int(top.n_needed or 0))
            reasons[p] = f"{top.claim} ({top.estimate})"
        else:
            reps[p] = target.repetitions
            reasons[p] = ("the study file's count: " + ("; ".join(sorted({f"{r.claim}: {r.why}" for r in mine}))
                                                       if mine else "no claim's verdict reads this point"))
    return reps, reasons


def _pilot_costs(s: findings.Study) -> tuple[float | None, float | None]:
    """The pilot's mean time per attempt beyond its call (from attempts.jsonl's wall_s and plan.json's durations)
    and its attempts per valid run; None when its attempts recorded no wall time or none was valid."""
    duration = {p["name"]: float(p.get("duration_s") or 0.0) for p in s.plan.get("points") or []}
    runs = [r for r in s.doc.get("runs") or [] if r.get("status") != "interrupted"]
    over = [float(r["wall_s"]) - duration.get(r.get("point", ""), 0.0) for r in runs
            if isinstance(r.get("wall_s"), (int, float))]
    valid = sum(1 for r in runs if r.get("status") == "valid")
    return (sum(over) / len(over) if over else None), (len(runs) / valid if valid else None)


def call_s(target: TargetStudy, reps: dict[str, int]) -> float:
    return sum(n * target.duration_s.get(p, 0.0) for p, n in reps.items())


def machine_s(plan: Plan, reps: dict[str, int]) -> float | None:
    """What running `reps` costs this machine: every run's call plus the pilot's overhead per attempt, times its
    attempts per valid run."""
    if plan.overhead_s is None or plan.attempts_per_run is None:
        return None
    return sum(n * (plan.target.duration_s.get(p, 0.0) + plan.overhead_s) * plan.attempts_per_run
               for p, n in reps.items())


def fixed(plan: Plan) -> dict[str, int]:
    return {p: plan.target.repetitions for p in plan.target.points}


# ---- output --------------------------------------------------------------------------------------------------------

def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _dur(s: float | None) -> str:
    if s is None:
        return "not measured"
    s = int(round(s))
    return f"{s // 3600}h{(s % 3600) // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return ["  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip() for r in [head, *rows]]


def text(plan: Plan) -> str:
    """The terminal output: the method, a row per claim and estimate, the plan per point and its cost against the
    study file's fixed count."""
    t = plan.target
    first = plan.pilots[0]
    tf = first.plan.get("time_factor", first.plan.get("quick_factor", 1.0))
    lines = [f"plan for study {t.name} ({t.file}) from the pilot {first.name} ({first.dir}"
             + (f"; its calls are x{tf:g} of the study's: its SD is that of shorter calls, and a measure over the "
                "whole call (phase all) holds the start-up, a larger share of a short call, in its mean too: for "
                "such a measure plan from the full study's first runs" if tf != 1.0 else "") + ")"]
    lines += [f"  also read: {s.name} ({s.dir})" for s in plan.pilots[1:]]
    lines.append(f"method: the fewest runs per point at which the claim's 95 % interval is decided with power "
                 f"{plan.power:g} if the true value is the pilot's, using the pilot SD's "
                 f"{plan.ucl * 100:g} % upper confidence limit (Browne 1995); from min_n {plan.min_n} (a trend: from 3 "
                 f"runs in all) to the cap {plan.cap}; the pilot's runs are not part of the study's intervals "
                 "(docs/studies.md)"
                 if plan.ucl > 0 else
                 f"method: the fewest runs per point at which the claim's 95 % interval is decided with power "
                 f"{plan.power:g} if the true value and SD are the pilot's (no correction of the SD); from min_n "
                 f"{plan.min_n} (a trend: from 3 runs in all) to the cap {plan.cap}")
    lines.append(f"claims reading the study: {', '.join(plan.claims)}")
    lines.append("")
    body = [[r.claim, r.estimate, " / ".join("-" if n is None else str(n) for n in r.pilot_n), _g(r.mean),
             " / ".join(_g(s) for s in r.sds), " / ".join(_g(s) for s in r.sds_upper or []) or "-", _g(r.distance),
             str(r.n_needed) if r.n_needed is not None else r.why] for r in plan.rows]
    ucl = f"s {plan.ucl * 100:g} % UCL" if plan.ucl > 0 else "s used"
    lines += _table(["claim", "estimate", "pilot n", "pilot value", "s", ucl, "distance", "n needed"], body)
    notes = [f"  {r.claim} ({r.estimate}): {r.note}" for r in plan.rows if r.note]
    if notes:
        lines += ["notes:", *notes]
    lines.append("")
    lines += _table(["point", "n", "call", "why"],
                    [[p, str(n), f"{t.duration_s.get(p, 0.0):g} s", plan.reasons[p]]
                     for p, n in plan.repetitions.items()])
    planned, fixed_reps = plan.repetitions, fixed(plan)
    lines.append("")
    lines.append(f"the plan: {sum(planned.values())} runs, {_dur(call_s(t, planned))} of calls, machine time "
                 f"{_dur(machine_s(plan, planned))}; the study file's {t.repetitions} per point: "
                 f"{sum(fixed_reps.values())} runs, {_dur(call_s(t, fixed_reps))} of calls, machine time "
                 f"{_dur(machine_s(plan, fixed_reps))}")
    lines.append("machine time: " + ("not measured (the pilot's attempts recorded no wall time, or none was valid)"
                                     if plan.overhead_s is None or plan.attempts_per_run is None else
                                     f"each run's call + {plan.overhead_s:.0f} s of set-up, teardown and analysis, "
                                     f"x {plan.attempts_per_run:.2f} attempts per valid run (the pilot's)"))
    return "\n".join(lines) + "\n"


def _rel(p: Path | str) -> str:
    """A path as a command from the repository root names it (no absolute path of this machine in PLAN.json)."""
    path = Path(str(p))
    try:
        return str(path.resolve().relative_to(findings.REPO)) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def to_json(plan: Plan) -> dict[str, Any]:
    """PLAN.json: what `rtclab study run FILE --repetitions-from PLAN.json` runs, and how it was computed."""
    t = plan.target
    planned, fixed_reps = plan.repetitions, fixed(plan)
    return {
        "format": PLAN_FORMAT, "format_version": PLAN_FORMAT_VERSION,
        "study": t.name, "study_file": t.file, "repetitions": planned, "why": plan.reasons,
        "study_file_repetitions": t.repetitions,
        "pilots": [{"study": s.name, "dir": _rel(s.dir), "fingerprint": s.plan.get("fingerprint"),
                    "time_factor": s.plan.get("time_factor", s.plan.get("quick_factor", 1.0)),
                    "runs_used": (s.doc.get("summary") or {}).get("runs_used")} for s in plan.pilots],
        "claims_file": _rel(plan.claims_file), "claims": plan.claims,
        "method": {"alpha": ALPHA, "power": plan.power, "sd_upper_confidence": plan.ucl, "cap": plan.cap,
                   "min_n": plan.min_n,
                   "rule": "fewest n in [min_n, cap] (a trend: from N = n k >= 3) with 1 - sum over the rule's edges "
                           "e of (1 - T_df(|estimate - e| / SE - t(1 - alpha/2, df))) >= power; edges: a range's band "
                           "edges inside the measure's natural bounds, a difference's band edges, 0 for a trend's "
                           "slope; SE from the upper-limit SDs: s / sqrt(n) (df n - 1) for a mean, sqrt((sA^2 + sB^2) "
                           "/ n) (Welch's df) for B - A, s / sqrt(n Sxx) (df n k - 2) for a slope"},
        "rows": [{"claim": r.claim, "kind": r.kind, "estimate": r.estimate, "points": r.points,
                  "pilot_n": r.pilot_n, "mean": r.mean, "sd": r.sds, "sd_upper": r.sds_upper,
                  "distance": r.distance, "n_needed": r.n_needed, "why": r.why or None, "note": r.note or None}
                 for r in plan.rows],
        "cost": {"overhead_s_per_attempt": plan.overhead_s, "attempts_per_valid_run": plan.attempts_per_run,
                 "planned": {"runs": sum(planned.values()), "call_s": call_s(t, planned),
                             "machine_s": machine_s(plan, planned)},
                 "study_file": {"runs": sum(fixed_reps.values()), "call_s": call_s(t, fixed_reps),
                                "machine_s": machine_s(plan, fixed_reps)}},
    }


def read_repetitions(path: Path, study: str, points: list[str]) -> dict[str, Any]:
    """A PLAN.json for `study` with these points: {"repetitions": {point: n}, "pilots": [...], ...}; PlanError naming
    the problem otherwise (another study, points missing or extra, a count that is no positive integer)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise PlanError(f"{path}: unreadable: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT:
        raise PlanError(f"{path}: not a repetitions plan (format {PLAN_FORMAT!r}; write one with "
                        "`rtclab study plan PILOT --write PLAN.json`)")
    if doc.get("study") != study:
        raise PlanError(f"{path} plans study {doc.get('study')!r}, not {study!r}")
    reps = doc.get("repetitions")
    if not isinstance(reps, dict):
        raise PlanError(f"{path}: no repetitions per point")
    problems = [f"{p}: {n!r} is not a positive whole number of runs" for p, n in reps.items()
                if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1)]
    missing = [p for p in points if p not in reps]
    extra = [p for p in reps if p not in points]
    if missing:
        problems.append(f"points of the study it has no count for: {', '.join(missing)}")
    if extra:
        problems.append(f"points it counts that the study does not have: {', '.join(extra)}")
    if problems:
        raise PlanError(f"{path} does not fit study {study}: " + "; ".join(problems))
    return doc
