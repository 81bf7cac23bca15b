"""No missing value becomes a number (issue 29, section 3): each input the analyzer may find missing or damaged (a
component without CPU samples, a call connection without a rate, a run directory without call_start, a damaged
packets.parquet, an unreadable metrics.json in a study, a non-finite mean in study.json) gives an explicit absence
in the output (null, '-' or a named reason) and a count of what was left out, never 0 or a silently smaller n."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rtclab import cli, dashboard, dashboard_panels, dashboard_tables, findings, findings_page, verdicts
from rtclab.study import aggregate as agg
from rtclab.study import dashboard as study_dashboard
from rtclab.study import distributions, metric_rows, report, studydir
from rtclab_study import plan as planmod
from rtclab_study import spec

CALL_START = 1_700_000_000.0  # epoch s: packet times are epoch ns
QUEUE_MS = [[5.0, 7.0, 9.0], [4.0, 6.0], [10.0, 20.0, 30.0, 40.0]]  # per repetition: the video packets' queuing delay


def run_metrics(rate_bps: float, call_start: float | None = CALL_START) -> dict[str, Any]:
    """A small metrics.json: one forward video flow over two phases, the bottleneck, the CPU of two components."""
    return {
        "run": {"id": "r", "duration_s": 10.0, "call_start": call_start},
        "phases": [{"name": "all", "start_s": 0.0, "end_s": 10.0, "cross_traffic": False},
                   {"name": "first", "start_s": 0.0, "end_s": 5.0, "cross_traffic": False}],
        "flows": [{"id": 0, "direction": "forward", "kind": "video", "ssrc": 1, "packets_sent": 10,
                   "packets_received": 10, "throughput_bps": {"mean": rate_bps},
                   "phases": {"first": {"throughput_bps": {"mean": rate_bps}}}}],
        "fairness": {"all": {"connections": [{"role": "call", "throughput_bps": rate_bps}], "jain_index": 1.0}},
        "cpu": {"window": {"samples": 10}, "host_busy": {"mean_cores": 1.0},
                "components": {"chromium-a": {"mean_cores": 0.25}, "harness": {"mean_cores": 0.5}}},
    }


def write_packets(d: Path, queue_ms: list[float]) -> None:
    """packets.parquet: the video flow's delivered packets, one a second from the call's start."""
    n = len(queue_ms)
    t_send = [int(CALL_START * 1e9) + i * 1_000_000_000 for i in range(n)]
    pq.write_table(pa.table({"flow": pa.array([0] * n, pa.int64()), "status": pa.array(["delivered"] * n),
                             "t_send_ns": pa.array(t_send, pa.int64()),
                             "t_recv_ns": pa.array([t + int(q * 1e6) for t, q in zip(t_send, queue_ms)], pa.int64()),
                             "queuing_delay_ns": pa.array([int(q * 1e6) for q in queue_ms], pa.int64()),
                             "ip_len": pa.array([1200] * n, pa.int64())}),
                   d / "packets.parquet")


def make_study(tmp: Path, metrics_of: list[dict[str, Any]]) -> Path:
    """A study of one point `p`, one valid run per repetition holding these metrics.json and packets.parquet."""
    f = tmp / "s.yaml"
    f.write_text(f"name: s\nbase: {{duration_s: 10}}\nrepetitions: {len(metrics_of)}\nmax_attempts: 1\n"
                 "points:\n  - {name: p, set: {duration_s: 10}}\n")
    out = tmp / "s"
    planmod.write(planmod.make(spec.load(f)), out)
    for rep, (m, q) in enumerate(zip(metrics_of, QUEUE_MS), start=1):
        d = studydir.attempt_dir(out, "p", rep, 1)
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({
            "status": "complete", "id": d.name, "validity": {"valid": True, "checks": []}}))
        (d / "metrics.json").write_text(json.dumps(m))
        write_packets(d, q)
    return out


def point(doc: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in doc["points"] if p["name"] == "p")


# ---- per-run values -------------------------------------------------------------------------------------------------

def test_a_cpu_component_the_run_did_not_account_is_null_not_zero() -> None:
    v = metric_rows.cpu_values(run_metrics(1e6)["cpu"])
    assert v["cpu_chromium_a_cores"] == 0.25 and v["cpu_harness_cores"] == 0.5
    assert v["cpu_chromium_b_cores"] is None and v["cpu_iperf3_cores"] is None and v["cpu_bottleneck_cores"] is None
    assert v["cpu_chromium_cores"] == 0.25
    # No browser accounted at all: the browsers' sum is unknown, not 0.
    assert metric_rows.cpu_values({"components": {"harness": {"mean_cores": 0.5}}})["cpu_chromium_cores"] is None


def test_a_study_mean_of_a_component_is_over_the_runs_that_had_it(tmp_path: Path) -> None:
    ms = [run_metrics(1e6), run_metrics(1e6), run_metrics(1e6)]
    ms[0]["cpu"]["components"]["iperf3"] = {"mean_cores": 0.3}
    ms[1]["cpu"]["components"]["iperf3"] = {"mean_cores": 0.1}
    doc = agg.aggregate(make_study(tmp_path, ms), analyse_missing=False)
    st = point(doc)["flows"]["cpu"]["all"]
    assert st["cpu_iperf3_cores"]["n"] == 2 and st["cpu_iperf3_cores"]["mean"] == pytest.approx(0.2)
    assert st["cpu_chromium_b_cores"]["n"] == 0 and st["cpu_chromium_b_cores"]["mean"] is None
    assert "chromium-b" in report.render(doc) and "-" in report.render(doc).split("CPU, mean cores")[1]


def test_a_call_connection_without_a_rate_makes_the_calls_sum_unknown() -> None:
    fair = {"connections": [{"role": "call", "throughput_bps": 5e5, "share_of_fair_share": 0.5},
                            {"role": "call", "throughput_bps": None, "share_of_fair_share": None}]}
    v = metric_rows.bottleneck_values(fair)
    assert v["call_throughput_bps"] is None and v["call_share_of_fair_share"] is None
    fair["connections"][1]["throughput_bps"] = 2.5e5
    assert metric_rows.bottleneck_values(fair)["call_throughput_bps"] == 7.5e5


# ---- the boxes: samples a run cannot give ---------------------------------------------------------------------------

def test_a_run_without_call_start_gives_the_whole_call_but_no_phase_and_says_why(tmp_path: Path) -> None:
    write_packets(tmp_path, [5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0])
    with_start = distributions.run_samples(tmp_path, run_metrics(1e6), lambda _: True, "r")
    assert with_start.samples[("forward:video", "first", "queuing_delay_ms")].tolist() == [5.0, 7.0, 9.0, 11.0, 13.0]
    got = distributions.run_samples(tmp_path, run_metrics(1e6, call_start=None), lambda _: True, "r")
    assert got.samples[("forward:video", "all", "queuing_delay_ms")].size == 7
    assert ("forward:video", "first", "queuing_delay_ms") not in got.samples
    assert "call_start" in got.left_out[("forward:video", "first", "queuing_delay_ms")]


def test_a_damaged_packets_table_is_named_in_the_box(tmp_path: Path) -> None:
    out = make_study(tmp_path, [run_metrics(1e6), run_metrics(1e6), run_metrics(1e6)])
    (studydir.attempt_dir(out, "p", 2, 1) / "packets.parquet").write_bytes(b"PAR1 cut short")
    doc = agg.aggregate(out, analyse_missing=False)
    b = point(doc)["distributions"]["forward:video"]["all"]["queuing_delay_ms"]
    assert b["n_runs"] == 2 and b["runs"] == 3
    assert b["n_samples"] == len(QUEUE_MS[0]) + len(QUEUE_MS[2])
    assert b["p50"] == pytest.approx(float(np.percentile(QUEUE_MS[0] + QUEUE_MS[2], 50)))
    assert [x["run"] for x in b["left_out"]] == ["runs/p/2-1"]
    assert b["left_out"][0]["reason"].startswith("packets.parquet unreadable")
    fig = study_dashboard.box_figure(doc, ["all"], "queuing_delay_ms", "queue", "ms")
    assert fig is not None and "1 left out: runs/p/2-1: packets.parquet unreadable" in fig["data"][0]["hovertext"][0]


# ---- a study's runs that cannot be read ------------------------------------------------------------------------------

def test_an_unreadable_metrics_json_is_listed_and_n_says_how_many_were_read(tmp_path: Path) -> None:
    out = make_study(tmp_path, [run_metrics(1e6), run_metrics(2e6), run_metrics(4e6)])
    (studydir.attempt_dir(out, "p", 2, 1) / "metrics.json").write_text('{"run": {"id": "r"')  # cut short
    doc = agg.aggregate(out, analyse_missing=False)
    p = point(doc)
    assert p["n_runs"] == 2 and p["flows"]["forward:video"]["all"]["throughput_bps"]["n"] == 2
    assert p["flows"]["forward:video"]["all"]["throughput_bps"]["mean"] == pytest.approx(2.5e6)
    assert [x["dir"] for x in p["runs_left_out"]] == ["runs/p/2-1"]
    assert p["runs_left_out"][0]["reason"].startswith("metrics.json unreadable")
    assert doc["summary"]["runs_left_out"] == 1
    why = p["runs_left_out"][0]["reason"]
    assert doc["left_out"] == [{"point": "p", "rep": 2, "dir": "runs/p/2-1", "reason": why}]
    for text in (agg.text_summary(doc), report.render(doc)):
        assert "1 run(s) left out" in text and "runs/p/2-1: metrics.json unreadable" in text
    html = study_dashboard.render(doc, out, out / "dashboard.html")
    assert "1 chosen run(s) left out" in html and "metrics.json unreadable" in html


def test_the_study_dashboard_leaves_out_a_runs_packets_without_call_start(tmp_path: Path) -> None:
    out = make_study(tmp_path, [run_metrics(1e6, call_start=None)])
    d = studydir.attempt_dir(out, "p", 1, 1)
    with pytest.raises(ValueError, match="call_start"):
        study_dashboard._run_series(d)


def test_a_runs_chromium_version_that_cannot_be_read_is_named_not_skipped(tmp_path: Path) -> None:
    from rtclab.study import compare
    out = make_study(tmp_path, [run_metrics(1e6), run_metrics(2e6), run_metrics(4e6)])
    doc = agg.aggregate(out, analyse_missing=False)
    first = studydir.attempt_dir(out, "p", 1, 1) / "manifest.json"
    first.write_text(json.dumps({**json.loads(first.read_text()), "versions": {"chromium": "Chromium 144.0.7559.59"}}))
    assert report.chromium_versions(out, doc).found == ["144.0.7559.59"]
    assert [x["reason"] for x in report.chromium_versions(out, doc).left_out] == \
        ["manifest.json records no versions.chromium"] * 2
    (studydir.attempt_dir(out, "p", 2, 1) / "manifest.json").write_text('{"status": "compl')  # cut short
    (studydir.attempt_dir(out, "p", 3, 1) / "manifest.json").unlink()
    got = report.chromium_versions(out, doc)
    assert got.found == ["144.0.7559.59"]
    assert [x["dir"] for x in got.left_out] == ["runs/p/2-1", "runs/p/3-1"]
    assert got.left_out[0]["reason"].startswith("manifest.json unreadable: JSONDecodeError")
    assert got.left_out[1]["reason"] == "no manifest.json"
    name = compare.study_name(out, doc)
    assert "Chromium 144.0.7559.59; version unknown for 2 run(s): manifest.json unreadable" in name
    assert "(runs/p/2-1); no manifest.json (runs/p/3-1)" in name


# ---- the findings page: runs it could not read, a mean that is no number ---------------------------------------------

def test_findings_name_the_runs_they_could_not_read(tmp_path: Path) -> None:
    out = make_study(tmp_path, [run_metrics(1e6), run_metrics(2e6), run_metrics(4e6)])
    (studydir.attempt_dir(out, "p", 2, 1) / "metrics.json").write_text("{not json")
    agg.aggregate(out, analyse_missing=False)
    # A used run whose metrics.json is damaged after aggregation: a per-run measure is over the others, and says so.
    (studydir.attempt_dir(out, "p", 3, 1) / "metrics.json").write_text("{not json")
    s = findings.read_study(out)
    m = findings.measure_point(s, "p", {"where": {"kind": "video"}, "metric": "throughput_bps"})
    assert m["stat"]["n"] == 1 and m["stat"]["mean"] == 1e6
    assert [x.split(":")[0] for x in m["left_out"]] == ["runs/p/2-1", "runs/p/3-1"]
    row = findings.Row("p", "all", m, None, None, verdicts.INCONCLUSIVE, "")
    assert "2 run(s) left out (runs/p/2-1: metrics.json unreadable" in findings_page._invalid_text(row)


def test_a_non_finite_mean_in_study_json_is_no_value(tmp_path: Path) -> None:
    out = make_study(tmp_path, [run_metrics(1e6), run_metrics(2e6), run_metrics(4e6)])
    doc = agg.aggregate(out, analyse_missing=False)
    point(doc)["flows"]["forward:video"]["all"]["throughput_bps"]["mean"] = math.nan
    (out / "study.json").write_text(json.dumps(doc))  # json writes NaN, and reads it back
    m = findings.measure_point(findings.read_study(out), "p", {"flow": "forward:video", "metric": "throughput_bps"})
    assert m["stat"] is None and findings.inconclusive_reason(m, 2) == "no value"


# ---- one run: its t = 0, its dashboard, its report -------------------------------------------------------------------

def analyze_in_process(run_dir: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["analyze", str(run_dir), "-q", "--no-tshark", "--no-dashboard"]) == 0


def test_the_run_dashboard_leaves_out_packet_panels_without_call_start(tmp_path: Path) -> None:
    from rtclab import synth
    from rtclab.packets import from_parquet
    synth.write_run(tmp_path, synth.SynthConfig(duration_s=6.0, tcp_flows=0))
    analyze_in_process(tmp_path)
    m = json.loads((tmp_path / "metrics.json").read_text())
    table = from_parquet(tmp_path / "packets.parquet")
    figs, omitted = dashboard.figures(m, table)
    assert not any("call_start" in x for x in omitted)
    m["run"]["call_start"] = None  # damaged: the packets' epoch times have no t = 0
    figs_without, omitted = dashboard.figures(m, table)
    assert any("no run.call_start" in x for x in omitted) and len(figs_without) < len(figs)


def test_a_run_without_call_start_or_capture_takes_t0_from_getstats_not_0(tmp_path: Path) -> None:
    from rtclab import analyze, synth
    cfg = synth.SynthConfig(duration_s=6.0, tcp_flows=0)
    synth.write_run(tmp_path, cfg)
    for side in ("a", "b"):
        (tmp_path / f"capture-{side}.pcap").unlink()
    man = json.loads((tmp_path / "manifest.json").read_text())
    del man["timings"]["call_start"]
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    first = min(json.loads(line)["t"] for side in ("a", "b")
                for line in (tmp_path / f"getstats-{side}.jsonl").read_text().splitlines() if line.strip())
    inputs = analyze.read_run(tmp_path)
    assert inputs.t0 == pytest.approx(first) and inputs.t0 > 1e9
    assert any("first getStats sample" in g for g in inputs.gaps)
    # The getStats series are on the call's clock: seconds from the first sample, not epoch seconds.
    series = inputs.getstats_summary["directions"]["forward"]["series"]
    times = [p[0] for pts in series.values() for p in pts]
    assert times and 0.0 <= min(times) and max(times) < cfg.duration_s + 5


def test_a_getstats_object_without_any_time_is_left_out_and_counted(tmp_path: Path) -> None:
    from rtclab import getstats
    path = tmp_path / "getstats-a.jsonl"
    timed = {"type": "outbound-rtp", "ssrc": 1, "kind": "video", "bytesSent": 100}
    path.write_text(json.dumps({"t": CALL_START, "report": [timed]}) + "\n"
                    + json.dumps({"report": [dict(timed, bytesSent=200)]}) + "\n")  # no t, no timestamp
    problems: list[str] = []
    side = getstats.read_side(path, problems)
    assert side is not None and side.samples == 2 and side.untimed == 1
    assert [o["_t"] for o in side.outbound[1]] == [CALL_START]
    assert side.first_time() == CALL_START
    assert any("1 stats object(s) with no time" in p for p in problems)


# ---- a run's report and dashboard: a value it does not have is printed as missing ------------------------------------

def test_a_run_without_duration_or_freeze_figures_prints_them_as_missing(tmp_path: Path) -> None:
    from rtclab import report as run_report
    from rtclab import synth
    synth.write_run(tmp_path, synth.SynthConfig(duration_s=6.0, tcp_flows=0, frames=True, cpu=False))
    analyze_in_process(tmp_path)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert f"{m['run']['duration_s']:.1f} s, backend" in run_report.render(m).splitlines()[0]
    m["run"]["duration_s"] = None
    assert "duration unknown, backend" in run_report.render(m).splitlines()[0]
    assert '<div class="k">duration</div><div class="v">-</div>' in dashboard_tables.cards(m)
    m["frames"]["b"]["freezes"] = {"count": None, "total_ms": None, "list": []}  # freezes not measured
    panels, _, _ = dashboard_panels.frame_panels(m)
    assert "- freezes (Chrome's rule), -" in panels[0][0]


def test_a_queue_sample_without_a_packet_count_is_not_an_empty_queue(tmp_path: Path) -> None:
    from rtclab import queue, rundir
    (tmp_path / "bottleneck-forward.stats.jsonl").write_text(
        json.dumps({"t": CALL_START + 1, "queue_bytes": 3000, "queue_packets": 2, "rate_kbit": 1000}) + "\n"
        + json.dumps({"t": CALL_START + 2, "queue_bytes": 6000, "rate_kbit": 1000}) + "\n")  # no queue_packets
    run = rundir.RunDir(path=tmp_path)
    _, samples = rundir.queue_samples(run)
    assert [s.queue_packets for s in samples] == [2.0, None]
    q = queue.analyse(run, CALL_START)
    assert q is not None and q["queue_packets"] == {"mean": 2.0, "max": 2.0}
    assert q["queue_bytes"] == {"mean": 4500.0, "max": 6000.0}


def test_a_kernel_queue_sample_without_a_backlog_is_left_out_and_counted_not_empty(tmp_path: Path) -> None:
    from rtclab import queue, rundir

    def line(t: float, **root: Any) -> str:
        other = {"dev": "r-eth0", "root": True, "backlog": 0, "qlen": 0}  # the reverse direction's: not the queue
        return json.dumps({"t": t, "ns": "r", "qdiscs": [other, {"dev": "r-eth1", "root": True, **root}]}) + "\n"
    (tmp_path / "qdisc-stats.jsonl").write_text(
        line(CALL_START + 1, backlog=3000, qlen=2) + line(CALL_START + 2, qlen=0)  # no backlog: size unknown
        + line(CALL_START + 3, backlog=9000)  # no qlen: the packets unknown, the bytes known
        + json.dumps({"ns": "r", "qdiscs": [{"dev": "r-eth1", "root": True, "backlog": 0, "qlen": 0}]}) + "\n")
    run = rundir.RunDir(path=tmp_path)
    source, samples = rundir.queue_samples(run)
    assert source == "qdisc-stats.jsonl"
    assert [(s.t - CALL_START, s.queue_bytes, s.queue_packets) for s in samples] == [(1, 3000, 2), (3, 9000, None)]
    assert run.problems == ["qdisc-stats.jsonl: 2 sample(s) without t or r-eth1's backlog left out of the queue"]
    q = queue.analyse(rundir.RunDir(path=tmp_path), CALL_START)
    assert q is not None and q["queue_bytes"] == {"mean": 6000.0, "max": 9000.0}
    assert q["queue_packets"] == {"mean": 2.0, "max": 2.0}


def test_a_userspace_queue_sample_without_queue_bytes_is_counted(tmp_path: Path) -> None:
    from rtclab import rundir
    (tmp_path / "bottleneck-forward.stats.jsonl").write_text(
        json.dumps({"t": CALL_START + 1, "queue_bytes": 3000, "queue_packets": 2}) + "\n"
        + json.dumps({"t": CALL_START + 2, "queue_packets": 2}) + "\n")
    run = rundir.RunDir(path=tmp_path)
    _, samples = rundir.queue_samples(run)
    assert [s.queue_bytes for s in samples] == [3000.0]
    assert run.problems == ["bottleneck-forward.stats.jsonl: 1 sample(s) without t or queue_bytes left out of the "
                            "queue"]
