"""The findings page's "why" sections (findings_why.py): each switched point against the baseline point of the same
other settings, B - A with Welch's interval computed here by hand, judged raises / lowers / no effect / undecided; the
entries checked; the section on the page. Studies are made as test_findings.py makes them: a study file with two
axes, run directories with a hand-written metrics.json, study.json from the aggregation itself."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_findings import T975, make_study, metrics, ok

from rtclab import findings, findings_page, findings_why
from rtclab.study import aggregate as agg
from rtclab.study import studydir
from rtclab_study import plan as planmod
from rtclab_study import spec

# Each point's three runs' queuing delay (ms): qdisc a's switch x triples it, y leaves it; qdisc b's x lowers it, y
# scatters it.
QUEUE: dict[tuple[str, str], list[float]] = {
    ("a", "default"): [10, 12, 14], ("a", "x"): [30, 32, 34], ("a", "y"): [10, 12, 14],
    ("b", "default"): [10, 12, 14], ("b", "x"): [2, 4, 6], ("b", "y"): [10, 20, 30]}
MEASURE = {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}
ENTRY = {"id": "why-q", "explains": ["q-claim"], "question": "which switch moves the queue", "studies": ["sw"],
         "study_file": "studies/sw.yaml", "axis": "trial", "baseline": "default",
         "components": {"x": "component x off", "y": "component y wider"}, "measure": MEASURE, "margin": 5,
         "margin_why": "half a packet's time"}


def make_axis_study(tmp: Path) -> Path:
    f = tmp / "sw.yaml"
    f.write_text(yaml.safe_dump({
        "name": "sw", "base": {"duration_s": 10}, "repetitions": 3, "max_attempts": 1,
        "axes": [{"path": "duration_s", "name": "qdisc", "labels": ["a", "b"], "values": [10, 11]},
                 {"path": "call.field_trials", "name": "trial", "labels": ["default", "x", "y"],
                  "values": ["", "X/1/", "Y/1/"]}]}))
    out = tmp / "sw"
    plan = planmod.make(spec.load(f))
    planmod.write(plan, out)
    for p in json.loads((out / "plan.json").read_text())["points"]:
        for rep, q in enumerate(QUEUE[(p["labels"]["qdisc"], p["labels"]["trial"])], start=1):
            d = studydir.attempt_dir(out, p["name"], rep, 1)
            d.mkdir(parents=True)
            (d / "manifest.json").write_text(json.dumps({
                "status": "complete", "id": d.name, "validity": {"valid": True, "checks": []}}))
            (d / "metrics.json").write_text(json.dumps(metrics(queue_ms=q, loss=0.0)))
    agg.aggregate(out, analyse_missing=False)
    return out


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> findings.Study:
    return findings.read_study(make_axis_study(tmp_path_factory.mktemp("why")))


def welch_by_hand(a: list[float], b: list[float], t: float) -> tuple[float, float, float]:
    """B - A and its interval for two samples of 3 with equal variances (Welch's df is then 4)."""
    var = lambda xs: sum((x - sum(xs) / 3) ** 2 for x in xs) / 2  # noqa: E731
    diff = sum(b) / 3 - sum(a) / 3
    hw = t * math.sqrt(var(a) / 3 + var(b) / 3)
    return diff, diff - hw, diff + hw


def test_each_switch_against_its_baseline_by_hand(study: findings.Study) -> None:
    why = findings_why.evaluate(ENTRY, {"sw": study}, min_n=2)
    got = {(e.setting, e.component): e for e in why.effects}
    assert sorted(got) == [("qdisc a", "x"), ("qdisc a", "y"), ("qdisc b", "x"), ("qdisc b", "y")]
    for (q, comp), verdict in {("a", "x"): "raises", ("a", "y"): "no effect", ("b", "x"): "lowers"}.items():
        e = got[(f"qdisc {q}", comp)]
        diff, lo, hi = welch_by_hand(QUEUE[(q, "default")], QUEUE[(q, comp)], T975[4])
        assert (e.diff, e.lo, e.hi) == pytest.approx((diff, lo, hi)) and e.verdict == verdict, (q, comp, e)
    # b's y: the same mean plus 8 ms, a wide interval across 0 and past the margin: undecided
    e = got[("qdisc b", "y")]
    assert e.diff == pytest.approx(8.0) and e.lo is not None and e.hi is not None
    assert e.lo < 0 < e.hi and e.verdict == "undecided"


def test_the_rule_at_its_edges() -> None:
    assert findings_why.judge(0.1, 3.0, 5) == "raises" and findings_why.judge(-3.0, -0.1, 5) == "lowers"
    assert findings_why.judge(-5.0, 5.0, 5) == "no effect" and findings_why.judge(-5.1, 4.0, 5) == "undecided"
    assert findings_why.judge(None, None, 5) == "undecided"


def test_a_point_without_an_interval_is_undecided_with_its_reason(tmp_path: Path) -> None:
    """One run at each point: no interval, the reason on the row, never a verdict made from a single run."""
    out = make_study(tmp_path, "one", {"trial-default": [ok(queue_ms=10, loss=0.0)],
                                       "trial-x": [ok(queue_ms=50, loss=0.0)]})
    plan = json.loads((out / "plan.json").read_text())
    for p in plan["points"]:
        p["labels"] = {"trial": p["name"].split("-")[1]}
    (out / "plan.json").write_text(json.dumps(plan))
    why = findings_why.evaluate({**ENTRY, "studies": ["one"]}, {"one": findings.read_study(out)}, min_n=2)
    [e] = why.effects
    assert e.verdict == "undecided" and "n = 1 < 2" in e.why and e.diff == pytest.approx(40.0)
    assert e.setting == "the study's one setting"


def test_entries_are_checked() -> None:
    doc: dict[str, Any] = {"claims": [{"id": "q-claim"}], "why": [
        {**ENTRY, "explains": ["nope"], "margin": 0, "components": {"default": "the baseline"}}]}
    problems = findings_why.check_entries(doc, {"q-claim"})
    assert any("explains nope" in p for p in problems) and any("margin must be" in p for p in problems)
    assert any("not the baseline" in p for p in problems)
    del doc["why"][0]["axis"]
    assert "why-q: no axis" in findings_why.check_entries(doc, {"q-claim"})
    with pytest.raises(findings.FindingsError, match="why: why-q: no axis"):
        findings_why.evaluate_all(doc, {}, 2)


def test_the_section_on_the_page(study: findings.Study) -> None:
    lines = findings_why.markdown([findings_why.evaluate(ENTRY, {"sw": study}, 2),
                                   findings_why.evaluate({**ENTRY, "id": "why-other", "studies": ["gone"]}, {}, 2)])
    text = "\n".join(lines)
    assert "## Why" in text and "### why-q" in text and "[q-claim](#q-claim)" in text
    assert "`x`: component x off" in text and "The margin: +-5. half a packet's time" in text
    assert "With qdisc a: `x` raises it by +20.000 [" in text and "no effect beyond +-5: `y`" in text
    assert "With qdisc b: `x` lowers it by -8.000 [" in text and "undecided: `y`" in text
    assert "| qdisc a | `x` | 12 | 32 | +20.000 |" in text
    assert "### why-other" in text and "rtclab study run studies/sw.yaml" in text


def test_the_shipped_entries_are_valid_and_on_the_page() -> None:
    """studies/findings.yaml's why entries name claims it has and study files that exist; the committed page has
    their sections (regenerated from the archive by test_findings' page check)."""
    doc = findings.load_claims(findings.DEFAULT_CLAIMS)
    assert findings_why.check_entries(doc, {c["id"] for c in doc["claims"]}) == []
    assert doc.get("why"), "the findings page explains its deviations: at least one why entry"
    page = (findings.REPO / "docs" / "findings.md").read_text()
    for w in doc["why"]:
        assert (findings.REPO / w["study_file"]).exists(), w["study_file"]
        assert f"### {w['id']}" in page


def test_each_deviation_says_whether_a_measured_why_explains_it(study: findings.Study) -> None:
    """A deviation explained by a why entry whose study ran links it; one whose why study has not run says so; one no
    entry explains says it is not studied yet; and the top of the page counts and names them."""
    whys = [findings_why.evaluate(ENTRY, {"sw": study}, 2),
            findings_why.evaluate({**ENTRY, "id": "why-later", "explains": ["r-claim"], "studies": ["gone"]}, {}, 2)]
    explained, measured = findings_why.explained_by(whys), {w.entry["id"] for w in whys if w.study is not None}
    found = [findings.Finding({"id": i, "source": "S", "says": "s", "kind": "range",
                               "measure": MEASURE, "range": [0, 1]}, study, None, [], "deviates")
             for i in ("q-claim", "r-claim", "s-claim")]
    assert findings_page._why_summary(found, explained, measured) == (
        " Of the 3 deviations, 1 have a why (\"Why\" below: components switched one at a time); their why study not "
        "run yet: r-claim; not studied yet: s-claim.")
    sections = {f.claim["id"]: "\n".join(findings_page._claim_section(f, explained.get(f.claim["id"], []),
                                                                      measured, [])) for f in found}
    assert "Why: [why-q](#why-q) (components switched one at a time)." in sections["q-claim"]
    assert "Why: [why-later](#why-later) (its study not run yet) (components" in sections["r-claim"]
    assert "Why: not studied yet: no entry of the claims file's `why`" in sections["s-claim"]
    agreeing = [findings.Finding(found[0].claim, study, None, [], "agrees")]
    assert findings_page._why_summary(agreeing, explained, measured) == ""
