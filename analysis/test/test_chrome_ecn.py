"""chrome_ecn: the getStats ECN counters read from hand-written samples, and the fed-back CE counts compared with a
hand-built packet table (counts worked out by hand beside each case)."""
from __future__ import annotations

import numpy as np

from rtclab.chrome_ecn import (
    FEEDBACK_LAG_S,
    captured_ce,
    congestion_events_s,
    feedback_vs_captures,
    rfc8888_feedback_received,
    side_counters,
    target_reaction,
    target_samples,
)
from rtclab.packets import CLS_RTCP, CLS_RTP, DELIVERED, FORWARD, LOST, REVERSE, PacketTable

T_REPORT = 100.0  # epoch seconds of the last getStats sample


def _report(ce: int) -> list[dict]:
    return [
        {"type": "outbound-rtp", "ssrc": 11, "kind": "video", "packetsSent": 50, "packetsSentWithEct1": 50},
        {"type": "remote-inbound-rtp", "ssrc": 11, "kind": "video", "packetsReceivedWithEct1": 45,
         "packetsReceivedWithCe": ce, "packetsWithBleachedEct1Marking": 0},
        {"type": "outbound-rtp", "ssrc": 22, "kind": "audio", "packetsSent": 20},  # counters Chrome did not fill
        {"type": "inbound-rtp", "ssrc": 33, "kind": "video", "packetsReceived": 40, "packetsReceivedWithEct1": 39,
         "packetsReceivedWithCe": 1},
        {"type": "transport", "ccfbMessagesReceived": 7},
    ]


def test_side_counters_take_the_last_sample_and_leave_unfilled_counters_none() -> None:
    lines = [{"t": T_REPORT - 1, "report": _report(ce=1)}, {"t": T_REPORT, "report": _report(ce=3)},
             {"t": "damaged"}]
    c = side_counters(lines)
    assert c is not None
    assert c["t"] == T_REPORT and c["ccfb_messages_received"] == 7
    video = next(s for s in c["sent"] if s["kind"] == "video")
    assert (video["packets_sent_with_ect1"], video["reported_received_with_ce"],
            video["reported_bleached_ect1"]) == (50, 3, 0)
    audio = next(s for s in c["sent"] if s["kind"] == "audio")
    assert audio["packets_sent_with_ect1"] is None and audio["reported_received_with_ce"] is None
    assert c["received"] == [{"ssrc": 33, "kind": "video", "packets_received": 40, "packets_received_with_ect1": 39,
                              "packets_received_with_ce": 1}]
    assert side_counters([]) is None


def _table() -> PacketTable:
    s = 1_000_000_000
    t_report = int(T_REPORT * s)
    # (direction, class, ssrc, ecn at the receiver, arrival ns)
    rows = [
        (FORWARD, CLS_RTP, 11, 3, t_report - 3 * s),          # CE, well before the report: counted in both bounds
        (FORWARD, CLS_RTP, 11, 3, t_report - 2 * s),          # CE: both bounds
        (FORWARD, CLS_RTP, 11, 3, t_report - s // 2),         # CE inside the lag: upper bound only
        (FORWARD, CLS_RTP, 11, 3, t_report + s),              # CE after the report: neither
        (FORWARD, CLS_RTP, 11, 1, t_report - 3 * s),          # ECT(1): never
        (FORWARD, CLS_RTP, 11, 3, -1),                        # lost: never
        (FORWARD, CLS_RTP, 22, 3, t_report - 3 * s),          # another SSRC
        (FORWARD, CLS_RTCP, 11, 3, t_report - 3 * s),         # not RTP
        (REVERSE, CLS_RTP, 11, 3, t_report - 3 * s),          # other direction
    ]
    cols = {name: np.array([r[i] for r in rows], dtype=dt) for i, (name, dt) in enumerate(
        [("direction", np.uint8), ("cls", np.uint8), ("ssrc", np.uint32), ("ecn_recv", np.uint8),
         ("t_recv_ns", np.int64)])}
    empty = np.zeros(0, dtype=np.int64)
    return PacketTable(cols=cols, flow_first=empty, order=empty, bounds=np.zeros(1, dtype=np.int64))


def test_captured_ce_counts_rtp_ce_arrivals_of_one_ssrc_and_direction() -> None:
    table = _table()
    assert captured_ce(table, FORWARD, 11, int(T_REPORT * 1e9)) == 3
    assert captured_ce(table, FORWARD, 11, int((T_REPORT - FEEDBACK_LAG_S) * 1e9)) == 2
    assert captured_ce(table, REVERSE, 11, int(T_REPORT * 1e9)) == 1


def test_feedback_agrees_only_between_the_lagged_and_the_full_count() -> None:
    table = _table()
    for reported, agree in ((1, False), (2, True), (3, True), (4, False)):
        c = side_counters([{"t": T_REPORT, "report": _report(ce=reported)}])
        assert c is not None
        [row] = feedback_vs_captures("a", c, table)  # audio has no reported count: not compared
        assert (row["ssrc"], row["captured_ce_lag_before_report"], row["captured_ce_by_report"]) == (11, 2, 3)
        assert row["agree"] is agree, reported


def test_rfc8888_feedback_is_told_by_ccfb_messages_not_by_a_zero_ect1_counter() -> None:
    default_call = [{"type": "outbound-rtp", "ssrc": 1, "kind": "video", "packetsSent": 9, "packetsSentWithEct1": 0},
                    {"type": "transport"}]  # what Chrome 156 reports without the L4S trials
    off = side_counters([{"t": T_REPORT, "report": default_call}])
    on = side_counters([{"t": T_REPORT, "report": _report(ce=0)}])
    assert not rfc8888_feedback_received({"a": off, "b": None})
    assert rfc8888_feedback_received({"a": off, "b": on})


def test_target_reaction_groups_sample_pairs_by_a_congestion_event_between_them() -> None:
    t0 = 1000.0
    # one sample a second; the ramp-up (pairs starting before t0 + 10 s) is left out
    rates = {9: 500, 10: 1000, 11: 500, 12: 600, 13: 900, 14: 450}
    lines = [{"t": t0 + s, "report": [{"type": "candidate-pair", "availableOutgoingBitrate": r}, {"type": "transport"}]}
             for s, r in rates.items()] + [{"t": t0 + 15, "report": [{"type": "candidate-pair"}]}]
    samples = target_samples(lines)
    assert samples == [(t0 + s, float(r)) for s, r in rates.items()]
    events = np.array([t0 + 9.5, t0 + 10.2, t0 + 13.0])  # in [9, 10) (ramp-up), [10, 11), [13, 14)
    r = target_reaction(samples, events, t0)
    # with events: 500/1000 and 450/900, median 0.5; without: 600/500 = 1.2 and 900/600 = 1.5, median 1.35
    assert r == {"events": 3, "after_event": {"pairs": 2, "median_ratio": 0.5},
                 "without_event": {"pairs": 2, "median_ratio": 1.35}}
    assert target_reaction(samples[:1], events, t0)["after_event"] == {"pairs": 0, "median_ratio": None}


def test_congestion_events_are_ce_arrivals_and_losses_of_one_direction() -> None:
    s = 1_000_000_000
    # (direction, status, ecn at the receiver, send ns, arrival ns)
    rows = [(FORWARD, DELIVERED, 3, 1 * s, 2 * s),   # CE: at its arrival, 2 s
            (FORWARD, DELIVERED, 1, 3 * s, 4 * s),   # ECT(1): none
            (FORWARD, LOST, 255, 5 * s, -1),         # lost: at its departure, 5 s
            (REVERSE, LOST, 255, 6 * s, -1),         # other direction
            (REVERSE, DELIVERED, 3, 7 * s, 8 * s)]
    cols = {name: np.array([r[i] for r in rows], dtype=dt) for i, (name, dt) in enumerate(
        [("direction", np.uint8), ("status", np.uint8), ("ecn_recv", np.uint8), ("t_send_ns", np.int64),
         ("t_recv_ns", np.int64)])}
    empty = np.zeros(0, dtype=np.int64)
    table = PacketTable(cols=cols, flow_first=empty, order=empty, bounds=np.zeros(1, dtype=np.int64))
    assert congestion_events_s(table, FORWARD).tolist() == [2.0, 5.0]
    assert congestion_events_s(table, REVERSE).tolist() == [6.0, 8.0]
