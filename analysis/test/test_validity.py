"""The analyzer's own validity checks (rtclab/validity.py), the frame gates (rtclab/frame_gate.py) and `rtclab
revalidate`, on hand-built and damaged run directories. Every expected outcome is worked out here from the records
the test writes, not by the analyzer's code."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtclab import cli, frame_gate, metrics_schema, rundir, synth, validity
from rtclab.study import aggregate as agg
from rtclab.study import metric_rows, studydir
from rtclab_study import plan as planmod
from rtclab_study import spec
from runbuild import MS, T0_NS, A, B, scenario, write_gtlog

T0_S = T0_NS / 1e9
BOUNDS = validity.load_bounds()
A_INT, B_INT = rundir.ip_to_int(A), rundir.ip_to_int(B)
CALL_PAIR = {"a": {"local": {"address": A, "port": 50000}, "remote": {"address": B, "port": 50001}}}


def write_manifest(run: Path, *, backend: str = "userspace", call: bool = True, pair: bool = True,
                   duration_s: float = 60.0, delay_ms: float = 100.0, cpu_set: list[int] | None = None) -> None:
    run.mkdir(parents=True, exist_ok=True)
    scen = scenario(duration_s, {"delay_ms": delay_ms}, {"delay_ms": delay_ms})
    if not call:
        scen["calls"] = []
    doc: dict[str, Any] = {"format_version": 3, "id": run.name, "status": "complete", "error": None,
                           "scenario": scen, "backend": {"used": backend}, "host": {"cpus": 2}, "cpu_set": cpu_set,
                           "topology": {"data": {"a": A, "b": B}},
                           "timings": {"call_start": T0_S, "call_end": T0_S + duration_s},
                           "validity": {"valid": True, "checks": []}}
    if call:
        doc["calls"] = [{"selected_pairs": CALL_PAIR if pair else {}}]
    (run / "manifest.json").write_text(json.dumps(doc))


# Packet keys: the call's forward packets from 1, its reverse ones from 1e6, cross traffic from 2e6.
CALL_FWD, CALL_REV, CROSS = 1, 1_000_000, 2_000_000


def packet_columns(n_fwd: int, n_rev: int, n_cross: int) -> dict[str, np.ndarray]:
    """The packet table's columns validity.py reads: the call's 5-tuple both ways, then a TCP cross-traffic flow."""
    rows = ([(0, A_INT, B_INT, 50000, 50001, CALL_FWD + i) for i in range(n_fwd)]
            + [(1, B_INT, A_INT, 50001, 50000, CALL_REV + i) for i in range(n_rev)]
            + [(0, A_INT, B_INT, 40000, 5201, CROSS + i) for i in range(n_cross)])
    cols = np.array(rows, dtype=np.uint64).reshape(-1, 6).T
    return {"direction": cols[0].astype(np.uint8), "ip_src": cols[1].astype(np.uint32),
            "ip_dst": cols[2].astype(np.uint32), "sport": cols[3].astype(np.uint16),
            "dport": cols[4].astype(np.uint16), "key": cols[5]}


def records(first_key: int, n: int, *, every_ms: float, delay_ms: float = 100.0, start_ms: float = 0.0,
            late_ms: dict[int, float] | None = None) -> list[dict[str, int]]:
    """n forwarded packets arriving every `every_ms` from t0 + start_ms, each due 1 ms (its transmission) + delay_ms
    later and released 0.05 ms after that, or `late_ms[i]` ms after it."""
    out = []
    for i in range(n):
        arrival = T0_NS + int((start_ms + i * every_ms) * MS)
        due = arrival + int((1 + delay_ms) * MS)
        late = (late_ms or {}).get(i, 0.05)
        out.append({"arrival_ns": arrival, "dequeue_ns": arrival, "tx_end_ns": arrival + MS, "due_ns": due,
                    "release_ns": due + int(late * MS), "key": first_key + i, "ip_len": 1000, "ip_id": i % 65536})
    return out


def recorded(run: Path, packets: dict[str, np.ndarray] | None, duration_s: float = 60.0) -> validity.RecordedRun:
    return validity.RecordedRun(rundir.load(run), T0_S, duration_s, packets, BOUNDS)


def check(rec: validity.RecordedRun, name: str) -> dict[str, Any]:
    return next(c for c in validity.analyzer_checks(rec) if c["name"] == name)


# ---- the bounds: one file, read by the harness and the analyzer ----------------------------------------------------


def test_the_bounds_are_the_shared_file_and_a_damaged_file_is_named(tmp_path: Path) -> None:
    doc = json.loads(validity.BOUNDS_FILE.read_text())
    assert validity.BOUNDS_FILE.parent.name == "harness"  # where harness/validity.js reads it too
    assert (BOUNDS.lateness_max_ms, BOUNDS.lateness_late_ms, BOUNDS.lateness_max_late_fraction) == (
        doc["release_lateness"]["max_ms"], doc["release_lateness"]["late_ms"],
        doc["release_lateness"]["max_late_fraction"])
    assert (BOUNDS.cpu_window_s, BOUNDS.cpu_max_busy_fraction) == (doc["cpu_window"]["window_s"],
                                                                   doc["cpu_window"]["max_busy_fraction"])
    bad = tmp_path / "bounds.json"
    bad.write_text(json.dumps({"release_lateness": {"max_ms": 20}}))
    with pytest.raises(validity.BoundsError, match="bounds.json: the validity bounds cannot be read"):
        validity.load_bounds(bad)
    bad.write_text(json.dumps({**doc, "cpu_window": {"window_s": 0, "max_busy_fraction": 0.9}}))
    with pytest.raises(validity.BoundsError, match="positive number"):
        validity.load_bounds(bad)


# ---- release lateness from the ground-truth log --------------------------------------------------------------------


def test_a_40ms_stop_of_the_bottleneck_on_a_100ms_path_is_invalid(tmp_path: Path) -> None:
    """Issue 29's bar: the bottleneck stopped 40 ms (SIGSTOP, SIGCONT) 10 s into a call with 100 ms each way. The
    packets due during the stop leave when it ends; those that reached the kernel's queue meanwhile are timed from
    when the bottleneck read them (no kernel timestamps), so they are not late."""
    write_manifest(tmp_path)
    stop_ms, cont_ms = 10_000.0, 10_040.0
    fwd = records(CALL_FWD, 15_000, every_ms=4.0)  # 250 packets/s for 60 s
    for r in fwd:
        if stop_ms <= (r["due_ns"] - T0_NS) / MS < cont_ms:
            r["release_ns"] = T0_NS + int(cont_ms * MS)
        if stop_ms <= (r["arrival_ns"] - T0_NS) / MS < cont_ms:
            shift = T0_NS + int(cont_ms * MS) - r["arrival_ns"]
            for k in ("arrival_ns", "dequeue_ns", "tx_end_ns", "due_ns", "release_ns"):
                r[k] += shift
    write_gtlog(tmp_path / "bottleneck-forward.gtlog", fwd)
    write_gtlog(tmp_path / "bottleneck-reverse.gtlog", records(CALL_REV, 3_000, every_ms=20.0))
    rec = recorded(tmp_path, packet_columns(15_000, 3_000, 0))
    # Worked out by hand: the dues lie on a 4 ms grid at 101 + 4i ms, so the first one inside the stop is at
    # 10.001 s: released 39 ms late; 9 of them (10.001-10.033 s) more than 5 ms late. Due within the call (before
    # 60 s): 14975 forward packets (101 + 4i < 60000), 2995 reverse ones (101 + 20i < 60000); 9 / 14975 = 0.06 %.
    call = check(rec, "release_lateness_call_packets")
    assert call["ok"] is False, call
    assert "forward: 14975 call packets, the latest released 39.0 ms after its due time, 9 (0.06%) more than 5 ms " \
           "late, 0 more than 100 ms late" in call["detail"]
    assert "reverse: 2995 call packets, the latest released 0.1 ms" in call["detail"]
    assert check(rec, "release_lateness_all_packets")["ok"] is False
    assert 39.0 < 100.0  # the old bound, the path's one-way delay, passed it: the VALID run
    # Without the stop the same call is valid.
    write_gtlog(tmp_path / "bottleneck-forward.gtlog", records(CALL_FWD, 15_000, every_ms=4.0))
    assert check(recorded(tmp_path, packet_columns(15_000, 3_000, 0)), "release_lateness_call_packets")["ok"] is True


def test_the_calls_packets_are_judged_apart_from_the_cross_traffic(tmp_path: Path) -> None:
    """2 % of the call's packets 8 ms late among 49000 cross-traffic packets on time: 0.04 % of all, 2 % of the
    call's. The all-packets rule passes; the call's own fails."""
    write_manifest(tmp_path)
    late = {i: 8.0 for i in range(0, 1000, 50)}  # 20 of 1000
    write_gtlog(tmp_path / "bottleneck-forward.gtlog",
                records(CALL_FWD, 1000, every_ms=50.0, late_ms=late) + records(CROSS, 49_000, every_ms=1.2))
    write_gtlog(tmp_path / "bottleneck-reverse.gtlog", records(CALL_REV, 100, every_ms=500.0))
    rec = recorded(tmp_path, packet_columns(1000, 100, 49_000))
    call, every = check(rec, "release_lateness_call_packets"), check(rec, "release_lateness_all_packets")
    assert call["ok"] is False and "20 (2.00%) more than 5 ms late" in call["detail"]
    assert every["ok"] is True and "forward: 50000 packets" in every["detail"] and "20 (0.04%)" in every["detail"]


@pytest.mark.parametrize(("n_late", "late_ms", "last_ms", "ok"), [
    (99, 6.0, 20.0, True),  # the latest at the bound and 100 of 10000 (1.00 %) over 5 ms: both at their bound
    (0, 6.0, 20.01, False),  # one release just over the bound
    (101, 6.0, 0.05, False),  # 1.01 % over 5 ms, none over the bound
    (9_999, 5.0, 5.0, True),  # exactly 5 ms is not more than 5 ms late
])
def test_each_lateness_bound_at_and_just_over_it(tmp_path: Path, n_late: int, late_ms: float, last_ms: float,
                                                 ok: bool) -> None:
    write_manifest(tmp_path)
    lateness = {i: late_ms for i in range(n_late)} | {9_999: last_ms}
    write_gtlog(tmp_path / "bottleneck-forward.gtlog", records(CALL_FWD, 10_000, every_ms=5.0, late_ms=lateness))
    write_gtlog(tmp_path / "bottleneck-reverse.gtlog", records(CALL_REV, 100, every_ms=500.0))
    result = check(recorded(tmp_path, packet_columns(10_000, 100, 0)), "release_lateness_call_packets")
    assert result["ok"] is ok, result["detail"]


def test_only_forwarded_packets_due_within_the_call_count(tmp_path: Path) -> None:
    write_manifest(tmp_path, duration_s=10.0)
    fwd = records(CALL_FWD, 100, every_ms=50.0)
    fwd += records(CALL_FWD + 100, 1, every_ms=1.0, start_ms=-2000.0, late_ms={0: 500.0})  # before the call
    fwd += records(CALL_FWD + 101, 1, every_ms=1.0, start_ms=10_500.0, late_ms={0: 500.0})  # after it
    drop = records(CALL_FWD + 102, 1, every_ms=1.0, start_ms=300.0)[0] | {"event": 2, "due_ns": 0, "tx_end_ns": 0}
    write_gtlog(tmp_path / "bottleneck-forward.gtlog", [*fwd, drop])
    write_gtlog(tmp_path / "bottleneck-reverse.gtlog", records(CALL_REV, 10, every_ms=500.0))
    result = check(recorded(tmp_path, packet_columns(103, 10, 0), duration_s=10.0), "release_lateness_call_packets")
    assert result["ok"] is True and "forward: 100 call packets" in result["detail"]


def test_missing_and_damaged_ground_truth_logs(tmp_path: Path) -> None:
    cols = packet_columns(100, 10, 0)
    # The userspace backend logs both directions: none, one or a damaged one cannot vouch for the releases.
    write_manifest(tmp_path / "none")
    assert check(recorded(tmp_path / "none", cols), "release_lateness_all_packets")["ok"] is False
    write_manifest(tmp_path / "one")
    write_gtlog(tmp_path / "one" / "bottleneck-forward.gtlog", records(CALL_FWD, 100, every_ms=50.0))
    one = check(recorded(tmp_path / "one", cols), "release_lateness_call_packets")
    assert one["ok"] is False and "reverse: no ground-truth log" in one["detail"]
    write_manifest(tmp_path / "bad")
    write_gtlog(tmp_path / "bad" / "bottleneck-forward.gtlog", records(CALL_FWD, 100, every_ms=50.0))
    (tmp_path / "bad" / "bottleneck-reverse.gtlog").write_bytes(b"NOTALOG!" + bytes(100))
    bad = check(recorded(tmp_path / "bad", cols), "release_lateness_all_packets")
    assert bad["ok"] is False and "bottleneck-reverse.gtlog: not a ground-truth log" in bad["detail"]
    # The kernel's qdiscs record no release times: not measured, which neither fails nor vouches.
    write_manifest(tmp_path / "kernel", backend="kernel")
    for name in ("release_lateness_call_packets", "release_lateness_all_packets"):
        c = check(recorded(tmp_path / "kernel", cols), name)
        assert c["ok"] is None and c["detail"].startswith("not measured: no ground-truth log (the kernel backend")


def test_the_calls_packets_unknown_leaves_the_call_rule_unmeasured(tmp_path: Path) -> None:
    fwd = records(CALL_FWD, 100, every_ms=50.0, late_ms={3: 30.0})
    for name, call_, pair, packets in (("nopair", True, False, packet_columns(100, 10, 0)),
                                       ("nocall", False, True, packet_columns(100, 10, 0)),
                                       ("notable", True, True, None)):
        write_manifest(tmp_path / name, call=call_, pair=pair)
        write_gtlog(tmp_path / name / "bottleneck-forward.gtlog", fwd)
        write_gtlog(tmp_path / name / "bottleneck-reverse.gtlog", records(CALL_REV, 10, every_ms=500.0))
        rec = recorded(tmp_path / name, packets)
        call = check(rec, "release_lateness_call_packets")
        assert call["ok"] is None and call["detail"].startswith("not measured: the call's packets cannot be told"), \
            (name, call)
        assert check(rec, "release_lateness_all_packets")["ok"] is False  # 30 ms: every packet is still judged


# ---- the CPU per window ---------------------------------------------------------------------------------------------


def write_cpu(run: Path, busy: list[float], own: list[float] | None = None, start_s: float = 0.0) -> None:
    """cpu.jsonl with one sample a second from start_s (since t0): the host's busy cores and the run's processes'."""
    lines: list[dict[str, Any]] = [{"kind": "header", "t": T0_S - 5, "interval_s": 1.0, "cpus": 2}]
    for i, b in enumerate(busy):
        groups = {"chromium-a/renderer": (own or busy)[i]}
        lines.append({"kind": "sample", "t": T0_S + start_s + i + 1, "dt": 1.0, "host": {"busy": b},
                      "groups": groups, "procs": {"100": groups["chromium-a/renderer"]}})
    (run / "cpu.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_ten_seconds_at_full_load_in_a_60s_call_is_invalid_though_its_mean_is_not(tmp_path: Path) -> None:
    write_manifest(tmp_path)
    busy = [0.4] * 30 + [2.0] * 10 + [0.4] * 20  # 2 cores: 20 % busy, then 100 % for 10 s
    write_cpu(tmp_path, busy)
    assert sum(busy) / len(busy) / 2 < 0.9  # what the harness's whole-call check (host_cpu_not_saturated) passes
    c = check(recorded(tmp_path, None), "cpu_windows_not_saturated")
    # 56 windows of 5 s (starting at each of the first 56 samples); those wholly inside the 10 s stretch (6) are at
    # 100 %; with 4 of 5 s at 100 % a window is at (4 x 2.0 + 0.4) / 10 = 84 %, under the bound.
    assert c["ok"] is False
    assert c["detail"].startswith("the host's 2 CPUs: the busiest 5 s window of the call (30-35 s) 100% busy, 6 of 56 "
                                  "windows over the bound (90% over any 5 s)")
    write_cpu(tmp_path, [0.4] * 30 + [2.0] * 4 + [0.4] * 26)  # 4 s at 100 %: no 5 s window over 90 %
    assert check(recorded(tmp_path, None), "cpu_windows_not_saturated")["ok"] is True


def test_the_window_check_reads_only_the_calls_samples_and_a_short_call_as_one_window(tmp_path: Path) -> None:
    write_manifest(tmp_path, duration_s=3.0)
    write_cpu(tmp_path, [2.0] * 5 + [0.2] * 3 + [2.0] * 5, start_s=-5.0)  # saturated before and after the call only
    c = check(recorded(tmp_path, None, duration_s=3.0), "cpu_windows_not_saturated")
    assert c["ok"] is True and "the busiest 3 s window of the call (0-3 s) 10% busy, 0 of 1 windows" in c["detail"]


def test_a_pinned_run_is_judged_by_its_own_processes_on_its_cpus(tmp_path: Path) -> None:
    write_manifest(tmp_path, cpu_set=[1])
    # The host is saturated by another run (its CPUs), this run's processes use 30 % of its one CPU: valid.
    write_cpu(tmp_path, [2.0] * 60, own=[0.3] * 60)
    c = check(recorded(tmp_path, None), "cpu_windows_not_saturated")
    assert c["ok"] is True and c["detail"].startswith("the run's own processes on its CPUs 1: the busiest 5 s window")
    write_cpu(tmp_path, [1.2] * 60, own=[0.3] * 20 + [0.95] * 6 + [0.3] * 34)  # its own CPU 95 % busy for 6 s
    assert check(recorded(tmp_path, None), "cpu_windows_not_saturated")["ok"] is False


def test_no_cpu_record_is_not_measured(tmp_path: Path) -> None:
    write_manifest(tmp_path)
    assert check(recorded(tmp_path, None), "cpu_windows_not_saturated")["ok"] is None
    (tmp_path / "cpu.jsonl").write_text(json.dumps({"kind": "header", "cpus": 2}) + "\n")
    c = check(recorded(tmp_path, None), "cpu_windows_not_saturated")
    assert c["ok"] is None and "no sample within the call" in c["detail"]


def test_combine_keeps_the_harness_checks_and_replaces_the_analyzers_own() -> None:
    manifest = {"valid": True, "checks": [{"name": "host_cpu_not_saturated", "ok": True, "detail": "x"}]}
    own = [{"name": "cpu_windows_not_saturated", "ok": False, "detail": "y"},
           {"name": "release_lateness_call_packets", "ok": None, "detail": "not measured"}]
    v = validity.combine(manifest, own)
    assert v["valid"] is False and [c["name"] for c in v["checks"]] == [
        "host_cpu_not_saturated", "cpu_windows_not_saturated", "release_lateness_call_packets"]
    assert validity.combine(manifest, own[1:])["valid"] is True  # not measured does not invalidate
    assert validity.combine({"valid": False, "checks": []}, own[1:])["valid"] is False  # the harness's word stands
    assert validity.combine(None, own[1:])["valid"] is None and validity.combine(None, own)["valid"] is False


# ---- the frame gates ------------------------------------------------------------------------------------------------


def side(**kw: Any) -> dict[str, Any]:
    dist = {"count": 900, "p50": 60.0, "p95": 80.0}
    return {"records": 900, "dropped_records": 0, "presented_frames": 900, "callbacks_missed": 0, "read": 900,
            "numbered": 900, "numbered_ratio": 1.0, "joined": 900, "joined_ratio": 1.0,
            "freezes": {"count": 1, "time_ratio": 0.01}, "quality": {"psnr_db": {"mean": 33.7}},
            "every_frame_delay_ms": {"count": 950, "p50": 70.0, "p95": 120.0, "p99": 200.0},
            **{f: dict(dist) for f in frame_gate.DELAY_FIELDS}, **kw}


@pytest.mark.parametrize(("change", "withheld"), [
    ({}, []),
    ({"joined": 855, "joined_ratio": 0.95}, []),  # at the bound
    ({"joined": 854, "joined_ratio": 854 / 900}, ["delays"]),
    ({"numbered": 855, "numbered_ratio": 0.95}, []),
    ({"numbered": 854, "numbered_ratio": 854 / 900}, ["quality"]),
    ({"records": 891, "dropped_records": 9}, []),  # 9 of 900 = 1 %
    ({"records": 890, "dropped_records": 10}, ["every_frame", "freezes"]),
    ({"records": 675, "callbacks_missed": 225}, []),  # 25 %
    ({"records": 674, "callbacks_missed": 226}, ["every_frame", "freezes"]),
    ({"numbered_ratio": None, "read": 0, "joined_ratio": 0.5, "joined": 450}, ["delays"]),
])
def test_a_record_under_a_bound_withholds_its_metrics(change: dict[str, Any], withheld: list[str]) -> None:
    before = side(**change)
    after = frame_gate.apply(before)
    assert sorted(after.get("withheld") or {}) == withheld
    for f in frame_gate.DELAY_FIELDS:
        assert (after[f] is None) == ("delays" in withheld)
    assert (after["freezes"] is None) == ("freezes" in withheld)
    assert (after["every_frame_delay_ms"] is None) == ("every_frame" in withheld)
    assert ("withheld" in after["quality"]) == ("quality" in withheld)
    assert frame_gate.apply(after) == after  # applying it again changes nothing more
    if not withheld:
        assert after is before


def test_withheld_frames_are_null_in_metrics_json_missing_in_the_report_and_left_out_of_a_study(tmp_path: Path) -> None:
    """A synthetic call whose page recorded only 2 of 3 frames (presentedFrames counts them all): a third presented
    without a callback, over the 25 % bound, so the record's freezes are withheld; the delays are not."""
    run = tmp_path / "run"
    synth.write_run(run, synth.SynthConfig(duration_s=8.0, frames=True, cpu=False))
    lines = (run / "frames-b.jsonl").read_text().splitlines()
    kept = [x for x in lines if json.loads(x).get("kind") != "frame" or json.loads(x)["presented_frames"] % 3]
    (run / "frames-b.jsonl").write_text("\n".join(kept) + "\n")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli.main(["analyze", str(run), "--no-tshark", "--no-dashboard", "-q"]) == 0
    m = json.loads((run / "metrics.json").read_text())  # RTCLAB_CHECK_METRICS=1 (conftest): the schema holds
    b = m["frames"]["b"]
    assert b["callbacks_missed"] / b["presented_frames"] == pytest.approx(1 / 3, abs=0.01)
    assert b["freezes"] is None and "came without a callback (at most 25%)" in b["withheld"]["freezes"]
    assert b["every_frame_delay_ms"] is None and b["withheld"]["every_frame"] == b["withheld"]["freezes"]
    assert b["glass_to_glass_ms"] is not None and "delays" not in b["withheld"]
    assert "freezes from the record: missing, withheld: " in out.getvalue()
    assert metric_rows.frames_values(b)["freeze_time_ratio"] is None
    assert metric_rows.frames_values(b)["glass_to_glass_ms_p50"] == b["glass_to_glass_ms"]["p50"]
    metrics_schema.validate(m)


# ---- rtclab revalidate --------------------------------------------------------------------------------------------


def revalidate(*args: str) -> tuple[int, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = cli.main(["revalidate", *args])
    return code, out.getvalue()


def analysed_synthetic_run(run: Path, seed: int = 1) -> None:
    synth.write_run(run, synth.SynthConfig(duration_s=12.0, seed=seed))
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["analyze", str(run), "--no-tshark", "--no-dashboard", "-q"]) == 0


def saturate_cpu(run: Path, from_s: float, to_s: float) -> None:
    """Rewrites the run's cpu.jsonl: the host's CPUs fully busy in the samples whose interval ends in (from, to]."""
    lines = [json.loads(x) for x in (run / "cpu.jsonl").read_text().splitlines()]
    t0 = float(json.loads((run / "manifest.json").read_text())["timings"]["call_start"])
    for x in lines:
        if x.get("kind") == "sample" and from_s < x["t"] - t0 <= to_s:
            x["host"]["busy"] = float(synth.SYNTH_CPUS)
    (run / "cpu.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_revalidate_a_run_says_what_flipped_and_writes_only_when_told(tmp_path: Path) -> None:
    run = tmp_path / "run"
    analysed_synthetic_run(run)
    assert json.loads((run / "metrics.json").read_text())["validity"]["valid"] is True
    assert revalidate(str(run)) == (0, f"{run}: valid (unchanged)\n0 of 1 runs changed verdict (0 skipped); nothing "
                                       "written (--write updates metrics.json)\n")
    saturate_cpu(run, 2.0, 9.0)  # 7 s at 100 %: recorded after the analysis, as an old run's rule missed it
    code, text = revalidate(str(run))
    assert code == 1
    assert text.startswith(f"{run}: valid -> INVALID\n  fails now: cpu_windows_not_saturated: the host's 2 CPUs: the "
                           "busiest 5 s window of the call")
    assert "1 of 1 runs changed verdict" in text
    assert json.loads((run / "metrics.json").read_text())["validity"]["valid"] is True  # not written
    assert revalidate("--write", str(run))[0] == 1
    m = json.loads((run / "metrics.json").read_text())
    metrics_schema.validate(m)
    assert m["validity"]["valid"] is False
    assert [c["name"] for c in m["validity"]["checks"] if c["ok"] is False] == ["cpu_windows_not_saturated"]
    assert revalidate(str(run))[0] == 0  # judged by today's rules already: nothing flips


def test_revalidate_refuses_a_directory_that_is_neither_and_skips_an_unanalysed_run(tmp_path: Path) -> None:
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert revalidate(str(tmp_path))[0] == 2
    assert "neither a run directory (no manifest.json) nor a study directory" in err.getvalue()
    write_manifest(tmp_path / "raw")
    code, text = revalidate(str(tmp_path / "raw"))
    assert code == 0 and "skipped: not analysed (no metrics.json)" in text and "(1 skipped)" in text


def test_revalidate_a_study_flips_its_run_and_aggregates_again(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("name: revalidate-study\nbase: {duration_s: 12}\nrepetitions: 2\nmax_attempts: 1\n"
                 "points:\n  - {name: p, set: {duration_s: 12}}\n")
    out = tmp_path / "out"
    planmod.write(planmod.make(spec.load(f)), out)
    for rep in (1, 2):
        analysed_synthetic_run(studydir.attempt_dir(out, "p", rep, 1), seed=rep)
    agg.aggregate(out, analyse_missing=False)
    assert json.loads((out / "study.json").read_text())["points"][0]["n_runs"] == 2
    saturate_cpu(studydir.attempt_dir(out, "p", 2, 1), 1.0, 8.0)
    code, text = revalidate("--write", str(out))
    assert code == 1 and "runs/p/2-1: valid -> INVALID" in text and "1 of 2 runs changed verdict" in text
    assert f"{out}: aggregated again" in text
    assert studydir.classify(studydir.attempt_dir(out, "p", 2, 1), "p", 2, 1, None).status == studydir.INVALID
    assert json.loads((out / "study.json").read_text())["points"][0]["n_runs"] == 1


# ---- the camera's frame rate --------------------------------------------------------------------------------------


def _camera_run(calls: list[dict[str, Any]], events: list[dict[str, Any]]) -> validity.RecordedRun:
    run = rundir.RunDir(path=Path("."), manifest={"scenario": {"calls": calls}}, events=events)
    return validity.RecordedRun(run=run, t0=0.0, duration_s=10.0, packets=None, bounds=validity.load_bounds())


def media(side: str, rate: float | None, **kw: Any) -> dict[str, Any]:
    return {"event": "page_media", "side": side, "page": {"video": None if rate is None else {"frameRate": rate}}, **kw}


@pytest.mark.parametrize(("fps", "events", "ok"), [
    (60, [media("a", 60.0), media("b", None)], True),  # a forward call: b has no camera
    (60, [media("a", 30.0)], False),  # a 30 fps clip for a 60 fps call
    (30, [media("a", 30.4), media("b", 29.6)], True),  # within 0.5 fps
    (30, [media("a", 30.6)], False),
])
def test_the_camera_delivers_the_frame_rate_its_call_asked_for(fps: int, events: list, ok: bool) -> None:
    check = validity.camera_frame_rate(_camera_run([{"id": "c1", "fps": fps}], events))
    assert check is not None and check["name"] == "camera_frame_rate" and check["ok"] is ok
    assert f"asked {fps}" in check["detail"]


def test_each_calls_camera_is_held_to_its_own_fps_and_no_report_is_not_measured() -> None:
    calls = [{"id": "c1", "fps": 30}, {"id": "c2", "fps": 60}]
    both = _camera_run(calls, [media("a", 30.0, call="c1"), media("a", 60.0, call="c2")])
    assert validity.camera_frame_rate(both)["ok"] is True  # type: ignore[index]
    swapped = _camera_run(calls, [media("a", 60.0, call="c1"), media("a", 30.0, call="c2")])
    assert validity.camera_frame_rate(swapped)["ok"] is False  # type: ignore[index]
    assert validity.camera_frame_rate(_camera_run(calls, [])) is None
    assert validity.camera_frame_rate(_camera_run([], [media("a", 30.0)])) is None
