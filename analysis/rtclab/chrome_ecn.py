"""Chrome's own ECN account of a call (docs/chrome-ecn.md): the getStats ECN counters of each side, and whether the
CE marks the feedback reported back to the sender are the ones the receiver's capture saw.

Chrome 156 fills these only on its L4S path (scenario `call.l4s`: RFC 8888 feedback): outbound-rtp
`packetsSentWithEct1`; inbound-rtp `packetsReceivedWithEct1` / `packetsReceivedWithCe` (what this side received);
remote-inbound-rtp `packetsReceivedWithEct1` / `packetsReceivedWithCe` / `packetsWithBleachedEct1Marking` (what the
other side reported in its RFC 8888 feedback about this side's packets); transport `ccfbMessagesReceived`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import rundir
from .packets import CLS_RTP, FORWARD, LOST, REVERSE, PacketTable

CE = 3
# The feedback reaching the sender lags the packets it reports by the reverse path and Chrome's feedback interval
# (at most 250 ms by default, WebRTC-RFC8888CongestionControlFeedback max_send_delta) plus getStats' own caching:
# a report at time t covers every packet that arrived before t minus this lag, and none after t.
FEEDBACK_LAG_S = 1.0
# target_reaction leaves out the ramp-up: pairs of samples starting this long after the call's start.
REACTION_AFTER_S = 10.0
# Which direction's packets a side sends.
SENDS = {"a": FORWARD, "b": REVERSE}


def _last_report(lines: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]]]:
    for line in reversed(lines):
        report = line.get("report")
        if isinstance(report, list) and isinstance(line.get("t"), (int, float)):
            return float(line["t"]), [o for o in report if isinstance(o, dict)]
    return None, []


def side_counters(lines: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ECN counters of one side's last getStats sample; None when it has no sample. A counter Chrome did not
    fill is None."""
    t, report = _last_report(lines)
    if t is None:
        return None
    by_type: dict[str, list[dict[str, Any]]] = {}
    for o in report:
        by_type.setdefault(str(o.get("type")), []).append(o)
    remote = {o.get("ssrc"): o for o in by_type.get("remote-inbound-rtp", [])}
    sent = [{"ssrc": o.get("ssrc"), "kind": o.get("kind"), "packets_sent": o.get("packetsSent"),
             "packets_sent_with_ect1": o.get("packetsSentWithEct1"),
             "reported_received_with_ect1": remote.get(o.get("ssrc"), {}).get("packetsReceivedWithEct1"),
             "reported_received_with_ce": remote.get(o.get("ssrc"), {}).get("packetsReceivedWithCe"),
             "reported_bleached_ect1": remote.get(o.get("ssrc"), {}).get("packetsWithBleachedEct1Marking")}
            for o in by_type.get("outbound-rtp", [])]
    received = [{"ssrc": o.get("ssrc"), "kind": o.get("kind"), "packets_received": o.get("packetsReceived"),
                 "packets_received_with_ect1": o.get("packetsReceivedWithEct1"),
                 "packets_received_with_ce": o.get("packetsReceivedWithCe")}
                for o in by_type.get("inbound-rtp", [])]
    ccfb = [o["ccfbMessagesReceived"] for o in by_type.get("transport", []) if "ccfbMessagesReceived" in o]
    return {"t": t, "ccfb_messages_received": sum(ccfb) if ccfb else None,
            "sent": sorted(sent, key=lambda s: str(s["kind"])),
            "received": sorted(received, key=lambda s: str(s["kind"]))}


def captured_ce(table: PacketTable, direction: int, ssrc: int, until_ns: int) -> int:
    """RTP packets of this SSRC and direction that arrived CE at the receiver's capture before until_ns."""
    c = table.cols
    rows = ((c["direction"] == direction) & (c["cls"] == CLS_RTP) & (c["ssrc"] == ssrc) & (c["ecn_recv"] == CE)
            & (c["t_recv_ns"] >= 0) & (c["t_recv_ns"] <= until_ns))
    return int(np.count_nonzero(rows))


def feedback_vs_captures(side: str, counters: dict[str, Any], table: PacketTable) -> list[dict[str, Any]]:
    """Per sent SSRC with a reported CE count: the count against the CE arrivals in the receiver's capture. They
    agree when the count lies between the arrivals up to FEEDBACK_LAG_S before the report and those up to it."""
    out = []
    t_ns = int(round(counters["t"] * 1e9))
    for s in counters["sent"]:
        if not isinstance(s["reported_received_with_ce"], int) or not isinstance(s["ssrc"], int):
            continue
        upper = captured_ce(table, SENDS[side], s["ssrc"], t_ns)
        lower = captured_ce(table, SENDS[side], s["ssrc"], t_ns - int(FEEDBACK_LAG_S * 1e9))
        out.append({"side": side, "ssrc": s["ssrc"], "kind": s["kind"], "reported_ce": s["reported_received_with_ce"],
                    "captured_ce_by_report": upper, "captured_ce_lag_before_report": lower,
                    "agree": lower <= s["reported_received_with_ce"] <= upper})
    return out


def target_samples(lines: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(time, bit/s) of the controller's target as getStats shows it: the candidate pair's availableOutgoingBitrate."""
    out = []
    for line in lines:
        report, t = line.get("report"), line.get("t")
        if not isinstance(report, list) or not isinstance(t, (int, float)):
            continue
        rates = [o["availableOutgoingBitrate"] for o in report if isinstance(o, dict)
                 and o.get("type") == "candidate-pair" and isinstance(o.get("availableOutgoingBitrate"), (int, float))]
        if rates:
            out.append((float(t), float(rates[0])))
    return out


def congestion_events_s(table: PacketTable, direction: int) -> np.ndarray:
    """Sorted times (epoch s) of the direction's congestion signals: CE arrivals at the receiver, and losses (at
    their departure)."""
    c = table.cols
    mine = c["direction"] == direction
    ce = c["t_recv_ns"][mine & (c["ecn_recv"] == CE) & (c["t_recv_ns"] >= 0)]
    lost = c["t_send_ns"][mine & (c["status"] == LOST)]
    return np.sort(np.r_[ce, lost].astype(np.float64) / 1e9)


def _ratios(ratios: list[float]) -> dict[str, Any]:
    return {"pairs": len(ratios), "median_ratio": float(np.median(ratios)) if ratios else None}


def target_reaction(samples: list[tuple[float, float]], events_s: np.ndarray, t0: float) -> dict[str, Any]:
    """For consecutive target samples (t1, r1), (t2, r2) with t1 at least REACTION_AFTER_S after t0: r2 / r1, grouped
    by whether a congestion event fell in [t1, t2). Per group: the number of pairs and the median ratio (null when
    none)."""
    groups: dict[bool, list[float]] = {True: [], False: []}
    for (t1, r1), (t2, r2) in zip(samples, samples[1:]):
        if t1 - t0 < REACTION_AFTER_S or r1 <= 0:
            continue
        hit = bool(np.count_nonzero((events_s >= t1) & (events_s < t2)))
        groups[hit].append(r2 / r1)
    return {"events": int(len(events_s)), "after_event": _ratios(groups[True]), "without_event": _ratios(groups[False])}


def analyse(run: rundir.RunDir, table: PacketTable | None, t0: float) -> dict[str, Any]:
    """`chrome_ecn` of metrics.json: each side's counters (`t_s` since the call's start) and its target's reaction to
    congestion signals, and the comparison of the CE counts fed back with the captures (these two need the packet
    table)."""
    sides: dict[str, Any] = {}
    compared: list[dict[str, Any]] = []
    for side in ("a", "b"):
        path = run.file(f"getstats-{side}.jsonl")
        lines = rundir.read_jsonl(path, []) if path.exists() else []  # getstats.py reports a missing or damaged file
        counters = side_counters(lines)
        if counters is not None and table is not None:
            compared += feedback_vs_captures(side, counters, table)
            counters["target_reaction"] = target_reaction(target_samples(lines),
                                                          congestion_events_s(table, SENDS[side]), t0)
        if counters is not None:
            counters["t_s"] = counters.pop("t") - t0
        sides[side] = counters
    return {"rfc8888_feedback_received": rfc8888_feedback_received(sides), "sides": sides,
            "ce_feedback_vs_captures": compared}


def rfc8888_feedback_received(sides: dict[str, Any]) -> bool:
    """Whether either side received RFC 8888 feedback. Chrome 156 fills packetsSentWithEct1 (with 0) on every call,
    ccfbMessagesReceived only when RFC 8888 feedback was negotiated."""
    return any(s is not None and bool(s["ccfb_messages_received"]) for s in sides.values())
