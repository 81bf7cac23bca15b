"""Studies without calls: the study file's checks (exit 2 naming axis, value and field, nothing run), field paths,
the plan (order, seed, quick scaling), the state of a study directory (what counts towards max_attempts), Student's
t quantile, and the aggregation: study.json must equal an independent computation from the runs' metrics.json
(synthetic runs from rtclab.synth with different parameters per point)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

import inprocess
import scenario_model
from rtclab import cli, synth
from rtclab.study import aggregate as agg
from rtclab.study import catalogue, metric_rows, studydir
from rtclab.study.tdist import t_cdf, t_quantile
from rtclab_study import plan as planmod
from rtclab_study import spec
from rtclab_study.runner import append_log

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "scenarios" / "examples"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab_study ARGS...` in this process (test-support/inprocess.py); the example study's dry run below
    starts the real command."""
    return inprocess.rtclab_study(*args)


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


# ---- bad study files: exit 2, the problem named, nothing run ------------------------------------------------------

BAD = {
    "unknown_path": ("axes:\n  - path: network.forward.qdisc.targt_ms\n    name: target\n    values: [5, 10]\n",
                     ["axis target", "network.forward.qdisc.targt_ms", "no field 'targt_ms'"]),
    "refused_value": ("axes:\n  - path: network.forward.qdisc.target_ms\n    name: target\n    values: [5, -3]\n",
                      ["axis target = -3", "network.forward.qdisc.target_ms", "must be > 0"]),
    "refused_kind": ("axes:\n  - path: network.forward.qdisc.kind\n    name: aqm\n    values: [codel, magic]\n",
                     ["axis aqm = \"magic\"", "network.forward.qdisc.kind", "not one of"]),
    "empty_axis": ("axes:\n  - path: network.forward.qdisc.target_ms\n    name: target\n    values: []\n",
                   ["axes[0] (target: network.forward.qdisc.target_ms).values", "empty"]),
    "duplicate_points": ("points:\n  - {name: a, set: {duration_s: 10}}\n  - {name: a, set: {duration_s: 20}}\n",
                         ["duplicate point name 'a'"]),
    "zip_lengths": ("axes:\n  - zip:\n      - {path: network.forward.rate.kbit, values: [1000, 2000]}\n"
                    "      - {path: duration_s, values: [10]}\n", ["zip", "different numbers of values"]),
    "unknown_study_field": ("repetitons: 3\n", ["repetitons"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_study_exits_2_naming_the_problem_and_runs_nothing(tmp_path: Path, case: str) -> None:
    body, expected = BAD[case]
    f = write(tmp_path, f"{case}.yaml", f"name: bad\nbase: {EXAMPLES / 'codel.yaml'}\n{body}")
    out = tmp_path / "out"
    r = run_cli("run", str(f), "--out", str(out))
    assert r.returncode == 2, r.stderr
    for s in expected:
        assert s in r.stderr, f"{s!r} not in:\n{r.stderr}"
    assert "nothing was run" in r.stderr
    assert not out.exists()


def test_check_points_reports_every_point_in_one_process() -> None:
    docs = [{"duration_s": 5}, {"network": {"forward": {"qdisc": {"kind": "codel", "target_ms": 0}}}},
            {"scenario": {"name": "x"}, "label": "p", "base_dir": str(ROOT)}]
    r = subprocess.run(["node", str(spec.CHECK_POINTS_JS)], input=json.dumps(docs), capture_output=True, text=True)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert [x["ok"] for x in res] == [True, False, True]
    assert res[0]["scenario"]["duration_s"] == 5 and res[0]["scenario"]["network"]["forward"]["qdisc"]["kind"] == "fifo"
    assert res[1]["problems"] == ["network.forward.qdisc.target_ms: must be > 0 (got 0)"]


def test_the_tests_scenario_model_server_answers_as_the_products_process() -> None:
    """The one process of the scenario model conftest.py answers the tests' study checks from
    (test-support/scenario_model.py) against the product's `node scenarios/check-points.js`: the same verdicts on
    every example scenario and on accepted and refused documents, and again when asked twice (nothing carried over)."""
    examples = ROOT / "scenarios" / "examples"
    items: list[dict[str, Any]] = [{"scenario": yaml.safe_load(f.read_text()), "label": f.name,
                                    "base_dir": str(examples)} for f in sorted(examples.glob("*.yaml"))]
    items += [{"duration_s": 5}, {"network": {"forward": {"qdisc": {"kind": "codel", "target_ms": 0}}}}]
    assert spec.scenario_model_verdicts is not scenario_model.product_verdicts, "conftest.py serves the model"
    served = spec.scenario_model_verdicts(items)
    assert served == scenario_model.product_verdicts(items)
    assert spec.scenario_model_verdicts(items) == served
    assert sum(v["ok"] for v in served) == len(items) - 1 and served[-1]["problems"] == [
        "network.forward.qdisc.target_ms: must be > 0 (got 0)"]


# ---- field paths --------------------------------------------------------------------------------------------------

def test_field_paths_are_checked_against_the_scenario_schema() -> None:
    assert spec.check_path("network.forward.qdisc.kind") is None
    assert spec.check_path("network.forward.qdisc.target_ms") is None  # a discipline's parameter (if/then)
    assert spec.check_path("network.forward.rate.schedule[0].kbit") is None
    assert spec.check_path("cross_traffic[0].flows") is None
    assert spec.check_path("call.codec") is None
    assert "no field 'rat'" in (spec.check_path("network.forward.rat.kbit") or "")
    assert "no field 'flow'" in (spec.check_path("cross_traffic[0].flow") or "")
    assert "not a list" in (spec.check_path("duration_s[0]") or "")


def test_set_path_makes_mappings_and_appends_one_list_item() -> None:
    doc: dict[str, Any] = {"network": {"forward": {"rate": None}}}
    spec.set_path(doc, "network.forward.rate.kbit", 2000)
    spec.set_path(doc, "cross_traffic[0].flows", 3)
    assert doc == {"network": {"forward": {"rate": {"kbit": 2000}}}, "cross_traffic": [{"flows": 3}]}
    with pytest.raises(ValueError, match="cannot be made"):
        spec.set_path(doc, "cross_traffic[2].flows", 1)


def test_grid_zip_and_named_points(tmp_path: Path) -> None:
    f = write(tmp_path, "s.yaml", f"""
name: grid
base: {EXAMPLES / 'tcp-competition.yaml'}
axes:
  - path: network.forward.qdisc
    name: q
    values: [{{kind: fifo, limit_ms: 300}}, {{kind: codel}}]
  - zip:
      - {{path: network.forward.rate.kbit, name: kbit, values: [2000, 5000]}}
      - {{path: "cross_traffic[0].flows", name: n, values: [1, 4]}}
    name: fair
points:
  - name: extra
    base: {EXAMPLES / 'fifo.yaml'}
    set: {{duration_s: 7}}
repetitions: 2
""")
    study = spec.load(f)
    names = [p.name for p in study.points]
    assert names == ["q-fifo_fair-2000+1", "q-fifo_fair-5000+4", "q-codel_fair-2000+1", "q-codel_fair-5000+4", "extra"]
    plan = planmod.make(study)
    p = plan.point("q-codel_fair-5000+4")
    assert p.scenario is not None
    assert p.scenario["network"]["forward"]["rate"]["kbit"] == 5000
    assert p.scenario["cross_traffic"][0]["flows"] == 4
    assert p.scenario["network"]["forward"]["qdisc"] == {"kind": "codel", "target_ms": 5, "interval_ms": 100,
                                                          "limit_packets": 1000, "ecn": False}
    assert plan.point("extra").scenario["duration_s"] == 7  # type: ignore[index]
    assert len(plan.order) == 10


def test_quick_scales_the_calls_times_and_pauses() -> None:
    doc = {"duration_s": 120, "call": {"pauses": [{"at_s": 40, "resume_s": 60}]},
           "calls": [{"id": "s1", "stop_s": 119},
                     {"id": "s2", "start_s": 20, "pauses": [{"at_s": 30, "resume_s": 50}]}]}
    out = spec.scale_doc(doc, 0.5)
    assert out["duration_s"] == 60 and out["call"]["pauses"] == [{"at_s": 20, "resume_s": 30}]
    assert out["calls"] == [{"id": "s1", "stop_s": 59.5},
                            {"id": "s2", "start_s": 10, "pauses": [{"at_s": 15, "resume_s": 25}]}]
    assert doc["calls"][1]["pauses"] == [{"at_s": 30, "resume_s": 50}], "the document itself is left as it was"


def test_plan_order_is_shuffled_by_the_seed_and_kept_without_shuffle() -> None:
    pts = ["a", "b", "c"]
    o1 = planmod.run_order(pts, 3, seed=5, shuffle=True)
    assert o1 == planmod.run_order(pts, 3, seed=5, shuffle=True)
    assert o1 != planmod.run_order(pts, 3, seed=6, shuffle=True)
    assert sorted((r.point, r.rep) for r in o1) == sorted((p, r) for p in pts for r in (1, 2, 3))
    kept = planmod.run_order(pts, 2, seed=5, shuffle=False)
    assert [(r.point, r.rep) for r in kept] == [("a", 1), ("b", 1), ("c", 1), ("a", 2), ("b", 2), ("c", 2)]


def test_quick_scales_durations_and_schedules_and_says_so(tmp_path: Path) -> None:
    f = write(tmp_path, "q.yaml", f"""
name: quick
base: {EXAMPLES / 'tcp-competition.yaml'}
points:
  - name: sched
    set:
      network.forward.rate: {{schedule: [{{at_s: 0, kbit: 10000}}, {{at_s: 200, kbit: 5000}}]}}
""")
    plan = planmod.make(spec.load(f), quick_factor=0.1)
    sc = plan.point("sched").scenario
    assert sc is not None
    assert sc["duration_s"] == pytest.approx(40)
    cross = sc["cross_traffic"][0]
    assert cross["start_s"] == pytest.approx(10) and cross["stop_s"] == pytest.approx(30)
    assert [s["at_s"] for s in sc["network"]["forward"]["rate"]["schedule"]] == pytest.approx([0, 20])
    assert "QUICK" in (plan.quick_note() or "") and plan.to_json()["quick_factor"] == 0.1
    r = run_cli("run", str(f), "--quick", "0.1", "--dry-run", "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[QUICK variant x0.1")
    assert "sched rep 1: 40 s call, pending" in r.stdout
    assert not (tmp_path / "o").exists()


def test_the_example_study_is_valid_and_its_dry_run_lists_every_run() -> None:
    study = ROOT / "studies" / "examples" / "aqm-quick.yaml"
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "run", str(study), "--dry-run"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "5 point(s) x 3 repetition(s) = 15 runs" in r.stdout
    assert r.stdout.count(": 30 s call, pending") + r.stdout.count(": 30 s call, done") \
        + r.stdout.count(": 30 s call, exhausted") == 15
    assert "total call time 7m30s" in r.stdout


def test_metrics_enum_in_the_schema_is_the_catalogue() -> None:
    assert spec.metric_catalogue_names() == list(catalogue.CATALOGUE)


# ---- Student's t ---------------------------------------------------------------------------------------------------

def test_t_quantile_matches_closed_forms_and_tables() -> None:
    p = 0.975
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-10)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p))), rel=1e-10)
    a = 4 * p * (1 - p)
    q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
    assert t_quantile(p, 4) == pytest.approx(2 * math.sqrt(q - 1), rel=1e-10)
    # Published two-sided 95% values.
    for df, v in [(3, 3.182446305), (5, 2.570581836), (10, 2.228138852), (30, 2.042272456), (120, 1.979930405)]:
        assert t_quantile(p, df) == pytest.approx(v, rel=1e-9)
    assert t_quantile(0.025, 7) == pytest.approx(-t_quantile(0.975, 7))
    assert t_cdf(t_quantile(0.9, 3.5), 3.5) == pytest.approx(0.9, abs=1e-12)


# ---- the state of a study directory ----------------------------------------------------------------------------------

def _manifest(run: Path, status: str, valid: bool | None) -> None:
    run.mkdir(parents=True, exist_ok=True)
    checks = [{"name": "host_cpu_not_saturated", "ok": bool(valid), "detail": "x"}]
    (run / "manifest.json").write_text(json.dumps({"format_version": 2, "id": run.name, "status": status,
                                                   "error": None if status == "complete" else "stopped",
                                                   "validity": {"valid": valid, "checks": checks}}))


def test_what_counts_towards_max_attempts(tmp_path: Path) -> None:
    out = tmp_path
    _manifest(studydir.attempt_dir(out, "p", 1, 1), "complete", False)
    _manifest(studydir.attempt_dir(out, "p", 1, 2), "incomplete", None)  # the study recorded that it interrupted it
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 2})
    append_log(out, {"event": "end", "point": "p", "rep": 1, "attempt": 2, "interrupted": True})
    _manifest(studydir.attempt_dir(out, "p", 1, 3), "running", None)  # started, never ended: the study was killed
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 3})
    _manifest(studydir.attempt_dir(out, "p", 2, 1), "incomplete", None)  # failed by itself: counts
    append_log(out, {"event": "start", "point": "p", "rep": 2, "attempt": 1})
    append_log(out, {"event": "end", "point": "p", "rep": 2, "attempt": 1, "interrupted": False, "exit_code": 1})
    _manifest(studydir.attempt_dir(out, "p", 2, 2), "complete", False)
    _manifest(studydir.attempt_dir(out, "p", 3, 1), "complete", True)
    reps = studydir.scan(out, ["p"], 3)
    r1, r2, r3 = reps[("p", 1)], reps[("p", 2)], reps[("p", 3)]
    assert [a.status for a in r1.attempts] == ["invalid", "interrupted", "interrupted"]
    assert r1.counted() == 1 and r1.state(2) == "pending" and r1.next_attempt() == 4
    assert [a.status for a in r2.attempts] == ["incomplete", "invalid"]
    assert r2.state(2) == "exhausted" and r2.state(3) == "pending"
    assert r3.state(1) == "done" and r3.valid is not None


def test_an_analysed_attempt_is_judged_by_the_analyzers_validity_too(tmp_path: Path) -> None:
    # The harness's checks passed (manifest), the analyzer's own dscp_marked failed (metrics.json): invalid, retried.
    run = studydir.attempt_dir(tmp_path, "p", 1, 1)
    _manifest(run, "complete", True)
    failed = {"name": "dscp_marked", "ok": False, "detail": "c1: 0/900 packets (0.0%) carried DSCP 46"}
    (run / "metrics.json").write_text(json.dumps({"validity": {"valid": False, "checks": [failed]}}))
    a = studydir.classify(run, "p", 1, 1, None)
    assert a.status == studydir.INVALID and a.failed_names == ["dscp_marked"]
    (run / "metrics.json").write_text("{not json")  # unreadable metrics: the manifest's validity stands
    assert studydir.classify(run, "p", 1, 1, None).status == studydir.VALID
    # The manifest's checks stay the harness's word: a copy of them in metrics.json made before the manifest changed
    # (a clean marking it, say) does not overrule it.
    stale = {"name": "host_cpu_not_saturated", "ok": True, "detail": "x"}
    (run / "metrics.json").write_text(json.dumps({"validity": {"valid": True, "checks": [stale]}}))
    _manifest(run, "complete", False)
    assert studydir.classify(run, "p", 1, 1, None).status == studydir.INVALID



def test_an_attempt_the_analyzer_failed_on_counts_as_failed_and_is_retried(tmp_path: Path) -> None:
    # The harness exits 4 (harness/exit-status.js) when a complete run's analysis failed or wrote no validity: the
    # attempt is incomplete, whatever the manifest's checks said, and counts towards max_attempts.
    out = tmp_path
    run = studydir.attempt_dir(out, "p", 1, 1)
    _manifest(run, "complete", True)
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 1})
    append_log(out, {"event": "end", "point": "p", "rep": 1, "attempt": 1, "interrupted": False, "exit_code": 4})
    _manifest(studydir.attempt_dir(out, "p", 1, 2), "complete", True)
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 2})
    append_log(out, {"event": "end", "point": "p", "rep": 1, "attempt": 2, "interrupted": False, "exit_code": 0})
    r = studydir.scan(out, ["p"], 1)[("p", 1)]
    assert [a.status for a in r.attempts] == [studydir.INCOMPLETE, studydir.VALID]
    assert "the analyzer failed or wrote no validity" in (r.attempts[0].error or "")
    assert r.counted() == 1 and r.valid is not None and r.valid.attempt == 2  # the failed one uses up an attempt
    # classify itself, from the attempt log's end record.
    only = studydir.classify(run, "p", 1, 1, {"start": {}, "end": {"exit_code": 4}})
    assert only.status == studydir.INCOMPLETE and only.exit_code == 4

def test_a_damaged_attempt_log_line_is_counted_and_named_in_the_studys_output(tmp_path: Path) -> None:
    # A write cut short leaves a line that is not JSON: the attempt it recorded is classified without it (here its end:
    # a study-started attempt without an end reads as interrupted), so the study says which lines it skipped.
    f = write(tmp_path, "s.yaml", "name: damaged-log\nbase: {duration_s: 12}\nrepetitions: 1\nmax_attempts: 2\n"
              "points:\n  - {name: p, set: {duration_s: 12}}\n")
    out = tmp_path / "out"
    planmod.write(planmod.make(spec.load(f)), out)
    _manifest(studydir.attempt_dir(out, "p", 1, 1), "incomplete", None)
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 1})
    with (out / "attempts.jsonl").open("a") as log:
        log.write('{"event": "end", "point": "p", "rep": 1, "att\n')
    append_log(out, {"event": "start", "point": "p", "rep": 1, "attempt": 2})
    log_read = studydir.read_log(out)
    assert log_read.damaged_lines == [2] and set(log_read.records) == {("p", 1, 1), ("p", 1, 2)}
    assert studydir.scan(out, ["p"], 1, log_read)[("p", 1)].attempts[0].status == studydir.INTERRUPTED
    study = agg.read_study(out, frozenset())
    assert study.log_damaged_lines == [2]
    doc = {"left_out": [], "summary": {"attempts_log_damaged_lines": study.log_damaged_lines}}
    assert agg.left_out_lines(doc) == ["attempts.jsonl: 1 damaged line(s) skipped (line 2): the attempts they "
                                       "recorded are classified without their start or end"]
    assert agg.left_out_lines({"left_out": [], "summary": {"attempts_log_damaged_lines": []}}) == []


# ---- aggregation = an independent computation from metrics.json ----------------------------------------------------

# point -> (SynthConfig overrides, per repetition: the attempts' outcomes)
POINTS: dict[str, tuple[dict[str, Any], dict[int, list[str]]]] = {
    "lowloss": ({"loss": 0.005, "queue_peak_ms": 20.0, "tcp_flows": 1},
                {1: ["valid"], 2: ["valid"], 3: ["valid"], 4: ["valid"], 5: ["valid"]}),
    "highloss": ({"loss": 0.03, "queue_peak_ms": 60.0, "tcp_flows": 2},
                 {1: ["invalid", "valid"], 2: ["valid"], 3: ["incomplete"]}),
    "tcp3": ({"loss": 0.01, "queue_peak_ms": 40.0, "tcp_flows": 3, "capacity_kbit": 8000.0},
             {1: ["valid"], 2: ["valid"], 3: ["valid"], 4: ["invalid", "invalid"]}),
}


@pytest.fixture(scope="module")
def synthetic_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("study")
    f = write(tmp, "s.yaml", "name: synthetic-study\nbase: {duration_s: 12}\nrepetitions: 5\nmax_attempts: 2\n"
              "points:\n" + "".join(f"  - {{name: {p}, set: {{duration_s: 12}}}}\n" for p in POINTS))
    out = tmp / "out"
    plan = planmod.make(spec.load(f))
    planmod.write(plan, out)
    seed = 10
    for point, (overrides, reps) in POINTS.items():
        for rep, outcomes in reps.items():
            for attempt, outcome in enumerate(outcomes, start=1):
                seed += 1
                d = studydir.attempt_dir(out, point, rep, attempt)
                cfg = synth.SynthConfig(duration_s=12.0, tcp_start_s=3.0, tcp_stop_s=9.0, seed=seed, **overrides)
                synth.write_run(d, cfg)
                m = json.loads((d / "manifest.json").read_text())
                if outcome == "invalid":
                    m["validity"] = {"valid": False, "checks": [{"name": "host_cpu_not_saturated", "ok": False,
                                                                 "detail": "97% busy"}]}
                elif outcome == "incomplete":
                    m["status"], m["error"] = "incomplete", "interrupted by SIGTERM"
                (d / "manifest.json").write_text(json.dumps(m))
                if outcome == "valid":
                    analyze_in_process(d)
    r = run_cli("aggregate", str(out))
    assert r.returncode == 0, r.stderr
    return out


def analyze_in_process(run_dir: Path) -> None:
    """`rtclab analyze RUN -q --no-tshark --no-dashboard`, through the CLI's own entry point but in this process: an
    interpreter per run (its imports) cost the fixture seconds."""
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["analyze", str(run_dir), "-q", "--no-tshark", "--no-dashboard"]) == 0


def _t975(df: int) -> float:
    """Closed forms of the 0.975 quantile for the degrees of freedom this test needs (1, 2, 4)."""
    p = 0.975
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    if df == 4:
        a = 4 * p * (1 - p)
        q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
        return 2 * math.sqrt(q - 1)
    raise AssertionError(df)


def _independent(values: list[float]) -> dict[str, Any]:
    n = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values)
    half = _t975(n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci95_low": mean - half, "ci95_high": mean + half, "n": n}


def _video(m: dict[str, Any]) -> dict[str, Any]:
    return max((f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"),
               key=lambda f: f["packets_sent"])


def _from_metrics(m: dict[str, Any], phase: str) -> dict[str, float | None]:
    v = _video(m)
    e = v if phase == "all" else v["phases"][phase]
    if phase == "all":
        stream = next(s for s in m["getstats"]["directions"]["forward"]["streams"] if s["ssrc"] == v["ssrc"])
        tq = stream["tq_ms"]["mean"]
    else:
        tq = m["getstats"]["directions"]["forward"]["phases"][phase][f"video:{v['ssrc']}"]["tq_ms"]["mean"]
    return {"loss_ratio_bytes": e["loss_ratio_bytes"], "loss_ratio_packets": e["loss_ratio"],
            "utilisation": e["utilisation"], "throughput_bps": e["throughput_bps"]["mean"],
            "queuing_delay_ms_mean": e["queuing_delay_ms"]["mean"], "tq_ms_mean": tq,
            "jain_index": m["fairness"][phase]["jain_index"]}


def test_study_json_equals_an_independent_computation_from_metrics_json(synthetic_study: Path) -> None:
    out = synthetic_study
    doc = json.loads((out / "study.json").read_text())
    expected_n = {"lowloss": 5, "highloss": 2, "tcp3": 3}
    phases = ["all", "before_cross_traffic", "cross_traffic", "after_cross_traffic"]
    checked = 0
    for point, n in expected_n.items():
        # The runs used: each repetition's valid attempt, found here from the files, not from study.json.
        used = sorted(d for d in (out / "runs" / point).glob("*-*") if d.is_dir()
                      and json.loads((d / "manifest.json").read_text())["status"] == "complete"
                      and json.loads((d / "manifest.json").read_text())["validity"]["valid"])
        assert len(used) == n
        ms = [json.loads((d / "metrics.json").read_text()) for d in used]
        entry = next(p for p in doc["points"] if p["name"] == point)
        assert entry["n_runs"] == n
        for phase in phases:
            values = [_from_metrics(m, phase) for m in ms]
            for metric in values[0]:
                flow = "bottleneck" if metric == "jain_index" else "forward:video"
                got = entry["flows"][flow][phase][metric]
                want = _independent([float(v[metric]) for v in values])  # type: ignore[arg-type]
                for k, w in want.items():
                    assert got[k] == pytest.approx(w, rel=1e-9, abs=1e-12), (point, phase, metric, k)
                checked += 1
    assert checked == 3 * 4 * 7


def test_invalid_and_incomplete_runs_are_excluded_and_listed(synthetic_study: Path) -> None:
    doc = json.loads((synthetic_study / "study.json").read_text())
    excluded = {(e["point"], e["rep"], e["attempt"]): e for e in doc["excluded"]}
    assert set(excluded) == {("highloss", 1, 1), ("highloss", 3, 1), ("tcp3", 4, 1), ("tcp3", 4, 2)}
    assert excluded[("highloss", 1, 1)]["excluded_because"].startswith("invalid: host_cpu_not_saturated")
    assert excluded[("highloss", 3, 1)]["status"] == "incomplete"
    missing = {(m["point"], m["rep"]): m["state"] for m in doc["missing"]}
    assert missing == {("highloss", 3): "pending", ("highloss", 4): "pending", ("highloss", 5): "pending",
                       ("tcp3", 4): "exhausted", ("tcp3", 5): "pending"}
    assert doc["summary"]["runs_used"] == 10


def test_parquet_has_one_row_per_valid_run_flow_and_phase(synthetic_study: Path) -> None:
    t = pq.read_table(synthetic_study / "study.parquet").to_pydict()
    doc = json.loads((synthetic_study / "study.json").read_text())
    used = {r["dir"] for r in doc["runs"] if r["used"]}
    assert set(t["run_dir"]) == used
    keys = list(zip(t["run_dir"], t["flow"], t["phase"]))
    assert len(keys) == len(set(keys))
    for d in used:
        m = json.loads((synthetic_study / d / "metrics.json").read_text())
        phases = [p["name"] for p in m["phases"]]
        n_rows = sum(1 for k in keys if k[0] == d)
        # every flow and the bottleneck, in every phase; the cpu pseudo-flow (the run's cpu.jsonl) and the rfc8867
        # one (its media flows) over the whole call
        assert n_rows == (len(m["flows"]) + 1) * len(phases) + 1 + (1 if (m.get("rfc8867") or {}).get("flows") else 0)
    # The point's parameters are columns (the varied field paths), quick factor too.
    assert "duration_s" in t and set(t["duration_s"]) == {12.0}
    assert set(t["quick_factor"]) == {1.0}
    row = next(i for i, k in enumerate(keys) if k[1] == "forward:video" and k[2] == "cross_traffic")
    assert t["phase_cross_traffic"][row] is True and t["phase_start_s"][row] == pytest.approx(3.0)


def test_flow_labels_rank_flows_of_the_same_kind_by_packets() -> None:
    flows = [{"id": 0, "direction": "forward", "kind": "tcp", "packets_sent": 10},
             {"id": 1, "direction": "forward", "kind": "tcp", "packets_sent": 500},
             {"id": 2, "direction": "forward", "kind": "video", "packets_sent": 5},
             {"id": 3, "direction": "reverse", "kind": "tcp", "packets_sent": 7}]
    assert metric_rows.flow_labels(flows) == ["forward:tcp:2", "forward:tcp", "forward:video", "reverse:tcp"]


def test_summarise_with_one_and_no_values() -> None:
    assert agg.summarise([]) == {"mean": None, "sd": None, "ci95_low": None, "ci95_high": None,
                                 "ci95_half_width": None, "n": 0}
    one = agg.summarise([2.5])
    assert one["mean"] == 2.5 and one["n"] == 1 and one["sd"] is None and one["ci95_low"] is None


def test_the_aggregation_benchmark_runs(tmp_path: Path) -> None:
    """bench/study/bench_aggregate.py at a small scale (not timed: the timing is the benchmark's, RESULTS.md)."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "study" / "bench_aggregate.py"), "--runs", "6",
                        "--points", "2", "--keep", str(tmp_path / "b")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("aggregated 6 runs (")
    doc = json.loads((tmp_path / "b" / "study" / "study.json").read_text())
    assert [p["n_runs"] for p in doc["points"]] == [3, 3]


def test_congestion_controller_metrics_aggregate_over_the_runs_event_logs(tmp_path: Path) -> None:
    """n_dd and the detector's share from each run's metrics.json congestion_controller (side a, whole call) become the
    `controller:a` pseudo-flow of study.json, with the same statistics as any flow; a run without an event log adds
    no sample (n counts the runs that have one)."""
    f = write(tmp_path, "s.yaml", "name: cc-study\nbase: {duration_s: 8}\nrepetitions: 4\n")
    out = tmp_path / "out"
    plan = planmod.make(spec.load(f))
    planmod.write(plan, out)
    n_dd = {1: 7, 2: 12, 3: 4, 4: None}  # repetition 4: no event log
    overusing = {1: 0.05, 2: 0.125, 3: 0.02}
    for rep, count in n_dd.items():
        d = studydir.attempt_dir(out, "base", rep, 1)
        synth.write_run(d, synth.SynthConfig(duration_s=8.0, seed=300 + rep))
        analyze_in_process(d)
        m = json.loads((d / "metrics.json").read_text())
        m["congestion_controller"] = None if count is None else {"sender": "a", "sides": {"a": {
            "controller": {"n_dd": count, "overuse_events": count + 1,
                           "detector_state_fraction": {"normal": 1 - overusing[rep], "overusing": overusing[rep],
                                                       "underusing": 0.0}},
            "replay": {"update_agreement": 0.9 + rep / 100}}, "b": None}}
        (d / "metrics.json").write_text(json.dumps(m))
    r = run_cli("aggregate", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "study.json").read_text())
    stats = doc["points"][0]["flows"]["controller:a"]["all"]
    expected_n_dd = _independent([7.0, 12.0, 4.0])
    for key in ("mean", "sd", "n"):
        assert stats["n_dd"][key] == pytest.approx(expected_n_dd[key])
    assert stats["overusing_fraction"]["mean"] == pytest.approx(statistics.fmean([0.05, 0.125, 0.02]))
    assert stats["overuse_events"]["mean"] == pytest.approx(statistics.fmean([8.0, 13.0, 5.0]))
    assert stats["replay_update_agreement"]["n"] == 3
    assert set(stats) == {"n_dd", "overuse_events", "overusing_fraction", "replay_update_agreement"}
    table = pq.read_table(out / "study.parquet").to_pydict()
    rows = [i for i, fl in enumerate(table["flow"]) if fl == "controller:a"]
    assert sorted(table["n_dd"][i] for i in rows) == [4.0, 7.0, 12.0]
    report = inprocess.rtclab("study", "report", str(out), "--phase", "all", "--no-dashboard")
    assert report.returncode == 0, report.stderr
    assert "congestion controller" in report.stdout
    assert f"{expected_n_dd['mean']:.4g} ±" in report.stdout, report.stdout


def test_accept_invalid_uses_runs_that_failed_only_the_named_checks_and_says_so(synthetic_study: Path,
                                                                                tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(synthetic_study, out)
    r = run_cli("aggregate", str(out), "--accept-invalid", "host_cpu_not_saturated")
    assert r.returncode == 0, r.stderr
    assert "[INCLUDES 1 INVALID run(s)" in r.stdout and "host_cpu_not_saturated" in r.stdout
    doc = json.loads((out / "study.json").read_text())
    used = {(e["point"], e["rep"]): e for e in doc["runs"] if e["used"]}
    # tcp3 rep 4 had two invalid attempts and no valid one: its last is used, marked; a valid attempt still wins.
    assert used[("tcp3", 4)]["attempt"] == 2 and used[("tcp3", 4)]["accepted_invalid"] == ["host_cpu_not_saturated"]
    assert used[("highloss", 1)]["attempt"] == 2 and "accepted_invalid" not in used[("highloss", 1)]
    assert (doc["summary"]["runs_used"], doc["summary"]["runs_used_invalid"]) == (11, 1)
    assert doc["accept_invalid"] == ["host_cpu_not_saturated"] and "INVALID only" in doc["statistics"]["over"]
    tcp3 = next(p for p in doc["points"] if p["name"] == "tcp3")
    assert tcp3["flows"]["forward:video"]["all"]["throughput_bps"]["n"] == 4
    t = pq.read_table(out / "study.parquet").to_pydict()
    marked = {d for d, a in zip(t["run_dir"], t["accepted_invalid"]) if a == "host_cpu_not_saturated"}
    assert marked == {used[("tcp3", 4)]["dir"]} and set(t["accepted_invalid"]) == {None, "host_cpu_not_saturated"}
    report = run_cli("report", str(out))
    assert report.returncode == 0 and report.stdout.startswith("[INCLUDES 1 INVALID run(s)"), report.stdout[:300]
    assert "tcp3 [1 INVALID]" in report.stdout and "lowloss [" not in report.stdout
    assert "INCLUDES 1 INVALID run(s)" in (out / "dashboard.html").read_text()
    compared = run_cli("compare", str(synthetic_study), str(out), "--out", str(tmp_path / "compare.html"))
    assert compared.returncode == 0 and "1 INVALID run(s) included" in compared.stdout, compared.stdout[:500]
    # A check no attempt failed is refused by name (a typo would otherwise change nothing, silently).
    bad = run_cli("aggregate", str(out), "--accept-invalid", "host_cpu_not_saturate")
    assert bad.returncode == 2 and "host_cpu_not_saturate: no attempt of this study failed that check" in bad.stderr
    # Without the option the aggregation is the strict one again.
    assert run_cli("aggregate", str(out)).returncode == 0
    strict = json.loads((out / "study.json").read_text())
    assert (strict["summary"]["runs_used"], strict["summary"]["runs_used_invalid"],
            strict["invalid_note"]) == (10, 0, None)
