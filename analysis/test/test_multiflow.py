"""Several calls and tracks through one bottleneck (analysis/rtclab/multiflow.py): hand-built run directories whose
every packet is listed here, each number checked against the same quantity computed in this file from that list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcapbuild import ipv4_frame, rtp, udp
from rtclab import analyze, multiflow, rundir
from runbuild import MS, T0_NS, A, B, Run, Sent, scenario

S = 1_000_000_000
ETH = 14


def flow(run: Run, *, sport: int, dport: int, ssrc: int, t_from_s: float, t_to_s: float, per_s: int, size: int,
         dscp: int, lost_every: int = 0, delay_ms: float = 20) -> list[Sent]:
    """RTP packets a -> b at `per_s` packets per second over [t_from_s, t_to_s), every `lost_every`-th lost."""
    out = []
    n = int(round((t_to_s - t_from_s) * per_s))
    for i in range(n):
        t = T0_NS + int(t_from_s * S) + i * S // per_s
        lost = lost_every and i % lost_every == lost_every - 1
        run.ip_ids[A] = (run.ip_ids[A] + 1) % 65536
        frame = ipv4_frame(A, B, 17, udp(sport, dport, rtp(96, i % 65536, i * 3000, ssrc, size)), run.ip_ids[A],
                           tos=dscp << 2)
        p = Sent(True, t, frame, [] if lost else [t + int(delay_ms * MS)])
        run.packets.append(p)
        out.append(p)
    return out


def pair(sport: int, dport: int) -> dict:
    return {"a": {"local": {"address": A, "port": sport}, "remote": {"address": B, "port": dport}},
            "b": {"local": {"address": B, "port": dport}, "remote": {"address": A, "port": sport}}}


def two_call_run(path: Path, *, c1_dscp_on_wire: int = 46) -> dict[str, list[Sent]]:
    """c1 (DSCP 46, priority low) for the whole 10 s; c2 (DSCP 0, priority high) joins at 4 s, slow for 2 s."""
    run = Run()
    sent = {
        "c1": flow(run, sport=40000, dport=50000, ssrc=0x1000, t_from_s=0, t_to_s=10, per_s=100, size=1000,
                   dscp=c1_dscp_on_wire, lost_every=10),
        "c2_slow": flow(run, sport=40002, dport=50002, ssrc=0x2000, t_from_s=4, t_to_s=6, per_s=50, size=1000, dscp=0),
    }
    sent["c2_fast"] = flow(run, sport=40002, dport=50002, ssrc=0x2000, t_from_s=6, t_to_s=10, per_s=300, size=1000,
                           dscp=0)
    scen = scenario(10, {"delay_ms": 20, "rate": {"kbit": 10000}})
    scen["calls"] = [
        {"id": "c1", "start_s": 0, "stop_s": None, "dscp": 46, "audio": False, "priority": "low",
         "tracks": [{"id": "v1", "priority": "low", "network_priority": "low", "max_bitrate_kbps": None, "dscp": 46}]},
        {"id": "c2", "start_s": 4, "stop_s": None, "dscp": 0, "audio": False, "priority": "high",
         "tracks": [{"id": "v1", "priority": "high", "network_priority": "low", "max_bitrate_kbps": None, "dscp": 0}]},
    ]
    calls = [{"id": c, "getstats": {"a": f"getstats-{c}-a.jsonl", "b": f"getstats-{c}-b.jsonl"},
              "selected_pairs": pair(sp, dp),
              "tracks": {"a": [{"id": "v1", "kind": "video", "ssrcs": [ssrc, ssrc + 1]}]}}
             for c, sp, dp, ssrc in (("c1", 40000, 50000, 0x1000), ("c2", 40002, 50002, 0x2000))]
    run.write(path, scen, manifest_extra={"format_version": 3, "calls": calls})
    return sent


def rate_bps(packets: list[Sent], lo_s: float, hi_s: float) -> float:
    """Received link-layer bits per second over [lo_s, hi_s) since call start, from the packet list."""
    got = [p for p in packets if p.arrivals and T0_NS + lo_s * S <= p.arrivals[0] < T0_NS + hi_s * S]
    return sum(len(p.frame) for p in got) * 8 / (hi_s - lo_s)  # the frame is Ethernet + IP: ip_len + 14


def test_flows_are_attributed_to_their_call_and_track_with_rates_loss_and_delay(tmp_path):
    sent = two_call_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    mf = m["multiflow"]
    calls = {c["id"]: c for c in mf["calls"]}
    c1, c2 = calls["c1"]["tracks"][0], calls["c2"]["tracks"][0]
    assert c1["rate_bps"] == pytest.approx(rate_bps(sent["c1"], 0, 10))
    assert c2["rate_bps"] == pytest.approx(rate_bps(sent["c2_slow"] + sent["c2_fast"], 4, 10))
    assert (c1["packets_sent"], c1["packets_lost"]) == (1000, 100)
    assert c1["loss_ratio"] == pytest.approx(0.1)
    assert c2["packets_lost"] == 0
    assert c1["owd_ms"]["mean"] == pytest.approx(20) and c1["queuing_delay_ms"]["mean"] == pytest.approx(0)
    forward = {f["ssrc"]: (f["call"], f["track"]) for f in m["flows"] if f["direction"] == "forward"}
    assert forward == {0x1000: ("c1", "v1"), 0x2000: ("c2", "v1")}


def test_convergence_oscillation_shares_and_jain_against_hand_computation(tmp_path):
    sent = two_call_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    c2 = m["multiflow"]["calls"][1]["tracks"][0]
    # c2's 1 s windows from 4 s: 2 slow ones, 4 fast ones; steady = mean of the second half (the last 3 windows)
    packets = sent["c2_slow"] + sent["c2_fast"]
    windows = [rate_bps(packets, s, s + 1) for s in range(4, 10)]
    steady = sum(windows[3:]) / 3
    assert c2["steady_rate_bps"] == pytest.approx(steady)
    first = next(i for i, w in enumerate(windows) if w >= 0.8 * steady)
    assert c2["convergence_s"] == pytest.approx(first + 1) == 3
    assert c2["rate_cv"] == pytest.approx(0.0, abs=1e-9)  # the fast part is perfectly regular
    shares = m["multiflow"]["shares"]
    assert (shares["start_s"], shares["end_s"]) == (4, 10)
    r1, r2 = rate_bps(sent["c1"], 4, 10), rate_bps(packets, 4, 10)
    by_call = {f["call"]: f for f in shares["flows"]}
    assert by_call["c1"]["asked_share"] == pytest.approx(1 / 5) and by_call["c2"]["asked_share"] == pytest.approx(4 / 5)
    assert by_call["c2"]["achieved_share"] == pytest.approx(r2 / (r1 + r2))
    assert by_call["c2"]["achieved_over_asked"] == pytest.approx((r2 / (r1 + r2)) / 0.8)
    assert shares["jain_index"] == pytest.approx((r1 + r2) ** 2 / (2 * (r1 * r1 + r2 * r2)))


def test_dscp_marked_passes_when_the_wire_carries_the_asked_dscp(tmp_path):
    two_call_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "dscp_marked")
    assert check["ok"] is True, check
    assert "c1: 1000/1000 packets (100.0%) carried DSCP 46" in check["detail"]
    assert m["validity"]["valid"] is True


def test_dscp_marked_fails_a_run_whose_packets_lack_the_asked_dscp(tmp_path):
    two_call_run(tmp_path, c1_dscp_on_wire=0)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "dscp_marked")
    assert check["ok"] is False and "c1: 0/1000 packets (0.0%) carried DSCP 46" in check["detail"]
    assert m["validity"]["valid"] is False


def test_a_single_call_run_of_format_2_reads_as_call_c1_without_a_dscp_check(tmp_path):
    run = Run()
    for i in range(200):
        run.rtp(T0_NS + i * 10 * MS, [T0_NS + i * 10 * MS + 5 * MS], seq=i, ts=i * 900, ssrc=0x3333, port=40000)
    run.write(tmp_path, scenario(2, {"delay_ms": 5}), manifest_extra={"format_version": 2})
    events = [{"t": 0, "event": "selected_pair", "side": "a", "local": {"address": A, "port": 40000},
               "remote": {"address": B, "port": 40001}}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    assert [c["id"] for c in m["multiflow"]["calls"]] == ["c1"]
    video = m["multiflow"]["calls"][0]["tracks"][0]
    assert video["id"] == "v1" and video["packets_sent"] == 200
    assert not any(c["name"] == "dscp_marked" for c in m["validity"]["checks"])
    assert rundir.load(tmp_path).format_version == 2
    assert multiflow.calls(rundir.load(tmp_path))[0].five_tuple is not None


def one_call_run(path: Path, *, track: dict, call_dscp: int, wire_dscp: int, ssrc: int = 0x4444) -> None:
    run = Run()
    flow(run, sport=40000, dport=50000, ssrc=ssrc, t_from_s=0, t_to_s=3, per_s=100, size=800, dscp=wire_dscp)
    scen = scenario(3, {"delay_ms": 5})
    scen["calls"] = [{"id": "c1", "dscp": call_dscp, "audio": False, "network_priority": "low",
                      "tracks": [{"id": "v1", "priority": "low", "max_bitrate_kbps": None, **track}]}]
    calls = [{"id": "c1", "selected_pairs": pair(40000, 50000),
              "tracks": {"a": [{"id": "v1", "kind": "video", "ssrcs": [ssrc, ssrc + 1]}]}}]
    run.write(path, scen, manifest_extra={"format_version": 3, "calls": calls})


@pytest.mark.parametrize("network_priority, wire, ok", [("high", 34, True), ("medium", 36, True),
                                                         ("very-low", 8, True), ("high", 0, False)])
def test_dscp_marked_expects_chromes_own_marking_for_network_priority(tmp_path, network_priority, wire, ok):
    """Chromium 156's mapping as measured here (docs/multiflow.md): video high AF41 34, medium AF42 36, very-low
    CS1 8."""
    one_call_run(tmp_path, track={"network_priority": network_priority, "dscp": 0}, call_dscp=0, wire_dscp=wire)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "dscp_marked")
    want = multiflow.CHROME_DSCP["video"][network_priority]
    assert check["ok"] is ok
    assert f"c1/v1: {300 if ok else 0}/300 packets" in check["detail"] and f"DSCP {want}" in check["detail"]


def test_a_track_with_its_own_dscp_is_checked_on_its_ssrcs(tmp_path):
    one_call_run(tmp_path, track={"network_priority": "low", "dscp": 10}, call_dscp=46, wire_dscp=10)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "dscp_marked")
    assert "c1/v1: 300/300 packets (100.0%) carried DSCP 10" in check["detail"]
    assert "c1: no packets besides its tracks' own" in check["detail"] and check["ok"] is True
    one_call_run(tmp_path, track={"network_priority": "low", "dscp": 10}, call_dscp=46, wire_dscp=46)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    check = next(c for c in m["validity"]["checks"] if c["name"] == "dscp_marked")
    assert "c1/v1: 0/300 packets (0.0%) carried DSCP 10" in check["detail"] and check["ok"] is False


def test_study_shares_average_the_valid_runs_of_each_point_and_write_a_page(tmp_path):
    def metrics(point: str, run: str, valid: bool, achieved: tuple[float, float]) -> None:
        d = tmp_path / "runs" / point / run
        d.mkdir(parents=True)
        flows = [{"call": "c1", "track": t, "priority": p, "rate_bps": 1.0, "asked_share": a, "achieved_share": g,
                  "achieved_over_asked": g / a} for t, p, a, g in (("v1", "low", 0.2, achieved[0]),
                                                                    ("v2", "high", 0.8, achieved[1]))]
        (d / "metrics.json").write_text(json.dumps({"validity": {"valid": valid},
                                                    "multiflow": {"shares": {"flows": flows, "jain_index": 0.9}}}))
    metrics("coupled", "1-1", True, (0.3, 0.7))
    metrics("coupled", "2-1", True, (0.2, 0.8))
    metrics("coupled", "3-1", False, (0.9, 0.1))  # an invalid run is left out while valid ones exist
    metrics("uncoupled", "1-1", False, (0.5, 0.5))  # no valid run: the invalid ones, said so by valid_runs 0
    points = {p["point"]: p for p in multiflow.study_shares(tmp_path)}
    coupled = {f["flow"]: f for f in points["coupled"]["flows"]}
    assert coupled["c1/v1"]["achieved_share"] == pytest.approx(0.25) and coupled["c1/v2"]["asked_share"] == 0.8
    assert (points["coupled"]["runs"], points["coupled"]["valid_runs"]) == (2, 2)
    assert (points["uncoupled"]["runs"], points["uncoupled"]["valid_runs"]) == (1, 0)
    assert multiflow.main(["shares", str(tmp_path)]) == 0
    assert '{"id":"shares"' in (tmp_path / "shares.html").read_text()
    assert multiflow.main(["shares", str(tmp_path / "runs")]) == 2


def test_study_shares_name_each_run_they_leave_out_with_why(tmp_path, capsys):
    flows = [{"call": "c1", "track": "v1", "priority": "low", "rate_bps": 1.0, "asked_share": 0.5,
              "achieved_share": 0.4, "achieved_over_asked": 0.8}]
    for run, text in (("1-1", json.dumps({"validity": {"valid": True}, "multiflow": {"shares": {"flows": flows}}})),
                      ("2-1", '{"validity": {"valid": tr'),  # cut short
                      ("3-1", None),  # an attempt that never got analysed
                      ("4-1", json.dumps({"validity": {"valid": True}, "multiflow": {"shares": {
                          "flows": [], "note": "the video flows overlap for less than 2 s"}}}))):
        d = tmp_path / "runs" / "p" / run
        d.mkdir(parents=True)
        if text is not None:
            (d / "metrics.json").write_text(text)
    (point,) = multiflow.study_shares(tmp_path)
    assert (point["runs"], point["valid_runs"]) == (1, 1) and point["flows"][0]["achieved_share"] == 0.4
    assert [x["dir"] for x in point["left_out"]] == ["runs/p/2-1", "runs/p/3-1", "runs/p/4-1"]
    why = [x["reason"] for x in point["left_out"]]
    assert why[0].startswith("metrics.json unreadable: JSONDecodeError")
    assert why[1] == "no metrics.json (not analysed)"
    assert why[2] == "no priority shares in metrics.json (the video flows overlap for less than 2 s)"
    assert multiflow.main(["shares", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "3 run(s) left out of the shares:" in printed and "  runs/p/3-1: no metrics.json (not analysed)" in printed
    page = (tmp_path / "shares.html").read_text()
    assert "3 run(s) left out of the shares:" in page and "runs/p/2-1: metrics.json unreadable" in page


def test_the_study_dashboards_shares_name_a_used_run_they_could_not_read(tmp_path):
    from rtclab.study import dashboard as study_dashboard
    flows = [{"call": "c1", "track": t, "priority": "low", "rate_bps": 1.0, "asked_share": 0.5, "achieved_share": g,
              "achieved_over_asked": 2 * g} for t, g in (("v1", 0.4), ("v2", 0.6))]
    for run, text in (("1-1", json.dumps({"multiflow": {"shares": {"flows": flows}}})), ("2-1", "{cut")):
        d = tmp_path / "runs" / "p" / run
        d.mkdir(parents=True)
        (d / "metrics.json").write_text(text)
    fig = study_dashboard.shares_figure({"points": [{"name": "p", "runs_used": ["runs/p/1-1", "runs/p/2-1"]}]},
                                        tmp_path)
    assert fig is not None and fig["data"][1]["y"] == [0.4, 0.6]
    hover = fig["data"][0]["hovertext"][0]
    assert "over n=1 run(s); 1 run(s) left out: runs/p/2-1: metrics.json unreadable: JSONDecodeError" in hover


def test_the_report_and_dashboard_print_the_shares_as_computed(tmp_path):
    sent = two_call_run(tmp_path)
    m, table = analyze.analyze(tmp_path, run_tshark=False, write=False)
    from rtclab import dashboard, report
    text = report.render(m)
    r1, r2 = rate_bps(sent["c1"], 4, 10), rate_bps(sent["c2_slow"] + sent["c2_fast"], 4, 10)
    line = next(x for x in text.splitlines() if x.startswith("c2/v1") and "0.80" in x)
    assert f"{r2 / (r1 + r2):.2f}" in line.split()
    assert "priority shares while every video flow is active (4.0-10.0 s)" in text
    page = dashboard.render(m, table)
    assert "Priority shares" in page and f"<td>{r2 / (r1 + r2):.2f}</td>" in page


def test_fairness_counts_every_call_of_the_scenario_as_a_competitor(tmp_path):
    sent = two_call_run(tmp_path)
    m, _ = analyze.analyze(tmp_path, run_tshark=False, write=False)
    fair = m["fairness"]["all"]
    assert fair["competitors_expected"] == 2
    rates = sorted(c["throughput_bps"] for c in fair["connections"] if c["role"] == "call")
    # each call's forward 5-tuple over the whole 10 s: link-layer bits of its arrivals / 10 s
    assert rates == pytest.approx(sorted([rate_bps(sent["c1"], 0, 10),
                                          rate_bps(sent["c2_slow"] + sent["c2_fast"], 0, 10)]))
    assert fair["jain_index"] == pytest.approx(sum(rates) ** 2 / (2 * sum(r * r for r in rates)))
