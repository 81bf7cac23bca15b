"""Where the frames are shown (issue 20 item 6): the per-frame rows metrics.json carries for the run dashboard
(frames.<side>.series) against the synthetic model's own frames; the dashboard's frame panel on the stack's time axis
with the freezes shaded across every panel; a study's per-point frames metrics (the frames:b pseudo-flow) against an
independent computation from the runs' metrics.json and frames-b.jsonl, an INVALID run never among them; and the
study report, `study compare` and the study dashboard printing them."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

import inprocess
from rtclab import analyze, dashboard, dashboard_tables, synth
from rtclab.study import catalogue, studydir
from rtclab.study.report import fmt
from rtclab_study import plan as planmod
from rtclab_study import spec

STALL = (5.0, 5.6)  # the model's receiver shows no frame whose first packet leaves in [5, 5.6) s


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("frames") / "run"
    truth = synth.write_run(d, synth.SynthConfig(duration_s=10.0, tcp_start_s=3.0, tcp_stop_s=7.0, frames=True,
                                                 stall_s=STALL, seed=7))
    m, table = analyze.analyze(d, run_tshark=False)
    return {"dir": d, "m": m, "table": table, "truth": truth.extra["frames"], "fwd": truth}


def test_the_series_holds_each_shown_frames_delays_as_the_model_made_them(run: dict[str, Any]) -> None:
    m, tr = run["m"], run["truth"]
    t0_ms = m["run"]["call_start"] * 1000.0
    ser = m["frames"]["b"]["series"]
    # The model's frames shown within the call (display before its end), in order: every one joined (no record of a
    # frame whose packets were lost: the model shows only complete frames).
    inside = tr["display_ms"] < t0_ms + m["run"]["duration_s"] * 1000.0
    assert len(ser["t_s"]) == int(inside.sum()) == m["frames"]["b"]["records"]
    expect = {"t_s": (tr["display_ms"][inside] - t0_ms) / 1000.0,
              "glass_to_glass_ms": tr["display_ms"][inside] - tr["capture_ms"][inside],
              "sender_ms": tr["first_send_ms"][inside] - tr["capture_ms"][inside],
              "network_ms": tr["last_recv_ms"][inside] - tr["first_send_ms"][inside],
              "receiver_ms": tr["display_ms"][inside] - tr["last_recv_ms"][inside]}
    for key, want in expect.items():
        got = ser[key]
        assert None not in got, key
        # 0.06 ms: the file's ms to 3 decimals, the series' to 2, a duplicate's second copy 50 us after the first.
        assert max(abs(g - w) for g, w in zip(got, want.tolist())) < (1e-4 if key == "t_s" else 0.06), key
    # Frames never shown: the model's frames (RTP timestamps) with a first packet between the first and the last
    # shown frame's that were not shown, at their first packet's departure.
    fwd = run["fwd"]
    video = fwd.kind == 0
    ts = synth.generate(synth.SynthConfig(duration_s=10.0, tcp_start_s=3.0, tcp_stop_s=7.0, seed=7))[0]["rtp_ts"][video]
    first_send: dict[int, float] = {}
    for t, s in zip(ts.tolist(), (fwd.t_send_ns[video] / 1e6).tolist()):
        first_send[t] = min(first_send.get(t, math.inf), s)
    shown = set(tr["rtp_ts"][inside].tolist())
    lo, hi = min(first_send[t] for t in shown), max(first_send[t] for t in shown)
    never = sorted((s - t0_ms) / 1000.0 for t, s in first_send.items() if t not in shown and lo <= s <= hi)
    assert len(never) == m["frames"]["b"]["never_shown"] and len(never) >= 18  # the stall's 0.6 s at 30 fps, and losses
    assert sorted(ser["never_shown_t_s"]) == pytest.approx(never, abs=1e-4)


def test_the_freeze_time_ratio_is_the_stalls_gap_over_the_span_shown(run: dict[str, Any]) -> None:
    m = run["m"]
    fz = m["frames"]["b"]["freezes"]
    t0_ms = m["run"]["call_start"] * 1000.0
    end_ms = t0_ms + m["run"]["duration_s"] * 1000.0
    recs = [json.loads(x) for x in (run["dir"] / "frames-b.jsonl").read_text().splitlines()]
    shown = [r["presentation_ms"] for r in recs if r["kind"] == "frame" and t0_ms <= r["expected_display_ms"] < end_ms]
    gaps = [b - a for a, b in zip(shown, shown[1:])]
    stall_gap = max(gaps)
    assert stall_gap > (STALL[1] - STALL[0]) * 1000  # the stall, and the frames around it
    # The stall is the one freeze here: every other gap is a frame or two lost (well under mean + 150 ms).
    assert fz["count"] == 1 and fz["total_ms"] == pytest.approx(stall_gap)
    assert fz["span_ms"] == pytest.approx(shown[-1] - shown[0])
    assert fz["time_ratio"] == pytest.approx(stall_gap / (shown[-1] - shown[0]))


def _stack(page: str) -> dict[str, Any]:
    figs = json.loads(page.split('<script id="figures" type="application/json">')[1].split("</script>")[0])
    return next(f["fig"] for f in figs if f["id"] == "timeseries")


def test_the_dashboard_draws_the_frames_under_the_queue_with_the_freezes_shaded_across(run: dict[str, Any]) -> None:
    m = json.loads(json.dumps(run["m"]))
    # A queue series as the emulator's counters give it (the synthetic run has none), to see both on one axis.
    m["bottleneck_queue"] = {"source": "qdisc counters (test)", "series": {"queue_delay_ms": [[0.5, 3.0], [9.5, 40.0]]}}
    fig = _stack(dashboard.render(m, run["table"]))
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    q = next(i for i, t in enumerate(titles) if "Forward bottleneck queue" in t)
    f = next(i for i, t in enumerate(titles) if "Frames shown at b" in t)
    assert f == q + 1
    axis = "y" if f == 0 else f"y{f + 1}"
    traces = {t["name"]: t for t in fig["data"] if t["yaxis"] == axis}
    ser = m["frames"]["b"]["series"]
    g2g = next(t for n, t in traces.items() if n.startswith("glass-to-glass"))
    assert [x for x in g2g["x"] if x is not None] == ser["t_s"] and g2g["xaxis"] == "x"
    assert [y for x, y in zip(g2g["x"], g2g["y"]) if x is not None] == ser["glass_to_glass_ms"]
    # The line stops (a None) wherever two frames are more than twice the median frame interval apart, the stall
    # among them, and nowhere else.
    t = ser["t_s"]
    limit = 2 * statistics.median(b - a for a, b in zip(t, t[1:]))
    gaps = [(a, b) for a, b in zip(t, t[1:]) if b - a > limit]
    breaks = [(g2g["x"][i - 1], g2g["x"][i + 1]) for i, x in enumerate(g2g["x"]) if x is None]
    assert breaks == gaps and any(a < STALL[0] + 0.1 and b > STALL[1] for a, b in gaps), gaps
    for part in ("sender", "network", "receiver"):
        tr = next(t for n, t in traces.items() if n.startswith(part))
        assert [y for x, y in zip(tr["x"], tr["y"]) if x is not None] == ser[f"{part}_ms"]
    never = next(t for n, t in traces.items() if n.startswith("sent, never shown"))
    assert never["x"] == ser["never_shown_t_s"] and set(never["y"]) == {0}
    # Every trace of the stack shares the one x axis; the freeze is a span over the whole figure (yref paper), so
    # over the queue's panel too.
    assert {t["xaxis"] for t in fig["data"]} == {"x"}
    (freeze,) = m["frames"]["b"]["freezes"]["list"]
    rects = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == 1 and rects[0]["xref"] == "x" and rects[0]["yref"] == "paper"
    assert (rects[0]["y0"], rects[0]["y1"]) == (0, 1)
    assert rects[0]["x0"] == freeze["start_s"] and rects[0]["x1"] == pytest.approx(
        freeze["start_s"] + freeze["duration_ms"] / 1000)
    assert STALL[0] < rects[0]["x0"] < STALL[1] < rects[0]["x1"]
    assert "glass-to-glass at b (frames)" in dashboard_tables.cards(m)


def test_a_run_analysed_before_the_series_says_so_instead_of_a_panel(run: dict[str, Any]) -> None:
    m = json.loads(json.dumps(run["m"]))
    del m["frames"]["b"]["series"]
    figs, omitted = dashboard.figures(m, run["table"])
    assert not any("Frames shown" in a["text"] for a in dict(figs)["timeseries"]["layout"]["annotations"])
    assert any("no per-frame series" in o for o in omitted)
    m["frames"] = None
    assert any("recorded none" in o for o in dashboard.figures(m, run["table"])[1])


# ---- a study ---------------------------------------------------------------------------------------------------------

# point -> rep -> attempts, each (outcome, stall): the stalls differ run by run so the freeze time varies.
POINTS: dict[str, dict[int, list[tuple[str, tuple[float, float]]]]] = {
    "short": {1: [("valid", (3.0, 3.3))], 2: [("valid", (3.0, 3.5))], 3: [("valid", (3.0, 3.4))]},
    "long": {1: [("valid", (2.0, 3.0))], 2: [("invalid", (1.0, 4.0)), ("valid", (2.0, 3.4))],
             3: [("valid", (2.0, 3.2))]},
}


def _study_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab_study ARGS...` in this process (test-support/inprocess.py)."""
    return inprocess.rtclab_study(*args)


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Study A as POINTS says (the invalid attempt analysed too, its frames in its metrics.json), and B: a copy of A
    whose third repetition of `short` turned INVALID (its manifest's validity), aggregated again."""
    tmp = tmp_path_factory.mktemp("fstudy")
    f = tmp / "s.yaml"
    f.write_text("name: frames-study\nbase: {duration_s: 8}\nrepetitions: 3\nmax_attempts: 2\npoints:\n"
                 + "".join(f"  - {{name: {p}, set: {{duration_s: 8}}}}\n" for p in POINTS))
    a = tmp / "a"
    planmod.write(planmod.make(spec.load(f)), a)
    seed = 40
    for point, reps in POINTS.items():
        for rep, attempts in reps.items():
            for attempt, (outcome, stall) in enumerate(attempts, start=1):
                seed += 1
                d = studydir.attempt_dir(a, point, rep, attempt)
                synth.write_run(d, synth.SynthConfig(duration_s=8.0, tcp_start_s=2.0, tcp_stop_s=6.0, seed=seed,
                                                     frames=True, stall_s=stall, cpu=False))
                if outcome == "invalid":
                    man = json.loads((d / "manifest.json").read_text())
                    man["validity"] = {"valid": False, "checks": [{"name": "host_cpu_not_saturated", "ok": False,
                                                                   "detail": "97% busy"}]}
                    (d / "manifest.json").write_text(json.dumps(man))
                analyze.analyze(d, run_tshark=False)
                # The synthetic runs show no pixels: each gets picture quality summaries of its own (quality.py
                # computes them from real frames; here only their aggregation is under test).
                m_path = d / "metrics.json"
                m = json.loads(m_path.read_text())
                m["frames"]["b"]["quality"] = {
                    "psnr_db": {"mean": 30 + seed % 7 * 0.5, "p5": 25, "min": 20, "count": 9},
                    "ssim": {"mean": 0.9 + seed % 5 * 0.01, "p5": 0.8, "min": 0.7, "count": 9},
                    "ssim_db": {"mean": 10 + seed % 3 * 0.4, "p5": 7, "min": 5.2, "count": 9}}
                m_path.write_text(json.dumps(m))
    r = _study_cli("aggregate", str(a))
    assert r.returncode == 0, r.stderr
    b = tmp / "b"
    shutil.copytree(a, b)
    man_path = studydir.attempt_dir(b, "short", 3, 1) / "manifest.json"
    man = json.loads(man_path.read_text())
    man["validity"] = {"valid": False, "checks": [{"name": "bottleneck_lateness_bounded", "ok": False, "detail": "x"}]}
    man_path.write_text(json.dumps(man))
    r = _study_cli("aggregate", str(b))
    assert r.returncode == 0, r.stderr
    return {"a": a, "b": b}


def _valid_runs(out: Path, point: str) -> list[Path]:
    """The point's runs whose manifest says complete and valid, found from the files."""
    return sorted(d for d in (out / "runs" / point).glob("*-*") if d.is_dir()
                  and json.loads((d / "manifest.json").read_text())["status"] == "complete"
                  and json.loads((d / "manifest.json").read_text())["validity"]["valid"])


def _run_values(d: Path) -> dict[str, float]:
    """One run's frames metrics in plain Python: the percentiles from its metrics.json, the freeze time ratio from
    its freezes' list over the span of its frames-b.jsonl, the never-shown share from the two counts."""
    m = json.loads((d / "metrics.json").read_text())
    f = m["frames"]["b"]
    out = {f"{part}_ms_{q}": f[f"{part}_ms"][q] for part in ("glass_to_glass", "sender", "network", "receiver")
           for q in ("p50", "p95")}
    t0_ms = m["run"]["call_start"] * 1000.0
    end_ms = t0_ms + m["run"]["duration_s"] * 1000.0
    recs = [json.loads(x) for x in (d / "frames-b.jsonl").read_text().splitlines()]
    shown = [r["presentation_ms"] for r in recs if r["kind"] == "frame" and t0_ms <= r["expected_display_ms"] < end_ms]
    out["freeze_time_ratio"] = sum(x["duration_ms"] for x in f["freezes"]["list"]) / (shown[-1] - shown[0])
    out["never_shown_ratio"] = f["never_shown"] / f["sent_frames"]
    q = f.get("quality") or {}
    if f.get("every_frame_delay_ms") is not None:
        out |= {f"every_frame_delay_ms_{q}": f["every_frame_delay_ms"][q] for q in ("p50", "p95", "p99")}
    for name, key in (("psnr_db_mean", "psnr_db"), ("ssim_mean", "ssim"), ("ssim_db_mean", "ssim_db")):
        if (q.get(key) or {}).get("mean") is not None:
            out[name] = q[key]["mean"]
    return out


def _t975(df: int) -> float:
    """The closed forms of the 0.975 quantile of Student's t for 1 and 2 degrees of freedom."""
    return {1: math.tan(math.pi * 0.475), 2: 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))}[df]


def _expected(out: Path, point: str) -> dict[str, dict[str, float]]:
    per_run = [_run_values(d) for d in _valid_runs(out, point)]
    want = {}
    for metric in per_run[0]:
        v = [r[metric] for r in per_run]
        sd = statistics.stdev(v)
        want[metric] = {"mean": statistics.fmean(v), "sd": sd, "n": len(v),
                        "ci95_half_width": _t975(len(v) - 1) * sd / math.sqrt(len(v))}
    return want


def test_study_frames_metrics_equal_an_independent_computation_over_the_valid_runs(studies: dict[str, Path]) -> None:
    for key, ns in (("a", {"short": 3, "long": 3}), ("b", {"short": 2, "long": 3})):
        out = studies[key]
        doc = json.loads((out / "study.json").read_text())
        assert set(catalogue.FRAMES_METRICS) <= set(doc["metrics"]) and len(catalogue.FRAMES_METRICS) == 16
        for point, n in ns.items():
            entry = next(p for p in doc["points"] if p["name"] == point)
            assert set(entry["flows"]["frames:b"]) == {"all"}  # whole call only
            got = entry["flows"]["frames:b"]["all"]
            want = _expected(out, point)
            assert set(got) == set(want) == set(catalogue.FRAMES_METRICS)
            for metric, w in want.items():
                assert got[metric]["n"] == n, (key, point, metric)
                for k in ("mean", "sd", "ci95_half_width"):
                    assert got[metric][k] == pytest.approx(w[k], rel=1e-9, abs=1e-12), (key, point, metric, k)
    # The invalid attempt's frames (a 3 s stall, more than any valid run's) are in its metrics.json, and in no
    # statistic (the equalities above are over the valid runs alone).
    invalid = _run_values(studydir.attempt_dir(studies["a"], "long", 2, 1))["freeze_time_ratio"]
    assert invalid > max(_run_values(d)["freeze_time_ratio"] for d in _valid_runs(studies["a"], "long")) + 0.1
    a = json.loads((studies["a"] / "study.json").read_text())
    assert "runs/long/2-1" in {e["dir"] for e in a["excluded"]}
    import pyarrow.parquet as pq
    t = pq.read_table(studies["a"] / "study.parquet").to_pydict()
    rows = [i for i, fl in enumerate(t["flow"]) if fl == "frames:b"]
    assert len(rows) == 6 and {t["run_dir"][i] for i in rows}.isdisjoint({"runs/long/2-1"})


def test_the_report_compare_and_study_dashboard_show_them(studies: dict[str, Path]) -> None:
    a, b = studies["a"], studies["b"]
    doc_a = json.loads((a / "study.json").read_text())
    doc_b = json.loads((b / "study.json").read_text())
    r = _study_cli("report", str(a), "--no-dashboard")
    assert r.returncode == 0, r.stderr
    table = r.stdout.split("frames shown at b")[1]
    head = table.splitlines()[1]
    for h in ("g2g p50 ms", "g2g p95 ms", "network p95 ms", "freeze time share", "never shown share", "PSNR dB",
              "SSIM"):
        assert h in head
    short_a = next(p for p in doc_a["points"] if p["name"] == "short")["flows"]["frames:b"]["all"]
    line = next(x for x in table.splitlines() if x.startswith("short "))
    s = short_a["glass_to_glass_ms_p50"]
    assert f"{fmt('glass_to_glass_ms_p50', s['mean'])} ±{fmt('glass_to_glass_ms_p50', s['ci95_half_width'])}" in line

    r = _study_cli("compare", str(a), str(b), "--out", str(a / "cmp.html"))
    assert r.returncode == 0, r.stderr
    short_b = next(p for p in doc_b["points"] if p["name"] == "short")["flows"]["frames:b"]["all"]
    rows = [x for x in r.stdout.splitlines() if x.startswith("short") and "frames:b" in x]
    assert len(rows) == len(catalogue.FRAMES_METRICS)
    ratio = next(x for x in rows if "freeze time share" in x)
    sa, sb = short_a["freeze_time_ratio"], short_b["freeze_time_ratio"]
    assert (sa["n"], sb["n"]) == (3, 2)
    assert f"n={sa['n']}" in ratio and f"n={sb['n']}" in ratio
    assert fmt("freeze_time_ratio", sb["mean"] - sa["mean"]) in ratio.split("n=2")[1]
    # Whole-call metrics: no frames row in another phase.
    assert all("frames:b" not in x for x in r.stdout.split("phase all")[0].splitlines())
    page = (a / "cmp.html").read_text()
    assert 'id="compare-glass_to_glass_ms_p95"' in page

    from rtclab.study import dashboard as study_dashboard
    figs = dict(study_dashboard.figures(doc_a, a)[0])
    bars = figs["bars-glass_to_glass_ms_p50"]["data"]
    assert sorted(y for t in bars for y in t["y"]) == pytest.approx(sorted(
        p["flows"]["frames:b"]["all"]["glass_to_glass_ms_p50"]["mean"] for p in doc_a["points"]))
    assert {"bars-freeze_time_ratio", "bars-never_shown_ratio", "bars-glass_to_glass_ms_p95", "bars-psnr_db_mean",
            "bars-ssim_mean"} <= set(figs)
    html = study_dashboard.render(doc_a, a, a / "dashboard.html")
    assert "Frames shown at b (whole call)" in html and "never shown share" in html
