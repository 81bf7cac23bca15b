"""A hand-built pair of captures with known delays, losses, duplicates and reorderings: every metric the analyzer
reports for it must equal the value computed here, independently, from the packets the test itself wrote."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest

from pcapbuild import Pcap, ipv4_frame, percentile, rtcp_rr, rtp, tcp, udp
from rtclab.analyze import analyze
from rtclab.fairness import headline_fairness

T0_NS = 1_700_000_000 * 1_000_000_000
A, B = "10.0.1.2", "10.0.2.2"
CAPACITY_KBIT = 4000
CROSS_START_S, CROSS_STOP_S, DURATION_S = 1.0, 4.0, 5.5
FORWARD_DELAY_MS, REVERSE_DELAY_MS = 20, 18  # configured propagation delays (the scenario's delay_ms)


@dataclass
class Pkt:
    flow: str
    t_send: int  # ns
    frame: bytes
    arrivals: list[int]  # arrival times (ns): [] lost, two for a duplicate
    rtp_ts: int | None = None
    clock: float | None = None

    @property
    def frame_bytes(self) -> int:
        return len(self.frame)


def build_packets() -> list[Pkt]:
    pk: list[Pkt] = []
    ip_ids = {A: 0, B: 0}

    def frame(src: str, dst: str, proto: int, transport: bytes) -> bytes:
        ip_ids[src] += 1
        return ipv4_frame(src, dst, proto, transport, ip_ids[src])

    twcc = 0
    # Video: 1000 packets, 5 ms apart, 3 per frame (15 ms of 90 kHz = 1350 ticks).
    lost_v, dup_v, late_v = {10, 11, 12, 100, 250, 777}, {50, 300}, {70, 71, 400}
    for i in range(1000):
        t = T0_NS + 1_000_000 + i * 5_000_000
        d = 20_000_000 + (i % 37) * 700_000 + (i % 5) * 12_300 + (12_000_000 if i in late_v else 0)
        ts = (i // 3) * 1350
        f = frame(A, B, 17, udp(50000, 50001, rtp(96, i, ts, 0x1111, 800 + 100 * (i % 4), twcc=twcc)))
        twcc += 1
        arr = [] if i in lost_v else ([t + d, t + d + 200_000] if i in dup_v else [t + d])
        pk.append(Pkt("video", t, f, arr, ts, 90000.0))
    # Audio: 270 packets, 20 ms apart, Opus at 48 kHz; it outlasts the video so the capture ends after it.
    for i in range(270):
        t = T0_NS + 3_000_000 + i * 20_000_000
        d = 20_000_000 + (i % 7) * 300_000
        f = frame(A, B, 17, udp(50000, 50001, rtp(111, 5000 + i, i * 960, 0x2222, 100, twcc=twcc)))
        twcc += 1
        pk.append(Pkt("audio", t, f, [] if i == 30 else [t + d], i * 960, 48000.0))
    # TCP cross traffic a -> b from 1 s to 4 s, and its ACKs b -> a. Its first and last segments leave at the
    # schedule's start and stop exactly: the phases' bounds are where its data was seen (rtclab/phases.py).
    for i in range(301):
        t = T0_NS + 1_000_000_000 + i * 10_000_000
        d = 20_000_000 + (i % 11) * 1_000_000
        f = frame(A, B, 6, tcp(40000, 5201, 1 + i * 1448, 1, 1448))
        pk.append(Pkt("tcp", t, f, [] if i in (5, 150) else [t + d]))
    for i in range(150):
        t = T0_NS + 1_030_000_000 + i * 20_000_000
        f = frame(B, A, 6, tcp(5201, 40000, 1, 1 + i * 2896, 0))
        pk.append(Pkt("tcp_ack", t, f, [t + 20_000_000 + (i % 3) * 100_000]))
    for i in range(50):
        t = T0_NS + 50_000_000 + i * 100_000_000
        f = frame(B, A, 17, udp(50001, 50000, rtcp_rr(0x3333, i)))
        pk.append(Pkt("rtcp_b", t, f, [t + 21_000_000]))
    # A burst of 5 UDP datagrams 50 us apart (like the ICMP errors at a call's end): its rate is over 1 s, not 200 us.
    for i in range(5):
        t = T0_NS + 2_500_000_000 + i * 50_000
        f = frame(A, B, 17, udp(40001, 40002, bytes(100)))
        pk.append(Pkt("burst", t, f, [t + 20_000_000 + i * 1_000_000]))
    return pk


def write_run(run: Path, pk: list[Pkt], getstats_lost: int) -> None:
    cap_a, cap_b = Pcap(), Pcap()
    for p in pk:
        forward = p.flow in ("video", "audio", "tcp", "burst")
        send_cap, recv_cap = (cap_a, cap_b) if forward else (cap_b, cap_a)
        send_cap.add(p.t_send, p.frame)
        for t in p.arrivals:
            recv_cap.add(t, p.frame)
    cap_a.write(run / "capture-a.pcap")
    cap_b.write(run / "capture-b.pcap")
    manifest = {
        "id": "exact", "status": "complete", "error": None,
        "scenario": {"name": "exact", "duration_s": DURATION_S,
                     "network": {"forward": {"delay_ms": FORWARD_DELAY_MS, "rate": {"kbit": CAPACITY_KBIT},
                                             "qdisc": {"kind": "fifo"}},
                                 "reverse": {"delay_ms": REVERSE_DELAY_MS}},
                     "cross_traffic": [{"kind": "tcp", "flows": 1, "start_s": CROSS_START_S, "stop_s": CROSS_STOP_S}]},
        "topology": {"data": {"a": A, "b": B}},
        "timings": {"call_start": T0_NS / 1e9, "call_end": T0_NS / 1e9 + DURATION_S},
        "validity": {"valid": True, "checks": [{"name": "ice_pair_on_data_path", "ok": True, "detail": "test"}]},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    # getStats: 5 samples of a's video sender; the RTT measurement count repeats once (a stale RTCP sample).
    rtts = [0.050, 0.062, 0.062, 0.081, 0.055]
    counts = [1, 2, 2, 3, 4]
    lines_a, lines_b = [], []
    for k in range(5):
        t = T0_NS / 1e9 + k + 1
        lines_a.append({"t": t, "side": "a", "report": [
            {"id": "OT1", "type": "outbound-rtp", "kind": "video", "ssrc": 0x1111, "timestamp": t * 1000,
             "bytesSent": 100_000 * (k + 1) ** 2, "targetBitrate": 1e6 + k},
            {"id": "RI1", "type": "remote-inbound-rtp", "kind": "video", "ssrc": 0x1111, "timestamp": t * 1000,
             "roundTripTime": rtts[k], "roundTripTimeMeasurements": counts[k]},
            {"id": "C96", "type": "codec", "payloadType": 96, "mimeType": "video/VP8", "clockRate": 90000},
            {"id": "C111", "type": "codec", "payloadType": 111, "mimeType": "audio/opus", "clockRate": 48000}]})
        lines_b.append({"t": t, "side": "b", "report": [
            {"id": "IT1", "type": "inbound-rtp", "kind": "video", "ssrc": 0x1111, "timestamp": t * 1000,
             "packetsLost": getstats_lost if k == 4 else 0, "packetsReceived": 100 * k, "bytesReceived": 1000 * k}]})
    (run / "getstats-a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines_a))
    (run / "getstats-b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines_b))


def expected_flow(pk: list[Pkt], lo: int, hi: int, propagation_ms: float) -> dict:
    """The metrics of one flow's packets (in send order), computed the slow, obvious way."""
    sent = [p for p in pk if lo <= p.t_send < hi]
    got = [p for p in sent if p.arrivals]
    owd = [(p.arrivals[0] - p.t_send) / 1e6 for p in got]
    all_owd = [(p.arrivals[0] - p.t_send) / 1e6 for p in pk if p.arrivals]
    qd = [x - propagation_ms for x in owd]  # time at the bottleneck: one-way delay - configured propagation delay
    qd_vs_min = [x - min(all_owd) for x in owd]
    lost_flags = [not p.arrivals for p in sent]
    bursts, run = [], 0
    for flag in lost_flags + [False]:
        if flag:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    # RFC 4737: walk arrivals in arrival order with NextExp.
    order = sorted(range(len(got)), key=lambda i: (got[i].arrivals[0], i))
    pos = {id(p): i for i, p in enumerate(sent)}
    seq_arrival = [pos[id(got[i])] for i in order]
    next_exp, reordered, extents = 0, 0, []
    for j, s in enumerate(seq_arrival):
        if s >= next_exp:
            next_exp = s + 1
        else:
            reordered += 1
            extents.append(j - min(k for k in range(j) if seq_arrival[k] > s))
    dist = lambda v: {"min": min(v), "mean": statistics.fmean(v), "sd": statistics.pstdev(v), "max": max(v),
                      **{f"p{q}": percentile(v, q) for q in (5, 25, 50, 75, 90, 95, 99)}, "count": len(v)}
    out = {"packets_sent": len(sent), "packets_received": len(got), "packets_lost": sum(lost_flags),
           "bytes_sent": sum(p.frame_bytes for p in sent),
           "bytes_lost": sum(p.frame_bytes for p in sent if not p.arrivals),
           "duplicates": sum(len(p.arrivals) - 1 for p in got),
           "loss_bursts": {"count": len(bursts), "max_length": max(bursts, default=0),
                           "mean_length": statistics.fmean(bursts) if bursts else 0.0},
           "reordered": reordered, "reordering_extent": {"max": max(extents, default=0),
                                                          "mean": statistics.fmean(extents) if extents else 0.0},
           "owd_ms": dist(owd), "queuing_delay_ms": dist(qd), "queuing_delay_vs_min_owd_ms": dist(qd_vs_min)}
    out["loss_ratio"] = out["packets_lost"] / out["packets_sent"]
    out["loss_ratio_bytes"] = out["bytes_lost"] / out["bytes_sent"]
    out["reordered_ratio"] = reordered / len(got)
    # Throughput: windows tiling [first arrival, last arrival], arrival-time bytes.
    arrivals = sorted((p.arrivals[0], p.frame_bytes) for p in got)
    span_lo, span_hi = arrivals[0][0], arrivals[-1][0]
    # The mean rate: the bytes that arrived after the first packet, over the time from first to last arrival; a
    # span under 1 s (a burst) gives all its bytes over 1 s (or the whole phase when shorter).
    if span_hi - span_lo >= 1_000_000_000:
        out["throughput_mean"] = sum(b for _, b in arrivals[1:]) * 8 / ((span_hi - span_lo) / 1e9)
    else:
        out["throughput_mean"] = sum(b for _, b in arrivals) * 8 / (min(1_000_000_000, hi - lo) / 1e9)
    out["windows"] = {}
    for w in (0.15, 0.5, 1.0):
        w_ns = round(w * 1e9)
        n = (span_hi - span_lo) // w_ns
        rates = [sum(b for t, b in arrivals if span_lo + k * w_ns <= t < span_lo + (k + 1) * w_ns) * 8 / w
                 for k in range(n)]
        out["windows"][f"{w:g}s"] = {"mean": statistics.fmean(rates) if rates else None,
                                      "sd": statistics.pstdev(rates) if rates else None, "count": n}
    # RFC 3550 jitter over arrivals in arrival order.
    if sent[0].clock:
        arr = sorted((p.arrivals[0], i, p) for i, p in enumerate(got))
        j, js = 0.0, []
        for k, (t, _, p) in enumerate(arr):
            if k:
                prev_t, _, prev = arr[k - 1]
                dd = (t - prev_t) / 1e9 * p.clock - (p.rtp_ts - prev.rtp_ts)
                j += (abs(dd) - j) / 16
            js.append(j / p.clock * 1000)
        out["jitter_ms"] = {"mean": statistics.fmean(js), "max": max(js), "last": js[-1]}
    return out


def assert_close(actual, expected, path=""):
    if isinstance(expected, dict):
        for k, v in expected.items():
            assert k in actual, f"{path}.{k} missing"
            assert_close(actual[k], v, f"{path}.{k}")
    elif isinstance(expected, float):
        assert actual is not None and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-6), \
            f"{path}: {actual} != {expected}"
    else:
        assert actual == expected, f"{path}: {actual} != {expected}"


@pytest.fixture(scope="module")
def exact_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("exact")
    pk = build_packets()
    lost_video = sum(1 for p in pk if p.flow == "video" and not p.arrivals)
    write_run(run, pk, getstats_lost=lost_video + 1)
    m, table = analyze(run, run_tshark=False)
    return run, pk, m, table


def _flow(m, direction, kind, protocol=None):
    flows = [f for f in m["flows"] if f["direction"] == direction and f["kind"] == kind
             and (protocol is None or f["protocol"] == protocol)]
    assert len(flows) == 1, [(f["kind"], f["src"], f["dst"]) for f in m["flows"]]
    return flows[0]


def _compare(f, exp):
    wins = exp.pop("windows")
    thr = exp.pop("throughput_mean")
    jitter = exp.pop("jitter_ms", None)
    assert_close(f, exp, f.get("kind", "phase"))
    assert math.isclose(f["throughput_bps"]["mean"], thr, rel_tol=1e-9)
    assert_close(f["throughput_bps"]["windows"], wins, "windows")
    if jitter:
        for k, v in jitter.items():
            assert math.isclose(f["jitter_ms"][k], v, rel_tol=1e-6, abs_tol=1e-9), (k, f["jitter_ms"][k], v)


@pytest.mark.parametrize("direction,kind,protocol,name", [
    ("forward", "video", None, "video"), ("forward", "audio", None, "audio"), ("forward", "tcp", None, "tcp"),
    ("reverse", "tcp", None, "tcp_ack"), ("reverse", "rtcp", None, "rtcp_b"), ("forward", "udp", None, "burst")])
def test_every_flow_metric_matches_an_independent_computation(exact_run, direction, kind, protocol, name):
    _, pk, m, _ = exact_run
    f = _flow(m, direction, kind, protocol)
    prop = FORWARD_DELAY_MS if direction == "forward" else REVERSE_DELAY_MS
    exp = expected_flow([p for p in pk if p.flow == name], -(2**63), 2**63 - 1, prop)
    _compare(f, exp)


def test_phase_metrics_cover_only_packets_sent_in_the_phase(exact_run):
    _, pk, m, _ = exact_run
    names = [p["name"] for p in m["phases"]]
    assert names == ["all", "before_cross_traffic", "cross_traffic", "after_cross_traffic"]
    lo, hi = T0_NS + int(CROSS_START_S * 1e9), T0_NS + int(CROSS_STOP_S * 1e9)
    video = [p for p in pk if p.flow == "video"]
    f = _flow(m, "forward", "video")
    exp = expected_flow([p for p in video if lo <= p.t_send < hi], lo, hi, FORWARD_DELAY_MS)
    # The older queuing delay is relative to the flow's minimum over the whole run, not the phase's.
    all_min = min((p.arrivals[0] - p.t_send) / 1e6 for p in video if p.arrivals)
    phase_owd = [(p.arrivals[0] - p.t_send) / 1e6 for p in video if p.arrivals and lo <= p.t_send < hi]
    exp["queuing_delay_vs_min_owd_ms"]["min"] = min(phase_owd) - all_min
    for key in ("mean", "max", "p50", "p95"):
        exp["queuing_delay_vs_min_owd_ms"][key] = exp["owd_ms"][key] - all_min
    for key in ("sd", "p5", "p25", "p75", "p90", "p99"):
        exp["queuing_delay_vs_min_owd_ms"].pop(key)
    _compare(f["phases"]["cross_traffic"], exp)


def test_utilisation_and_fairness(exact_run):
    _, pk, m, _ = exact_run
    video = _flow(m, "forward", "video")
    assert math.isclose(video["utilisation"], video["throughput_bps"]["mean"] / (CAPACITY_KBIT * 1000), rel_tol=1e-12)
    # Jain's index over the two forward 5-tuples (WebRTC, TCP) by bytes received during the cross-traffic phase.
    lo, hi = T0_NS + int(CROSS_START_S * 1e9), T0_NS + int(CROSS_STOP_S * 1e9)
    rates = []
    for flows in (("video", "audio"), ("tcp",)):
        b = sum(p.frame_bytes for p in pk if p.flow in flows for t in p.arrivals[:1] if lo <= t < hi)
        rates.append(b * 8 / (CROSS_STOP_S - CROSS_START_S))
    jain = sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))
    fair = m["fairness"]["cross_traffic"]
    assert math.isclose(fair["jain_index"], jain, rel_tol=1e-12)
    # Utilisation counts all forward traffic received in the phase, the burst too (it is no connection of its own).
    burst = sum(p.frame_bytes for p in pk if p.flow == "burst" for t in p.arrivals[:1] if lo <= t < hi)
    received_bps = sum(rates) + burst * 8 / (CROSS_STOP_S - CROSS_START_S)
    assert math.isclose(fair["utilisation"], received_bps / (CAPACITY_KBIT * 1000), rel_tol=1e-12)
    assert sorted(c["throughput_bps"] for c in fair["connections"]) == pytest.approx(sorted(rates), rel=1e-12)
    # After the cross traffic, TCP's last segments still arrive (sent before 4 s), but only in the first of the
    # phase's two 1 s windows: the WebRTC 5-tuple alone shares the link.
    lo, hi = T0_NS + int(CROSS_STOP_S * 1e9), T0_NS + int(DURATION_S * 1e9)
    assert any(lo <= p.arrivals[0] < hi for p in pk if p.flow == "tcp" and p.arrivals)
    after = m["fairness"]["after_cross_traffic"]
    assert [c["dst"] for c in after["connections"]] == [f"{B}:50001"]
    assert after["jain_index"] == 1.0
    # The dashboard and compare headline the phase where the flows compete.
    assert headline_fairness(m) == ("cross_traffic", fair)
    assert headline_fairness({"fairness": {"all": after}}) == ("all", after)


def test_rtp_fields_and_sequence_number_loss(exact_run):
    _, pk, m, table = exact_run
    video = _flow(m, "forward", "video")
    assert video["ssrc"] == 0x1111 and video["payload_type"] == 96
    assert video["rtp_seq_lost"] == 6 and video["rtp_seq_expected"] == 1000
    c = table.cols
    rows = table.rows_of(video["id"])
    assert list(c["rtp_seq"][rows][:1000]) == list(range(1000))
    assert list(c["twcc_seq"][rows][:5]) == [0, 1, 2, 3, 4]


def test_getstats_view_and_tq(exact_run):
    _, pk, m, _ = exact_run
    stream = m["getstats"]["directions"]["forward"]["streams"][0]
    rtts_ms = [50.0, 62.0, 81.0, 55.0]  # the repeated measurement count is one sample, not two
    rttm = FORWARD_DELAY_MS + REVERSE_DELAY_MS  # Carlucci et al.'s RTTm: the configured round-trip propagation
    assert stream["rttm_ms"] == rttm
    assert stream["rtt_ms"]["mean"] == pytest.approx(statistics.fmean(rtts_ms))
    for field, base in (("tq_ms", rttm), ("tq_vs_min_rtt_ms", min(rtts_ms))):
        tq = [x - base for x in rtts_ms]
        assert stream[field]["mean"] == pytest.approx(statistics.fmean(tq))
        assert stream[field]["sd"] == pytest.approx(statistics.pstdev(tq))
        for q in (5, 25, 50, 75, 95):
            assert stream[field][f"p{q}"] == pytest.approx(percentile(tq, q))
    # bytesSent = 100000 k^2 per second: rates 8 * 100000 * (2k - 1) for k = 2..5
    assert stream["sent_bitrate_bps"]["mean"] == pytest.approx(statistics.fmean(8e5 * (2 * k - 1) for k in range(2, 6)))
    checks = {c["name"].split(":")[0]: c for c in m["crosschecks"]}
    assert checks["loss_vs_getstats"]["ok"] is True  # 7 vs 6: inside the tolerance of 3 packets


def test_parquet_holds_the_per_packet_table(exact_run):
    import pyarrow.parquet as pq
    run, pk, m, _ = exact_run
    t = pq.read_table(run / "packets.parquet").to_pydict()
    video = _flow(m, "forward", "video")
    rows = [i for i, f in enumerate(t["flow"]) if f == video["id"] and t["status"][i] in ("delivered", "lost")]
    sent = [p for p in pk if p.flow == "video"]
    assert len(rows) == len(sent)
    for i, p in zip(rows, sent):
        assert t["t_send_ns"][i] == p.t_send
        assert t["t_recv_ns"][i] == (p.arrivals[0] if p.arrivals else None)
        assert t["owd_ns"][i] == (p.arrivals[0] - p.t_send if p.arrivals else None)
    assert sum(1 for s in t["status"] if s == "duplicate") == 2


def test_getstats_per_phase(exact_run):
    _, _, m, _ = exact_run
    phases = m["getstats"]["directions"]["forward"]["phases"]
    assert set(phases) == {"before_cross_traffic", "cross_traffic", "after_cross_traffic"}
    # Samples at 1..5 s after call start; the cross-traffic phase is [1 s, 4 s): new RTT measurements at 1 s (50 ms)
    # and 2 s (62 ms; 3 s repeats its count); RTTm is the configured 38 ms, the other baseline the call's minimum 50 ms.
    video = phases["cross_traffic"]["video:4369"]
    rttm = FORWARD_DELAY_MS + REVERSE_DELAY_MS
    assert video["tq_ms"]["mean"] == pytest.approx(statistics.fmean([50.0 - rttm, 62.0 - rttm]))
    assert video["tq_ms"]["p95"] == pytest.approx(percentile([50.0 - rttm, 62.0 - rttm], 95))
    assert video["tq_vs_min_rtt_ms"]["mean"] == pytest.approx(statistics.fmean([0.0, 12.0]))
    assert video["tq_vs_min_rtt_ms"]["p95"] == pytest.approx(percentile([0.0, 12.0], 95))
    # bytesSent = 100000 k^2 at k s: rates at 2 s and 3 s are 8e5 * 3 and 8e5 * 5
    assert video["sent_bitrate_bps"]["mean"] == pytest.approx(8e5 * 4)
    assert video["target_bitrate_bps"]["mean"] == pytest.approx(1e6 + 1)  # 1e6 + 0, 1, 2 at 1, 2, 3 s
