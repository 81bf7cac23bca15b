"""The findings page's "Measured" sections (findings_measured.py): per point of a study, each measure's mean, its 95 %
interval computed here by hand (Student's t over the point's runs) and n; a measure with no value shown as missing
with its reason, never as 0; the entries checked; the section on the page. The study is made as
test_findings_why.py makes it (hand-written metrics.json, study.json from the aggregation itself)."""
from __future__ import annotations

import math
import re

import pytest
from test_findings import T975
from test_findings_why import QUEUE, make_axis_study

from rtclab import findings, findings_measured

ENTRY = {"id": "m", "title": "A measured table", "what": "The queue per point.", "studies": ["sw"],
         "study_file": "studies/sw.yaml",
         "measures": [{"label": "queue", "unit": "ms",
                       "measure": {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}},
                      {"label": "nothing", "measure": {"flow": "forward:nothing", "phase": "all", "metric": "x"}}]}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> findings.Study:
    return findings.read_study(make_axis_study(tmp_path_factory.mktemp("measured")))


def test_each_point_mean_and_interval_by_hand(study: findings.Study) -> None:
    [got] = findings_measured.evaluate_all({"measured": [ENTRY]}, {"sw": study})
    assert len(got.rows) == 6
    for point, (queue, nothing) in got.rows:
        labels = study.point_plan(point)["labels"]
        xs = QUEUE[(labels["qdisc"], labels["trial"])]
        mean = sum(xs) / 3
        hw = T975[2] * math.sqrt(sum((x - mean) ** 2 for x in xs) / 2 / 3)
        assert findings_measured.cell(queue) == f"{mean:.3g} [{mean - hw:.3g}, {mean + hw:.3g}] (n 3)", point
        # Clipped to the natural bounds (a delay >= 0): a CI from 0 when the t-interval reaches below it.
        assert findings_measured.cell(queue, ENTRY["measures"][0]["measure"]).endswith(
            f"[{max(mean - hw, 0):.3g}, {mean + hw:.3g}] (n 3)")
        # A flow the runs do not have: missing, with the reason, never 0.
        assert findings_measured.cell(nothing).startswith("- (the measure matches nothing: no flow forward:nothing")


def test_the_section_and_a_study_not_given() -> None:
    [x] = findings_measured.evaluate_all({"measured": [ENTRY]}, {})
    text = "\n".join(findings_measured.markdown([x]))
    assert "## Measured" in text and "### m" in text
    assert "Not run: no study read holds `sw`" in text and "    rtclab study run studies/sw.yaml" in text


def test_the_section_has_one_row_per_point(study: findings.Study) -> None:
    lines = findings_measured.markdown(findings_measured.evaluate_all({"measured": [ENTRY]}, {"sw": study}))
    assert "| point | queue (ms) | nothing |" in lines
    assert sum(1 for line in lines if line.startswith("| ") and "(n 3)" in line) == 6


@pytest.mark.parametrize("change, problem", [
    ({"measures": []}, "measures must be a list"),
    ({"measures": [{"measure": {"flow": "x"}}]}, "measures[0] needs a label"),
    ({"measures": [{"label": "q", "measure": {"metric": "x"}}]}, "measures[0] (q) needs exactly one of"),
    ({"title": None}, None),
])
def test_bad_entries_are_named(change: dict, problem: str | None) -> None:
    entry = {k: v for k, v in {**ENTRY, **change}.items() if v is not None}
    if problem is None:
        problem = "m: no title"
    with pytest.raises(findings.FindingsError, match=re.escape(problem)):
        findings_measured.evaluate_all({"measured": [entry]}, {})
