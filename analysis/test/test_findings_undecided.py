"""Why an inconclusive claim is undecided (rtclab.findings_undecided) on small studies whose runs hold chosen values:
a mean on a band's edge (no number of runs decides it), intervals across an edge that more runs would clear (a
point's mean, a pair's B - A, B - A of one point in two studies, a sweep's slope: the planner's n from means, SDs and
a least-squares fit computed here, and the runs more at each point they read), one run only, INVALID runs used, a
claim whose points the study does not have, and a decided claim (nothing said); then the page's count of the reasons
and the runs and machine time that would decide them."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest
from test_findings import bad, make_study, ok

from rtclab import findings, findings_page, findings_undecided
from rtclab.study import plan, provenance

QUEUE = {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}
WHY = {"band_why": "a test's band", "source": "S", "says": "x", "study_file": "s/u.yaml"}
Q = {"loss": 0.0}


def claim(cid: str, study: str, points: list[str], band: list[float]) -> dict[str, Any]:
    return {"id": cid, "studies": [study], "kind": "range", "points": points, "measure": QUEUE, "range": band, **WHY}


CLAIMS = {"rule": {"min_n": 2}, "claims": [
    claim("edge", "t-u", ["near"], [0, 10]),  # 8, 10, 12: the mean on the edge 10
    claim("runs", "t-u", ["wide"], [0, 70]),  # 30, 45, 60: [7.7, 82.3] across 70, 25 from it
    claim("one", "t-u", ["single"], [0, 50]),  # one valid run
    claim("decided", "t-u", ["wide"], [0, 100]),  # agrees: nothing to say
    claim("invalid", "t-acc", ["p"], [0, 50]),  # an INVALID run used (--accept-invalid)
    claim("nowhere", "t-u", ["absent-*"], [0, 50]),  # no point of the study
    # B - A >= 0 of two points: 18 - 12 = 6, SDs 2 and 7, Welch's interval across 0
    {"id": "pair", "studies": ["t-u"], "kind": "difference", "pairs": [["pa", "pb"]], "measure": QUEUE,
     "range": [0, None], **WHY},
    # t-v's "wide" (42, 45, 48) against t-u's (30, 45, 60): B - A 0, its interval across -20 and 20
    {**claim("against", "t-u", ["wide"], [-20, 20]), "kind": "difference", "against": ["t-v"],
     "against_file": "s/v.yaml"},
    # the slope over x = 5, 25, 50 (each point's values +-4 about a line of slope 0.11): its interval across 0
    {"id": "trend", "studies": ["t-tr"], "kind": "trend", "direction": "increasing", "points": ["target-*"],
     "measure": QUEUE, "x": {"param": "duration_s", "scale": "linear"}, **WHY},
]}
SWEEP = {"target-5": [8, 16, 12], "target-25": [10, 18, 14], "target-50": [13, 21, 17]}


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("undecided")
    dirs = [make_study(tmp, "t-u", {
                "near": [ok(queue_ms=8, **Q), ok(queue_ms=10, **Q), ok(queue_ms=12, **Q)],
                "wide": [ok(queue_ms=30, **Q), ok(queue_ms=45, **Q), ok(queue_ms=60, **Q)],
                "single": [ok(queue_ms=5, **Q), [bad(queue_ms=1, **Q), bad(queue_ms=1, **Q)],
                           [bad(queue_ms=1, **Q), bad(queue_ms=1, **Q)]],
                "pa": [ok(queue_ms=v, **Q) for v in (10, 12, 14)],
                "pb": [ok(queue_ms=v, **Q) for v in (11, 18, 25)]}),
            make_study(tmp, "t-acc", {"p": [ok(queue_ms=10, **Q), ok(queue_ms=12, **Q),
                                            [bad(queue_ms=30, **Q), bad(queue_ms=14, **Q)]]},
                       accept=frozenset({"host_cpu_not_saturated"})),
            make_study(tmp, "t-v", {"wide": [ok(queue_ms=v, **Q) for v in (42, 45, 48)]}),
            make_study(tmp, "t-tr", {p: [ok(queue_ms=v, **Q) for v in vs] for p, vs in SWEEP.items()},
                       sets={p: f"duration_s: {p.split('-')[1]}" for p in SWEEP})]
    # t-u's attempts: one each for its 9 repetitions, 100 s of machine time each (t-acc has no attempts.jsonl)
    (dirs[0] / "attempts.jsonl").write_text("".join(
        json.dumps({"event": ev, "point": p, "rep": rep, "attempt": 1, "t": 0, "wall_s": 100.0}) + "\n"
        for p in ("near", "wide", "single", "pa", "pb") for rep in (1, 2, 3) for ev in ("start", "end")))
    claims = tmp / "claims.yaml"
    claims.write_text(json.dumps(CLAIMS))
    _, fs, studies = findings.findings(dirs, claims)
    by_name = {s.name: s for s in studies}
    text, _ = findings_page.page_text(dirs, claims)
    return {"u": {f.claim["id"]: findings_undecided.undecided(f, by_name, 2) for f in fs},
            "verdicts": {f.claim["id"]: f.verdict for f in fs}, "page": text}


def _sd(values: list[int]) -> float:
    return statistics.stdev(values)


def _trend_needed() -> int | None:
    """The planner's n for the sweep, from a least-squares fit over every run computed here."""
    xs = [float(p.split("-")[1]) for p in SWEEP for _ in SWEEP[p]]
    ys = [float(v) for p in SWEEP for v in SWEEP[p]]
    xbar, ybar = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - xbar) ** 2 for x in xs)
    slope = sum((x - xbar) * (y - ybar) for x, y in zip(xs, ys)) / sxx
    residual_sd = (sum((y - ybar - slope * (x - xbar)) ** 2 for x, y in zip(xs, ys)) / (len(xs) - 2)) ** 0.5
    return plan.runs_needed(CLAIMS["claims"][8], slope, [residual_sd], 0.8, 30, 2,
                            plan.Slope(tuple(float(p.split("-")[1]) for p in SWEEP)))


NEEDED: dict[str, int | None] = {  # the planner's n for each interval, from means and SDs computed here
    "runs": plan.runs_needed(CLAIMS["claims"][1], 45.0, [15.0], 0.8, 30, 2),
    "pair": plan.runs_needed(CLAIMS["claims"][6], 18.0 - 12.0, [_sd([10, 12, 14]), _sd([11, 18, 25])], 0.8, 30, 2),
    "against": plan.runs_needed(CLAIMS["claims"][7], 45.0 - 45.0, [15.0, _sd([42, 45, 48])], 0.8, 30, 2),
    "trend": _trend_needed(),
}


def needed() -> dict[str, int]:
    """NEEDED, each a number more than the 3 runs every point has and within the cap (else the case tests nothing)."""
    out = {k: v for k, v in NEEDED.items() if v is not None and 3 < v <= 30}
    assert len(out) == len(NEEDED), NEEDED
    return out


def test_pairs_two_studies_and_sweeps_say_the_runs_at_each_of_their_points(found: dict[str, Any]) -> None:
    n = needed()
    [pair] = found["u"]["pair"]
    assert pair.text == (f"pb - pa: about {n['pair']} runs at each point of the two would decide it at the "
                         "variance measured (now 3)")
    assert pair.more == {("t-u", "pa"): n["pair"] - 3, ("t-u", "pb"): n["pair"] - 3}
    [against] = found["u"]["against"]
    assert against.estimate == "B - A at wide" and against.reason == findings_undecided.RUNS
    assert against.more == {("t-u", "wide"): n["against"] - 3, ("t-v", "wide"): n["against"] - 3}
    [trend] = found["u"]["trend"]
    assert trend.text == (f"slope (per unit of duration_s): about {n['trend']} runs at each of its points would "
                          "decide it at the variance measured (now 9 runs in all)")
    assert trend.more == {("t-tr", p): n["trend"] - 3 for p in SWEEP}


def test_a_mean_on_the_edge_is_undecided_by_its_value(found: dict[str, Any]) -> None:
    [u] = found["u"]["edge"]
    assert (u.estimate, u.reason) == ("near", findings_undecided.EDGE)
    assert u.text == ("near: near the edge: the mean 10 is 0 from 10; at the variance measured, 30 runs at the point "
                      "would still leave its interval across 10 (now 3)")


def test_an_interval_across_an_edge_says_the_runs_that_would_decide_it(found: dict[str, Any]) -> None:
    [u] = found["u"]["runs"]
    mean, sd = statistics.mean([30, 45, 60]), statistics.stdev([30, 45, 60])  # 45, 15
    n = plan.runs_needed(CLAIMS["claims"][1], mean, [sd], 0.8, 30, 2)
    assert n == needed()["runs"]
    assert (u.estimate, u.reason) == ("wide", findings_undecided.RUNS)
    assert u.text == f"wide: about {n} runs at the point would decide it at the variance measured (now 3)"


def test_too_few_runs_invalid_runs_and_no_point_each_say_so(found: dict[str, Any]) -> None:
    [one] = found["u"]["one"]
    assert (one.reason, one.text) == (findings_undecided.RUNS, "single: n = 1 < 2: no confidence interval")
    [inv] = found["u"]["invalid"]
    assert (inv.reason, inv.text) == (findings_undecided.DATA, "p: uses 1 INVALID run(s)")
    [nowhere] = found["u"]["nowhere"]
    assert nowhere.reason == findings_undecided.DATA and "absent-*" in nowhere.text


def test_a_decided_claim_has_nothing_undecided(found: dict[str, Any]) -> None:
    assert found["verdicts"]["decided"] == "agrees" and found["u"]["decided"] == []


def test_a_claim_takes_its_worst_reason_and_the_page_counts_them(found: dict[str, Any]) -> None:
    U = findings_undecided.Undecided
    assert findings_undecided.claim_reason([U("a", "runs", ""), U("b", "edge", "")]) == "edge"
    assert findings_undecided.claim_reason([U("a", "runs", ""), U("b", "data", ""), U("c", "edge", "")]) == "data"
    assert findings_undecided.claim_reason([]) is None
    page = found["page"]
    # edge: edge; runs, one, pair, against, trend: runs; invalid, nowhere: data
    assert ("Why the 8 inconclusive claims are (each claim's section says it of every undecided interval; "
            "docs/studies.md \"Findings\"): 5 for the number of runs") in page
    assert "1 for a value too near a band's edge for its variance" in page and "2 for their data" in page
    # the runs more: each point to the most any of its intervals asks (t-u's "wide" by two claims), priced at t-u's
    # 1500 s over 15 repetitions; t-v and t-tr have no attempts.jsonl (their 4 points not priced)
    n = needed()
    more = findings_undecided.runs_to_decide([u for items in found["u"].values() for u in items])
    assert more == {("t-u", "wide"): max(n["runs"], n["against"]) - 3, ("t-v", "wide"): n["against"] - 3,
                    ("t-u", "pa"): n["pair"] - 3, ("t-u", "pb"): n["pair"] - 3,
                    **{("t-tr", p): n["trend"] - 3 for p in SWEEP}}
    priced = sum(n for (study, _), n in more.items() if study == "t-u")
    assert (f"would be decided (power 0.8) by about {sum(more.values())} runs more at 7 points of 3 studies: about "
            f"{provenance.duration_text(priced * 100.0)} of machine time at each study's own cost per repetition "
            "(4 points of studies without attempts.jsonl not priced).") in page
    assert "1 interval(s) have too few runs for a standard deviation" in page  # "single", n = 1
    section = page.split("### edge", 1)[1].split("###", 1)[0]
    assert "Undecided for a value too near a band's edge for its variance;" in section
    assert "- edge: near: near the edge: the mean 10 is 0 from 10;" in section
