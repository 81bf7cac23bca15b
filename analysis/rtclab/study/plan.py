"""`rtclab study plan DIR`: the repetitions per point a study needs for each claim of studies/findings.yaml that reads
it to be decided, from a pilot's measured variance (sample-size planning from a pilot, fixed before the study runs;
docs/studies.md, "Planning repetitions from a pilot").

For every claim that reads the planned study and every estimate its verdict reads (a point's mean for a range claim;
B - A at a point for a difference claim; last - first for a trend), the pilot gives the estimate's value and its
per-run standard deviation(s). The SD is replaced by its 100(1 - gamma) % upper confidence limit (Browne 1995), and n
is the smallest number of runs per point at which the 95 % interval the verdict judges is decided (straddles none of
the rule's edges) with probability `power` when the true value is the pilot's (`decision_power`; for one edge this is
n >= ((t(1 - alpha/2, n - 1) + t(power, n - 1)) s / d)^2, d the distance to the edge). n is searched from the rule's
min_n up to the cap; beyond it the estimate "cannot decide with <= cap runs". The pilot's runs only estimate the SD:
the planned study runs into a directory of its own and its runs alone make the interval.

The claims and the pilots are read through findings.py's public functions (`load_claims`, `read_study`,
`measure_point`, `points_of`); its verdict rule is restated in one place here: `edges` (what an interval must not
straddle), `estimates` (what the verdict reads) and `decision_power` (the interval's model: a mean, or Welch's
difference of two). A change of the rule there (e.g. clipping at natural bounds, a regression slope for trends) is
followed by changing these three. Nothing here runs anything."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import findings
from .chi2dist import chi2_quantile
from .tdist import t_cdf, t_quantile

ALPHA = 0.05  # the findings' intervals are 95 %
DEFAULT_POWER = 0.8
DEFAULT_UCL = 0.8  # the SD's one-sided upper confidence limit: 80 %, as Browne (1995)
DEFAULT_CAP = 30
PLAN_FORMAT = "rtclab-repetitions-plan"
PLAN_FORMAT_VERSION = 1


class PlanError(Exception):
    """A pilot or claims file that cannot be planned from (the CLI exits 2 with this message)."""


# ---- the sample size -----------------------------------------------------------------------------------------------

def sd_upper_limit(sd: float, n: int, confidence: float) -> float:
    """The one-sided `confidence` upper confidence limit of a normal population's SD from a sample's SD over n values:
    sd * sqrt((n - 1) / chi2(1 - confidence, n - 1)), since (n - 1) s^2 / sigma^2 is chi-square with n - 1 df."""
    if n < 2:
        raise ValueError(f"an SD needs 2 values at least (got n = {n})")
    if confidence <= 0:  # no correction: the pilot's SD as it is
        return sd
    return sd * math.sqrt((n - 1) / chi2_quantile(1.0 - confidence, n - 1))


def welch_df(sds: list[float], n: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of means, each over n runs."""
    num = sum(s * s for s in sds) ** 2
    den = sum(s ** 4 for s in sds) / (n - 1)
    return (n - 1) * len(sds) if den == 0 else num / den  # all SDs 0: the pooled df (the width is 0 anyway)


def decision_power(claim: dict[str, Any], mean: float, sds: list[float], n: int) -> float:
    """The probability that the claim's 95 % interval over n runs per point is decided when the estimate's true value
    is `mean` and its per-run SDs `sds`: 1 - the sum over the rule's edges e of the probability that the interval
    straddles e, 1 - T_df(|mean - e| / SE - t(1 - alpha/2, df)) with SE = sqrt(sum sd^2 / n) and df = n - 1 for one
    mean, Welch's for a difference of two (the t approximation behind n = ((t(1 - alpha/2) + t(power)) s / d)^2, to
    which it reduces for one edge; with two edges near, as a band's, each must be missed less often)."""
    df = float(n - 1) if len(sds) == 1 else welch_df(sds, n)
    se = math.sqrt(sum(s * s for s in sds) / n)
    if se == 0.0:  # every pilot run gave the same value: a zero-width interval, decided by the rule at any n
        return 1.0
    t_a = t_quantile(1.0 - ALPHA / 2.0, df)
    miss = sum(1.0 - t_cdf(abs(mean - e) / se - t_a, df) for e in edges(claim))
    return max(0.0, 1.0 - miss)


def runs_needed(claim: dict[str, Any], mean: float, sds: list[float], power: float, cap: int,
                min_n: int) -> int | None:
    """The fewest runs per point (min_n to cap) at which the claim's interval is decided with probability `power`
    (decision_power); None when even cap runs do not reach it."""
    for n in range(max(min_n, 2), cap + 1):
        if decision_power(claim, mean, sds, n) >= power:
            return n
    return None


# ---- the rule: what makes an interval decided (findings.py's verdicts, one place) ---------------------------------

def edges(claim: dict[str, Any]) -> list[float]:
    """The values the claim's interval must not straddle for its verdict to be decided (agrees or deviates): a range's
    or a difference's band edges (findings.interval_verdict: inside agrees, wholly outside deviates); 0 for a trend
    (findings.evaluate: last - first wholly on one side of 0)."""
    if claim["kind"] == "trend":
        return [0.0]
    return [float(claim["range"][0]), float(claim["range"][1])]


@dataclass
class Estimate:
    """One value a claim's verdict reads, and the planned study's points whose runs make it."""
    label: str  # a point, "B - A at point", or "last - first"
    points: list[str]  # the planned study's points it needs n runs at
    parts: list[dict[str, Any]]  # measure_point of each pilot point it reads (one; two for a difference or trend)


def estimates(claim: dict[str, Any], pilots: dict[str, findings.Study], planned_points: list[str]) -> list[Estimate]:
    """The estimates a claim's verdict reads, with their pilot statistics: per point (range), per shared point (B - A,
    difference), or the first and last of the sweep (trend)."""
    measure = claim["measure"]
    own = _study_of(claim["studies"], pilots)
    pts = [p for p in planned_points if _matches(p, claim["points"])]
    if not pts:
        return []
    if claim["kind"] == "range":
        return [Estimate(p, [p], [_measured(own, p, measure)]) for p in pts]
    if claim["kind"] == "difference":
        other = _study_of(claim.get("against") or [], pilots)
        return [Estimate(f"B - A at {p}", [p], [_measured(own, p, measure), _measured(other, p, measure)])
                for p in pts]
    if len(pts) < 2:
        return [Estimate("last - first", pts, [_measured(own, p, measure) for p in pts])]
    return [Estimate(f"{pts[-1]} - {pts[0]}", [pts[0], pts[-1]],
                     [_measured(own, pts[0], measure), _measured(own, pts[-1], measure)])]


def _study_of(names: list[str], pilots: dict[str, findings.Study]) -> findings.Study | None:
    return next((pilots[n] for n in names if n in pilots), None)


def _matches(point: str, patterns: list[str]) -> bool:
    """A point the claim reads: findings.points_of's match (glob patterns over point names)."""
    return any(fnmatch.fnmatchcase(point, pat) for pat in patterns)


def _measured(s: findings.Study | None, point: str, measure: dict[str, Any]) -> dict[str, Any]:
    if s is None:
        return {"point": point, "stat": None, "why": "its pilot was not given"}
    if point not in findings.points_of(s, ["*"]):
        return {"point": point, "stat": None, "why": f"not a point of the pilot {s.name}"}
    m = findings.measure_point(s, point, measure)
    if m["stat"] is None:
        m["why"] = "no value in the pilot (no valid run)"
    elif m["invalid_used"]:
        m["stat"], m["why"] = None, f"the pilot uses {m['invalid_used']} INVALID run(s)"
    elif m["stat"]["n"] < 2 or m["stat"].get("sd") is None:
        m["why"] = f"pilot n = {m['stat']['n']}: no SD (the pilot needs 2 runs at least here)"
    return m


# ---- the plan ------------------------------------------------------------------------------------------------------

@dataclass
class TargetStudy:
    """The study the plan is for, as its study file says (the CLI loads it)."""
    name: str
    file: str  # relative to the repository root
    points: list[str]
    duration_s: dict[str, float]  # each point's call, s
    repetitions: int  # the study file's fixed count


@dataclass
class Row:
    claim: str
    kind: str
    estimate: str
    points: list[str]
    pilot_n: list[int | None]
    mean: float | None  # the estimate's pilot value
    sds: list[float | None]  # the pilot SD of each part
    sds_upper: list[float] | None  # their upper confidence limits, used for n
    distance: float | None  # from the mean to the nearest edge of the rule (band edge, or 0)
    n_needed: int | None
    why: str  # empty when n_needed is a number


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


def _row(claim: dict[str, Any], e: Estimate, power: float, ucl: float, cap: int, min_n: int) -> Row:
    stats = [p.get("stat") for p in e.parts]
    row = Row(claim=claim["id"], kind=claim["kind"], estimate=e.label, points=e.points,
              pilot_n=[None if st is None else st["n"] for st in stats],
              sds=[None if st is None else st.get("sd") for st in stats], mean=None, sds_upper=None, distance=None,
              n_needed=None, why=next((p["why"] for p in e.parts if p.get("why")), ""))
    if claim["kind"] == "trend" and len(e.parts) < 2:
        row.why = "one point: no trend"
    if row.why:
        if len(stats) == 1 and stats[0] is not None:
            row.mean = stats[0]["mean"]
        return row
    means = [float(st["mean"]) for st in stats if st is not None]
    row.mean = means[0] if len(means) == 1 else means[1] - means[0]  # B - A, or last - first
    row.sds_upper = [sd_upper_limit(float(st["sd"]), int(st["n"]), ucl) for st in stats if st is not None]
    row.distance = min(abs(row.mean - x) for x in edges(claim))
    row.n_needed = runs_needed(claim, row.mean, row.sds_upper, power, cap, min_n)
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
    rows = []
    for c in claims:
        found = estimates(c, pilots_by_name, target.points)
        rows += [_row(c, e, power, ucl, cap, min_n) for e in found]
        if not found:  # said, not skipped: a claim whose points the study does not have decides nothing here
            rows.append(Row(claim=c["id"], kind=c["kind"], estimate="-", points=[], pilot_n=[], mean=None, sds=[],
                            sds_upper=None, distance=None, n_needed=None,
                            why=f"no point of {target.name} matches {', '.join(c['points'])}"))
    reps, reasons = _per_point(target, rows, cap)
    overhead, ratio = _pilot_costs(first)
    return Plan(target=target, pilots=pilots, claims_file=str(claims_file), power=power, ucl=ucl, cap=cap,
                min_n=min_n, rows=rows, repetitions=reps, reasons=reasons, overhead_s=overhead,
                attempts_per_run=ratio, claims=[c["id"] for c in claims])


def _per_point(target: TargetStudy, rows: list[Row], cap: int) -> tuple[dict[str, int], dict[str, str]]:
    """Per point the largest n its claims need, capped at `cap`: an estimate that cannot be decided within the cap
    gets the cap (its interval as narrow as the budget allows); a point no estimate can plan for (no pilot SD) or that
    no claim decides on keeps the study file's count."""
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
             + (f"; its calls are x{tf:g} of the study's: its SD is that of shorter calls" if tf != 1.0 else "") + ")"]
    lines += [f"  also read: {s.name} ({s.dir})" for s in plan.pilots[1:]]
    lines.append(f"method: the fewest runs per point at which the claim's 95 % interval is decided with power "
                 f"{plan.power:g} if the true value is the pilot's, using the pilot SD's "
                 f"{plan.ucl * 100:g} % upper confidence limit (Browne 1995); from min_n {plan.min_n} to the cap "
                 f"{plan.cap}; the pilot's runs are not part of the study's intervals (docs/studies.md)"
                 if plan.ucl > 0 else
                 f"method: the fewest runs per point at which the claim's 95 % interval is decided with power "
                 f"{plan.power:g} if the true value and SD are the pilot's (no correction of the SD); from min_n "
                 f"{plan.min_n} to the cap {plan.cap}")
    lines.append(f"claims reading the study: {', '.join(plan.claims)}")
    lines.append("")
    body = [[r.claim, r.estimate, " / ".join("-" if n is None else str(n) for n in r.pilot_n), _g(r.mean),
             " / ".join(_g(s) for s in r.sds), " / ".join(_g(s) for s in r.sds_upper or []) or "-", _g(r.distance),
             str(r.n_needed) if r.n_needed is not None else r.why] for r in plan.rows]
    ucl = f"s {plan.ucl * 100:g} % UCL" if plan.ucl > 0 else "s used"
    lines += _table(["claim", "estimate", "pilot n", "mean", "s", ucl, "distance", "n needed"], body)
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
                   "rule": "fewest n in [min_n, cap] with 1 - sum over the rule's edges e of (1 - T_df(|mean - e| / SE"
                           " - t(1 - alpha/2, df))) >= power, SE = sqrt(sum of upper-limit SD^2 / n)"},
        "rows": [{"claim": r.claim, "kind": r.kind, "estimate": r.estimate, "points": r.points,
                  "pilot_n": r.pilot_n, "mean": r.mean, "sd": r.sds, "sd_upper": r.sds_upper,
                  "distance": r.distance, "n_needed": r.n_needed, "why": r.why or None} for r in plan.rows],
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
