"""`rtclab findings` (rtclab.findings, studies/findings.yaml) on small study directories made with the study writers
(rtclab_study's spec and plan, rtclab.study.studydir's layout) and runs whose metrics.json hold chosen values, so
that every mean, interval and verdict can be computed here by hand: a range claim that agrees, one that deviates, one
that straddles, a point with INVALID attempts and one repetition only, a point whose INVALID runs were accepted, a
trend, a backend-like difference between two studies, per-run measures (a DSCP flow, a priority share), a study not
given (not run, with its Ray command), and the Markdown and HTML output."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rtclab import findings
from rtclab.study import aggregate as agg
from rtclab.study import studydir
from rtclab_study import plan as planmod
from rtclab_study import spec

REPO = Path(__file__).resolve().parents[2]
T975 = {2: (2 * 0.975 - 1) * math.sqrt(2 / (4 * 0.975 * 0.025))}  # Student t(0.975, 2), closed form


def t975_df4() -> float:
    a = 4 * 0.975 * 0.025
    q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
    return 2 * math.sqrt(q - 1)


T975[4] = t975_df4()
CHROMIUM, COMMIT = "Chromium 999.0.1", "0123456789abcdef0123456789abcdef01234567"


def metrics(queue_ms: float, loss: float, prio_bps: float = 0.0, share: float | None = None) -> dict[str, Any]:
    """A minimal metrics.json: one forward video flow, a DSCP 46 TCP flow, the priority shares."""
    m: dict[str, Any] = {
        "run": {"id": "r", "duration_s": 10.0, "call_start": 0.0},
        "phases": [{"name": "all", "start_s": 0.0, "end_s": 10.0, "cross_traffic": False}],
        "flows": [{"id": 0, "direction": "forward", "kind": "video", "ssrc": 1, "dscp": 0, "packets_sent": 100,
                   "queuing_delay_ms": {"mean": queue_ms}, "loss_ratio_bytes": loss, "phases": {}},
                  {"id": 1, "direction": "forward", "kind": "tcp", "ssrc": None, "dscp": 46, "packets_sent": 50,
                   "throughput_bps": {"mean": prio_bps}, "loss_ratio": loss, "phases": {}}],
        "fairness": {"all": {"connections": [], "jain_index": 1.0}},
    }
    if share is not None:
        m["multiflow"] = {"shares": {"flows": [{"call": "c1", "track": "v1", "priority": "low", "asked_share": 0.2,
                                                "achieved_share": 1 - share},
                                               {"call": "c1", "track": "v2", "priority": "high", "asked_share": 0.8,
                                                "achieved_share": share}]}}
    return m


def make_study(tmp: Path, name: str, runs: dict[str, list[list[tuple[str, dict[str, Any]]]]],
               accept: frozenset[str] = frozenset()) -> Path:
    """A study directory: plan.json from a study file with these points (3 repetitions, 2 attempts), then each
    point's repetitions' attempts as run directories (outcome 'valid' or 'invalid', and the metrics.json the attempt
    holds), then study.json through the aggregation itself."""
    f = tmp / f"{name}.yaml"
    f.write_text(f"name: {name}\nbase: {{duration_s: 10}}\nrepetitions: 3\nmax_attempts: 2\npoints:\n"
                 + "".join(f"  - {{name: {p}, set: {{duration_s: 10}}}}\n" for p in runs))
    out = tmp / name
    planmod.write(planmod.make(spec.load(f)), out)
    for point, reps in runs.items():
        for rep, attempts in enumerate(reps, start=1):
            for attempt, (outcome, m) in enumerate(attempts, start=1):
                d = studydir.attempt_dir(out, point, rep, attempt)
                d.mkdir(parents=True)
                checks = [{"name": "host_cpu_not_saturated", "ok": outcome == "valid", "detail": "97% busy"}]
                (d / "manifest.json").write_text(json.dumps({
                    "status": "complete", "id": d.name, "git_commit": COMMIT,
                    "versions": {"chromium": CHROMIUM}, "backend": {"used": "userspace"},
                    "validity": {"valid": outcome == "valid", "checks": checks}}))
                (d / "metrics.json").write_text(json.dumps(metrics(**m)))
    agg.aggregate(out, analyse_missing=False, accept_invalid=accept)
    return out


def ok(**m: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("valid", m)]


def bad(**m: Any) -> tuple[str, dict[str, Any]]:
    return ("invalid", m)


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("findings")
    q = {"loss": 0.0}
    return {
        "range": make_study(tmp, "t-range", {
            "agree": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=14, **q)],
            "deviate": [ok(queue_ms=100, **q), ok(queue_ms=102, **q), ok(queue_ms=104, **q)],
            "straddle": [ok(queue_ms=40, **q), ok(queue_ms=50, **q), ok(queue_ms=60, **q)],
            # one valid repetition; the other two exhausted their two attempts, INVALID both times
            "one": [ok(queue_ms=5, **q), [bad(queue_ms=7, **q), bad(queue_ms=8, **q)],
                    [bad(queue_ms=9, **q), bad(queue_ms=9, **q)]]}),
        "accepted": make_study(tmp, "t-accepted", {
            "p": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), [bad(queue_ms=30, **q), bad(queue_ms=14, **q)]]},
            accept=frozenset({"host_cpu_not_saturated"})),
        "trend": make_study(tmp, "t-trend", {
            "target-5": [ok(queue_ms=5, **q), ok(queue_ms=6, **q), ok(queue_ms=7, **q)],
            "target-50": [ok(queue_ms=20, **q), ok(queue_ms=21, **q), ok(queue_ms=22, **q)]}),
        "a": make_study(tmp, "t-a", {"x": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=14, **q)]}),
        "b": make_study(tmp, "t-b", {"x": [ok(queue_ms=11, **q), ok(queue_ms=13, **q), ok(queue_ms=15, **q)]}),
        "perrun": make_study(tmp, "t-perrun", {
            "marking": [ok(queue_ms=1, loss=0.0, prio_bps=1.9e6, share=0.78),
                        ok(queue_ms=1, loss=0.0, prio_bps=2.0e6, share=0.80),
                        ok(queue_ms=1, loss=0.0, prio_bps=2.1e6, share=0.82)]}),
    }


QUEUE = {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}
CLAIMS = {"rule": {"min_n": 2}, "claims": [
    {"id": "range", "source": "S", "says": "short queues", "studies": ["t-range"], "study_file": "s/r.yaml",
     "kind": "range", "points": ["*"], "measure": QUEUE, "range": [0, 50], "unit": "ms"},
    {"id": "accepted", "source": "S", "says": "short queues", "studies": ["t-accepted"], "study_file": "s/a.yaml",
     "kind": "range", "points": ["p"], "measure": QUEUE, "range": [0, 50]},
    {"id": "trend", "source": "S", "says": "grows", "studies": ["t-trend-full", "t-trend"], "study_file": "s/t.yaml",
     "kind": "trend", "direction": "increasing", "points": ["target-*"], "measure": QUEUE},
    {"id": "trend-down", "source": "S", "says": "falls", "studies": ["t-trend"], "study_file": "s/t.yaml",
     "kind": "trend", "direction": "decreasing", "points": ["target-*"], "measure": QUEUE},
    {"id": "backends", "source": "S", "says": "same", "studies": ["t-a"], "against": ["t-b"], "study_file": "s/a.yaml",
     "against_file": "s/b.yaml", "kind": "difference", "points": ["*"], "measure": QUEUE, "range": [-10, 10]},
    {"id": "prio-rate", "source": "S", "says": "held", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"],
     "measure": {"where": {"direction": "forward", "dscp": 46}, "phase": "all", "metric": "throughput_bps"},
     "range": [1.6e6, 2.4e6]},
    {"id": "share", "source": "S", "says": "split", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"], "measure": {"share": "c1/v2"}, "range": [0.7, 0.9]},
    {"id": "missing", "source": "S", "says": "x", "studies": ["t-never"], "study_file": "studies/x-quick.yaml",
     "ray": True, "kind": "range", "points": ["*"], "measure": QUEUE, "range": [0, 1]},
]}


@pytest.fixture(scope="module")
def page(studies: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("page")
    claims = tmp / "claims.yaml"
    claims.write_text(json.dumps(CLAIMS))  # YAML is a superset of JSON
    md, htm = tmp / "findings.md", tmp / "findings.html"
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", *map(str, studies.values()), "--claims",
                        str(claims), "--out", str(md), "--html", str(htm)], capture_output=True, text=True, cwd=tmp)
    assert r.returncode == 0, r.stderr
    _, found, _ = findings.findings(list(studies.values()), claims)
    return {"md": md.read_text(), "html": htm.read_text(), "found": {f.claim["id"]: f for f in found},
            "stdout": r.stdout}


def ci(values: list[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    hw = T975[n - 1] * sd / math.sqrt(n)
    return mean, mean - hw, mean + hw


def test_range_verdicts_against_hand_computed_intervals(page: dict[str, Any]) -> None:
    f = page["found"]["range"]
    rows = {r.point: r for r in f.rows}
    # agree: 12 ± t(2) 2 / sqrt 3 = [7.03, 16.97] inside [0, 50]; deviate: [95.03, 108.97] outside; straddle:
    # 50 ± t(2) 10 / sqrt 3 = [25.2, 74.8] across 50.
    for point, values, verdict in (("agree", [10, 12, 14], "agrees"), ("deviate", [100, 102, 104], "deviates"),
                                   ("straddle", [40, 50, 60], "inconclusive")):
        mean, lo, hi = ci(values)
        assert rows[point].value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi),
                                     "n": 3}
        assert rows[point].verdict == verdict
    # one valid run, four INVALID attempts, two repetitions without a valid run: counted, no interval, inconclusive.
    one = rows["one"]
    assert one.value == {"mean": 5.0, "lo": None, "hi": None, "n": 1}
    assert (one.a["attempts"], one.a["invalid_attempts"], one.a["missing"]) == (5, 4, 2)
    assert one.verdict == "inconclusive" and "n = 1" in one.why
    assert f.verdict == "deviates"  # any point deviating makes the claim deviate


def test_accepted_invalid_runs_are_counted_and_never_evidence(page: dict[str, Any]) -> None:
    r = page["found"]["accepted"].rows[0]
    # aggregate --accept-invalid used repetition 3's last attempt (14 ms): 10, 12, 14 would agree, but it is INVALID.
    assert r.a["invalid_used"] == 1 and r.a["invalid_attempts"] == 2 and r.a["stat"]["n"] == 3
    assert r.verdict == "inconclusive" and "INVALID" in r.why
    assert page["found"]["accepted"].verdict == "inconclusive"


def test_trend_from_a_welch_interval_of_last_minus_first(page: dict[str, Any]) -> None:
    # 21 - 6 = 15; sd 1 and n 3 each: se = sqrt(2/3), df = 4, half-width t(4) se = 2.27: [12.7, 17.3] > 0.
    f = page["found"]["trend"]
    assert f.study is not None and f.study.name == "t-trend"  # the first study name given wins, then the next
    hw = T975[4] * math.sqrt(2 / 3)
    assert f"= 15 ±{hw:.3g}" in f.note and f.verdict == "agrees"
    assert [r.point for r in f.rows] == ["target-5", "target-50"]
    assert page["found"]["trend-down"].verdict == "deviates"


def test_difference_of_two_studies(page: dict[str, Any]) -> None:
    # B - A = 1; sd 2 and n 3 each: se = sqrt(8/3), df 4: 1 ± 4.53 inside [-10, 10].
    r = page["found"]["backends"].rows[0]
    hw = T975[4] * math.sqrt(8 / 3)
    assert r.value == {"mean": pytest.approx(1.0), "lo": pytest.approx(1 - hw), "hi": pytest.approx(1 + hw),
                       "n": None}
    assert r.verdict == "agrees" and page["found"]["backends"].verdict == "agrees"


def test_per_run_measures_dscp_flow_and_priority_share(page: dict[str, Any]) -> None:
    rate = page["found"]["prio-rate"].rows[0]
    mean, lo, hi = ci([1.9e6, 2.0e6, 2.1e6])
    assert rate.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi), "n": 3}
    assert rate.verdict == "agrees"  # 2e6 ± t(2) 1e5 / sqrt 3 = [1.75, 2.25] Mbit/s, inside [1.6, 2.4]
    share = page["found"]["share"].rows[0]
    mean, lo, hi = ci([0.78, 0.80, 0.82])
    assert share.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi), "n": 3}
    assert share.verdict == "agrees"


def test_a_study_not_given_is_not_run_with_its_commands(page: dict[str, Any]) -> None:
    f = page["found"]["missing"]
    assert f.verdict == "not run" and f.rows == []
    md = page["md"]
    assert "    npm run study -- run studies/x-quick.yaml" in md
    assert "    .venv/bin/rtclab study run studies/x-quick.yaml --ray HEAD:6379" in md
    assert re.search(r"^missing +not run$", page["stdout"], re.M)


def test_the_markdown_page(page: dict[str, Any], studies: dict[str, Path]) -> None:
    md = page["md"]
    counts = {v: sum(1 for f in page["found"].values() if f.verdict == v)
              for v in ("agrees", "deviates", "inconclusive", "not run")}
    assert (f"8 claims: {counts['agrees']} agree, {counts['deviates']} deviate, {counts['inconclusive']} "
            f"inconclusive, {counts['not run']} not run.") in md
    for rule in findings.RULES.values():  # the rule is written on the page
        assert rule in md
    mean, lo, hi = ci([10, 12, 14])
    assert f"| agree | all | {mean:.4g} | [{lo:.4g}, {hi:.4g}] | 3 | 0 INVALID of 3 attempts | agrees |" in md
    assert "| one | all | 5 | - | 1 | 4 INVALID of 5 attempts, 2 rep. without a valid run | inconclusive (n = 1 < 2" \
        in md
    # every study given, with its Chromium, commit, backend and the command that makes it again (provenance: the
    # details in test_provenance.py)
    for d in studies.values():
        block = md.split(f"### `{d.name}`\n", 1)[1].split("\n### ", 1)[0]
        assert f"read from `{d}`" in block and CHROMIUM in block and COMMIT[:12] in block and "userspace" in block
        assert f"- command: `npm run study -- run {d.parent / d.name}.yaml && " in block
        assert f"&& .venv/bin/rtclab study archive results/studies/{d.name}`" in block
    accepted = md.split(f"### `{studies['accepted'].name}`\n", 1)[1].split("\n### ", 1)[0]
    assert "--accept-invalid host_cpu_not_saturated" in accepted and "runs used 3 (1 INVALID among them)" in accepted


def test_the_html_dashboard(page: dict[str, Any]) -> None:
    text = page["html"]
    payload = re.search(r'<script id="figures" type="application/json">(.*?)</script>', text, re.S)
    assert payload
    figs = json.loads(payload.group(1).replace("<\\/", "</"))
    ids = [f["id"] for f in figs]
    with_values = [i for i, f in enumerate(page["found"].values()) if any(r.value for r in f.rows)]
    assert ids == [f"claim-{i}" for i in with_values]
    bars = figs[0]["fig"]["data"][0]
    assert bars["x"] == ["agree", "deviate", "straddle", "one"]
    assert bars["y"] == pytest.approx([12, 102, 50, 5])
    assert figs[0]["fig"]["layout"]["shapes"][0]["y0"] == 0 and figs[0]["fig"]["layout"]["shapes"][0]["y1"] == 50
    assert "inconclusive" in text and "not run" in text and "<script>" in text and "http" not in \
        re.sub(r"<script>.*?</script>", "", text, flags=re.S).split("<h2>The page</h2>")[0]


def test_the_shipped_claims_file_is_valid_and_names_existing_study_files() -> None:
    doc = findings.load_claims(findings.DEFAULT_CLAIMS)
    ids = [c["id"] for c in doc["claims"]]
    assert len(ids) == len(set(ids))
    for c in doc["claims"]:
        for f in (c["study_file"], c.get("against_file")):
            if f:
                assert (REPO / f).exists(), (c["id"], f)
    # the reference studies and every RFC 8867 case built (studies/rfc8867/README.md) have a claim
    for needed in ("c16a-queuing-delay", "c16a-loss", "c16b-codel-target", "c16b-pie-target", "c16c-fair-share",
                   "coupled-priority-split", "thesis-ecn-marking-rate", "rfc8867-5.1", "rfc8867-5.2", "rfc8867-5.3",
                   "rfc8867-5.4", "rfc8867-5.6", "rfc8867-6.1", "rfc8867-6.2", "backends-fair-share"):
        assert needed in ids
    _, found, _ = findings.findings([], findings.DEFAULT_CLAIMS)
    assert {f.verdict for f in found} == {"not run"}


def test_a_bad_claims_file_exits_2(tmp_path: Path) -> None:
    bad_file = tmp_path / "c.yaml"
    bad_file.write_text("claims:\n  - {id: x, kind: guess}\n")
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", "--claims", str(bad_file), "--out",
                        str(tmp_path / "f.md")], capture_output=True, text=True)
    assert r.returncode == 2 and "x: no source" in r.stderr and "kind must be one of" in r.stderr
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", str(tmp_path), "--out",
                        str(tmp_path / "f.md")], capture_output=True, text=True)
    assert r.returncode == 2 and "no plan.json" in r.stderr
