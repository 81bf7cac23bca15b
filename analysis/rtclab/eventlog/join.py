"""The event log joined with the network: each RTP packet a browser logged as sent, matched to its departure in the
capture on its own side (capture-a for browser a), so it carries Chrome's send time, the wire times at both captures
and its fate at the bottleneck; and each transport feedback status matched to what the far capture saw arrive.

Key: (SSRC, RTP sequence number), the k-th logged packet with a key matched to the k-th departure with it (both are
in send order; a retransmission travels on the RTX SSRC with its own sequence numbers, so keys repeat only when a
stream's 16-bit sequence wraps, and occurrence order keeps those apart).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import packets
from .feedback import Feedback, unwrap16
from .parser import EventLog

Array = npt.NDArray[Any]


@dataclass
class JoinedRtp:
    """One row per RTP packet the log holds as sent, in log order."""
    log_time_ms: Array  # Chrome's clock
    ssrc: Array
    seq: Array
    transport_seq: Array  # unwrapped (a continuing count); -1 where the packet has none
    size_bytes: Array  # RTP header + payload + padding
    row: Array  # the packet table's row of its departure, -1 when the capture does not have it
    t_wire_send_ns: Array  # capture on the sender's side; -1 when not matched
    t_wire_recv_ns: Array  # capture on the receiver's side; -1 when not delivered
    status: Array  # packets.STATUS_NAMES code; 255 when not matched

    @property
    def matched(self) -> Array:
        return self.row >= 0


def _key(ssrc: Array, seq: Array) -> Array:
    return (ssrc.astype(np.uint64) << np.uint64(16)) | (seq.astype(np.uint64) & np.uint64(0xFFFF))


def join_rtp(log: EventLog, table: packets.PacketTable, direction: int) -> JoinedRtp:
    """Matches the log's outgoing RTP to the table's RTP departures of `direction` (FORWARD for browser a)."""
    c = table.cols
    rows = np.flatnonzero((c["direction"] == direction) & (c["cls"] == packets.CLS_RTP) & (c["t_send_ns"] >= 0))
    o = log.outgoing_rtp
    log_to_cap, _ = packets.match(_key(o["ssrc"], o["seq"]), _key(c["ssrc"][rows], c["rtp_seq"][rows]))
    row = np.where(log_to_cap >= 0, rows[np.maximum(log_to_cap, 0)], -1)
    hit = row >= 0
    twcc = np.full(len(row), -1, dtype=np.int64)
    has = o["transport_seq"] >= 0
    twcc[has] = unwrap16(o["transport_seq"][has])
    pick = lambda col, fill: np.where(hit, c[col][np.maximum(row, 0)], fill)
    return JoinedRtp(
        log_time_ms=o["time_ms"], ssrc=o["ssrc"], seq=o["seq"], transport_seq=twcc,
        size_bytes=o["header_size"] + o["payload_size"] + o["padding_size"], row=row,
        t_wire_send_ns=pick("t_send_ns", -1), t_wire_recv_ns=pick("t_recv_ns", -1),
        status=pick("status", 255).astype(np.uint8))


def join_summary(log: EventLog, joined: JoinedRtp, table: packets.PacketTable, direction: int) -> dict[str, Any]:
    """The join's rates. join_rate: logged packets found in the capture; capture_coverage: the capture's RTP
    departures within the log's time span that the log holds; send_to_wire_ms: capture time minus the logged send
    time (Unix), median and p99, which also bounds the clock conversion's error."""
    c = table.cols
    rows = np.flatnonzero((c["direction"] == direction) & (c["cls"] == packets.CLS_RTP) & (c["t_send_ns"] >= 0))
    n_log = len(joined.row)
    out: dict[str, Any] = {"logged_rtp": n_log, "captured_rtp": len(rows), "matched": int(joined.matched.sum()),
                           "join_rate": (float(joined.matched.mean()) if n_log else None)}
    if n_log and log.utc_offset_ms is not None:
        span_ns = (log.unix_ms(joined.log_time_ms[[0, -1]]) * 1_000_000).astype(np.int64)
        t_send = c["t_send_ns"][rows]
        in_span = rows[(t_send >= span_ns[0] - 50_000_000) & (t_send <= span_ns[1] + 50_000_000)]
        out["capture_coverage"] = float(np.isin(in_span, joined.row).mean()) if len(in_span) else None
        last_capture_s = float(c["t_send_ns"][rows].max()) / 1e9 if len(rows) else None
        out["log_ends_before_capture_s"] = (last_capture_s - span_ns[1] / 1e9) if last_capture_s else None
        hit = joined.matched
        if hit.any():
            wire_ms = joined.t_wire_send_ns[hit] / 1e6 - log.unix_ms(joined.log_time_ms[hit])
            out["send_to_wire_ms"] = {"median": float(np.median(wire_ms)), "p99": float(np.percentile(wire_ms, 99)),
                                      "min": float(wire_ms.min())}
    return out


def feedback_vs_capture(fb: Feedback, joined: JoinedRtp) -> dict[str, Any]:
    """Each transport feedback status against the far capture: received and delivered agree, not received and lost
    agree. A packet reported missing and later reported received (feedback repeats recent packets) counts once, by
    its last report."""
    has = joined.transport_seq >= 0
    if not len(fb) or not has.any():
        return {"statuses": len(fb), "matched_to_log": 0}
    seq_log = joined.transport_seq[has]
    fb_seq = unwrap16(fb.seq)
    # Align the feedback's unwrapped count with the log's: the same packet has the same 16-bit number.
    shift = int(seq_log[0]) - int(seq_log[0]) % 65536
    fb_seq = fb_seq + shift
    order = np.argsort(seq_log)
    pos = np.searchsorted(seq_log[order], fb_seq)
    pos = np.minimum(pos, len(order) - 1)
    found = seq_log[order][pos] == fb_seq
    idx = np.flatnonzero(has)[order[pos]]
    last = {}
    for i in np.flatnonzero(found):
        last[int(fb_seq[i])] = (bool(fb.received[i]), int(joined.status[idx[i]]))
    pairs = list(last.values())
    delivered = packets.DELIVERED
    reported_received = [s for r, s in pairs if r]
    reported_lost = [s for r, s in pairs if not r]
    return {
        "statuses": len(fb), "packets_reported": len(pairs),
        "received_and_delivered": sum(s == delivered for s in reported_received),
        "received_not_delivered": sum(s != delivered for s in reported_received),
        "lost_and_not_delivered": sum(s != delivered for s in reported_lost),
        "lost_but_delivered": sum(s == delivered for s in reported_lost),
    }
