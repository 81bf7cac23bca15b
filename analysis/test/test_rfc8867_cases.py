"""RFC 8867 5.5 and 5.7 in the analysis: a call's own propagation delay (calls[].delay_ms: its queuing delay and the
check `call_delay_applied`) and short TCP flows (metrics.json `short_tcp`), on hand-built run directories whose every
packet and download is listed here, each number checked against the same quantity computed in this file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pcapbuild import ipv4_frame, rtp, udp
from rtclab import analyze, report, short_tcp
from runbuild import MS, T0_NS, A, B, Run, Sent, scenario

S = 1_000_000_000


def media(run: Run, *, sport: int, dport: int, ssrc: int, owd_ms: float, forward: bool = True, n: int = 200) -> None:
    """n RTP packets every 50 ms from 0.1 s, each arriving owd_ms later."""
    src, dst = (A, B) if forward else (B, A)
    for i in range(n):
        t = T0_NS + S // 10 + i * 50 * MS
        run.ip_ids[src] = (run.ip_ids[src] + 1) % 65536
        frame = ipv4_frame(src, dst, 17, udp(sport, dport, rtp(96, i, i * 3000, ssrc, 500)), run.ip_ids[src])
        run.packets.append(Sent(forward, t, frame, [t + int(owd_ms * MS)]))


def pair(sport: int, dport: int) -> dict:
    return {"a": {"local": {"address": A, "port": sport}, "remote": {"address": B, "port": dport}},
            "b": {"local": {"address": B, "port": dport}, "remote": {"address": A, "port": sport}}}


CALLS = (("near", 40000, 50000, 0x1000, 10.0), ("far", 40002, 50002, 0x2000, 150.0))


def delayed_calls_run(path: Path, far_owd_ms: float = 150.0) -> None:
    """Two calls over a link of 50 ms each way: near with its own 10 ms, far with 150 ms (its packets take
    far_owd_ms); media forward, feedback reverse."""
    run = Run()
    for cid, sport, dport, ssrc, delay in CALLS:
        owd = far_owd_ms if cid == "far" else delay
        media(run, sport=sport, dport=dport, ssrc=ssrc, owd_ms=owd + 2)  # + 2 ms at the bottleneck
        media(run, sport=dport, dport=sport, ssrc=ssrc + 5, owd_ms=owd, forward=False, n=40)
    scen = scenario(10, {"delay_ms": 50, "rate": {"kbit": 10000}}, {"delay_ms": 50})
    scen["calls"] = [{"id": cid, "start_s": 0, "stop_s": None, "dscp": 0, "audio": False, "priority": "low",
                      "delay_ms": delay,
                      "tracks": [{"id": "v1", "priority": "low", "network_priority": "low", "max_bitrate_kbps": None,
                                  "dscp": 0}]} for cid, _, _, _, delay in CALLS]
    calls = [{"id": cid, "getstats": {"a": f"getstats-{cid}-a.jsonl", "b": f"getstats-{cid}-b.jsonl"},
              "selected_pairs": pair(sp, dp), "tracks": {"a": [{"id": "v1", "kind": "video", "ssrcs": [ssrc]}]}}
             for cid, sp, dp, ssrc, _ in CALLS]
    run.write(path, scen, manifest_extra={"format_version": 3, "calls": calls})


def test_each_call_queuing_delay_is_measured_from_its_own_delay_and_the_check_passes(tmp_path):
    delayed_calls_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    tracks = {c["id"]: c["tracks"][0] for c in m["multiflow"]["calls"]}
    # OWD = own delay + 2 ms, so OWD - own delay = 2 ms for both (the link's 50 ms would give -38 and 102).
    assert tracks["near"]["owd_ms"]["mean"] == pytest.approx(12)
    assert tracks["far"]["owd_ms"]["mean"] == pytest.approx(152)
    assert tracks["near"]["queuing_delay_ms"]["mean"] == pytest.approx(2)
    assert tracks["far"]["queuing_delay_ms"]["mean"] == pytest.approx(2)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "call_delay_applied")
    assert check["ok"] is True, check
    assert "near (its delay 10 ms): forward min OWD 12.0 ms, reverse min OWD 10.0 ms" in check["detail"]
    assert m["scenario"]["first_call_delay_ms"] == 10


def test_a_call_left_on_the_links_delay_fails_call_delay_applied(tmp_path):
    delayed_calls_run(tmp_path, far_owd_ms=50.0)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "call_delay_applied")
    assert check["ok"] is False
    assert "far (its delay 150 ms): forward min OWD 52.0 ms, reverse min OWD 50.0 ms" in check["detail"]
    assert m["validity"]["valid"] is False


def test_no_check_without_a_delay_per_call(tmp_path):
    run = Run()
    media(run, sport=40000, dport=50000, ssrc=0x1000, owd_ms=50)
    run.write(tmp_path, scenario(10, {"delay_ms": 50}))
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    assert all(c["name"] != "call_delay_applied" for c in m["validity"]["checks"])
    assert m["short_tcp"] is None


SHORT = {"kind": "tcp_short", "flows": 3, "initially_on": 1, "size_bytes": [30000, 50000], "idle_mean_s": 10,
         "seed": 1}


def download(flow: int, index: int, size: int, start_s: float, took_s: float | None, reason: str | None = None) -> dict:
    start = T0_NS + int(start_s * S)
    end = None if took_s is None else start + int(round(took_s * S))
    return {"flow": flow, "index": index, "size_bytes": size, "start_ns": start, "end_ns": end,
            "completion_s": took_s, "bytes_received": size if took_s is not None else 1000,
            "completed": took_s is not None, "reason": reason}


def nearest_rank_interpolated(values: list[float], q: float) -> float:
    """The percentile by linear interpolation between closest ranks, written out here (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


def test_short_flow_downloads_are_counted_and_their_completion_times_summarised(tmp_path):
    run = Run()
    media(run, sport=40000, dport=50000, ssrc=0x1000, owd_ms=50)
    run.write(tmp_path, scenario(30, {"delay_ms": 50}, cross=[{"kind": "tcp", "flows": 1}, SHORT]))
    took = [0.41, 0.52, 0.38, 1.9, 0.47, 0.66, 0.44]
    records = [download(i % 3, i // 3, 30000 + 1000 * i, 1 + 3 * i, t) for i, t in enumerate(took)]
    records.append(download(2, 3, 45000, 28, None, "stopped at its stop_s"))
    (tmp_path / "short-tcp-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    [entry] = m["short_tcp"]
    assert (entry["item"], entry["file"], entry["error"]) == (1, "short-tcp-1.jsonl", None)
    s = entry["summary"]
    assert (s["downloads"], s["completed"]) == (8, 7)
    assert s["not_completed"] == {"stopped at its stop_s": 1}
    assert s["bytes_completed"] == sum(30000 + 1000 * i for i in range(7))
    assert s["completion_s"]["p50"] == pytest.approx(sorted(took)[3]) == pytest.approx(0.47)
    assert s["completion_s"]["p95"] == pytest.approx(nearest_rank_interpolated(took, 95))
    assert s["completion_s"]["mean"] == pytest.approx(sum(took) / 7)
    assert s["completion_s"]["max"] == 1.9


def test_a_missing_downloads_file_is_an_error_with_no_summary_never_zeros(tmp_path):
    run = Run()
    media(run, sport=40000, dport=50000, ssrc=0x1000, owd_ms=50)
    run.write(tmp_path, scenario(30, {"delay_ms": 50}, cross=[SHORT]))
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    [entry] = m["short_tcp"]
    assert entry["summary"] is None
    assert "short-tcp-0.jsonl unreadable" in entry["error"]
    assert any("short-tcp-0.jsonl" in p for p in m["problems"])


def test_no_completed_download_gives_null_times_with_count_zero():
    s = short_tcp.summarise([download(0, 0, 30000, 1, None, "the run ended")])
    assert s["completion_s"] == {"count": 0, "p50": None, "p95": None, "mean": None, "max": None}
    assert s["not_completed"] == {"the run ended": 1}


def test_the_report_names_each_calls_own_delay_beside_its_one_way_delay_and_the_first_calls_rttm(tmp_path):
    delayed_calls_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    assert [(c["id"], c["delay_ms"]) for c in m["multiflow"]["calls"]] == [("near", 10), ("far", 150)]
    text = report.render(m)
    assert ("propagation delay (scenario): forward 50 ms, reverse 50 ms; calls' own, each way: near 10 ms, far 150 ms; "
            "RTTm 20 ms (the first call's)") in text
    # Each call's row: its own delay, then the median one-way delay of its video (own delay + 2 ms, as sent above).
    table = text.split("calls and tracks (forward video):")[1].splitlines()
    for cid, _, _, _, delay in CALLS:
        row = next(line.split() for line in table if line.startswith(f"{cid}/v1 "))
        at = row.index(f"{delay:g}")
        assert row[at + 1] == f"{delay + 2:.1f}", row


def test_short_flows_that_start_late_are_explained_by_their_downloads_not_by_iperf3():
    timing = {"item": 0, "scheduled_start_s": 0, "scheduled_stop_s": 59.5, "first_data_s": 0.6, "last_data_s": 59.6,
              "start_delay_s": 0.6, "stop_delay_s": 0.1}
    m = {"scenario": {"cross_traffic": [{"kind": "tcp_short", "flows": 10}]}, "cross_traffic_timing": [timing]}
    [line] = report._off_schedule_lines(m)
    assert "cross_traffic[0] (10 flows) sent data from 0.6 s to 59.6 s, scheduled 0-59.5 s" in line
    assert "the downloads' client starts (python3)" in line and "iperf3" not in line
    m["scenario"]["cross_traffic"][0]["kind"] = "tcp"
    assert "iperf3 connects its 10 streams" in report._off_schedule_lines(m)[0]
