"""Per-flow and per-phase metrics from the packet table (definitions in docs/metrics.md): one-way and queuing delay,
loss and loss bursts, duplicates, RFC 4737 reordering, RFC 3550 jitter, windowed throughput, utilisation, and
Jain's fairness. Everything is vectorised over a flow's rows; only the jitter recurrence runs in Rust."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .packets import (CLS_NAMES, CLS_RTP, DELIVERED, DIRECTION_NAMES, DUPLICATE, FORWARD, LOST, UNKNOWN, UNMATCHED,
                      PacketTable)
from .rundir import int_to_ip

WINDOWS_S = (0.15, 0.5, 1.0)
MIN_RATE_SPAN_S = 1.0  # a flow's mean rate averages over at least this (a burst of packets has no rate of its own)
PERCENTILES = (5, 25, 50, 75, 90, 95, 99)
ETHERNET_HEADER_BYTES = 14  # rates count link-layer bytes, as TBF does on a veth (scenarios/schema.json)

# Payload types Chrome uses for audio when getStats cannot say (Opus 111, RED 63, G.711 0/8, G.722 9, CN 13/105/106,
# telephone-event 110/112/126, ILBC 102 is video in Chrome's current offer so it is not listed).
_AUDIO_PTS = {0, 8, 9, 13, 63, 103, 104, 105, 106, 110, 111, 112, 113, 126}
CLOCK_HZ = {"video": 90000.0, "rtx": 90000.0, "fec": 90000.0, "audio": 48000.0}


def distribution(values: np.ndarray) -> dict[str, float | int | None]:
    """min, mean, sd (population), p5..p99 (linear interpolation between closest ranks), max, count."""
    n = int(values.size)
    if n == 0:
        return {"count": 0, "min": None, "mean": None, "sd": None, **{f"p{p}": None for p in PERCENTILES}, "max": None}
    pct = np.percentile(values, PERCENTILES)
    out: dict[str, float | int | None] = {"count": n, "min": float(values.min()), "mean": float(values.mean()),
                                          "sd": float(values.std())}
    out.update({f"p{p}": float(v) for p, v in zip(PERCENTILES, pct)})
    out["max"] = float(values.max())
    return out


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


def _subset_metrics(t: PacketTable, rows: np.ndarray, lo_ns: int, hi_ns: int, kind: str,
                    clock_hz: float | None) -> dict[str, Any]:
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
    bytes_lost = int(frame_bytes[sent_rows[lost_mask]].sum(dtype=np.int64)) + ETHERNET_HEADER_BYTES * int(lost_mask.sum())
    owd_ns = c["owd_ns"][got]
    owd = distribution(owd_ns / 1e6)
    # Queuing delay is the one-way delay less the flow's minimum: the same distribution, shifted.
    shift_ms = (int(owd_ns[0]) - int(c["queuing_delay_ns"][got[0]])) / 1e6 if n_got else 0.0
    qd = {k: (v if k in ("count", "sd") or v is None else v - shift_ms) for k, v in owd.items()}
    # Arrivals: every first copy that reached the receiver, matched or not (a capture missing on the sending side
    # still gives rates, jitter and sequence-number loss), in arrival order (a stable sort keeps send order on ties).
    is_arrival = (status == DELIVERED) | (status == UNMATCHED)
    arrivals = rows[is_arrival]
    order = np.argsort(c["t_recv_ns"][arrivals], kind="stable")
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
        "packets_unknown": int((status == UNKNOWN).sum()),  # not seen arriving, but sent while the other capture was off
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
        "owd_ms": owd,
        "queuing_delay_ms": qd,
        "ecn_ce_received": int(((c["ecn_recv"][got] == 3) & (c["ecn_send"][got] != 3)).sum()),
    }
    # Throughput over the flow's active span inside the phase, from link-layer bytes at arrival times.
    if sent_rows.size:
        span_lo = max(lo_ns, int(c["t_send_ns"][sent_rows[0]]))
        span_hi = min(hi_ns, int(c["t_send_ns"][sent_rows[-1]]) + 1)
    elif arrivals.size:
        span_lo = max(lo_ns, int(c["t_recv_ns"][arrivals[0]]))
        span_hi = min(hi_ns, int(c["t_recv_ns"][arrivals[-1]]) + 1)
    else:
        span_lo = span_hi = 0
    span_s = (span_hi - span_lo) / 1e9
    # A burst of a few packets has no meaningful rate over its own microseconds: the mean rate is taken over at
    # least MIN_RATE_SPAN_S (or the whole phase, when that is shorter).
    rate_span_s = max(span_s, min(MIN_RATE_SPAN_S, (hi_ns - lo_ns) / 1e9)) if span_s > 0 else 0.0
    tr = c["t_recv_ns"][arrivals]
    fb = frame_bytes[arrivals].astype(np.int64) + ETHERNET_HEADER_BYTES
    thr: dict[str, Any] = {"mean": (float(fb.sum()) * 8 / rate_span_s) if rate_span_s > 0 else None, "windows": {}}
    for w in WINDOWS_S:
        rates = windowed_rate(tr, fb, span_lo, span_hi, w)
        thr["windows"][f"{w:g}s"] = {"mean": float(rates.mean()) if rates.size else None,
                                      "sd": float(rates.std()) if rates.size else None, "count": int(rates.size)}
    out["throughput_bps"] = thr
    out["send_rate_bps"] = (bytes_sent * 8 / rate_span_s) if rate_span_s > 0 and n_sent else None
    out["active_s"] = span_s
    out["jitter_ms"] = None
    out["rtp_seq_lost"] = None
    if kind in ("video", "audio", "rtx", "fec") and arrivals.size:
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
            ts = c["rtp_ts"][arrivals].astype(np.int64)
            regular = ~c["rtp_marker"][arrivals].astype(bool)
            regular[0] = False
            regular[1:] &= ((ts[1:] - ts[:-1]) % 2**32) < 2**31
            out["jitter_ms"] = {"mean": float(j_s.mean() * 1e3), "max": float(j_s.max() * 1e3),
                                "last": float(j_s[-1] * 1e3),
                                "max_tshark_rule": float(j_s[regular].max() * 1e3) if regular.any() else None}
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
          pt_kinds: dict[int, str], clock_by_pt: dict[int, float]) -> list[dict[str, Any]]:
    """One entry per flow: identity, the metrics over the whole run, and a `phases` map with the same per phase."""
    out = []
    for f in range(len(t.flow_first)):
        ident = _flow_identity(t, f, ssrc_kinds, pt_kinds)
        rows = t.rows_of(f)
        clock = clock_by_pt.get(ident["payload_type"] or -1) or CLOCK_HZ.get(ident["kind"])
        per_phase = {name: _subset_metrics(t, rows, lo, hi, ident["kind"], clock) for name, lo, hi in phase_bounds_ns}
        entry = dict(ident)
        entry.update(per_phase["all"])
        entry["phases"] = {k: v for k, v in per_phase.items() if k != "all"}
        out.append(entry)
    return out


def jain_index(rates: list[float]) -> float | None:
    """(sum x)^2 / (n * sum x^2); 1 when all flows get the same rate, 1/n when one takes everything."""
    x = np.asarray(rates, dtype=float)
    if x.size == 0 or not (x > 0).any():
        return None
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def headline_fairness(metrics_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The fairness to show first (dashboard card, compare): while the flows compete, i.e. the cross-traffic phase
    when the run has one, else the whole run. Returns (phase name, its fairness entry)."""
    fairness = metrics_json.get("fairness") or {}
    phase = "cross_traffic" if fairness.get("cross_traffic") else "all"
    return phase, fairness.get(phase) or {}


def connections(t: PacketTable, lo_ns: int, hi_ns: int, capacity_bps: float | None) -> dict[str, Any]:
    """Forward 5-tuples sharing the bottleneck in [lo, hi): each one's received rate over the interval, its share of
    the fair share (capacity / n), Jain's index over them, and the utilisation of the link by all of them."""
    c = t.cols
    fwd = np.flatnonzero((c["direction"] == FORWARD) & (c["status"] == DELIVERED) &
                         (c["t_recv_ns"] >= lo_ns) & (c["t_recv_ns"] < hi_ns))
    dur_s = (hi_ns - lo_ns) / 1e9
    if fwd.size == 0 or dur_s <= 0:
        return {"connections": [], "jain_index": None, "utilisation": None, "received_bps": 0.0}
    u = np.uint64
    h = (c["ip_src"][fwd].astype(u) << u(32)) ^ c["ip_dst"][fwd].astype(u) ^ (c["sport"][fwd].astype(u) << u(48)) \
        ^ (c["dport"][fwd].astype(u) << u(16)) ^ c["proto"][fwd].astype(u)
    ids, first = _core.group_ids(h)
    nbytes = np.bincount(ids, weights=c["ip_len"][fwd].astype(np.int64) + ETHERNET_HEADER_BYTES)
    rates = nbytes * 8 / dur_s
    # Only connections that share the link through the phase count for fairness: data at more than 8 kbit/s (a lone
    # STUN keepalive 5-tuple would skew it) in more than half of the phase's 1 s windows (a TCP flow's last segments
    # draining from the queue just after it stopped are not a competitor in the next phase).
    windows = max(1, int(np.ceil(dur_s - 1e-9)))
    window = np.minimum((c["t_recv_ns"][fwd].astype(np.int64) - lo_ns) // 1_000_000_000, windows - 1)
    present = np.bincount(np.unique(ids.astype(np.int64) * windows + window) // windows, minlength=len(first))
    active = [i for i in range(len(first)) if rates[i] > 8000 and present[i] > windows / 2]
    n = len(active)
    conns = []
    for i in active:
        r = int(fwd[first[i]])
        conns.append({
            "src": f"{int_to_ip(c['ip_src'][r])}:{int(c['sport'][r])}",
            "dst": f"{int_to_ip(c['ip_dst'][r])}:{int(c['dport'][r])}",
            "protocol": {6: "tcp", 17: "udp"}.get(int(c["proto"][r]), str(int(c["proto"][r]))),
            "throughput_bps": float(rates[i]),
            "share_of_fair_share": (float(rates[i]) / (capacity_bps / n)) if capacity_bps and n else None,
        })
    total = float(rates.sum())
    return {"connections": conns, "jain_index": jain_index([x["throughput_bps"] for x in conns]),
            "received_bps": total, "utilisation": (total / capacity_bps) if capacity_bps else None}
