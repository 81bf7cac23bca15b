"""`rtclab export csv|parquet RUN|STUDY` (rtclab/exports/tidy.py, docs/export.md "Tidy tables"): one row per (point,
run, flow, phase, metric), each value the analyzer's own, read back here from metrics.json by its documented path
(and from study.parquet for a study), a missing value an empty cell or a null, never 0."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from rtclab import cli, synth
from rtclab.exports import tidy
from rtclab.study.catalogue import METRICS


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def analysed_run(d: Path, **cfg: Any) -> Path:
    synth.write_run(d, synth.SynthConfig(duration_s=12.0, tcp_start_s=3.0, tcp_stop_s=9.0, **cfg))
    code, _, err = run_cli("analyze", str(d), "-q", "--no-tshark", "--no-dashboard")
    assert code == 0, err
    return d


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return analysed_run(tmp_path_factory.mktemp("tidy") / "run", tcp_flows=2, seed=3)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def expected_flow_value(m: dict[str, Any], flow: dict[str, Any], metric: str) -> Any:
    """The documented metrics.json path of a packet flow's metric over the whole call (study/catalogue.py)."""
    paths = {"loss_ratio_bytes": ["loss_ratio_bytes"], "loss_ratio_packets": ["loss_ratio"],
             "utilisation": ["utilisation"], "throughput_bps": ["throughput_bps", "mean"],
             "send_rate_bps": ["send_rate_bps"], "queuing_delay_ms_mean": ["queuing_delay_ms", "mean"],
             "queuing_delay_ms_p50": ["queuing_delay_ms", "p50"], "queuing_delay_ms_p95": ["queuing_delay_ms", "p95"],
             "owd_ms_mean": ["owd_ms", "mean"], "jitter_ms": ["jitter_ms", "mean"]}
    v: Any = flow
    for k in paths[metric]:
        v = v.get(k) if isinstance(v, dict) else None
    return v


def tq_value(m: dict[str, Any], flow: dict[str, Any], metric: str) -> Any:
    """getStats' Tq of the flow's SSRC over the call (metrics.json getstats.directions.<dir>.streams[].tq_ms)."""
    for s in m["getstats"]["directions"][flow["direction"]]["streams"]:
        if s.get("ssrc") == flow["ssrc"]:
            return (s.get("tq_ms") or {}).get(metric.rsplit("_", 1)[1])
    return None


def test_a_runs_csv_holds_metrics_json_values_and_leaves_missing_ones_empty(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.csv"
    code, stdout, err = run_cli("export", "csv", str(run_dir), "--out", str(out))
    assert code == 0, err
    rows = read_csv(out)
    assert f"{len(rows)} rows" in stdout and list(rows[0]) == tidy.LEADING_COLUMNS + tidy.ROW_COLUMNS + \
        tidy.VALUE_COLUMNS
    m = json.loads((run_dir / "metrics.json").read_text())
    checked = 0
    # Each forward and reverse video/audio/tcp flow is one per (direction, kind, ssrc) in a synthetic run but for
    # the TCP connections, told apart by their label's rank (packets sent).
    for f in m["flows"]:
        if f["kind"] not in ("video", "audio"):
            continue
        mine = [r for r in rows if r["direction"] == f["direction"] and r["kind"] == f["kind"]
                and r["ssrc"] == str(f["ssrc"]) and r["phase"] == "all"]
        assert {r["metric"] for r in mine} == {n for n, x in METRICS.items() if x.family == "flow"}
        for r in mine:
            assert r["unit"] == METRICS[r["metric"]].unit
            want = tq_value(m, f, r["metric"]) if r["metric"].startswith("tq_ms") else \
                expected_flow_value(m, f, r["metric"])
            if want is None:
                assert r["value"] == "", r
            else:
                assert float(r["value"]) == pytest.approx(want, rel=1e-12, abs=0), r
                checked += 1
    assert checked >= 15
    # No capacity change in this run: RFC 8867's reaction times are missing, an empty cell, never 0.
    rfc = {r["metric"]: r["value"] for r in rows if r["flow"] == "rfc8867"}
    assert m["rfc8867"]["summary"]["reaction_time_down_s"] is None and rfc["reaction_time_down_s"] == ""
    assert float(rfc["rate_to_target_ratio"]) == m["rfc8867"]["summary"]["rate_to_target_ratio"]
    # The bottleneck's fairness per phase.
    for r in (r for r in rows if r["kind"] == "bottleneck" and r["metric"] == "jain_index"):
        assert float(r["value"]) == pytest.approx(m["fairness"][r["phase"]]["jain_index"], rel=1e-12)
    assert {r["run_id"] for r in rows} == {m["run"]["id"]} and {r["run_valid"] for r in rows} == {"true"}
    assert all(r["study"] == "" and r["point"] == "" for r in rows)


def test_parquet_holds_the_same_rows_typed_with_nulls(run_dir: Path, tmp_path: Path) -> None:
    assert run_cli("export", "csv", str(run_dir), "--out", str(tmp_path / "t.csv"))[0] == 0
    assert run_cli("export", "parquet", str(run_dir), "--out", str(tmp_path / "t.parquet"))[0] == 0
    rows = read_csv(tmp_path / "t.csv")
    t = pq.read_table(tmp_path / "t.parquet")
    assert t.schema.field("value").type == "double" and t.schema.field("run_valid").type == "bool"
    data = t.to_pylist()
    assert len(data) == len(rows)
    for c, p in zip(rows, data):
        assert (c["flow"], c["phase"], c["metric"]) == (p["flow"], p["phase"], p["metric"])
        if c["value"] == "":
            assert p["value"] is None
        else:
            assert p["value"] == float(c["value"])


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rtclab.study import studydir
    from rtclab_study import plan as planmod
    from rtclab_study import spec
    from rtclab_study.__main__ import main as study_main
    tmp = tmp_path_factory.mktemp("tidy-study")
    f = tmp / "s.yaml"
    f.write_text("name: tidy-study\nbase: {duration_s: 12}\nrepetitions: 2\n"
                 "axes:\n  - path: network.forward.rate.kbit\n    name: rate\n    values: [4000, 8000]\n")
    out = tmp / "out"
    plan = planmod.make(spec.load(f))
    planmod.write(plan, out)
    for i, p in enumerate(plan.study.points):
        for rep in (1, 2):
            analysed_run(studydir.attempt_dir(out, p.name, rep, 1), tcp_flows=1, seed=20 + 2 * i + rep)
    with contextlib.redirect_stdout(io.StringIO()):
        assert study_main(["aggregate", str(out)]) == 0
    return out


def test_a_studys_table_is_study_parquet_melted_with_the_points_parameters(study_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "study.csv"
    code, _, err = run_cli("export", "csv", str(study_dir), "--out", str(out))
    assert code == 0, err
    rows = read_csv(out)
    wide = pq.read_table(study_dir / "study.parquet").to_pylist()
    assert {"rate", "network.forward.rate.kbit"} <= set(rows[0])
    assert len({r["point"] for r in rows}) == 2 and {r["rep"] for r in rows} == {"1", "2"}
    by_key = {(w["run_dir"], w["flow"], w["phase"]): w for w in wide}
    n_family = 0
    for r in rows:
        w = by_key[(r["run_dir"], r["flow"], r["phase"])]
        assert r["point"] == w["point"] and r["study"] == "tidy-study"
        assert r["rate"] == w["rate"] and float(r["network.forward.rate.kbit"]) == w["network.forward.rate.kbit"]
        v = w[r["metric"]]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            assert r["value"] == ""
        else:
            assert float(r["value"]) == v
        n_family += 1
    # One row per wide row and metric of its family.
    families = {m.family for m in METRICS.values()}
    expected = sum(sum(1 for x in METRICS.values() if x.family == tidy._family(w["kind"])) for w in wide)
    assert n_family == expected and "flow" in families
    # Independently of study.parquet: the forward video's throughput is each run's metrics.json value.
    for r in (r for r in rows if r["flow"] == "forward:video" and r["phase"] == "all"
              and r["metric"] == "throughput_bps"):
        m = json.loads((study_dir / r["run_dir"] / "metrics.json").read_text())
        video = [f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"]
        assert len(video) == 1 and float(r["value"]) == video[0]["throughput_bps"]["mean"]


@pytest.mark.parametrize("case", ["not a directory", "run not analysed", "study not aggregated", "neither"])
def test_what_cannot_be_exported_exits_2_naming_the_problem(tmp_path: Path, case: str) -> None:
    target = tmp_path / "x"
    if case != "not a directory":
        target.mkdir()
    if case == "run not analysed":
        (target / "manifest.json").write_text("{}")
    if case == "study not aggregated":
        (target / "plan.json").write_text("{}")
    code, _, err = run_cli("export", "csv", str(target), "--out", str(tmp_path / "o.csv"))
    want = {"not a directory": "no such directory", "run not analysed": "metrics.json missing: run `rtclab analyze",
            "study not aggregated": "study.parquet missing: run `rtclab study aggregate",
            "neither": "neither a run directory"}[case]
    assert code == 2 and want in err and not (tmp_path / "o.csv").exists()
