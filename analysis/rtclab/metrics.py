"""Per-flow and per-phase metrics from the packet table (definitions in docs/metrics.md): one-way and queuing delay,
loss and loss bursts, duplicates, RFC 4737 reordering, RFC 3550 jitter, windowed throughput and utilisation.
Everything is vectorised over a flow's rows; only the jitter recurrence runs in Rust."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _core, ecn
from .packets import CLS_NAMES, CLS_RTP, DELIVERED, DIRECTION_NAMES, DUPLICATE, LOST, UNKNOWN, UNMATCHED, PacketTable
from .rundir import int_to_ip
from .stats import distribution

WINDOWS_S = (0.15, 0.5, 1.0)
MIN_RATE_SPAN_S = 1.0  # a flow's mean rate averages over at least this (a burst of packets has no rate of its own)
ETHERNET_HEADER_BYTES = 14  # rates count link-layer bytes, as TBF does on a veth (scenarios/schema.json)
# Mean capacity (bits/s) of the forward link over [start_s, end_s) seconds since call start, or None.
CapacityFn = Callable[[float, float], "float | None"]

# Payload types Chrome uses for audio when getStats cannot say (Opus 111, RED 63, G.711 0/8, G.722 9, CN 13/105/106,
# telephone-event 110/112/126, ILBC 102 is video in Chrome's current offer so it is not listed).
_AUDIO_PTS = {0, 8, 9, 13, 63, 103, 104, 105, 106, 110, 111, 112, 113, 126}
CLOCK_HZ = {"video": 90000.0, "rtx": 90000.0, "fec": 90000.0, "audio": 48000.0}
# RFC 3551's static payload types have fixed clocks (PCMU 0, PCMA 8, G722 9 (by its RFC's erratum), CN 13).
STATIC_PT_CLOCK_HZ = {0: 8000.0, 8: 8000.0, 9: 8000.0, 13: 8000.0}


def clock_hz(payload_type: int | None, kind: str, clock_by_pt: dict[int, float]) -> float | None:
    """The RTP clock of a flow: getStats' codec.clockRate for its payload type, else the static type's clock, else
    the default of its kind. (Payload type 0, PCMU, is a type like any other: 8 kHz, not the audio default.)"""
    if payload_type is not None:
        if payload_type in clock_by_pt:
            return clock_by_pt[payload_type]
        if payload_type in STATIC_PT_CLOCK_HZ:
            return STATIC_PT_CLOCK_HZ[payload_type]
    return CLOCK_HZ.get(kind)


def rfc4737_reordering(send_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`send_pos`: each received packet's position in send order, listed in arrival order. A packet is reordered when
    its position is below the next expected one (the highest seen so far + 1, RFC 4737 section 3.3). Its extent is
    its arrival index minus that of the earliest packet that arrived before it with a higher position (section 4.2.2).
    Returns (reordered mask, extent of each reordered packet)."""
    if send_pos.size == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    running_max = np.maximum.accumulate(send_pos)
    prev_max = np.r_[np.iinfo(np.int64).min, running_max[:-1]]
    reordered = send_pos < prev_max
    idx = np.flatnonzero(reordered)
    first_higher = np.searchsorted(running_max, send_pos[idx], side="right")
    return reordered, idx - first_higher


def loss_bursts(lost: np.ndarray) -> dict[str, float | int]:
    """Runs of consecutive losses in send order."""
    if lost.size == 0 or not lost.any():
        return {"count": 0, "max_length": 0, "mean_length": 0.0}
    edges = np.diff(np.r_[0, lost.astype(np.int8), 0])
    lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return {"count": int(lengths.size), "max_length": int(lengths.max()), "mean_length": float(lengths.mean())}


def windowed_rate(t_ns: np.ndarray, nbytes: np.ndarray, lo_ns: int, hi_ns: int, window_s: float) -> np.ndarray:
    """Bits per second in consecutive windows of window_s tiling [lo, hi); a last partial window is dropped, so a
    span shorter than one window has none (a rate over a few microseconds would mean nothing)."""
    span_ns = hi_ns - lo_ns
    w_ns = int(round(window_s * 1e9))
    n = max(0, span_ns // w_ns)
    if n == 0:
        return np.zeros(0)
    inside = (t_ns >= lo_ns) & (t_ns < lo_ns + n * w_ns)
    bins = (t_ns[inside] - lo_ns) // w_ns
    return np.bincount(bins, weights=nbytes[inside], minlength=n)[:n] * 8 / window_s


def flow_kind(cls: int, pt: int, ssrc: int, ssrc_kinds: dict[int, str], pt_kinds: dict[int, str]) -> str:
    if cls != CLS_RTP:
        return CLS_NAMES.get(cls, "other")
    if ssrc in ssrc_kinds:
        return ssrc_kinds[ssrc]
    if pt in pt_kinds:
        return pt_kinds[pt]
    return "audio" if pt in _AUDIO_PTS else "video"


def _rate_bps(t_ns: np.ndarray, nbytes: np.ndarray, phase_s: float) -> float | None:
    """Mean rate of packets at times t_ns (sorted): the bytes after the first over the time from first to last (N
    packets span N - 1 intervals, so the first packet's bytes came before the span). A span shorter than
    MIN_RATE_SPAN_S (a burst) gives its bytes over MIN_RATE_SPAN_S, or over the phase when that is shorter."""
    if t_ns.size == 0:
        return None
    span_s = (int(t_ns[-1]) - int(t_ns[0])) / 1e9
    if span_s >= MIN_RATE_SPAN_S:
        return float(nbytes[1:].sum()) * 8 / span_s
    return float(nbytes.sum()) * 8 / min(MIN_RATE_SPAN_S, phase_s)


def _rate_fields(c: dict[str, np.ndarray], arrivals: np.ndarray, sent_rows: np.ndarray, n_sent: int, lo_ns: int,
                 hi_ns: int, t0_ns: int, capacity: CapacityFn | None) -> dict[str, Any]:
    """The subset's received rate (mean and per window), send rate, active span and utilisation; arrivals in the
    receiving capture's order, sent_rows in send order."""
    # Rates from link-layer bytes: received over the arrivals' own span (so the windows start at the first arrival,
    # not one delay before it), sent over the departures' span.
    frame_bytes = c["ip_len"]  # plus ETHERNET_HEADER_BYTES per packet
    tr = c["t_recv_ns"][arrivals]
    fb = frame_bytes[arrivals].astype(np.int64) + ETHERNET_HEADER_BYTES
    phase_s = (hi_ns - lo_ns) / 1e9
    mean = _rate_bps(tr, fb, phase_s)
    if mean is None and n_sent:
        mean = 0.0  # sent and seen lost: nothing received
    thr: dict[str, Any] = {"mean": mean, "windows": {}}
    span_lo = int(tr[0]) if tr.size else 0
    span_hi = int(tr[-1]) if tr.size else 0
    for w in WINDOWS_S:
        rates = windowed_rate(tr, fb, span_lo, span_hi, w)
        thr["windows"][f"{w:g}s"] = {"mean": float(rates.mean()) if rates.size else None,
                                      "sd": float(rates.std()) if rates.size else None, "count": int(rates.size)}
    out: dict[str, Any] = {"throughput_bps": thr}
    ts = c["t_send_ns"][sent_rows]
    out["send_rate_bps"] = _rate_bps(ts, frame_bytes[sent_rows].astype(np.int64) + ETHERNET_HEADER_BYTES, phase_s)
    out["active_s"] = (span_hi - span_lo) / 1e9
    # U = R / b with b the capacity over the same span as R (at least MIN_RATE_SPAN_S, as R's).
    out["utilisation"] = None
    if capacity is not None and mean is not None and tr.size:
        start_s = (span_lo - t0_ns) / 1e9
        cap = capacity(start_s, start_s + max(out["active_s"], min(MIN_RATE_SPAN_S, phase_s)))
        out["utilisation"] = (mean / cap) if cap else None
    return out


def _rtp_fields(c: dict[str, np.ndarray], arrivals: np.ndarray, kind: str, clock_hz: float | None) -> dict[str, Any]:
    """An RTP flow's sequence-number loss and, for media, its RFC 3550 interarrival jitter (None for other kinds)."""
    out: dict[str, Any] = {"jitter_ms": None, "rtp_seq_lost": None}
    if kind in ("video", "audio", "rtx", "fec") and arrivals.size:
        tr = c["t_recv_ns"][arrivals]
        seq = c["rtp_seq"][arrivals]
        ext = np.unwrap(seq.astype(np.float64), period=65536).astype(np.int64)
        expected = int(ext.max() - ext.min() + 1)
        out["rtp_seq_expected"] = expected
        distinct = int(np.count_nonzero(np.bincount(ext - ext.min()))) if expected < 50 * ext.size + 65536 else \
            int(np.unique(ext).size)  # a counting pass unless the range is absurd (a garbled stream)
        out["rtp_seq_lost"] = expected - distinct
        # RTX and FEC carry the timestamps of the packets they repair: no interarrival jitter for them.
        if clock_hz and arrivals.size > 1 and kind in ("video", "audio"):
            j_s = _core.rfc3550_jitter_s(tr.astype(np.int64), c["rtp_ts"][arrivals].astype(np.uint32), clock_hz)
            # tshark's maximum leaves out the first packet, packets with the marker bit and packets whose timestamp
            # goes backwards: kept apart so the cross-check compares like with like.
            rtp_ts = c["rtp_ts"][arrivals].astype(np.int64)
            regular = ~c["rtp_marker"][arrivals].astype(bool)
            regular[0] = False
            regular[1:] &= ((rtp_ts[1:] - rtp_ts[:-1]) % 2**32) < 2**31
            out["jitter_ms"] = {"mean": float(j_s.mean() * 1e3), "max": float(j_s.max() * 1e3),
                                "last": float(j_s[-1] * 1e3), "clock_hz": clock_hz,
                                "max_tshark_rule": float(j_s[regular].max() * 1e3) if regular.any() else None}
    return out


def _subset_metrics(t: PacketTable, rows: np.ndarray, lo_ns: int, hi_ns: int, kind: str,
                    clock_hz: float | None, t0_ns: int, capacity: CapacityFn | None) -> dict[str, Any]:
    c = t.cols
    if lo_ns > np.iinfo(np.int64).min or hi_ns < np.iinfo(np.int64).max:
        t_send, t_recv = c["t_send_ns"][rows], c["t_recv_ns"][rows]
        ref = np.where(t_send >= 0, t_send, t_recv)  # departures by send time, unmatched arrivals by arrival time
        rows = rows[(ref >= lo_ns) & (ref < hi_ns)]
    status = c["status"][rows]
    is_sent = (status == DELIVERED) | (status == LOST)
    sent_rows = rows[is_sent]
    sent_status = status[is_sent]
    got_pos = np.flatnonzero(sent_status == DELIVERED)  # positions in send order of the delivered departures
    got = sent_rows[got_pos]
    frame_bytes = c["ip_len"]  # plus ETHERNET_HEADER_BYTES per packet, added to the sums below
    n_sent, n_got = int(sent_rows.size), int(got.size)
    lost_mask = sent_status == LOST
    bytes_sent = int(frame_bytes[sent_rows].sum(dtype=np.int64)) + ETHERNET_HEADER_BYTES * n_sent
    n_lost = int(lost_mask.sum())
    bytes_lost = int(frame_bytes[sent_rows[lost_mask]].sum(dtype=np.int64)) + ETHERNET_HEADER_BYTES * n_lost
    qd = c["queuing_delay_ns"][got]
    # Arrivals: every first copy that reached the receiver, matched or not (a capture missing on the sending side
    # still gives rates, jitter and sequence-number loss), in the receiving capture's order: by time, and by frame
    # number between equal times (the capture's own order, which the send order would hide).
    is_arrival = (status == DELIVERED) | (status == UNMATCHED)
    arrivals = rows[is_arrival]
    order = np.lexsort((c["frame_recv"][arrivals], c["t_recv_ns"][arrivals]))
    arrivals = arrivals[order]
    # RFC 4737 over the delivered departures in arrival order, by their send positions.
    delivered_in_arrival = (status[is_arrival] == DELIVERED)[order]
    if n_got == arrivals.size:
        send_pos = got_pos[order]
    else:
        # Unmatched arrivals sit among the delivered ones: map each delivered arrival back to its send position.
        delivered_rows_sorted = arrivals[delivered_in_arrival]
        send_pos = np.searchsorted(sent_rows, delivered_rows_sorted)
    reordered, extent = rfc4737_reordering(send_pos)
    out: dict[str, Any] = {
        "packets_sent": n_sent,
        "packets_received": n_got,
        "packets_lost": int(lost_mask.sum()),
        # Not seen arriving, but sent while the other capture was off.
        "packets_unknown": int((status == UNKNOWN).sum()),
        "bytes_sent": bytes_sent,
        "bytes_lost": bytes_lost,
        "loss_ratio": (float(lost_mask.sum()) / n_sent) if n_sent else None,
        "loss_ratio_bytes": (bytes_lost / bytes_sent) if bytes_sent else None,
        "loss_bursts": loss_bursts(lost_mask),
        "duplicates": int((status == DUPLICATE).sum()),
        "unmatched_arrivals": int((status == UNMATCHED).sum()),
        "reordered": int(reordered.sum()),
        "reordered_ratio": (float(reordered.sum()) / n_got) if n_got else None,
        "reordering_extent": {"max": int(extent.max()) if extent.size else 0,
                              "mean": float(extent.mean()) if extent.size else 0.0},
        "owd_ms": distribution(c["owd_ns"][got] / 1e6),
        "queuing_delay_ms": distribution(qd[qd >= 0] / 1e6),
        "queuing_delay_vs_min_owd_ms": distribution(c["queuing_delay_vs_min_owd_ns"][got] / 1e6),
        "ecn_ce_received": int(((c["ecn_recv"][got] == 3) & (c["ecn_send"][got] != 3)).sum()),
        "ecn": ecn.ecn_account(c["ecn_send"][sent_rows], c["ecn_send"][got], c["ecn_recv"][got]),
    }
    out |= _rate_fields(c, arrivals, sent_rows, n_sent, lo_ns, hi_ns, t0_ns, capacity)
    out |= _rtp_fields(c, arrivals, kind, clock_hz)
    return out


def _flow_identity(t: PacketTable, f: int, ssrc_kinds: dict[int, str], pt_kinds: dict[int, str]) -> dict[str, Any]:
    c = t.cols
    r = int(t.flow_first[f])
    cls = int(c["cls"][r])
    proto = int(c["proto"][r])
    pt = int(c["rtp_pt"][r])
    ssrc = int(c["ssrc"][r])
    kind = flow_kind(cls, pt, ssrc, ssrc_kinds, pt_kinds)
    return {
        "id": f,
        "direction": DIRECTION_NAMES[int(c["direction"][r])],
        "src": f"{int_to_ip(c['ip_src'][r])}:{int(c['sport'][r])}",
        "dst": f"{int_to_ip(c['ip_dst'][r])}:{int(c['dport'][r])}",
        "protocol": {6: "tcp", 17: "udp", 1: "icmp"}.get(proto, str(proto)),
        "kind": kind,
        "ssrc": ssrc if cls == CLS_RTP else None,
        "payload_type": pt if cls == CLS_RTP else None,
        "dscp": int(c["dscp"][r]),
    }


def flows(t: PacketTable, phase_bounds_ns: list[tuple[str, int, int]], ssrc_kinds: dict[int, str],
          pt_kinds: dict[int, str], clock_by_pt: dict[int, float], t0_ns: int = 0,
          forward_capacity: CapacityFn | None = None) -> list[dict[str, Any]]:
    """One entry per flow: identity, the metrics over the whole run, and a `phases` map with the same per phase.
    `forward_capacity` gives forward flows their utilisation."""
    out = []
    for f in range(len(t.flow_first)):
        ident = _flow_identity(t, f, ssrc_kinds, pt_kinds)
        rows = t.rows_of(f)
        clock = clock_hz(ident["payload_type"], ident["kind"], clock_by_pt)
        cap = forward_capacity if ident["direction"] == "forward" else None
        per_phase = {name: _subset_metrics(t, rows, lo, hi, ident["kind"], clock, t0_ns, cap)
                     for name, lo, hi in phase_bounds_ns}
        entry = dict(ident)
        entry.update(per_phase["all"])
        entry["phases"] = {k: v for k, v in per_phase.items() if k != "all"}
        out.append(entry)
    return out
