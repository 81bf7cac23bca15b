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


def join_key(cols: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    """The join key of rows `idx`: the payload's FNV-1a 64 mixed with ip.id (kept by forwarding, differs between
    otherwise identical packets such as two duplicate TCP ACKs)."""
    return cols["key"][idx] ^ (cols["ip_id"][idx].astype(np.uint64) * _GOLDEN)


def _direction(send: Capture, recv: Capture, src: int, dst: int, direction: int) -> dict[str, np.ndarray]:
    sc, rc = send.cols, recv.cols
    s_idx = np.flatnonzero((sc["ip_src"] == src) & (sc["ip_dst"] == dst))
    r_idx = np.flatnonzero((rc["ip_src"] == src) & (rc["ip_dst"] == dst))
    s_match, r_match = _core.join_keys(join_key(sc, s_idx), join_key(rc, r_idx))
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
    n_s, n_x = len(s_idx), len(extra)
    matched = r_idx[s_match[delivered]]  # receiving-capture rows of the delivered departures
    frame_recv = np.zeros(n_s, dtype=np.uint32)
    frame_recv[delivered] = rc["frame"][matched]
    ecn_recv = np.full(n_s, 255, dtype=np.uint8)  # 255: not observed
    ecn_recv[delivered] = rc["tos"][matched] & 3
    out: dict[str, np.ndarray] = {
        "direction": np.full(n_s + n_x, direction, dtype=np.uint8),
        "status": np.concatenate([status, extra_status]),
        "t_send_ns": np.concatenate([t_send, np.full(n_x, -1, dtype=np.int64)]),
        "t_recv_ns": np.concatenate([t_recv, rc["ts_ns"][r_idx[extra]]]),
        "frame_send": np.concatenate([sc["frame"][s_idx], np.zeros(n_x, dtype=np.uint32)]),
        "frame_recv": np.concatenate([frame_recv, rc["frame"][r_idx[extra]]]),
        "ecn_send": np.concatenate([sc["tos"][s_idx] & 3, np.full(n_x, 255, dtype=np.uint8)]),
        "ecn_recv": np.concatenate([ecn_recv, rc["tos"][r_idx[extra]] & 3]),
        "dscp": np.concatenate([sc["tos"][s_idx] >> 2, rc["tos"][r_idx[extra]] >> 2]),
    }
    for name in _PACKET_FIELDS:
        out[name] = np.concatenate([sc[name][s_idx], rc[name][r_idx[extra]]])
    return out


def flow_ids(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Flow of each row: the 5-tuple, the packet class, and the SSRC for RTP (each RTP stream is its own flow; RTCP,
    STUN and DTLS of a 5-tuple are one flow each). Returns (flow id per row, row index of each flow's first packet)."""
    u = np.uint64
    h = cols["ip_src"].astype(u) * u(0x100000001B3)
    h ^= cols["ip_dst"].astype(u) * _GOLDEN
    h ^= (cols["sport"].astype(u) << u(48)) | (cols["dport"].astype(u) << u(32)) | (cols["proto"].astype(u) << u(24)) \
        | (cols["cls"].astype(u) << u(16))
    rtp = cols["cls"] == CLS_RTP
    h ^= np.where(rtp, cols["ssrc"].astype(u) * u(0xC2B2AE3D27D4EB4F), u(0))
    h ^= cols["direction"].astype(u) << u(63)
    return _core.group_ids(h)


def build(cap_a: Capture, cap_b: Capture, addr_a: int, addr_b: int) -> PacketTable:
    fwd = _direction(cap_a, cap_b, addr_a, addr_b, FORWARD)
    rev = _direction(cap_b, cap_a, addr_b, addr_a, REVERSE)
    cols = {k: np.concatenate([fwd[k], rev[k]]) for k in fwd}
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
