"""A chain of bottlenecks (analysis/rtclab/hops.py): a hand-built run of two calls through two hops, each hop's
ground-truth log written here packet by packet, and every number of the `hops` section checked against the same
quantity computed in this file from the fates it wrote."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from pcapbuild import ipv4_frame, rtp, udp
from rtclab.analyze import analyze
from rtclab.report import render
from rtclab.scenario import view
from runbuild import MS, T0_NS, A, B, Run, Sent, log_key, scenario, write_gtlog

HOP_DELAY_MS = (40, 20)  # propagation after each hop
S1, S2 = (40000, 50000), (40002, 50002)


def pair(sport: int, dport: int) -> dict:
    return {"a": {"local": {"address": A, "port": sport}, "remote": {"address": B, "port": dport}},
            "b": {"local": {"address": B, "port": dport}, "remote": {"address": A, "port": sport}}}


def fate_s1(i: int) -> tuple[Any, Any]:
    """(hop 0, hop 1) of s1's i-th packet: (event, queue ms) each, None where the packet is not in that hop's log."""
    h0 = (2, None) if i % 10 == 3 else (0, 50 + i % 7)
    if h0[0] != 0:
        return h0, None
    if i == 101:
        return h0, None  # forwarded by hop 0, missing from hop 1's log (not_logged)
    return h0, ((3, None) if i % 10 == 6 else (0, 5 + i % 3))


def fate_s2(i: int) -> tuple[Any, Any]:
    return None, ((2, None) if i % 20 == 0 else (0, 4 + i % 2))


def build(path: Path) -> dict[str, list[tuple[Sent, Any, Any]]]:
    run = Run()
    logs: list[list[dict[str, int]]] = [[], []]
    sent: dict[str, list[tuple[Sent, Any, Any]]] = {"s1": [], "s2": []}
    for name, (sport, dport), n, fate, ssrc in (("s1", S1, 200, fate_s1, 0x1000), ("s2", S2, 100, fate_s2, 0x2000)):
        for i in range(n):
            t = T0_NS + 100 * MS + i * 10 * MS
            run.ip_ids[A] = (run.ip_ids[A] + 1) % 65536
            frame = ipv4_frame(A, B, 17, udp(sport, dport, rtp(96, i, i * 3000, ssrc, 800)), run.ip_ids[A])
            key, ip_len, ip_id = log_key(frame)
            now, delivered = t, True
            for hop, f in enumerate(fate(i)):
                if f is None:
                    continue
                event, queue_ms = f
                rec = {"arrival_ns": now, "dequeue_ns": now, "tx_end_ns": now, "due_ns": 0, "release_ns": now,
                       "key": key, "ip_len": ip_len, "ip_id": ip_id, "event": event}
                if event == 0:
                    rec["dequeue_ns"] = now + (queue_ms - 1) * MS  # 1 ms of it transmission
                    rec["tx_end_ns"] = now + queue_ms * MS
                    rec["due_ns"] = rec["release_ns"] = rec["tx_end_ns"] + HOP_DELAY_MS[hop] * MS
                    now = rec["release_ns"]
                else:
                    delivered = False
                logs[hop].append(rec)
            if fate(i)[1] is None and fate(i)[0] is not None and fate(i)[0][0] == 0:
                now += HOP_DELAY_MS[1] * MS  # s1's packet missing from hop 1's log still crossed it
            p = Sent(True, t, frame, [now] if delivered else [])
            run.packets.append(p)
            sent[name].append((p, *fate(i)))
    for hop in (0, 1):  # a log is in the order of arrivals at its hop
        write_gtlog(path / f"bottleneck-hop{hop}-forward.gtlog", sorted(logs[hop], key=lambda r: r["arrival_ns"]))
    scen = scenario(4, {})
    plain = scen["network"]["forward"]
    scen["network"]["hops"] = [{**plain, "delay_ms": d, "rate": {"kbit": 2000, "burst_bytes": 3028}}
                               for d in HOP_DELAY_MS]
    track = {"id": "v1", "priority": "low", "network_priority": "low", "max_bitrate_kbps": None, "dscp": 0}
    call = {"start_s": 0, "stop_s": None, "dscp": 0, "audio": False, "tracks": [track]}
    scen["calls"] = [{**call, "id": "s1", "path": [0, 1]}, {**call, "id": "s2", "path": [1]}]
    calls = [{"id": c, "selected_pairs": pair(*ports),
              "tracks": {"a": [{"id": "v1", "kind": "video", "ssrcs": [ssrc]}]}}
             for c, ports, ssrc in (("s1", S1, 0x1000), ("s2", S2, 0x2000))]
    run.write(path, scen, manifest_extra={"format_version": 3, "calls": calls})
    return sent


def expected_hop(fates: list[Any]) -> dict[str, Any]:
    """A hop's numbers from the fates this test gave the packets expected there (None: not in its log)."""
    logged = [f for f in fates if f is not None]
    forwarded = [q for e, q in logged if e == 0]
    dropped = sum(1 for e, _ in logged if e in (2, 3))
    return {"expected": len(fates), "arrived": len(logged), "not_logged": len(fates) - len(logged),
            "forwarded": len(forwarded), "dropped": dropped, "loss_ratio": dropped / len(logged),
            "mean": statistics.fmean(forwarded),
            "p95": statistics.quantiles(forwarded, n=100, method="inclusive")[94], "max": max(forwarded)}


def check_hop(got: dict[str, Any], want: dict[str, Any]) -> None:
    for k in ("expected", "arrived", "not_logged", "forwarded", "dropped"):
        assert got[k] == want[k], k
    assert got["loss_ratio"] == pytest.approx(want["loss_ratio"], abs=1e-12)
    for k in ("mean", "p95", "max"):
        assert got["queuing_delay_ms"][k] == pytest.approx(want[k], abs=1e-9), k
    assert got["sojourn_ms"]["mean"] == pytest.approx(want["mean"] - 1, abs=1e-9)


def test_each_calls_delay_and_loss_are_attributed_to_the_hops_of_its_path(tmp_path):
    sent = build(tmp_path)
    m, _ = analyze(tmp_path, run_tshark=False)
    h = m["hops"]
    assert h["hops"] == 2 and h["logs"] == ["bottleneck-hop0-forward.gtlog", "bottleneck-hop1-forward.gtlog"]
    s1, s2 = h["calls"]
    assert (s1["id"], s1["path"], s2["id"], s2["path"]) == ("s1", [0, 1], "s2", [1])

    # s1 over hops 0 and 1: hop 1 expects what hop 0 forwarded.
    at0 = [f0 for _, f0, _ in sent["s1"]]
    at1 = [f1 for _, f0, f1 in sent["s1"] if f0[0] == 0]
    want0, want1 = expected_hop(at0), expected_hop(at1)
    assert [x["hop"] for x in s1["hops"]] == [0, 1]
    check_hop(s1["hops"][0], want0)
    check_hop(s1["hops"][1], want1)
    assert s1["hops"][1]["not_logged"] == 1
    drops = want0["dropped"] + want1["dropped"]
    assert s1["hops"][0]["loss_share"] == pytest.approx(want0["dropped"] / drops)
    assert s1["hops"][1]["queuing_delay_share"] == pytest.approx(want1["mean"] / (want0["mean"] + want1["mean"]))
    lost = sum(1 for p, _, _ in sent["s1"] if not p.arrivals)
    assert (s1["departures"], s1["lost_in_captures"], s1["lost_not_dropped_by_a_hop"]) == (200, lost, 0)

    # s2 enters at hop 1: nothing of it at hop 0.
    assert [x["hop"] for x in s2["hops"]] == [1]
    check_hop(s2["hops"][0], expected_hop([f1 for _, _, f1 in sent["s2"]]))
    assert s2["hops"][0]["loss_share"] == 1.0 and s2["hops"][0]["queuing_delay_share"] == 1.0

    # The flows' queuing delay: one-way delay minus the call's own path's propagation (s1 60 ms, s2 20 ms).
    for name, sport, prop_ms in (("s1", S1[0], sum(HOP_DELAY_MS)), ("s2", S2[0], HOP_DELAY_MS[1])):
        owd = [(p.arrivals[0] - p.t_send) / MS for p, _, _ in sent[name] if p.arrivals]
        got = [f for f in m["flows"] if f["direction"] == "forward" and f["src"].endswith(f":{sport}")]
        assert len(got) == 1
        assert got[0]["queuing_delay_ms"]["mean"] == pytest.approx(statistics.fmean(owd) - prop_ms, abs=1e-6)

    report = render(m)
    assert "hops (a chain of 2 bottlenecks" in report
    # Each call's propagation delay is its path's (s1 40 + 20 ms, s2 20 ms), RTTm the first call's both ways.
    assert m["scenario"]["call_paths"] == [{"id": "s1", "path": [0, 1]}, {"id": "s2", "path": [1]}]
    assert ("propagation delay (scenario): a chain of 2 hops (hop 0 40 ms, hop 1 20 ms); each call's path, each "
            "way: s1 60 ms (hops 0-1), s2 20 ms (hop 1); RTTm 120 ms (the first call's)") in report
    assert "forward 0 ms" not in report
    row = ["s1", "1", str(want1["arrived"]), str(want1["dropped"])]
    assert any(line.split()[:4] == row for line in report.splitlines())


def test_a_missing_hop_log_is_named_and_nothing_at_or_after_it_is_attributed(tmp_path):
    build(tmp_path)
    (tmp_path / "bottleneck-hop0-forward.gtlog").unlink()
    m, _ = analyze(tmp_path, run_tshark=False)
    s1 = m["hops"]["calls"][0]
    assert m["hops"]["logs"] == [None, "bottleneck-hop1-forward.gtlog"]
    assert s1["hops"][0] == {"hop": 0, "log": None}
    assert s1["hops"][1]["expected"] == 0 and s1["hops"][1]["queuing_delay_ms"]["mean"] is None
    assert any("bottleneck-hop0-forward.gtlog is missing" in p for p in m["problems"])


def test_no_hops_section_without_a_chain(tmp_path):
    run = Run()
    for i in range(30):
        run.rtp(T0_NS + i * 10 * MS, [T0_NS + i * 10 * MS + 20 * MS], seq=i, ts=i)
    run.write(tmp_path, scenario(1, {"delay_ms": 20}))
    m, _ = analyze(tmp_path, run_tshark=False)
    assert "hops" not in m


def test_a_chains_rttm_is_the_first_calls_path_both_ways_under_its_hops_delay_steps():
    step = {"delay_schedule": [{"at_s": 10, "delay_ms": 50}]}
    doc = {"network": {"hops": [{"delay_ms": 40, "rate": {"kbit": 2000}},
                                {"delay_ms": 20, **step, "rate": {"kbit": 1000}},
                                {"delay_ms": 5, "rate": {"kbit": 1000}}]},
           "calls": [{"id": "s2", "path": [1, 2]}, {"id": "s1"}]}
    s = view(doc)
    assert s.call_paths == (("s2", (1, 2)), ("s1", (0, 1, 2)))
    assert s.round_trip_propagation_ms == 2 * (20 + 5)
    # After hop 1's step a -> b takes 50 + 5 ms; the way back stays at the hops' delay_ms (20 + 5).
    assert s.round_trip_propagation_ms_at(5) == 50
    assert s.round_trip_propagation_ms_at(12) == (50 + 5) + (20 + 5)
    assert view({"network": {"forward": {"delay_ms": 30}}}).call_paths == ()

