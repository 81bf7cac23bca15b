"""The packet join: matches each packet that left one side to its arrival at the other (the join key of
rundir.join_keys, in occurrence order), and builds the per-packet table that every metric is computed from. Columns
are numpy arrays; one row per departure, plus one per arrival that matched none."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _core
from .rundir import Capture, join_keys
from .scenario import Link

# Row status in the `status` column.
DELIVERED, LOST, DUPLICATE, UNMATCHED, UNKNOWN = 0, 1, 2, 3, 4
STATUS_NAMES = {DELIVERED: "delivered", LOST: "lost", DUPLICATE: "duplicate",
                UNMATCHED: "unmatched", UNKNOWN: "unknown"}
FORWARD, REVERSE = 0, 1
DIRECTION_NAMES = {FORWARD: "forward", REVERSE: "reverse"}

# Packet classes as the Rust decoder numbers them (analysis/core/src/packet.rs, mod cls).
CLS_NAMES = {0: "other", 1: "rtp", 2: "rtcp", 3: "stun", 4: "dtls", 5: "tcp", 6: "udp", 7: "icmp"}
CLS_RTP, CLS_RTCP, CLS_TCP = 1, 2, 5

# Per-packet fields copied from the capture that saw the packet leave (or, for an arrival with no departure, arrive).
_PACKET_FIELDS = ("ip_src", "ip_dst", "proto", "ip_len", "ip_id", "sport", "dport", "key", "cls", "ssrc", "rtp_seq",
                  "rtp_ts", "rtp_pt", "rtp_marker", "twcc_seq", "rtp_payload_len", "tcp_seq", "tcp_flags",
                  "payload_len")


@dataclass
class PacketTable:
    """One row per packet of the two data directions. Times are epoch nanoseconds; -1 where not observed."""
    cols: dict[str, np.ndarray]
    flow_first: np.ndarray  # row of each flow's first packet
    order: np.ndarray  # rows grouped by flow: flow f is order[bounds[f]:bounds[f + 1]], in table order
    bounds: np.ndarray
    # Packets of each capture left out of the join: {"capture_a": {"non_ipv4": n, "other_addresses": n}, ...}
    not_joined: dict[str, dict[str, int]] = field(default_factory=dict)

    def rows_of(self, flow: int) -> np.ndarray:
        return self.order[self.bounds[flow]:self.bounds[flow + 1]]

    def __len__(self) -> int:
        return len(self.cols["status"])


def join_key(cols: dict[str, np.ndarray], idx: np.ndarray, column: str = "join_key") -> np.ndarray:
    """The join key of rows `idx` from their payload hash `column` (`join_key`: blind to the transport checksum, for
    capture against capture; `key`: FNV-1a, for the ground-truth log)."""
    return join_keys(cols[column][idx], cols["ip_id"][idx])


def match(sent_keys: np.ndarray, recv_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The join itself (analysis/core/src/join.rs): the k-th departure with a key is the k-th arrival with it.
    Returns (each departure's arrival index or -1, each arrival's departure index, or -2 for a duplicate, -1)."""
    return _core.join_keys(np.ascontiguousarray(sent_keys, dtype=np.uint64),
                           np.ascontiguousarray(recv_keys, dtype=np.uint64))


def _direction(send: Capture, recv: Capture, src: int, dst: int, direction: int) -> dict:
    """Joins one direction. Returns the departures' rows in the sending capture (`s_idx`), the unmatched arrivals'
    rows in the receiving one (`x_idx`), every arrival's row (`r_idx`), and the join's own columns for them."""
    sc, rc = send.cols, recv.cols
    s_idx, s_keys = _core.direction_keys(sc["ip_src"], sc["ip_dst"], sc["join_key"], sc["ip_id"], src, dst)
    r_idx, r_keys = _core.direction_keys(rc["ip_src"], rc["ip_dst"], rc["join_key"], rc["ip_id"], src, dst)
    s_match, r_match = _core.join_keys(s_keys, r_keys)
    delivered = s_match >= 0
    t_send = sc["ts_ns"][s_idx]
    t_recv = np.full(len(s_idx), -1, dtype=np.int64)
    t_recv[delivered] = rc["ts_ns"][r_idx[s_match[delivered]]]
    status = np.where(delivered, DELIVERED, LOST).astype(np.uint8)
    # A departure not seen arriving is lost only if the receiving capture was running when it would have arrived:
    # its whole span counts (packets of either direction, ARP too), so an outage before the capture ends is loss.
    if recv.span_ns is not None:
        owd = t_recv[delivered] - t_send[delivered]
        max_owd = int(owd.max()) if len(owd) else 0
        min_owd = int(owd.min()) if len(owd) else 0
        recv_first, recv_last = recv.span_ns
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
    return {"direction": direction, "send": send, "recv": recv, "s_idx": s_idx, "x_idx": r_idx[extra], "r_idx": r_idx,
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


@dataclass(frozen=True)
class Propagation:
    """A direction's configured one-way propagation delay on the captures' clock: `base_ns`, and from each step's
    `from_ns` (epoch ns, increasing) on, its delay, for a packet sent from then on (a link's delay_schedule)."""
    base_ns: int
    steps: tuple[tuple[int, int], ...] = ()

    def at(self, t_send_ns: np.ndarray) -> np.ndarray:
        values = np.array([self.base_ns] + [d for _, d in self.steps], dtype=np.int64)
        return values[np.searchsorted(np.array([t for t, _ in self.steps], dtype=np.int64), t_send_ns, side="right")]


def propagation_of(link: Link, t0_ns: int) -> Propagation:
    """A link's configured propagation delay on the captures' clock, its schedule counted from call start t0_ns."""
    ns = lambda ms: int(round(ms * 1e6))  # noqa: E731
    return Propagation(ns(link.delay_ms), tuple((t0_ns + ns(at_s * 1000), ns(d)) for at_s, d in link.delay_schedule))


def build(cap_a: Capture, cap_b: Capture, addr_a: int, addr_b: int,
          propagation_ns: tuple[Propagation | int | None, Propagation | int | None] = (None, None)) -> PacketTable:
    """The table of both directions. `propagation_ns`: the configured one-way propagation delay (forward, reverse),
    constant or by send time, the baseline of `queuing_delay_ns` (None: unknown, the column is -1)."""
    parts = [_direction(cap_a, cap_b, addr_a, addr_b, FORWARD), _direction(cap_b, cap_a, addr_b, addr_a, REVERSE)]
    # Each capture's packets that neither direction used: not IPv4, or between other addresses.
    not_joined = {}
    for name, cap, sent, received in (("capture_a", cap_a, parts[0]["s_idx"], parts[1]["r_idx"]),
                                      ("capture_b", cap_b, parts[1]["s_idx"], parts[0]["r_idx"])):
        not_joined[name] = {"non_ipv4": cap.non_ipv4, "other_addresses": cap.packets - len(sent) - len(received)}
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
    cols["direction"] = np.concatenate([np.full(len(d["s_idx"]) + len(d["x_idx"]), d["direction"],
                                                np.uint8) for d in parts])
    cols["status"] = joined("status", lambda d: d["extra_status"])
    cols["t_send_ns"] = joined("t_send", lambda d: np.full(len(d["x_idx"]), -1, np.int64))
    cols["t_recv_ns"] = joined("t_recv", lambda d: d["recv"].cols["ts_ns"][d["x_idx"]])
    is_departure = np.concatenate([np.r_[np.ones(len(d["s_idx"]), bool),
                                         np.zeros(len(d["x_idx"]), bool)] for d in parts])
    tos, frame = cols.pop("tos"), cols.pop("frame")
    cols["frame_send"] = np.where(is_departure, frame, 0).astype(np.uint32)
    cols["frame_recv"] = np.where(is_departure,
                                  joined("frame_recv", lambda d: np.zeros(len(d["x_idx"]), np.uint32)), frame)
    cols["ecn_send"] = np.where(is_departure, tos & 3, 255).astype(np.uint8)
    cols["ecn_recv"] = np.where(is_departure,
                                joined("ecn_recv", lambda d: np.zeros(len(d["x_idx"]), np.uint8)), tos & 3)
    cols["dscp"] = tos >> 2
    delivered = cols["status"] == DELIVERED
    cols["owd_ns"] = np.where(delivered, cols["t_recv_ns"] - cols["t_send_ns"], -1)
    flow, first = flow_ids(cols)
    cols["flow"] = flow
    # Rows grouped by flow (a stable sort keeps each flow's departures in send order); radix sort when ids fit 16 bits.
    n_flows = len(first)
    order = np.argsort(flow.astype(np.uint16) if n_flows < 65536 else flow, kind="stable")
    bounds = np.searchsorted(flow[order], np.arange(n_flows + 1))
    # Queuing delay: one-way delay minus the link's configured propagation delay, the time spent at the bottleneck
    # (waiting, then the packet's own transmission; plus any configured jitter and the host's hops).
    prop = np.full(n, -1, dtype=np.int64)
    for direction, p in ((FORWARD, propagation_ns[0]), (REVERSE, propagation_ns[1])):
        rows = cols["direction"] == direction
        if isinstance(p, Propagation):
            prop[rows] = p.at(cols["t_send_ns"][rows])
        elif p is not None:
            prop[rows] = p
    cols["queuing_delay_ns"] = np.where(delivered & (prop >= 0), cols["owd_ns"] - prop, -1)
    # The older measure beside it: one-way delay above the flow's own minimum. A flow that only ever saw a standing
    # queue has that queue in its minimum, so this one reads it as zero.
    big = np.iinfo(np.int64).max
    min_owd = np.minimum.reduceat(np.where(delivered, cols["owd_ns"], big)[order], bounds[:-1]) if n_flows else \
        np.zeros(0, dtype=np.int64)
    cols["queuing_delay_vs_min_owd_ns"] = np.where(delivered, cols["owd_ns"] - min_owd[flow], -1)
    return PacketTable(cols=cols, flow_first=first, order=order, bounds=bounds, not_joined=not_joined)


# Columns the dashboard draws from; `from_parquet` reads only these.
DASHBOARD_COLUMNS = ("direction", "flow", "status", "t_send_ns", "t_recv_ns", "owd_ns", "queuing_delay_ns",
                     "queuing_delay_vs_min_owd_ns", "ip_len")


# The table's columns that packets.parquet names otherwise (analyze.write_parquet).
PARQUET_NAMES = {"cls": "class"}


def from_parquet(path: Path, columns: tuple[str, ...] = DASHBOARD_COLUMNS) -> PacketTable:
    """The per-packet table back from packets.parquet (as `analyze` wrote it): names to codes, nulls to -1."""
    import pyarrow.parquet as pq

    present = set(pq.read_schema(path).names)
    data = pq.read_table(path, columns=[PARQUET_NAMES.get(c, c) for c in columns if PARQUET_NAMES.get(c, c) in present])
    cols: dict[str, np.ndarray] = {}
    codes = {"direction": DIRECTION_NAMES, "status": STATUS_NAMES, "cls": CLS_NAMES}
    for name in columns:
        stored = PARQUET_NAMES.get(name, name)
        if stored not in present:  # a column of a later analyzer version: unknown
            cols[name] = np.full(data.num_rows, -1, dtype=np.int64)
            continue
        col = data.column(stored)
        if name in codes:
            index = {v: k for k, v in codes[name].items()}
            values = col.to_pylist()
            cols[name] = np.array([index[v] for v in values], dtype=np.uint8)
        else:
            cols[name] = col.fill_null(-1).to_numpy() if col.null_count else col.to_numpy()
    flow = cols["flow"].astype(np.int64)
    n_flows = int(flow.max()) + 1 if flow.size else 0
    order = np.argsort(flow, kind="stable")
    bounds = np.searchsorted(flow[order], np.arange(n_flows + 1))
    first = order[bounds[:-1]] if n_flows else np.zeros(0, dtype=np.int64)
    return PacketTable(cols=cols, flow_first=first, order=order, bounds=bounds)
