"""Each metric's definition on a hand-built run that separates it from a plausible wrong one (issue 7, item 5). The
expected values are computed here from the packets the test wrote, not by the analyzer's code."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pcapbuild import ipv4_frame, udp
from rtclab import compare
from rtclab.analyze import analyze
from rtclab.fairness import headline_fairness
from runbuild import MS, T0_NS, A, Run, log_key, scenario, write_gtlog


def flow(m: dict, direction: str, kind: str, sport: int | None = None) -> dict:
    found = [f for f in m["flows"] if f["direction"] == direction and f["kind"] == kind
             and (sport is None or f["src"].endswith(f":{sport}"))]
    assert len(found) == 1, [(f["direction"], f["kind"], f["src"]) for f in m["flows"]]
    return found[0]


def rate_bps(frames_at: list[tuple[int, int]], lo: int, hi: int) -> float:
    """Link-layer bits per second of the frames (time, bytes) arriving in [lo, hi)."""
    return sum(b for t, b in frames_at if lo <= t < hi) * 8 / ((hi - lo) / 1e9)


def jain(rates: list[float]) -> float:
    return sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))


def test_queuing_delay_of_a_flow_joining_a_standing_queue(tmp_path):
    """Every packet waits 200-209 ms in a standing queue: the time at the bottleneck is that, not ~0 as 'one-way
    delay minus the flow's smallest' says. The ground-truth log agrees."""
    run, log = Run(), []
    delay_ms = 20
    for i in range(300):
        t = T0_NS + 10 * MS + i * 10 * MS
        arrive_r = t + 20_000  # the bottleneck's own timestamps, as it would log them
        dequeue = arrive_r + (200 + i % 10) * MS
        tx_end = dequeue + 1 * MS
        due = tx_end + delay_ms * MS
        release = due + 30_000
        p = run.rtp(t, [release + 20_000], seq=i, ts=i * 900)
        key, ip_len, ip_id = log_key(p.frame)
        log.append({"arrival_ns": arrive_r, "dequeue_ns": dequeue, "tx_end_ns": tx_end, "due_ns": due,
                    "release_ns": release, "key": key, "ip_len": ip_len, "ip_id": ip_id})
    run.write(tmp_path, scenario(3.5, {"delay_ms": delay_ms, "rate": {"kbit": 10000}}))
    write_gtlog(tmp_path / "bottleneck-forward.gtlog", log)
    m, _ = analyze(tmp_path, run_tshark=False)
    video = flow(m, "forward", "video")
    owd_ms = [(p.arrivals[0] - p.t_send) / 1e6 for p in run.packets]
    assert video["queuing_delay_ms"]["mean"] == pytest.approx(statistics.fmean(owd_ms) - delay_ms, abs=1e-9)
    assert video["queuing_delay_ms"]["min"] == pytest.approx(min(owd_ms) - delay_ms, abs=1e-9)
    assert video["queuing_delay_ms"]["min"] > 200
    # The older measure, labelled as such: the flow's own minimum holds the standing queue.
    assert video["queuing_delay_vs_min_owd_ms"]["mean"] == pytest.approx(statistics.fmean(owd_ms) - min(owd_ms))
    check = next(c for c in m["crosschecks"] if c["name"] == "queuing_delay_vs_ground_truth")
    assert check["ok"] is True
    sojourn = [(r["dequeue_ns"] - r["arrival_ns"]) / 1e6 for r in log]
    assert check["values"]["sojourn_mean_ms"] == pytest.approx(statistics.fmean(sojourn))
    assert check["values"]["p99_abs_difference_ms"] == pytest.approx(0.07, abs=1e-9)  # the hops written above


def _jitter_ms(arrivals: list[tuple[int, int]], clock_hz: float) -> float:
    """RFC 3550 6.4.1 over (arrival ns, RTP timestamp) in arrival order: the last J, in ms."""
    j = 0.0
    for (t0, s0), (t1, s1) in zip(arrivals, arrivals[1:]):
        d = (t1 - t0) / 1e9 * clock_hz - (s1 - s0)
        j += (abs(d) - j) / 16
    return j / clock_hz * 1000


@pytest.mark.parametrize("with_getstats", [True, False])
def test_pcmu_jitter_uses_its_8khz_clock(tmp_path, with_getstats):
    run = Run()
    for i in range(200):
        t = T0_NS + i * 20 * MS
        run.rtp(t, [t + 20 * MS + (i % 3) * MS], pt=0, seq=i, ts=i * 160, ssrc=0x2222, size=160)
    gs = [{"t": T0_NS / 1e9 + 1, "side": "a", "report": [
        {"id": "C0", "type": "codec", "payloadType": 0, "mimeType": "audio/PCMU", "clockRate": 8000}]}]
    run.write(tmp_path, scenario(4.1, {"delay_ms": 20}), getstats_a=gs if with_getstats else None)
    m, _ = analyze(tmp_path, run_tshark=False)
    audio = flow(m, "forward", "audio")
    expected = _jitter_ms([(p.arrivals[0], i * 160) for i, p in enumerate(run.packets)], 8000.0)
    assert audio["jitter_ms"]["clock_hz"] == 8000.0
    assert audio["jitter_ms"]["last"] == pytest.approx(expected, rel=1e-9)


def _call(run: Run, end_s: float, delay_ms: int = 20, every_ms: int = 10) -> None:
    for i in range(int(end_s * 1000 / every_ms)):
        t = T0_NS + i * every_ms * MS
        run.rtp(t, [t + delay_ms * MS], seq=i, ts=i * 900)


def _tcp(run: Run, sport: int, start_s: float, stop_s: float, every_ms: float, delay_ms: int = 20,
         forward: bool = True, payload: int = 1448, dport: int = 5201, last_at_stop: bool = False) -> None:
    """Segments every every_ms from start_s, before stop_s; `last_at_stop`: one more at stop_s exactly (the phases
    end at a cross-traffic item's last data segment). `dport`: 5201 + the item's index, as netem/cross.js."""
    n = int((stop_s - start_s) * 1000 / every_ms)
    times = [T0_NS + int(start_s * 1e9) + int(i * every_ms * MS) for i in range(n)]
    for i, t in enumerate(times + ([T0_NS + int(stop_s * 1e9)] if last_at_stop else [])):
        run.tcp(t, [t + delay_ms * MS], sport=sport, dport=dport, seq=1 + i * payload, payload=payload,
                forward=forward)


def _arrivals(run: Run, forward: bool = True, sport: int | None = None) -> list[tuple[int, int]]:
    out = []
    for p in run.packets:
        port = int.from_bytes(p.frame[34:36], "big")
        if p.forward == forward and p.arrivals and (sport is None or port == sport):
            out.append((p.arrivals[0], len(p.frame)))
    return out


def test_headline_jain_with_two_cross_traffic_periods(tmp_path):
    run = Run()
    _call(run, 5.0)
    _tcp(run, 40000, 1.0, 2.0, every_ms=2, last_at_stop=True)
    _tcp(run, 40001, 3.0, 4.0, every_ms=2, dport=5202, last_at_stop=True)
    sc = scenario(5.0, {"delay_ms": 20, "rate": {"kbit": 10000}},
                  cross=[{"start_s": 1, "stop_s": 2}, {"start_s": 3, "stop_s": 4}])
    run.write(tmp_path, sc)
    m, _ = analyze(tmp_path, run_tshark=False)
    assert [p["name"] for p in m["phases"]] == ["all", "before_cross_traffic", "cross_traffic_1-2s",
                                                "after_cross_traffic_2-3s", "cross_traffic_3-4s",
                                                "after_cross_traffic_4-5s"]
    assert m["fairness"]["all"]["jain_index"] < 0.99  # the TCP flows compete over the whole run too
    name, fair = headline_fairness(m)
    assert name == "cross_traffic_1-2s"
    lo, hi = T0_NS + 1_000_000_000, T0_NS + 2_000_000_000
    rates = [rate_bps(_arrivals(run, sport=50000), lo, hi), rate_bps(_arrivals(run, sport=40000), lo, hi)]
    assert fair["jain_index"] == pytest.approx(jain(rates), rel=1e-12)
    assert fair["jain_index"] < 0.9


def test_fairness_counts_a_starved_flow(tmp_path):
    """Two forward TCP flows from 1 s to 4 s: one delivers only in the phase's first second. It competes (and lost)."""
    run = Run()
    _call(run, 4.0)
    _tcp(run, 40000, 1.0, 3.99, every_ms=5)
    _tcp(run, 40001, 1.0, 1.9, every_ms=20)
    run.write(tmp_path, scenario(4.0, {"delay_ms": 20, "rate": {"kbit": 10000}},
                                 cross=[{"flows": 2, "start_s": 1, "stop_s": 4}]))
    m, _ = analyze(tmp_path, run_tshark=False)
    fair = m["fairness"]["cross_traffic"]
    lo, hi = T0_NS + 1_000_000_000, T0_NS + 4_000_000_000
    rates = [rate_bps(_arrivals(run, sport=s), lo, hi) for s in (50000, 40000, 40001)]
    assert sorted(c["throughput_bps"] for c in fair["connections"]) == pytest.approx(sorted(rates), rel=1e-12)
    assert fair["jain_index"] == pytest.approx(jain(rates), rel=1e-12)
    assert fair["competitors_expected"] == 3


def test_fairness_leaves_out_reverse_cross_traffic_acks(tmp_path):
    """TCP data b -> a: its ACKs cross the forward link at 50 kbit/s all the time, but they compete with nothing."""
    run = Run()
    _call(run, 4.0)
    _tcp(run, 5201, 0.0, 4.0, every_ms=5, forward=False)
    _tcp(run, 40000, 0.0, 3.98, every_ms=10, payload=0)  # the ACKs, a -> b
    run.write(tmp_path, scenario(4.0, {"delay_ms": 20, "rate": {"kbit": 10000}}, {"delay_ms": 20},
                                 cross=[{"direction": "reverse", "start_s": 0}]))
    m, _ = analyze(tmp_path, run_tshark=False)
    fair = m["fairness"]["cross_traffic"]
    assert [(c["role"], c["src"]) for c in fair["connections"]] == [("call", f"{A}:50000")]
    assert fair["jain_index"] == 1.0
    # The link's utilisation still counts every forward byte, the ACKs too.
    assert fair["received_bps"] == pytest.approx(rate_bps(_arrivals(run), T0_NS, T0_NS + 4_000_000_000), rel=1e-12)


def _cbr(tmp_path: Path, rate: dict, start_s: float, stop_s: float, delay_ms: int = 100, duration_s: float = 4.0):
    run = Run()
    n = int((stop_s - start_s) * 100)
    for i in range(n):
        t = T0_NS + int(start_s * 1e9) + i * 10 * MS
        run.rtp(t, [t + delay_ms * MS], seq=i, ts=i * 900, size=1000)
    run.write(tmp_path, scenario(duration_s, {"delay_ms": delay_ms, "rate": rate}))
    m, _ = analyze(tmp_path, run_tshark=False)
    return run, flow(m, "forward", "video")


def test_throughput_windows_start_at_the_first_arrival(tmp_path):
    """A packet every 10 ms through 100 ms of delay: every whole window holds the same packets, the first too."""
    run, video = _cbr(tmp_path, {"kbit": 10000}, 0.0, 3.0)
    frame = len(run.packets[0].frame)
    for w, count in (("0.15s", 15), ("0.5s", 50), ("1s", 100)):
        win = video["throughput_bps"]["windows"][w]
        assert win["mean"] == pytest.approx(count * frame * 8 / float(w[:-1]), rel=1e-12)
        assert win["sd"] == pytest.approx(0.0, abs=1e-6)


def test_mean_rate_is_bytes_over_their_intervals(tmp_path):
    """N packets 10 ms apart are N - 1 intervals: the rate is one packet per 10 ms, exactly."""
    run, video = _cbr(tmp_path, {"kbit": 10000}, 0.0, 3.0)
    frame = len(run.packets[0].frame)
    assert video["throughput_bps"]["mean"] == pytest.approx(frame * 8 / 0.010, rel=1e-12)
    assert video["send_rate_bps"] == pytest.approx(frame * 8 / 0.010, rel=1e-12)


def test_per_flow_utilisation_uses_the_capacity_over_the_flows_own_span(tmp_path):
    """2 Mbit/s until 2 s, then 1 Mbit/s; the flow runs from 2.2 s to 3.8 s: U = R / 1 Mbit/s."""
    run, video = _cbr(tmp_path, {"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 2, "kbit": 1000}]}, 2.2, 3.8,
                      delay_ms=20)
    arr = _arrivals(run)
    rate = sum(b for _, b in arr[1:]) * 8 / ((arr[-1][0] - arr[0][0]) / 1e9)
    assert video["utilisation"] == pytest.approx(rate / 1e6, rel=1e-12)


def test_a_flows_rate_and_its_fairness_rate_divide_by_different_spans(tmp_path):
    """A flow present from 2.2 s to 3.8 s of a 4 s run: `throughput_bps.mean` is its rate while it arrived (bytes
    after the first over first-to-last arrival), the fairness rate is its bytes over the whole phase (0-4 s)."""
    run, video = _cbr(tmp_path, {"kbit": 10000}, 2.2, 3.8, delay_ms=20)
    m, _ = analyze(tmp_path, run_tshark=False)
    arr = _arrivals(run)
    while_present = sum(b for _, b in arr[1:]) * 8 / ((arr[-1][0] - arr[0][0]) / 1e9)
    over_phase = rate_bps(arr, T0_NS, T0_NS + 4_000_000_000)
    assert video["throughput_bps"]["mean"] == pytest.approx(while_present, rel=1e-12)
    [call] = [c for c in m["fairness"]["all"]["connections"] if c["role"] == "call"]
    assert call["throughput_bps"] == pytest.approx(over_phase, rel=1e-12)
    assert over_phase < 0.45 * while_present  # 1.6 s of 4: the spans differ, and so do the rates


def test_compare_shows_the_loss_ratio_in_bytes(tmp_path):
    """Carlucci et al.'s l = bytes lost / bytes sent: compare shows that, not the packet ratio."""
    m = {"run": {"scenario": "x"}, "validity": {"valid": True}, "flows": [
        {"direction": "forward", "kind": "video", "packets_sent": 100, "loss_ratio": 0.1, "loss_ratio_bytes": 0.25,
         "throughput_bps": {"mean": 1e6, "windows": {}}, "queuing_delay_ms": {}, "owd_ms": {}}], "fairness": {}}
    (tmp_path / "metrics.json").write_text(json.dumps(m))
    rows = compare.rows([tmp_path])
    assert rows[0]["loss_ratio_bytes"] == 0.25
    text = compare.text(rows)
    assert "loss % bytes" in text and "25.00" in text.splitlines()[2]


def _simple_run(tmp_path: Path) -> Run:
    run = Run()
    _call(run, 2.0)
    run.write(tmp_path, scenario(2.5, {"delay_ms": 20, "rate": {"kbit": 10000}}))
    return run


def test_received_rate_is_unknown_without_capture_b(tmp_path):
    _simple_run(tmp_path)
    (tmp_path / "capture-b.pcap").unlink()
    m, _ = analyze(tmp_path, run_tshark=False)
    assert m["fairness"]["all"]["received_bps"] is None
    assert m["fairness"]["all"]["utilisation"] is None


def test_received_rate_comes_from_capture_b_alone(tmp_path):
    run = _simple_run(tmp_path)
    (tmp_path / "capture-a.pcap").unlink()
    m, _ = analyze(tmp_path, run_tshark=False)
    expected = rate_bps(_arrivals(run), T0_NS, T0_NS + 2_500_000_000)
    assert m["fairness"]["all"]["received_bps"] == pytest.approx(expected, rel=1e-12)


def test_an_outage_at_the_end_of_the_capture_is_loss(tmp_path):
    """Forward media stops arriving at 2.5 s while b's capture runs on to 3.3 s (b keeps sending): lost, not unknown."""
    run = Run()
    for i in range(300):
        t = T0_NS + i * 10 * MS
        run.rtp(t, [] if t >= T0_NS + 2_500_000_000 else [t + 20 * MS], seq=i, ts=i * 900)
    for i in range(165):
        t = T0_NS + i * 20 * MS
        run.rtp(t, [t + 20 * MS], seq=i, ts=i * 960, ssrc=0x3333, pt=111, size=100, forward=False)
    run.write(tmp_path, scenario(3.5, {"delay_ms": 20}, {"delay_ms": 20}))
    m, _ = analyze(tmp_path, run_tshark=False)
    video = flow(m, "forward", "video")
    assert video["packets_lost"] == sum(1 for p in run.packets if p.forward and not p.arrivals) == 50
    assert video["packets_unknown"] == 0


def test_equal_arrival_times_keep_the_captures_order(tmp_path):
    """Packets 5 and 6 arrive in the same nanosecond, 6 first in b's capture: packet 5 is reordered."""
    run = Run()
    for i in range(20):
        t = T0_NS + i * 10 * MS
        run.rtp(t, [t + 20 * MS], seq=i, ts=i * 900)
    p5, p6 = run.packets[5], run.packets[6]
    p6.arrivals = [p5.arrivals[0]]
    run.extra_b.append((p5.arrivals[0], p5.frame))  # written after p6's record with the same time
    p5.arrivals = []
    run.write(tmp_path, scenario(1.0, {"delay_ms": 20}))
    m, _ = analyze(tmp_path, run_tshark=False)
    video = flow(m, "forward", "video")
    assert video["packets_lost"] == 0 and video["reordered"] == 1


def test_packets_left_out_of_the_join_are_counted_and_reported(tmp_path):
    run = _simple_run(tmp_path)
    arp = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x06" + bytes(28)
    other = ipv4_frame(A, "10.9.9.9", 17, udp(1000, 2000, bytes(50)), 7)
    run.extra_a += [(T0_NS + 5 * MS, arp), (T0_NS + 6 * MS, other)]
    run.write(tmp_path, scenario(2.5, {"delay_ms": 20, "rate": {"kbit": 10000}}))
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(tmp_path), "--no-tshark", "--no-dashboard",
                        "-q"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["inputs"]["capture_a"]["not_joined"] == {"non_ipv4": 1, "other_addresses": 1}
    assert m["inputs"]["capture_b"]["not_joined"] == {"non_ipv4": 0, "other_addresses": 0}
    assert "capture-a: 1 non-IPv4 records, 1 IPv4 packets between other addresses, left out of the join" in r.stdout


def test_capacity_steps_follow_the_schedule_over_the_call():
    """metrics.json capacity_steps: each step of the forward schedule that starts inside the call, from t = 0 (the
    first step's rate before it starts), closed at the end of the call; steps after the call are left out."""
    from rtclab.analyze import capacity_steps
    from rtclab.scenario import Link
    schedule = [(0.0, 1000.0), (40.0, 2500.0), (60.0, 600.0), (80.0, 1000.0), (120.0, 5.0)]
    link = Link(delay_ms=50, jitter_ms=0, loss_percent=0, schedule=schedule, trace=None, qdisc_kind="fifo")
    assert capacity_steps(link, 100.0) == [[0.0, 1e6], [40, 2.5e6], [60, 6e5], [80, 1e6], [100.0, 1e6]]
    late_start = Link(delay_ms=0, jitter_ms=0, loss_percent=0, schedule=[(10, 2000)], trace=None, qdisc_kind="fifo")
    assert capacity_steps(late_start, 30.0) == [[0.0, 2e6], [10, 2e6], [30.0, 2e6]]
    assert capacity_steps(Link(0, 0, 0, None, None, "fifo"), 30.0) is None
