"""A trace link's capacity (docs/metrics.md, "Capacity of a trace link"; rtclab/trace_capacity.py): the trace's
delivery opportunities, looped as Mahimahi loops them and started at the link's offset, x 1514 link-layer bytes over
an interval; checked against an independent walk of Mahimahi's schedule, on a shipped trace, and end to end on a
hand-built run: capacity, utilisation and the dashboard's per-100 ms and per-second series, from the run directory's
copy of the trace, and the gap when the run has none and the scenario's file is gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rtclab import dashboard_traces, trace_capacity
from rtclab.analyze import analyze
from runbuild import MS, T0_NS, Run
from runbuild import scenario as scenario_doc

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "netem" / "traces"


def mahimahi_times(schedule: list[int], offset_ms: int, until_ms: int) -> list[int]:
    """Mahimahi's LinkQueue walk (src/frontend/link_queue.cc): the next delivery is schedule[i] + base, base growing
    by the last timestamp at each wraparound; link times from the offset on, below until_ms."""
    i, base, out = 0, 0, []
    while True:
        t = schedule[i] + base
        if t - offset_ms >= until_ms:
            return out
        if t >= offset_ms:
            out.append(t - offset_ms)
        i = (i + 1) % len(schedule)
        if i == 0:
            base += schedule[-1]


def test_looped_from_an_offset_as_mahimahi_walks_it() -> None:
    schedule = [0, 3, 3, 4, 9, 9, 9, 12]
    for offset in (0, 3, 4, 5, 11):
        tc = trace_capacity.TraceCapacity.looped("t", np.array(schedule), offset, until_s=0.1)
        assert tc.times_ms[tc.times_ms < 100].tolist() == mahimahi_times(schedule, offset, 100), offset


def test_capacity_counts_the_opportunities_in_the_interval() -> None:
    tc = trace_capacity.TraceCapacity.looped("t", np.array([1, 1, 5]), 2, until_s=1.0)
    # Link times 3, 4, 4, 8, 9, 9, 13, 14, 14, ...: [0, 5 ms) holds three, [4 ms, 9 ms) three, [9 ms, 9 ms) none.
    assert tc.opportunities(0, 0.005) == 3
    assert tc.opportunities(0.004, 0.009) == 3
    assert tc.mean_capacity_bps(0.004, 0.009) == pytest.approx(3 * 1514 * 8 / 0.005)
    assert tc.mean_capacity_bps(0.009, 0.009) is None
    # Over whole periods it is the trace's mean: three opportunities per 5 ms.
    assert tc.mean_capacity_bps(0.0, 0.5) == pytest.approx(3 * 1514 * 8 / 0.005)


def test_a_shipped_trace_over_a_call() -> None:
    path = SHIPPED / "Verizon-LTE-short.down"
    ms = trace_capacity.read_opportunities(path)
    assert ms.size == 58655 and ms[-1] == 140000
    # 60 s from 100 s into a 140 s trace: 40 s of its end (its last opportunity, 140 s, at link time 40 s), then
    # 20 s of its start again.
    tc = trace_capacity.TraceCapacity.looped(path.name, ms, 100_000, until_s=70)
    expected = int((ms >= 100_000).sum() + (ms < 20_000).sum())
    assert tc.opportunities(0, 60) == expected
    per_s = tc.series(1.0, 60.0)
    assert [t for t, _ in per_s] == [float(s) for s in range(60)]
    assert sum(bps for _, bps in per_s) == pytest.approx(expected * 1514 * 8)
    per_100ms = tc.series(0.1, 60.0)
    assert len(per_100ms) == 600
    assert sum(bps * 0.1 for _, bps in per_100ms) == pytest.approx(expected * 1514 * 8)


@pytest.mark.parametrize("text, problem", [("", "must end in a timestamp > 0"), ("0\n", "must end in a timestamp > 0"),
                                           ("1\n2\nx\n", "integer ms timestamps"), ("3\n2\n", "back in time")])
def test_a_bad_trace_file_is_named(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "t").write_text(text)
    with pytest.raises(trace_capacity.TraceError, match=problem):
        trace_capacity.read_opportunities(tmp_path / "t")


def trace_run(tmp_path: Path, trace_file: Path, offset_ms: int) -> tuple[Path, list[int]]:
    """4 s of one RTP flow, a 1000-byte payload every 5 ms, each arriving 30 ms after it left, over a trace link."""
    run, arrivals = Run(), []
    for i in range(800):
        t = T0_NS + i * 5 * MS
        run.rtp(t, [t + 30 * MS], seq=i, ts=i * 450)
        arrivals.append(t + 30 * MS)
    path = tmp_path / "r"
    path.mkdir()
    run.write(path, scenario_doc(4, {"delay_ms": 20, "rate": {"trace": str(trace_file), "trace_offset_ms": offset_ms,
                                                               "burst_bytes": 3028}}))
    return path, arrivals


def test_capacity_and_utilisation_against_the_trace_the_run_played(tmp_path: Path) -> None:
    schedule = [3, 3, 7, 10]  # four opportunities every 10 ms: 4.8448 Mbit/s
    played = tmp_path / "played"
    played.write_text("".join(f"{t}\n" for t in schedule))
    run, arrivals = trace_run(tmp_path, tmp_path / "gone-after-the-run", offset_ms=5)
    shutil.copy(played, run / "trace-forward")
    m, _ = analyze(run, run_tshark=False)
    times = mahimahi_times(schedule, 5, 10_000)
    count = lambda lo_s, hi_s: sum(1 for t in times if lo_s * 1000 <= t < hi_s * 1000)  # noqa: E731
    assert m["capacity_bps"] == pytest.approx(count(0, m["run"]["duration_s"]) * 1514 * 8 / m["run"]["duration_s"])
    video = next(f for f in m["flows"] if f["direction"] == "forward")
    first, last = (arrivals[0] - T0_NS) / 1e9, (arrivals[-1] - T0_NS) / 1e9
    capacity = count(first, last) * 1514 * 8 / (last - first)
    assert video["utilisation"] == pytest.approx(video["throughput_bps"]["mean"] / capacity)
    trace = m["capacity_trace"]
    assert (trace["file"], trace["period_ms"], trace["offset_ms"]) == ("trace-forward", 10, 5)
    assert (trace["start_s"], trace["start_source"]) == (0.0, "call start")  # no schedule log in this run
    assert trace["per_1s"][1] == pytest.approx([1.0, count(1, 2) * 1514 * 8])
    assert trace["per_100ms"][7] == pytest.approx([0.7, count(0.7, 0.8) * 1514 * 8 / 0.1])
    assert m["scenario"]["forward"]["rate"]["trace_offset_ms"] == 5
    # The dashboard's rate panel draws both series as step lines to the call's end.
    lines = dashboard_traces.capacity_traces(m, m["run"]["duration_s"])
    assert [x["name"] for x in lines] == ["trace capacity per 100 ms", "trace capacity per 1 s"]
    assert lines[1]["x"][-1] == m["run"]["duration_s"] and lines[1]["y"][0] == pytest.approx(count(0, 1) * 1514 * 8e-6)


def test_the_trace_counts_from_the_time_zero_the_bottleneck_took(tmp_path: Path) -> None:
    schedule = [3, 3, 7, 10]
    run, _ = trace_run(tmp_path, tmp_path / "played", offset_ms=0)
    (tmp_path / "played").write_text("".join(f"{t}\n" for t in schedule))
    # Its restart signal came 1.5 ms after the call's start (the earlier line: time 0 at the bottleneck's start).
    lines = [{"kind": "trace_start", "index": 0, "at_s": 0, "restart": 0, "t0_ns": T0_NS - 5_000 * MS},
             {"kind": "trace_start", "index": 0, "at_s": 0, "restart": 1, "t0_ns": T0_NS + 1_500_000}]
    (run / "bottleneck-forward.schedule.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    m, _ = analyze(run, run_tshark=False)
    trace = m["capacity_trace"]
    assert (trace["start_s"], trace["start_source"]) == (pytest.approx(0.0015), "schedule log")
    times = [t + 1.5 for t in mahimahi_times(schedule, 0, 10_000)]
    for k in (0, 7, 39):
        expected = sum(1 for t in times if 100 * k <= t < 100 * (k + 1)) * 1514 * 8 / 0.1
        assert trace["per_100ms"][k] == pytest.approx([k / 10, expected])


def test_without_the_trace_capacity_and_utilisation_are_unknown_and_said_so(tmp_path: Path) -> None:
    run, _ = trace_run(tmp_path, tmp_path / "gone-after-the-run", offset_ms=0)
    m, _ = analyze(run, run_tshark=False)
    assert m["capacity_bps"] is None and m["capacity_trace"] is None
    assert all(f["utilisation"] is None for f in m["flows"])
    assert any("forward trace unreadable (the run directory holds no trace-forward" in g
               and "gone-after-the-run" in g for g in m["gaps"]), m["gaps"]
    # A run without a copy reads the scenario's path while that file is there.
    (tmp_path / "gone-after-the-run").write_text("1\n2\n")
    m, _ = analyze(run, run_tshark=False)
    assert m["capacity_trace"]["file"] == str(tmp_path / "gone-after-the-run")
    duration_s = m["run"]["duration_s"]
    one_per_ms = mahimahi_times([1, 2], 0, int(duration_s * 1000) + 1)
    expected = sum(1 for t in one_per_ms if t < duration_s * 1000) * 1514 * 8 / duration_s
    assert m["capacity_bps"] == pytest.approx(expected)
    assert json.loads((run / "metrics.json").read_text())["capacity_trace"]["period_ms"] == 2


def test_rfc8867_targets_follow_the_trace_window_by_window(tmp_path: Path) -> None:
    """RFC 8867's target on a trace link: each 1 s window's capacity is the trace's opportunities in it (the one
    flow alone: its target is the capacity), counted here by walking Mahimahi's schedule independently."""
    schedule = [3, 3, 7, 10, 10, 14, 25, 40]  # uneven: windows of the looped trace differ where the 40 ms period splits
    run, arrivals = trace_run(tmp_path, tmp_path / "played", offset_ms=17)
    (tmp_path / "played").write_text("".join(f"{t}\n" for t in schedule))
    m, _ = analyze(run, run_tshark=False)
    times = mahimahi_times(schedule, 17, 10_000)
    section = m["rfc8867"]
    window = section["window_s"]
    for k, got in enumerate(section["capacity_bps"]):
        expected = sum(1 for t in times if k * window * 1000 <= t < (k + 1) * window * 1000) * 1514 * 8 / window
        assert got == pytest.approx(expected), k
    # The flow alone: its target in each window it was active is that window's capacity.
    flow = section["flows"][0]
    active = [k for k, x in enumerate(flow["target_bps"]) if x is not None]
    assert len(active) >= 3
    for k in active:
        assert flow["target_bps"][k] == pytest.approx(section["capacity_bps"][k], abs=0.1)
