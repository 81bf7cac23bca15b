"""`rtclab study plan` from pilot studies and `rtclab study run --repetitions-from`: the sample size per point from
small pilot studies made with the study writers and runs whose metrics.json hold chosen values (the t-table
arithmetic itself is checked in test_study_plan.py); damaged and empty pilots, a claim with no point in the pilot,
the cap, the cost, and the per-point repetitions through plan.json, the attempt scan and the aggregation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import inprocess
from rtclab.study import aggregate as agg
from rtclab.study import plan as repplan
from rtclab.study import provenance, studydir
from rtclab_study import __main__ as cli
from rtclab_study import plan as planmod
from rtclab_study import runner, spec
from stat_tables import CHI2_020, T80, T975, by_table, sxx

REPO = Path(__file__).resolve().parents[2]


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
    # The refusal through the command's entry point in this process (test-support/inprocess.py): one interpreter.
    bad = inprocess.rtclab_study("plan", str(tmp_path), "--claims", str(claims), "--study", str(f))
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
    # Resumed with the same plan, the directory is this study's; a copy of the pilot's runs elsewhere (or runs made
    # with the study file's count), resumed with the plan, would pool the two samples: refused either way round.
    runner.check_out(p, out)
    unplanned = tmp_path / "unplanned"
    planmod.write(planmod.make(spec.load(f)), unplanned)
    with pytest.raises(runner.StudyDirError, match="made with the study file's count, not the repetitions plan"):
        runner.check_out(p, unplanned)
    with pytest.raises(runner.StudyDirError, match="made with the repetitions plan .*, not the study file's count"):
        runner.check_out(planmod.make(spec.load(f)), out)


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
    r = inprocess.rtclab_study("run", str(f), "--repetitions-from", str(path), "--dry-run")
    assert r.returncode == 2 and problem.split(":")[0] in r.stderr and "nothing was run" in r.stderr
