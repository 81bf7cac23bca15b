"""Phases from when the cross traffic actually sent data (analysis/rtclab/phases.py, docs/metrics.md "Phases"), on
hand-built runs shaped like iperf3's: a control connection opened first (cookie, parameters, then results after the
test), each data connection's 37-byte cookie as it connects, and the data itself 3 s after the schedule's start and
2 s after its stop. The expected bounds and rates are computed here from the packets the test wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtclab.analyze import analyze
from rtclab.report import render
from runbuild import MS, T0_NS, Run, scenario

SEC = 1_000_000_000
DURATION_S = 10.0
SCHEDULE_S = (2.0, 6.0)  # the cross traffic's start and stop in the scenario
DATA_S = (5.0, 8.0)  # when its data actually flows: 3 s late, 2 s late
DELAY_MS = 10


def _call(run: Run) -> None:
    """The call's forward video: 1000-byte RTP every 10 ms for the whole run."""
    for i in range(int(DURATION_S * 100)):
        t = T0_NS + i * 10 * MS
        run.rtp(t, [t + DELAY_MS * MS], seq=i, ts=i * 900)


def _iperf3_item(run: Run, port: int, flows: int, start_s: float, data_s: tuple[float, float],
                 forward: bool = True) -> list[int]:
    """One iperf3 client as cross.js runs it: the control connection (sport 40000) sends its cookie and parameters
    at the scheduled start_s and its results after the data; each data connection (40001...) its cookie while
    connecting, one round trip apart, then 1448-byte segments every 10 ms from data_s[0] to data_s[1]. Returns the
    send times of the data segments."""
    start = T0_NS + int(start_s * SEC)
    delay = DELAY_MS * MS
    run.tcp(start, [start + delay], sport=40000, dport=port, seq=1, payload=37, forward=forward)
    run.tcp(start + 1 * MS, [start + 1 * MS + delay], sport=40000, dport=port, seq=38, payload=300, forward=forward)
    for f in range(flows):
        t = start + (f + 1) * 20 * MS
        run.tcp(t, [t + delay], sport=40001 + f, dport=port, seq=1, payload=37, forward=forward)
    sent = []
    n = int((data_s[1] - data_s[0]) * 100)
    for i in range(n):
        for f in range(flows):
            t = T0_NS + int(data_s[0] * SEC) + i * 10 * MS + f * MS
            run.tcp(t, [t + delay], sport=40001 + f, dport=port, seq=38 + i * 1448, payload=1448, forward=forward)
            sent.append(t)
    end = T0_NS + int(data_s[1] * SEC) + 100 * MS
    run.tcp(end, [end + delay], sport=40000, dport=port, seq=338, payload=900, forward=forward)  # results
    return sent


@pytest.fixture(scope="module")
def late_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run, list[int]]:
    path = tmp_path_factory.mktemp("late")
    run = Run()
    _call(run)
    sent = _iperf3_item(run, 5201, 2, SCHEDULE_S[0], DATA_S)
    run.write(path, scenario(DURATION_S, {"delay_ms": DELAY_MS, "rate": {"kbit": 4000}},
                             cross=[{"flows": 2, "start_s": SCHEDULE_S[0], "stop_s": SCHEDULE_S[1]}]))
    return path, run, sent


def test_phase_bounds_are_the_first_and_last_data_packet(late_run):
    path, _, sent = late_run
    m, _ = analyze(path, run_tshark=False, write=False)
    first_s, last_s = (min(sent) - T0_NS) / 1e9, (max(sent) - T0_NS) / 1e9
    assert first_s == pytest.approx(DATA_S[0]) and last_s > DATA_S[1] - 0.02
    phases = {p["name"]: p for p in m["phases"]}
    assert list(phases) == ["all", "before_cross_traffic", "cross_traffic", "after_cross_traffic"]
    assert (phases["before_cross_traffic"]["start_s"], phases["before_cross_traffic"]["end_s"]) == \
        (0.0, pytest.approx(first_s, abs=1e-9))
    assert (phases["cross_traffic"]["start_s"], phases["cross_traffic"]["end_s"]) == \
        (pytest.approx(first_s, abs=1e-9), pytest.approx(last_s, abs=1e-9))
    assert phases["after_cross_traffic"]["start_s"] == pytest.approx(last_s, abs=1e-9)
    assert phases["after_cross_traffic"]["end_s"] == pytest.approx(DURATION_S)
    assert (phases["cross_traffic"]["scheduled_start_s"], phases["cross_traffic"]["scheduled_end_s"]) == SCHEDULE_S
    assert phases["before_cross_traffic"]["scheduled_end_s"] == SCHEDULE_S[0]
    assert m["cross_traffic_timing"] == [{
        "item": 0, "scheduled_start_s": SCHEDULE_S[0], "scheduled_stop_s": SCHEDULE_S[1],
        "first_data_s": pytest.approx(first_s, abs=1e-9), "last_data_s": pytest.approx(last_s, abs=1e-9),
        "start_delay_s": pytest.approx(first_s - SCHEDULE_S[0], abs=1e-9),
        "stop_delay_s": pytest.approx(last_s - SCHEDULE_S[1], abs=1e-9)}]
    assert not [g for g in m["gaps"] if "cross_traffic[" in g]


def test_fairness_over_the_cross_phase_covers_only_the_time_tcp_ran(late_run):
    """The call's and each data connection's rate over [first data, last data): bytes received in it (frame
    lengths, as the test wrote them) over its length. Over the schedule's [2 s, 6 s) the call would share the
    phase with 1 s of TCP only."""
    path, run, sent = late_run
    m, _ = analyze(path, run_tshark=False, write=False)
    # The phase's bounds in ns, truncated from its seconds as the analyzer does.
    lo = T0_NS + int((min(sent) - T0_NS) / 1e9 * 1e9)
    hi = T0_NS + int((max(sent) - T0_NS) / 1e9 * 1e9)
    fair = m["fairness"]["cross_traffic"]

    def rate(match) -> float:
        got = sum(len(p.frame) for p in run.packets if p.forward and match(p) and lo <= p.arrivals[0] < hi)
        return got * 8 / ((hi - lo) / 1e9)
    call = [c for c in fair["connections"] if c["role"] == "call"]
    tcp = {c["src"]: c for c in fair["connections"] if c["role"] == "tcp"}
    assert len(call) == 1 and set(tcp) == {"10.0.1.2:40001", "10.0.1.2:40002"}
    assert call[0]["throughput_bps"] == pytest.approx(rate(lambda p: p.frame[23] == 17), rel=1e-9)
    for sport in (40001, 40002):
        want = rate(lambda p, sport=sport: p.frame[23] == 6 and int.from_bytes(p.frame[34:36], "big") == sport)
        assert tcp[f"10.0.1.2:{sport}"]["throughput_bps"] == pytest.approx(want, rel=1e-9)
        # Over the phase's whole length: nearly one 1502-byte frame every 10 ms (a schedule-bound phase would
        # hold a quarter of it).
        assert want == pytest.approx(1502 * 8 * 100, rel=0.01)
    assert fair["start_s"] == pytest.approx((lo - T0_NS) / 1e9, abs=1e-9)


def test_report_names_the_late_item(late_run):
    path, _, _ = late_run
    m, _ = analyze(path, run_tshark=False, write=False)
    lines = [x for x in render(m).splitlines() if x.startswith("cross traffic off schedule")]
    assert len(lines) == 1
    assert "cross_traffic[0] (2 flows) sent data from 5.0 s to 8.0 s, scheduled 2-6 s" in lines[0]
    assert "start 3.0 s late, stop 2.0 s late" in lines[0]
    assert "iperf3 connects its 2 streams one after the other" in lines[0]


def test_item_without_data_keeps_its_schedule_and_says_so(tmp_path):
    """Two items: a reverse one whose data is measured on capture-b (1.5 s to 4.5 s for its schedule 1-4 s), a
    forward one that never sent (its bounds stay at 2 s and 6 s, and `gaps` names it). Names come from the
    schedule."""
    run = Run()
    _call(run)
    sent = _iperf3_item(run, 5201, 1, 1.0, (1.5, 4.5), forward=False)
    run.write(tmp_path, scenario(DURATION_S, {"delay_ms": DELAY_MS, "rate": {"kbit": 4000}}, {"delay_ms": DELAY_MS},
                                 cross=[{"direction": "reverse", "start_s": 1.0, "stop_s": 4.0},
                                        {"start_s": SCHEDULE_S[0], "stop_s": SCHEDULE_S[1]}]))
    m, _ = analyze(tmp_path, run_tshark=False, write=False)
    first_s, last_s = (min(sent) - T0_NS) / 1e9, (max(sent) - T0_NS) / 1e9
    got = [(p["name"], p["start_s"], p["end_s"], p["scheduled_start_s"], p["scheduled_end_s"]) for p in m["phases"]]
    assert got == [
        ("all", 0.0, DURATION_S, 0.0, DURATION_S),
        ("before_cross_traffic", 0.0, pytest.approx(first_s, abs=1e-9), 0.0, 1.0),
        ("cross_traffic_1-2s", pytest.approx(first_s, abs=1e-9), 2.0, 1.0, 2.0),
        ("cross_traffic_2-4s", 2.0, pytest.approx(last_s, abs=1e-9), 2.0, 4.0),
        ("cross_traffic_4-6s", pytest.approx(last_s, abs=1e-9), 6.0, 4.0, 6.0),
        ("after_cross_traffic", 6.0, DURATION_S, 6.0, DURATION_S)]
    timing = m["cross_traffic_timing"]
    assert timing[0]["first_data_s"] == pytest.approx(first_s, abs=1e-9)
    assert (timing[1]["first_data_s"], timing[1]["last_data_s"], timing[1]["start_delay_s"]) == (None, None, None)
    assert [g for g in m["gaps"] if "cross_traffic[" in g] == [
        "cross_traffic[1]: no TCP data from its client to port 5202 in capture-a.pcap: its phase bounds follow its "
        "schedule"]


def test_missing_sending_capture_falls_back_to_the_schedule(late_run, tmp_path):
    path, run, _ = late_run
    for name in ("manifest.json", "capture-b.pcap"):
        (tmp_path / name).write_bytes((path / name).read_bytes())
    m, _ = analyze(tmp_path, run_tshark=False, write=False)
    phases = {p["name"]: (p["start_s"], p["end_s"]) for p in m["phases"]}
    assert phases == {"all": (0.0, DURATION_S), "before_cross_traffic": (0.0, 2.0), "cross_traffic": SCHEDULE_S,
                      "after_cross_traffic": (6.0, DURATION_S)}
    assert m["cross_traffic_timing"][0]["first_data_s"] is None
    assert "capture-a.pcap unreadable: cross_traffic[0]'s phase bounds follow its schedule" in m["gaps"]
    assert not [x for x in render(m).splitlines() if x.startswith("cross traffic off schedule")]


def test_an_items_port_comes_from_the_manifest(tmp_path):
    """The manifest's topology.cross_traffic names each item's server port (netem/cross.js); the analyzer finds the
    item's packets there, not at a port it derives itself."""
    run = Run()
    _call(run)
    sent = _iperf3_item(run, 6100, 1, SCHEDULE_S[0], DATA_S)
    run.write(tmp_path, scenario(DURATION_S, {"delay_ms": DELAY_MS, "rate": {"kbit": 4000}},
                                 cross=[{"flows": 1, "start_s": SCHEDULE_S[0], "stop_s": SCHEDULE_S[1]}]),
              manifest_extra={"topology": {"data": {"a": "10.0.1.2", "b": "10.0.2.2"},
                                           "cross_traffic": [{"n": 0, "port": 6100, "server_host": "b",
                                                              "client_host": "a"}]}})
    m, _ = analyze(tmp_path, run_tshark=False, write=False)
    assert m["cross_traffic_timing"][0]["first_data_s"] == pytest.approx((min(sent) - T0_NS) / 1e9, abs=1e-9)
    assert not [g for g in m["gaps"] if "cross_traffic[" in g]
