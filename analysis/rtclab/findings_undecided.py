"""Why each inconclusive claim of the findings page is undecided, and what would decide it (docs/studies.md,
"Findings"). Per interval its verdict left undecided (a point's mean, a pair's B - A, a sweep's slope), one of three
reasons:

- runs: the number of runs. Either too few for a standard deviation, or an interval across a band's edge that about N
  runs a point would decide at the variance measured;
- edge: the value itself. Its interval lies across an edge that even the cap's runs a point would leave it across
  at the variance measured: the value is too near the band's edge (a slope: 0) for its variance, and more runs
  within the cap only narrow the interval around the edge;
- data: no value, INVALID runs used, a measure that matches nothing, no point or pair of the study.

The numbers are the planner's (rtclab.study.plan: its sampling model and the findings' rule, called, not restated),
with the study as its own pilot (its own points: a trend's design is the sweep it ran), the standard deviation as
measured (no upper confidence limit) and power 0.8. A claim's reason is its worst interval's: data, then edge, then
runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from .findings import INCONCLUSIVE, Finding, Row, Study
from .study import plan

RUNS, EDGE, DATA = "runs", "edge", "data"
POWER = plan.DEFAULT_POWER
CAP = plan.DEFAULT_CAP
UCL = 0.0  # the SD as measured: this says what the runs show, not a plan's safety margin
ORDER = (DATA, EDGE, RUNS)  # a claim's reason: its worst interval's
IN_WORDS = {RUNS: "the number of runs", EDGE: "a value too near a band's edge for its variance", DATA: "its data"}


@dataclass
class Undecided:
    estimate: str  # the interval: a point, "B - A" of a pair, "B - A at" a point, or the slope
    reason: str  # RUNS, EDGE or DATA
    text: str  # in words, with the numbers
    # (study, point) -> the runs more there that would decide it, when the planner gives a number (reason RUNS)
    more: dict[tuple[str, str], int] = field(default_factory=dict)
    few_runs: bool = False  # too few runs for a standard deviation: no number of runs can be planned yet


def undecided(f: Finding, studies: dict[str, Study], min_n: int) -> list[Undecided]:
    """The undecided intervals of an inconclusive claim (empty for any other verdict), each with its reason."""
    if f.verdict != INCONCLUSIVE or f.study is None:
        return []
    if not f.rows:  # no point or pair of the study matches the claim (findings' note says which)
        return [Undecided("-", DATA, f.note)]
    c = f.claim
    if c["kind"] == "trend":
        return [_judged(f, e, min_n) for e in plan.estimates(c, studies, f.study)]
    open_rows = {r.point: r for r in f.rows if r.verdict == INCONCLUSIVE}
    out = []
    for e in plan.estimates(c, studies, f.study):
        r = open_rows.get(e.label.removeprefix("B - A at "))
        if r is not None:
            out.append(_from_row(r, e.label) if r.why else _judged(f, e, min_n))
    # Said, never left out: an inconclusive claim none of whose rows the planner's estimates name.
    return out or [Undecided("-", DATA, f.note or "no interval of the claim's rule could be read")]


def claim_reason(items: list[Undecided]) -> str | None:
    """The claim's reason: its worst interval's (data, then edge, then runs); None when none is undecided."""
    return next((x for x in ORDER if any(u.reason == x for u in items)), None)


def _from_row(r: Row, label: str) -> Undecided:
    """An interval findings could not judge: too few runs for one (n < min_n) is the number of runs; no value,
    INVALID runs used or a measure that matches nothing is the data."""
    few = r.why.startswith("n = ")  # findings.inconclusive_reason's last reason, after every data reason
    return Undecided(label, RUNS if few else DATA, f"{label}: {r.why}", few_runs=few)


def _judged(f: Finding, e: plan.Estimate, min_n: int) -> Undecided:
    """An interval the rule judged and left across an edge (or a trend's slope), by the planner's numbers."""
    if e.why:
        return Undecided(e.label, RUNS if e.few_runs else DATA, f"{e.label}: {e.why}", few_runs=e.few_runs)
    claim = f.claim
    row = plan.estimate_row(claim, e, POWER, UCL, CAP, min_n)
    mean = row.mean
    assert mean is not None
    trend = claim["kind"] == "trend"
    now = f"now {min(n for n in row.pilot_n if n is not None)}" + (" runs in all" if trend else "")
    per = {"trend": "each of its points", "difference": "each point of the two"}.get(claim["kind"], "the point")
    if row.n_needed is None:
        edge = min(plan.edges(claim), key=lambda x: abs(mean - x))
        what = "the slope" if trend else ("B - A" if claim["kind"] == "difference" else "the mean")
        return Undecided(e.label, EDGE, f"{e.label}: near the edge: {what} {mean:.4g} is {row.distance:.3g} from "
                                        f"{edge:g}; at the variance measured, {CAP} runs at {per} would still leave "
                                        f"its interval across {edge:g} ({now})")
    return Undecided(e.label, RUNS, f"{e.label}: about {row.n_needed} runs at {per} would decide it at the variance "
                                    f"measured ({now})", _more(f, e, row.n_needed))


def _more(f: Finding, e: plan.Estimate, needed: int) -> dict[tuple[str, str], int]:
    """The runs more, per (study, point), that bring each point the interval reads to `needed`: a point's own mean, a
    pair's two points, one point in the claim's study and in the study it is set against, every point of a sweep."""
    assert f.study is not None
    if f.claim["kind"] == "trend":
        have = {r.point: int((r.value or {}).get("n") or 0) for r in f.rows}
        now = [(f.study.name, p, have.get(p, 0)) for p in e.points]
    elif f.against is not None:  # B - A at a point of two studies: pilot_n is [A's n, B's n]
        now = [(s.name, e.points[0], int(n or 0)) for s, n in zip((f.study, f.against), e.pilot_n)]
    else:  # a point, or a pair's two points (pilot_n in the order of e.points)
        now = [(f.study.name, p, int(n or 0)) for p, n in zip(e.points, e.pilot_n)]
    return {(study, p): needed - n for study, p, n in now if needed > n}


def runs_to_decide(items: list[Undecided]) -> dict[tuple[str, str], int]:
    """Per (study, point), the runs more that would decide every interval undecided for runs that the planner gives a
    number for: the most any of them asks there (the intervals sharing a point share its runs)."""
    out: dict[tuple[str, str], int] = {}
    for u in items:
        for key, n in u.more.items():
            out[key] = max(out.get(key, 0), n)
    return out
