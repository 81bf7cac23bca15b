"""Per-process CPU accounting (cpu.jsonl, docs/run-directory.md; metrics.json `cpu`, docs/metrics.md "CPU"): a
hand-built file with known numbers against a computation written out here (the call window, the weighting by each
interval's length, the p95 rule, the component sums, "outside the run" clamped per interval); a cut last line and a
malformed one; a run without the file; the report's lines, the dashboard's panel, and a study of two runs."""

from __future__ import annotations

import contextlib
import io
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rtclab import analyze, cli, dashboard, report, synth
from rtclab.study import catalogue, studydir
from rtclab.study import report as study_report
from rtclab_study import plan as planmod
from rtclab_study import spec

T0 = synth.SynthConfig().start_epoch_s
DURATION_S = 4.0

# (end of the interval in s since call start, dt, host busy, irq, softirq, groups). Inside the call [0, 4] s: the
# intervals ending at 1.5, 2.5, 3.0 (half a second) and 4.0. Outside: one before, one across the start, one after.
SAMPLES: list[tuple[float, float, float, float, float, dict[str, float]]] = [
    (-1.0, 1.0, 1.90, 0.0, 0.0, {"chromium-a/renderer": 1.5}),  # before the call: not counted
    (0.5, 1.0, 1.80, 0.0, 0.0, {"chromium-a/renderer": 1.5}),  # begins before the call: not counted
    (1.5, 1.0, 1.00, 0.02, 0.04, {"chromium-a/renderer": 0.40, "chromium-a/gpu": 0.10, "chromium-b/renderer": 0.30,
                                  "bottleneck/forward": 0.05, "harness/node": 0.03}),
    (2.5, 1.0, 1.20, 0.01, 0.05, {"chromium-a/renderer": 0.50, "chromium-b/renderer": 0.35,
                                  "bottleneck/forward": 0.07, "mystery": 0.02}),
    # The run's processes sum above the host's busy cores (read a moment apart): outside the run clamps at 0.
    (3.0, 0.5, 0.80, 0.00, 0.02, {"chromium-a/renderer": 0.60, "chromium-b/renderer": 0.30}),
    (4.0, 1.0, 1.10, 0.03, 0.03, {"chromium-a/renderer": 0.45, "chromium-a/gpu": 0.05, "chromium-b/renderer": 0.25,
                                  "bottleneck/forward": 0.06, "capture/a": 0.01}),
    (5.0, 1.0, 0.30, 0.0, 0.0, {"harness/other": 0.2}),  # after the call: not counted
]
# The hypervisor's steal (part of host busy) in the interval ending at each time; the largest is outside the call.
STEAL = {1.5: 0.0, 2.5: 0.31, 3.0: 0.05, 4.0: 0.02, 5.0: 0.5}
PROCESSES = {101: "harness/node", 102: "chromium-a/browser", 103: "chromium-a/renderer", 104: "chromium-a/gpu",
             105: "chromium-b/renderer", 106: "bottleneck/forward", 107: "capture/a", 108: "harness/other",
             109: "mystery", 110: "iperf3/client"}


def cpu_lines() -> list[str]:
    lines = [{"kind": "header", "t": T0 - 3, "interval_s": 1.0, "cpus": 2, "clock_ticks_per_s": 100,
              "harness_pid": 101}]
    lines += [{"kind": "process", "t": T0 - 3, "pid": pid, "ppid": 101, "group": g, "comm": g.split("/")[0],
               "cmd": g} for pid, g in PROCESSES.items()]
    lines += [{"kind": "sample", "t": T0 + t, "dt": dt,
               "host": {"busy": busy, "user": busy * 0.6 - STEAL.get(t, 0.0), "system": busy * 0.4 - irq - softirq,
                        "irq": irq, "softirq": softirq, "steal": STEAL.get(t, 0.0)},
               "groups": groups, "procs": {str(next(p for p, name in PROCESSES.items() if name == g)): v
                                           for g, v in groups.items()}}
              for t, dt, busy, irq, softirq, groups in SAMPLES]
    return [json.dumps(x) for x in lines]


def p95(values: list[float]) -> float:
    """The 95th percentile by linear interpolation between closest ranks (docs/metrics.md), written out."""
    v = sorted(values)
    pos = 0.95 * (len(v) - 1)
    i = int(math.floor(pos))
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (pos - i)


def expected() -> dict[str, Any]:
    """The call's numbers, from SAMPLES by hand: time-weighted means over the intervals inside [0, 4] s."""
    inside = [s for s in SAMPLES if s[0] - s[1] >= 0 and s[0] <= DURATION_S]
    assert [s[0] for s in inside] == [1.5, 2.5, 3.0, 4.0]
    seconds = sum(s[1] for s in inside)

    def mean(values: list[float]) -> float:
        return sum(v * s[1] for v, s in zip(values, inside)) / seconds
    busy = [s[2] for s in inside]
    out: dict[str, Any] = {"busy_mean": mean(busy), "busy_p95": p95(busy), "seconds": seconds}
    out["kernel_mean"] = mean([s[3] + s[4] for s in inside])
    steal = [STEAL.get(s[0], 0.0) for s in inside]
    out["steal_mean"], out["steal_p95"] = mean(steal), p95(steal)
    out["steal_max"], out["steal_at"] = 0.31, 2.0  # the interval (1.5, 2.5], its middle; not 0.5 at 5.0, after the call
    run = [sum(s[5].values()) for s in inside]
    outside = [max(b - r, 0.0) for b, r in zip(busy, run)]
    assert outside[2] == 0.0  # the clamped interval
    out["outside_mean"], out["outside_p95"], out["run_mean"] = mean(outside), p95(outside), mean(run)
    groups = sorted(set(PROCESSES.values()) | {g for s in SAMPLES for g in s[5]})
    out["groups"] = {g: (mean([s[5].get(g, 0.0) for s in inside]), p95([s[5].get(g, 0.0) for s in inside]))
                     for g in groups}
    comps = {g.split("/")[0] for g in groups}
    out["components"] = {c: (mean([sum(v for g, v in s[5].items() if g.split("/")[0] == c) for s in inside]),
                             p95([sum(v for g, v in s[5].items() if g.split("/")[0] == c) for s in inside]))
                         for c in comps}
    return out


def write_run(run: Path, lines: list[str] | None, seed: int = 1) -> None:
    """A synthetic call of DURATION_S (captures, getStats) with this cpu.jsonl (None: none)."""
    synth.write_run(run, synth.SynthConfig(duration_s=DURATION_S, tcp_flows=0, cpu=False, seed=seed))
    if lines is not None:
        (run / "cpu.jsonl").write_text("".join(x + "\n" for x in lines))


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run = tmp_path_factory.mktemp("cpu") / "run"
    write_run(run, cpu_lines())
    m, table = analyze.analyze(run, run_tshark=False)
    return {"run": run, "m": json.loads((run / "metrics.json").read_text()), "table": table}


def test_cpu_over_the_call_equals_the_hand_computation(analysed: dict[str, Any]) -> None:
    m = analysed["m"]
    c, e = m["cpu"], expected()
    assert m["schema_version"] == 2 and m["inputs"]["cpu_accounting"] is True
    assert m["problems"] == [] and not any("cpu" in g for g in m["gaps"])
    assert c["source"] == "cpu.jsonl" and c["cpus"] == 2 and c["interval_s"] == 1.0
    assert c["window"] == {"start_s": 0.0, "end_s": DURATION_S, "samples": 4, "seconds": pytest.approx(3.5),
                           "samples_outside": 3}
    assert c["host_busy"]["mean_cores"] == pytest.approx(e["busy_mean"])
    assert c["host_busy"]["p95_cores"] == pytest.approx(e["busy_p95"])
    assert c["host_busy"]["mean_fraction"] == pytest.approx(e["busy_mean"] / 2)
    assert c["kernel_irq_softirq"]["mean_cores"] == pytest.approx(e["kernel_mean"])
    assert c["steal"] == {"mean_cores": pytest.approx(e["steal_mean"]), "p95_cores": pytest.approx(e["steal_p95"]),
                          "share_of_host_busy": pytest.approx(e["steal_mean"] / e["busy_mean"]),
                          "max_cores": e["steal_max"], "max_at_s": e["steal_at"]}
    assert c["host_mean_cores"]["steal"] == pytest.approx(e["steal_mean"])
    assert c["run"]["mean_cores"] == pytest.approx(e["run_mean"])
    assert c["outside_run"]["mean_cores"] == pytest.approx(e["outside_mean"])
    assert c["outside_run"]["p95_cores"] == pytest.approx(e["outside_p95"])
    assert c["outside_run"]["share_of_host_busy"] == pytest.approx(e["outside_mean"] / e["busy_mean"])
    # Every group the run had, idle ones too (iperf3/client never used CPU; harness/other only after the call).
    assert set(c["groups"]) == set(e["groups"])
    for g, (mean, high) in e["groups"].items():
        got = c["groups"][g]
        assert (got["mean_cores"], got["p95_cores"]) == (pytest.approx(mean), pytest.approx(high)), g
        assert got["share_of_host_busy"] == pytest.approx(mean / e["busy_mean"]), g
        assert got["component"] == g.split("/")[0] and got["role"] == (g.split("/")[1] if "/" in g else "")
        assert got["processes"] == list(PROCESSES.values()).count(g)
    assert set(c["components"]) == {"chromium-a", "chromium-b", "bottleneck", "capture", "harness", "iperf3", "mystery"}
    for comp, (mean, high) in e["components"].items():
        got = c["components"][comp]
        assert (got["mean_cores"], got["p95_cores"]) == (pytest.approx(mean), pytest.approx(high)), comp
    # A component is the sum of its roles, interval by interval; the order is by mean, largest first.
    assert c["components"]["chromium-a"]["mean_cores"] == pytest.approx(
        sum(c["groups"][g]["mean_cores"] for g in ("chromium-a/browser", "chromium-a/renderer", "chromium-a/gpu")))
    means = [x["mean_cores"] for x in c["components"].values()]
    assert means == sorted(means, reverse=True)
    # The series hold every sample, at its interval's middle since call start.
    assert c["series"]["t_s"] == [pytest.approx(t - dt / 2) for t, dt, *_ in SAMPLES]
    assert c["series"]["host_busy"] == [s[2] for s in SAMPLES]
    assert c["series"]["components"]["chromium-a"][2] == pytest.approx(0.5)


def test_a_cut_last_line_and_a_malformed_one_are_named_and_the_rest_counted(tmp_path: Path,
                                                                            analysed: dict[str, Any]) -> None:
    lines = cpu_lines()
    bad = json.dumps({"kind": "sample", "t": T0 + 2.0, "dt": 1.0, "host": {"busy": "lots"}, "groups": {}, "procs": {}})
    run = tmp_path / "run"
    write_run(run, lines[:-1] + [bad] + lines[-1:] + [lines[-1][: len(lines[-1]) // 2]])
    m, _ = analyze.analyze(run, run_tshark=False, write=False)
    assert "cpu.jsonl: 1 damaged line(s) skipped (interrupted write?)" in m["problems"]
    assert "cpu.jsonl: 1 line(s) with missing or non-numeric fields skipped" in m["problems"]
    whole = analysed["m"]["cpu"]
    for key in ("window", "host_busy", "outside_run", "components", "groups"):  # the same samples, the same numbers
        assert m["cpu"][key] == whole[key], key


def test_a_run_without_cpu_jsonl_has_cpu_null_and_says_nothing_of_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, None)
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(run), "-q", "--no-tshark"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = json.loads((run / "metrics.json").read_text())
    assert m["cpu"] is None and m["inputs"]["cpu_accounting"] is False
    assert not any("cpu" in x for x in m["problems"] + m["gaps"])
    assert "CPU (" not in r.stdout
    figs, omitted = dashboard.figures(m, None)
    assert any(o.startswith("CPU per component: the run has no cpu.jsonl") for o in omitted)


def test_a_file_with_no_sample_in_the_call_is_a_gap(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_run(run, cpu_lines()[:1 + len(PROCESSES) + 2])  # the header, the processes, the two samples before
    m, _ = analyze.analyze(run, run_tshark=False, write=False)
    assert m["cpu"]["window"]["samples"] == 0 and m["cpu"]["host_busy"]["mean_cores"] is None
    assert "cpu.jsonl holds no sample within the call: the CPU per process group is unknown" in m["gaps"]
    assert "CPU (" not in report.render(m)


def test_the_report_prints_the_host_the_components_and_the_busiest_groups(analysed: dict[str, Any]) -> None:
    text = report.render(analysed["m"])
    e = expected()
    comps = sorted(e["components"].items(), key=lambda kv: (-kv[1][0], kv[0]))
    line = (f"CPU (mean over the call, 2 cores): host {e['busy_mean']:.2f} cores busy "
            f"({100 * e['busy_mean'] / 2:.0f} %); "
            + ", ".join(f"{c} {mean:.2f}" for c, (mean, _) in comps)
            + f", outside the run {e['outside_mean']:.2f}; kernel (irq+softirq) {e['kernel_mean']:.2f}"
            + f"; hypervisor steal {e['steal_mean']:.2f} ({e['steal_max']:.2f} in its worst interval, at 2 s)")
    assert line in text.splitlines(), text
    top = sorted(e["groups"].items(), key=lambda kv: (-kv[1][0], kv[0]))[:5]
    groups = "  busiest groups: " + ", ".join(f"{g} {mean:.2f} ({100 * mean / 2:.0f} %, p95 {high:.2f})"
                                              for g, (mean, high) in top)
    assert groups in text.splitlines(), text


def test_the_dashboard_stacks_each_component_under_the_host_busy_line(analysed: dict[str, Any]) -> None:
    m = analysed["m"]
    figs, _ = dashboard.figures(m, analysed["table"])
    ts = dict(figs)["timeseries"]
    titles = [a["text"] for a in ts["layout"]["annotations"]]
    panel = next(i for i, t in enumerate(titles) if "CPU" in t)
    assert titles[panel].startswith("<b>CPU per component of the run (cpu.jsonl), stacked")
    traces = [t for t in ts["data"] if t["yaxis"] == f"y{panel + 1 if panel else ''}"]
    stacked = [t for t in traces if t.get("stackgroup") == "cpu"]
    # Largest first; a component that never used CPU in any sample (iperf3 here) has no trace.
    drawn = [c for c in m["cpu"]["components"] if c in m["cpu"]["series"]["components"]]
    assert drawn == ["chromium-a", "chromium-b", "bottleneck", "harness", "mystery", "capture"]
    assert [t["name"] for t in stacked] == [*drawn, "outside the run"]
    x = m["cpu"]["series"]["t_s"]
    assert all(t["x"] == x for t in stacked)
    host = next(t for t in traces if t["name"] == "host busy (/proc/stat)")
    assert "stackgroup" not in host and host["y"] == m["cpu"]["series"]["host_busy"]
    # The same time axis as the other panels: seconds since call start.
    assert len({t["xaxis"] for t in ts["data"]}) == 1
    html = dashboard.write(analysed["run"], m, analysed["table"]).read_text()
    assert "CPU per component of the run" in html


def test_a_study_aggregates_each_runs_cpu_over_the_call(tmp_path: Path) -> None:
    """cpu_* of each run's metrics.json become the `cpu` pseudo-flow of study.json (whole call), with the same
    statistics as any flow, in study.parquet, the study report and its dashboard."""
    f = tmp_path / "s.yaml"
    f.write_text("name: cpu-study\nbase: {duration_s: 4}\nrepetitions: 2\n")
    out = tmp_path / "out"
    planmod.write(planmod.make(spec.load(f)), out)
    ms = []
    for rep in (1, 2):
        d = studydir.attempt_dir(out, "base", rep, 1)
        lines = cpu_lines()
        if rep == 2:  # a busier second run: the host's busy cores and chromium-b's renderer raised
            lines = [x.replace('"busy": 1.', '"busy": 1.5').replace('"chromium-b/renderer": 0.3',
                                                                      '"chromium-b/renderer": 0.6') for x in lines]
        write_run(d, lines, seed=10 + rep)
        with contextlib.redirect_stdout(io.StringIO()):  # the CLI's entry point, in this process: faster
            assert cli.main(["analyze", str(d), "-q", "--no-tshark", "--no-dashboard"]) == 0
        ms.append(json.loads((d / "metrics.json").read_text()))
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "aggregate", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "study.json").read_text())
    stats = doc["points"][0]["flows"]["cpu"]["all"]
    assert set(stats) == set(catalogue.CPU_CATALOGUE) and set(catalogue.CPU_CATALOGUE) <= set(doc["metrics"])
    per_run = {
        "cpu_host_busy_cores": [m["cpu"]["host_busy"]["mean_cores"] for m in ms],
        "cpu_outside_run_cores": [m["cpu"]["outside_run"]["mean_cores"] for m in ms],
        "cpu_chromium_b_cores": [m["cpu"]["components"]["chromium-b"]["mean_cores"] for m in ms],
        "cpu_chromium_cores": [m["cpu"]["components"]["chromium-a"]["mean_cores"]
                               + m["cpu"]["components"]["chromium-b"]["mean_cores"] for m in ms],
        "cpu_iperf3_cores": [0.0, 0.0],  # its process never ran during the call
        "cpu_steal_cores": [m["cpu"]["steal"]["mean_cores"] for m in ms],
        "cpu_steal_max_cores": [0.31, 0.31],
    }
    assert per_run["cpu_host_busy_cores"][0] != per_run["cpu_host_busy_cores"][1]
    t975_df1 = math.tan(math.pi * 0.475)
    for metric, values in per_run.items():
        s = stats[metric]
        assert s["n"] == 2 and s["mean"] == pytest.approx(statistics.fmean(values)), metric
        assert s["sd"] == pytest.approx(statistics.stdev(values), abs=1e-12), metric
        assert s["ci95_half_width"] == pytest.approx(t975_df1 * statistics.stdev(values) / math.sqrt(2), abs=1e-12)
    import pyarrow.parquet as pq
    table = pq.read_table(out / "study.parquet").to_pydict()
    rows = [i for i, fl in enumerate(table["flow"]) if fl == "cpu"]
    busy = sorted(table["cpu_host_busy_cores"][i] for i in rows)
    assert busy == pytest.approx(sorted(per_run["cpu_host_busy_cores"]))
    assert {table["phase"][i] for i in rows} == {"all"}
    text = study_report.render(doc)
    assert "phase all (the whole call): CPU, mean cores (cpu.jsonl)" in text
    assert f"{statistics.fmean(per_run['cpu_host_busy_cores']):.2f} ±" in text
    from rtclab.study import dashboard as study_dashboard
    figs, _ = study_dashboard.figures(doc, out)
    cpu = dict(figs)["cpu"]
    host = next(t for t in cpu["data"] if t["name"] == "host busy")
    assert host["y"] == [pytest.approx(statistics.fmean(per_run["cpu_host_busy_cores"]))]
