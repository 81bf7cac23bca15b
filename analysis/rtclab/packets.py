"""The packet join: reads both captures, matches each packet that left one side to its arrival at the other (FNV-1a
key of docs/bottleneck-log.md combined with ip.id, in occurrence order), and builds the per-packet table that every
metric is computed from. Columns are numpy arrays; one row per departure, plus one per arrival that matched none."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _core

# Row status in the `status` column.
DELIVERED, LOST, DUPLICATE, UNMATCHED, UNKNOWN = 0, 1, 2, 3, 4
STATUS_NAMES = {DELIVERED: "delivered", LOST: "lost", DUPLICATE: "duplicate", UNMATCHED: "unmatched", UNKNOWN: "unknown"}
FORWARD, REVERSE = 0, 1
DIRECTION_NAMES = {FORWARD: "forward", REVERSE: "reverse"}

# Packet classes as the Rust decoder numbers them (analysis/core/src/pcap.rs, mod cls).
CLS_NAMES = {0: "other", 1: "rtp", 2: "rtcp", 3: "stun", 4: "dtls", 5: "tcp", 6: "udp", 7: "icmp"}
CLS_RTP, CLS_RTCP, CLS_TCP = 1, 2, 5

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

# Per-packet fields copied from the capture that saw the packet leave (or, for an arrival with no departure, arrive).
_PACKET_FIELDS = ("ip_src", "ip_dst", "proto", "ip_len", "ip_id", "sport", "dport", "key", "cls", "ssrc", "rtp_seq",
                  "rtp_ts", "rtp_pt", "rtp_marker", "twcc_seq", "tcp_seq", "tcp_flags", "payload_len")


class CaptureError(Exception):
    """A capture that cannot be read at all."""


@dataclass
class Capture:
    path: Path
    cols: dict[str, np.ndarray]
    records: int
    error: str | None  # why reading stopped early, None when the file was read to its end

    @property
    def packets(self) -> int:
        return len(self.cols["ts_ns"])


def read_capture(path: Path, twcc_ext_id: int = 3) -> Capture:
    if not path.exists():
        raise CaptureError(f"{path.name} missing")
    try:
        d = _core.read_pcap(str(path), twcc_ext_id)
    except ValueError as e:
        raise CaptureError(f"{path.name}: {e}") from None
    records = int(d.pop("records"))
    error = d.pop("error")
    for k in ("non_ipv4", "linktype", "nanosecond", "snaplen"):
        d.pop(k)
    return Capture(path=path, cols=d, records=records, error=error)


@dataclass
class PacketTable:
    """One row per packet of the two data directions. Times are epoch nanoseconds; -1 where not observed."""
    cols: dict[str, np.ndarray]
    flow_first: np.ndarray  # row of each flow's first packet
    order: np.ndarray  # rows grouped by flow: flow f is order[bounds[f]:bounds[f + 1]], in table order
    bounds: np.ndarray

    def rows_of(self, flow: int) -> np.ndarray:
        return self.order[self.bounds[flow]:self.bounds[flow + 1]]

    def __len__(self) -> int:
        return len(self.cols["status"])


def join_key(cols: dict[str, np.ndarray], idx: np.ndarray, column: str = "join_key") -> np.ndarray:
    """The join key of rows `idx`: a hash of the payload's first 64 bytes (`join_key`: blind to the transport
    checksum, for capture against capture; `key`: FNV-1a, for the ground-truth log) mixed with ip.id (kept by
    forwarding, differs between otherwise identical packets such as two duplicate TCP ACKs)."""
    return cols[column][idx] ^ (cols["ip_id"][idx].astype(np.uint64) * _GOLDEN)


def _direction(send: Capture, recv: Capture, src: int, dst: int, direction: int) -> dict:
    """Joins one direction. Returns the departures' rows in the sending capture (`s_idx`), the unmatched arrivals'
    rows in the receiving one (`x_idx`), and the join's own columns for them."""
    sc, rc = send.cols, recv.cols
    s_idx, s_keys = _core.direction_keys(sc["ip_src"], sc["ip_dst"], sc["join_key"], sc["ip_id"], src, dst)
    r_idx, r_keys = _core.direction_keys(rc["ip_src"], rc["ip_dst"], rc["join_key"], rc["ip_id"], src, dst)
    s_match, r_match = _core.join_keys(s_keys, r_keys)
    delivered = s_match >= 0
    t_send = sc["ts_ns"][s_idx]
    t_recv = np.full(len(s_idx), -1, dtype=np.int64)
    t_recv[delivered] = rc["ts_ns"][r_idx[s_match[delivered]]]
    status = np.where(delivered, DELIVERED, LOST).astype(np.uint8)
    # A departure not seen arriving is lost only if the receiving capture was running when it would have arrived.
    if len(r_idx):
        owd = t_recv[delivered] - t_send[delivered]
        max_owd = int(owd.max()) if len(owd) else 0
        min_owd = int(owd.min()) if len(owd) else 0
        recv_first, recv_last = int(rc["ts_ns"][r_idx[0]]), int(rc["ts_ns"][r_idx[-1]])
        outside = ~delivered & ((t_send + min_owd < recv_first) | (t_send + max_owd > recv_last))
    else:
        outside = ~delivered
    status[outside] = UNKNOWN
    extra = np.flatnonzero(r_match < 0)  # arrivals without a departure
    extra_status = np.where(r_match[extra] == -2, DUPLICATE, UNMATCHED).astype(np.uint8)
    matched = r_idx[s_match[delivered]]  # receiving-capture rows of the delivered departures
    frame_recv = np.zeros(len(s_idx), dtype=np.uint32)
    frame_recv[delivered] = rc["frame"][matched]
    ecn_recv = np.full(len(s_idx), 255, dtype=np.uint8)  # 255: not observed
    ecn_recv[delivered] = rc["tos"][matched] & 3
    return {"direction": direction, "send": send, "recv": recv, "s_idx": s_idx, "x_idx": r_idx[extra],
            "status": status, "extra_status": extra_status, "t_send": t_send, "t_recv": t_recv,
            "frame_recv": frame_recv, "ecn_recv": ecn_recv}


def flow_ids(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Flow of each row: the 5-tuple, the packet class, and the SSRC for RTP (each RTP stream is its own flow; RTCP,
    STUN and DTLS of a 5-tuple are one flow each). Returns (flow id per row, row index of each flow's first packet)."""
    return _core.flow_ids(cols["direction"], cols["ip_src"], cols["ip_dst"], cols["sport"], cols["dport"],
                          cols["proto"], cols["cls"], cols["ssrc"], CLS_RTP)


def _segments(parts: list[dict]) -> list[tuple[Capture, np.ndarray]]:
    """Table rows in order: each direction's departures (from the sending capture), then its unmatched arrivals."""
    out = []
    for d in parts:
        out += [(d["send"], d["s_idx"]), (d["recv"], d["x_idx"])]
    return out


def build(cap_a: Capture, cap_b: Capture, addr_a: int, addr_b: int) -> PacketTable:
    parts = [_direction(cap_a, cap_b, addr_a, addr_b, FORWARD), _direction(cap_b, cap_a, addr_b, addr_a, REVERSE)]
    segs = _segments(parts)
    n = sum(len(idx) for _, idx in segs)
    cols: dict[str, np.ndarray] = {}
    # Each packet column is gathered once straight into its place (no intermediate concatenations).
    for name in _PACKET_FIELDS + ("tos", "frame"):
        out = np.empty(n, dtype=cap_a.cols[name].dtype)
        pos = 0
        for cap, idx in segs:
            np.take(cap.cols[name], idx, out=out[pos:pos + len(idx)])
            pos += len(idx)
        cols[name] = out
    def joined(departures: str, extras) -> np.ndarray:
        return np.concatenate([x for d in parts for x in (d[departures], extras(d))])
    cols["direction"] = np.concatenate([np.full(len(d["s_idx"]) + len(d["x_idx"]), d["direction"], np.uint8) for d in parts])
    cols["status"] = joined("status", lambda d: d["extra_status"])
    cols["t_send_ns"] = joined("t_send", lambda d: np.full(len(d["x_idx"]), -1, np.int64))
    cols["t_recv_ns"] = joined("t_recv", lambda d: d["recv"].cols["ts_ns"][d["x_idx"]])
    is_departure = np.concatenate([np.r_[np.ones(len(d["s_idx"]), bool), np.zeros(len(d["x_idx"]), bool)] for d in parts])
    tos, frame = cols.pop("tos"), cols.pop("frame")
    cols["frame_send"] = np.where(is_departure, frame, 0).astype(np.uint32)
    cols["frame_recv"] = np.where(is_departure, joined("frame_recv", lambda d: np.zeros(len(d["x_idx"]), np.uint32)), frame)
    cols["ecn_send"] = np.where(is_departure, tos & 3, 255).astype(np.uint8)
    cols["ecn_recv"] = np.where(is_departure, joined("ecn_recv", lambda d: np.zeros(len(d["x_idx"]), np.uint8)), tos & 3)
    cols["dscp"] = tos >> 2
    delivered = cols["status"] == DELIVERED
    cols["owd_ns"] = np.where(delivered, cols["t_recv_ns"] - cols["t_send_ns"], -1)
    flow, first = flow_ids(cols)
    cols["flow"] = flow
    # Rows grouped by flow (a stable sort keeps each flow's departures in send order); radix sort when ids fit 16 bits.
    n_flows = len(first)
    order = np.argsort(flow.astype(np.uint16) if n_flows < 65536 else flow, kind="stable")
    bounds = np.searchsorted(flow[order], np.arange(n_flows + 1))
    # Queuing delay: one-way delay above the flow's own minimum (its propagation + transmission + fixed overheads).
    big = np.iinfo(np.int64).max
    min_owd = np.minimum.reduceat(np.where(delivered, cols["owd_ns"], big)[order], bounds[:-1]) if n_flows else \
        np.zeros(0, dtype=np.int64)
    cols["queuing_delay_ns"] = np.where(delivered, cols["owd_ns"] - min_owd[flow], -1)
    return PacketTable(cols=cols, flow_first=first, order=order, bounds=bounds)
