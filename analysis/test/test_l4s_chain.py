"""The L4S chain (rtclab.l4s_chain) and a dualpi2 link's two queues (rtclab.dualpi2_queues): a hand-built call through
a marking bottleneck (captures with the ECN bits set here, its ground-truth log, getStats samples) analysed end to end,
and RFC 8888 feedback packed here with struct; every expected count is worked out by hand beside the packets."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from pcapbuild import Pcap, fnv1a64, ipv4_frame, rtcp_rr, rtp, tcp, udp
from rtclab import dualpi2_queues, l4s_chain
from rtclab.analyze import analyze
from rtclab.eventlog.parser import EventLog
from rtclab.report import render
from runbuild import MS, T0_NS, write_gtlog

A, B = "10.0.1.2", "10.0.2.2"
VIDEO, AUDIO = 0x1111, 0x2222
NOT_ECT, ECT1, CE = 0, 1, 3
S = 1_000_000_000


def rtcpfb(body: bytes) -> bytes:
    """An RTPFB packet of format 11 around `body` (whose length is a multiple of 4)."""
    return struct.pack("!BBH", 0x80 | 11, 205, len(body) // 4) + body


def ccfb(blocks: list[tuple[int, int, list[tuple[bool, int]]]], sender: int = 0xAAAA) -> bytes:
    """An RFC 8888 feedback packet (RTPFB, FMT 11): per block (SSRC, begin_seq, [(received, ecn)]), then the report
    timestamp."""
    body = struct.pack("!I", sender)
    for ssrc, begin, reports in blocks:
        body += struct.pack("!IHH", ssrc, begin, len(reports))
        body += b"".join(struct.pack("!H", (0x8000 if got else 0) | (ecn << 13) | 5) for got, ecn in reports)
        body += b"\0" * (-len(body) % 4)
    return rtcpfb(body + struct.pack("!I", 0x12345678))


def test_ccfb_counts_received_and_ce_reports_of_the_call_ssrcs_only() -> None:
    one = ccfb([(VIDEO, 10, [(True, CE), (True, ECT1), (False, 0)]),       # 2 received, 1 CE (3 blocks: padded)
                (AUDIO, 7, [(True, CE), (True, CE)]),                      # 2 received, 2 CE
                (0x9999, 1, [(True, CE)])])                                # not the call's
    # Behind a receiver report in the same compound packet, as Chrome sends it.
    rtcp = [(1000, rtcp_rr(0xAAAA, 0) + one),
            (1100, ccfb([(VIDEO, 13, [(True, ECT1)])])),                 # 1 received, no CE
            (1200, ccfb([(0x9999, 1, [(True, CE)])])),                   # no block of the call: not counted
            (1300, rtcpfb(struct.pack("!IIHHH2xI", 0xAAAA, VIDEO, 14, 20, 0xE005, 0)))]  # 20 reports, 1 there
    reports, bad = l4s_chain.ccfb_reports(rtcp, {VIDEO, AUDIO})
    assert reports == [(1000, 4, 3), (1100, 1, 0)]
    assert bad == 1


def test_ce_reported_from_the_event_log_then_the_reaction_window() -> None:
    offset_ms = 1_700_000_000_000
    log = EventLog(version=2, utc_offset_ms=offset_ms, outgoing_rtp={}, incoming_rtp={},
                   incoming_rtcp=[(1000, ccfb([(VIDEO, 1, [(True, CE), (True, CE)])])),
                                  (1250, ccfb([(VIDEO, 3, [(True, ECT1)])])),
                                  (2600, ccfb([(VIDEO, 4, [(True, CE)])]))],
                   outgoing_rtcp=[], delay_based={}, loss_based={}, probe_clusters={}, probe_results={}, alr={})
    step, feedback = l4s_chain.ce_reported(log, None, [], {VIDEO})
    assert step == {"source": "eventlog", "reason": None, "feedback_messages": 3, "packets_reported": 4,
                    "ce_reported": 3, "messages_with_ce": 2, "unreadable_messages": 0}
    t0 = offset_ms / 1e3
    assert feedback == [(t0 + 1.0, 2), (t0 + 1.25, 0), (t0 + 2.6, 1)]
    # Target samples a second apart: before the first CE feedback 1 Mbit/s, after it 0.8: lower. Before the third
    # (at 2.6 s) the 2.0 s sample, 0.8; the next one at 4.5 s is past the 1.5 s window: no target sample.
    target = [(t0 + 0.0, 1e6), (t0 + 1.0, 1e6), (t0 + 2.0, 0.8e6), (t0 + 4.5, 0.5e6)]
    got = l4s_chain.reaction(feedback, target)
    assert (got["messages_with_ce"], got["followed_by_lower_target"], got["not_lower"],
            got["no_target_sample"]) == (2, 1, 0, 1)


def test_no_feedback_source_is_missing_with_the_reason_not_zero() -> None:
    step, feedback = l4s_chain.ce_reported(None, "no eventlog-a.log", [], {VIDEO})
    assert step["source"] is None and "no eventlog-a.log" in step["reason"] and "ce_reported" not in step
    assert feedback == []


def _sample(t: float, ce: int | None, target: float) -> dict:
    remote = {"type": "remote-inbound-rtp", "ssrc": VIDEO, "kind": "video", "packetsReceivedWithEct1": 5}
    if ce is not None:
        remote["packetsReceivedWithCe"] = ce
    return {"t": t, "report": [
        {"id": "OT1", "type": "outbound-rtp", "ssrc": VIDEO, "kind": "video", "packetsSent": 10,
         "packetsSentWithEct1": 10},
        {"id": "RI1", **remote},
        {"id": "RI2", "type": "remote-inbound-rtp", "ssrc": 0x9999, "kind": "video",
         "packetsReceivedWithCe": int(50 * t)},
        {"id": "CP1", "type": "candidate-pair", "availableOutgoingBitrate": target},
        {"id": "T1", "type": "transport", "selectedCandidatePairId": "CP1", "ccfbMessagesReceived": 3}]}


def _write_run(run: Path) -> dict:
    """A 5 s l4s call through a dualpi2 link. Video (ECT(1)), 10 packets, 10 ms apart: 2, 5 and 7 marked CE by the
    bottleneck, 4 dropped by its AQM. Audio (ECT(1)), 3 packets: 1 marked. RTCP (ECT(1)): not media. A TCP flow
    (not-ECT) in the classic queue. Returns the expected counts."""
    cap_a, cap_b, log = Pcap(), Pcap(), []
    ip_id = 0

    def send(t: int, transport: bytes, proto: int, ecn: int, mark: bool, drop: bool, band: int, sojourn: int) -> None:
        nonlocal ip_id
        ip_id += 1
        frame = ipv4_frame(A, B, proto, transport, ip_id, tos=ecn)
        cap_a.add(t, frame)
        if not drop:
            cap_b.add(t + 30 * MS, ipv4_frame(A, B, proto, transport, ip_id, tos=CE if mark else ecn))
        arrival = t + 10_000
        release = t + 30 * MS - 15_000
        log.append({"arrival_ns": arrival, "dequeue_ns": arrival + sojourn, "tx_end_ns": release, "due_ns": release,
                    "release_ns": release if not drop else arrival + 1000, "key": fnv1a64(frame[34:34 + 64]),
                    "ip_len": len(frame) - 14, "ip_id": ip_id, "event": 3 if drop else (1 if mark else 0),
                    "band": band, "ecn_in": ecn, "ip_proto": proto})

    t = T0_NS + S
    for i in range(10):
        send(t + i * 10 * MS, udp(50000, 50001, rtp(96, 100 + i, 3000 * i, VIDEO, 800)), 17, ECT1,
             mark=i in (2, 5, 7), drop=i == 4, band=1, sojourn=1 * MS)
    for i in range(3):
        send(t + i * 20 * MS + 5 * MS, udp(50000, 50001, rtp(111, 500 + i, 960 * i, AUDIO, 100)), 17, ECT1,
             mark=i == 1, drop=False, band=1, sojourn=2 * MS)
    for i in range(2):
        send(t + i * 50 * MS + 7 * MS, udp(50000, 50001, rtcp_rr(0xAAAA, i)), 17, ECT1, mark=False, drop=False,
             band=1, sojourn=1 * MS)
    for i in range(4):
        send(t + i * 25 * MS + 3 * MS, tcp(40000, 5201, 1000 * i, 1, 1000), 6, NOT_ECT, mark=False, drop=i == 3,
             band=0, sojourn=(10 + 10 * i) * MS)
    cap_a.write(run / "capture-a.pcap")
    cap_b.write(run / "capture-b.pcap")
    write_gtlog(run / "bottleneck-forward.gtlog", log)
    link = {"delay_ms": 30, "jitter_ms": 0, "loss_percent": 0, "rate": None}
    scen = {"name": "hand-built", "duration_s": 5,
            "network": {"forward": {**link, "qdisc": {"kind": "dualpi2"}},
                        "reverse": {**link, "qdisc": {"kind": "fifo"}}},
            "cross_traffic": [], "call": {"l4s": True}}
    pair = {"local": {"address": A, "port": 50000}, "remote": {"address": B, "port": 50001}}
    manifest = {"id": run.name, "status": "complete", "error": None, "scenario": scen,
                "topology": {"data": {"a": A, "b": B}},
                "timings": {"call_start": T0_NS / 1e9, "call_end": T0_NS / 1e9 + 5},
                "validity": {"valid": True, "checks": []}, "calls": [{"selected_pairs": {"a": pair}}]}
    (run / "manifest.json").write_text(json.dumps(manifest))
    # Reported CE of the video SSRC at samples 0..4 s: 0, 0, 2, 2, 3 (a rise between 1 and 2 s, and 3 and 4 s); the
    # target 1.0, 1.0, 0.8, 0.7, 0.9 Mbit/s: lower after the first rise, higher after the second.
    t0 = T0_NS / 1e9
    lines = [_sample(t0 + k, ce, r) for k, (ce, r) in enumerate(zip([0, 0, 2, 2, 3], [1e6, 1e6, 0.8e6, 0.7e6, 0.9e6]))]
    (run / "getstats-a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return {"video_audio_sent": 13, "arrived": 12, "ce_at_b": 4, "ect1_at_b": 8}


@pytest.fixture(scope="module")
def l4s_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("l4s")
    expected = _write_run(run)
    m, _ = analyze(run, run_tshark=False)
    return m, expected


def test_chain_counts_each_join_on_a_hand_built_l4s_call(l4s_run) -> None:
    m, want = l4s_run
    (entry,) = m["chrome_ecn"]["l4s_chain"]
    wire = entry["ect1_on_wire"]
    assert wire["source"] == "captures"
    assert (wire["packets_sent"], wire["packets_arrived"]) == (want["video_audio_sent"], want["arrived"])
    assert wire["at_a"] == {"not_ect": 0, "ect1": 13, "ect0": 0, "ce": 0}
    assert wire["at_b"] == {"not_ect": 0, "ect1": want["ect1_at_b"], "ect0": 0, "ce": want["ce_at_b"]}
    # The log marked video 2, 5, 7 and audio 1 (RTCP and TCP unmarked).
    assert entry["ce_set_by_bottleneck"] == {"source": "ground_truth_log", "reason": None, "count": 4}
    rep = entry["ce_reported"]
    assert rep["source"] == "getstats" and "no eventlog-a.log" in rep["reason"]
    assert (rep["ce_reported"], rep["messages_with_ce"]) == (3, 2)  # 0->2 and 2->3; SSRC 0x9999 is not the call's
    reaction = entry["sender_reaction"]
    assert (reaction["messages_with_ce"], reaction["followed_by_lower_target"], reaction["not_lower"],
            reaction["no_target_sample"]) == (2, 1, 1, 0)
    text = render(m)
    assert "L4S chain, call c1" in text and "CE set by the bottleneck (ground_truth_log): 4" in text


def test_chain_without_a_log_counts_ect1_sent_and_ce_received(tmp_path) -> None:
    _write_run(tmp_path)
    (tmp_path / "bottleneck-forward.gtlog").unlink()
    m, _ = analyze(tmp_path, run_tshark=False)
    (entry,) = m["chrome_ecn"]["l4s_chain"]
    assert entry["ce_set_by_bottleneck"] == {"source": "captures", "reason": None, "count": 4}


def test_dualpi2_queues_split_the_sojourn_by_band(l4s_run) -> None:
    m, _ = l4s_run
    q = m["ground_truth"]["dualpi2_queues"]
    # L: 10 video (9 forwarded, 1 AQM drop), 3 audio, 2 RTCP; sojourns 1 ms (video, RTCP) and 2 ms (audio).
    assert (q["l"]["forwarded"], q["l"]["marked_ce"], q["l"]["dropped"]) == (14, 4, 1)
    l_sojourn = [1.0] * 9 + [2.0] * 3 + [1.0] * 2
    assert q["l"]["sojourn_ms"]["mean"] == pytest.approx(sum(l_sojourn) / len(l_sojourn), abs=1e-6)
    # C: 4 TCP segments, the last dropped; sojourns 10, 20, 30 ms.
    assert (q["c"]["forwarded"], q["c"]["marked_ce"], q["c"]["dropped"]) == (3, 0, 1)
    assert (q["c"]["sojourn_ms"]["p50"], q["c"]["sojourn_ms"]["max"]) == pytest.approx((20.0, 30.0))


def test_dualpi2_queues_count_a_packet_arriving_ce_as_not_marked_here() -> None:
    dtype = np.dtype([("arrival_ns", "<u8"), ("dequeue_ns", "<u8"), ("event", "u1"), ("band", "u1"), ("ecn_in", "u1")])
    rec = np.array([(0, 1000, 1, 1, CE), (0, 3000, 1, 1, ECT1), (0, 0, 2, 0, NOT_ECT)], dtype=dtype)
    q = dualpi2_queues.analyse(rec)
    assert (q["l"]["forwarded"], q["l"]["marked_ce"], q["c"]["dropped"], q["c"]["forwarded"]) == (2, 1, 1, 0)
    assert q["c"]["sojourn_ms"]["count"] == 0 and q["c"]["sojourn_ms"]["mean"] is None
