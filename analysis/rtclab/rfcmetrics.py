"""The metrics RFC 8867 asks each test case to report (its section 4.1, after RFC 8868 section 4): each media flow's
rate over time against its target (the available capacity, or its fair share of it), convergence to the target,
the reaction time after a capacity step, ramp-up after a start or a pause, the time to regain the fair share after each
pause the scenario scheduled (RFC 8867 5.8), fairness among the media flows, and each flow's queuing delay and loss.
RFC 8867 and 8868 name these metrics but fix no band or window: the ones here are this project's (WINDOW_S, BAND,
PAUSE_GAP_S), recorded in every metrics.json beside the numbers. Definitions: docs/metrics.md, "RFC 8867 metrics".

A media flow is a forward 5-tuple carrying RTP (one call's bundled connection: video, audio, RTX and RTCP together),
as fairness.py counts the call among the bottleneck's competitors. Its rate is the link-layer bits it delivered to b
per window of WINDOW_S, by arrival time, windows tiling the call from its start (so they line up with the capacity
schedule's times)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import fairness
from .packets import CLS_RTP, DELIVERED, FORWARD, LOST, UNMATCHED, PacketTable
from .rundir import int_to_ip
from .scenario import Scenario

WINDOW_S = 1.0  # the rate series' window: the RFC's figures plot rates per second
BAND = 0.2  # within the target's band: |rate / target - 1| <= BAND (convergence); the crossing thresholds below
PAUSE_GAP_S = 2.0  # a flow that delivers nothing for this long is paused (RFC 8867 5.8); its next packet resumes it
ETHERNET_HEADER_BYTES = 14

# A call's pauses as the scenario scheduled them (calls[].pauses): (at_s, resume_s), by the call's id.
ScheduledPauses = dict[str, list[tuple[float, float]]]
CapacityFn = Callable[[float, float], "float | None"]  # mean forward capacity (bit/s) over [lo_s, hi_s) of the call
CompetitorsFn = Callable[[float, float], int]  # forward TCP competitors the scenario runs during [lo_s, hi_s)


@dataclass
class MediaFlow:
    name: str
    src: str
    dst: str
    t_recv_s: np.ndarray  # arrival times at b (s since call start), sorted: every packet of the 5-tuple
    nbytes: np.ndarray  # link-layer bytes of each arrival
    t_media_s: np.ndarray  # the arrivals of its RTP packets, sorted: when it is active (RTCP and STUN keep a connection
    # alive before its media start and through a pause)
    queuing_delay_ms: np.ndarray  # of its delivered packets
    packets_sent: int
    packets_lost: int


def window_rates(t_s: np.ndarray, nbytes: np.ndarray, n: int, w: float = WINDOW_S) -> np.ndarray:
    """Bits per second in windows [k w, (k + 1) w), k = 0 .. n - 1."""
    if n <= 0:
        return np.zeros(0)
    inside = (t_s >= 0) & (t_s < n * w)
    k = np.floor(t_s[inside] / w).astype(np.int64)
    return np.bincount(k, weights=nbytes[inside].astype(float), minlength=n)[:n] * 8 / w


def pauses(t_s: np.ndarray, gap_s: float = PAUSE_GAP_S) -> list[tuple[float, float]]:
    """(last packet before, first packet after) of each silence of at least gap_s between a flow's arrivals."""
    if t_s.size < 2:
        return []
    i = np.flatnonzero(np.diff(t_s) >= gap_s)
    return [(float(t_s[j]), float(t_s[j + 1])) for j in i]


def active_windows(t_s: np.ndarray, n: int, w: float = WINDOW_S, gap_s: float = PAUSE_GAP_S) -> np.ndarray:
    """The windows a flow is active in: from the one holding its first arrival to the one holding its last, less the
    windows that lie wholly inside a pause."""
    act = np.zeros(n, dtype=bool)
    if t_s.size == 0 or n <= 0:
        return act
    lo, hi = int(math.floor(t_s[0] / w)), int(math.floor(t_s[-1] / w))
    act[max(lo, 0):min(hi, n - 1) + 1] = True
    for before, after in pauses(t_s, gap_s):
        first_inside, last_inside = int(math.ceil(before / w)), int(math.floor(after / w)) - 1
        act[max(first_inside, 0):max(min(last_inside, n - 1) + 1, 0)] = False
    return act


def targets(capacity_w: np.ndarray, active: np.ndarray, tcp_w: np.ndarray) -> np.ndarray:
    """Each flow's target per window (flows x windows): its fair share, the window's mean capacity / (the media flows
    active in it + the TCP flows the scenario runs in it); the capacity itself for a flow alone. NaN where the flow
    is inactive or the capacity unknown."""
    competitors = active.sum(axis=0) + tcp_w
    with np.errstate(invalid="ignore", divide="ignore"):
        share = capacity_w / competitors
    return np.where(active, share[None, :], np.nan)


def _in_band(rate: np.ndarray, target: np.ndarray, band: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(rate / target - 1.0) <= band


def segments(target: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs [k0, k1) of consecutive windows with the same finite target (a capacity step, a flow joining or
    leaving, TCP starting or stopping each start a new one)."""
    out: list[tuple[int, int]] = []
    k0 = None
    for k in range(target.size + 1):
        same = k < target.size and np.isfinite(target[k]) and k0 is not None and \
            math.isclose(float(target[k]), float(target[k0]), rel_tol=1e-9)
        if k0 is not None and not same:
            out.append((k0, k))
            k0 = None
        if k0 is None and k < target.size and np.isfinite(target[k]):
            k0 = k
    return out


def convergence(rate: np.ndarray, target: np.ndarray, k0: int, k1: int, band: float = BAND) -> int | None:
    """The first window k of [k0, k1) from which the rate stays within the band of the target to k1; None if the
    segment's last window is outside it (never settled)."""
    ok = _in_band(rate[k0:k1], target[k0:k1], band)
    if ok.size == 0 or not ok[-1]:
        return None
    outside = np.flatnonzero(~ok)
    return k0 + (int(outside[-1]) + 1 if outside.size else 0)


def first_crossing(rate: np.ndarray, target: np.ndarray, k0: int, k1: int, down: bool,
                   band: float = BAND) -> int | None:
    """The first window of [k0, k1) whose rate is at most (1 + band) x target (down) or at least (1 - band) x target
    (up); None if none is."""
    with np.errstate(invalid="ignore"):
        hit = rate[k0:k1] <= (1 + band) * target[k0:k1] if down else rate[k0:k1] >= (1 - band) * target[k0:k1]
    i = np.flatnonzero(hit)
    return k0 + int(i[0]) if i.size else None


def capacity_changes(steps: list[list[float]] | None, duration_s: float) -> list[tuple[float, float, float]]:
    """(at_s, from bit/s, to bit/s) of each change of the capacity schedule inside the call (metrics.json
    capacity_steps; its first entry is the start and its last closes the call)."""
    if not steps:
        return []
    out = []
    for (_, before), (at, after) in zip(steps[:-1], steps[1:-1]):
        if 0 < at < duration_s and after != before:
            out.append((float(at), float(before), float(after)))
    return out


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _target_segments(r: np.ndarray, tg: np.ndarray, w: float, band: float) -> list[dict[str, Any]]:
    """Each stretch of one target: its span, the flow's mean rate in it and how long the rate took to converge
    (None: it did not)."""
    segs = []
    for k0, k1 in segments(tg):
        kc = convergence(r, tg, k0, k1, band)
        segs.append({"start_s": k0 * w, "end_s": k1 * w, "target_bps": float(tg[k0]),
                     "mean_rate_bps": float(r[k0:k1].mean()),
                     "converged_after_s": None if kc is None else (kc - k0) * w})
    return segs


def _ramp_ups(tm: np.ndarray, r: np.ndarray, tg: np.ndarray, n: int, w: float, band: float,
              gap_s: float) -> list[dict[str, Any]]:
    """Ramp-up: from the flow's first packet (tm: its media packets' times), and from each resume after a pause, to
    the end of the first window whose rate reaches (1 - band) x its target, before the flow pauses or ends."""
    ramp = []
    stops = [b for b, _ in pauses(tm, gap_s)] + [float(tm[-1]) if tm.size else 0.0]
    begins = ([float(tm[0])] if tm.size else []) + [a for _, a in pauses(tm, gap_s)]
    for j, (t_begin, t_stop) in enumerate(zip(begins, stops)):
        t_begin = max(t_begin, 0.0)  # media may start a moment before the call's recorded start
        k0, k1 = int(math.floor(t_begin / w)), min(n, int(math.floor(t_stop / w)) + 1)
        k = first_crossing(r, tg, k0, k1, down=False, band=band) if k0 < n else None
        ramp.append({"kind": "start" if j == 0 else "resume", "at_s": t_begin,
                     "ramp_up_s": None if k is None else (k + 1) * w - t_begin})
    return ramp


def _regains(flows: list[MediaFlow], rates: np.ndarray, target: np.ndarray, scheduled: ScheduledPauses, n: int,
             w: float, band: float) -> list[dict[str, Any]]:
    """Per scheduled pause of a call whose flow was found: the time from its scheduled resume to the end of the first
    window (from the one holding the resume) whose rate is at least (1 - band) x the flow's fair share, searched up to
    the window of its last RTP arrival and before the window its next scheduled pause starts in; None when no window
    is. `fair_share_bps` is the target in
    that window (the first active window after the resume when not reached; None when there is none)."""
    out: list[dict[str, Any]] = []
    index = {f.name: i for i, f in enumerate(flows)}
    for call, pauses_ in scheduled.items():
        i = index.get(call)
        for j, (at_s, resume_s) in enumerate(pauses_):
            entry: dict[str, Any] = {"call": call, "at_s": at_s, "resume_s": resume_s, "regain_fair_share_s": None,
                                     "fair_share_bps": None, "not_measured": None}
            out.append(entry)
            if i is None:
                entry["not_measured"] = "the call's media flow was not found in the captures"
                continue
            tm = flows[i].t_media_s
            # Up to the window of its last RTP arrival, and before the window the next pause starts in.
            k1 = min(n, int(math.floor(tm[-1] / w)) + 1 if tm.size else 0)
            if j + 1 < len(pauses_):
                k1 = min(k1, int(math.ceil(pauses_[j + 1][0] / w - 1e-9)))
            k0 = int(math.floor(resume_s / w))
            if k0 >= k1:
                entry["not_measured"] = "no RTP of the call arrived at b after the resume, within the call's windows"
                continue
            k = first_crossing(rates[i], target[i], k0, k1, down=False, band=band)
            if k is not None:
                entry["regain_fair_share_s"] = (k + 1) * w - resume_s
                entry["fair_share_bps"] = float(target[i][k])
            else:
                finite = np.flatnonzero(np.isfinite(target[i][k0:k1]))
                entry["fair_share_bps"] = float(target[i][k0 + int(finite[0])]) if finite.size else None
    return out


def _regain_summary(regains: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean regain over the scheduled pauses regained, and how many measured ones were not."""
    regained = [float(x["regain_fair_share_s"]) for x in regains if x["regain_fair_share_s"] is not None]
    not_reached = sum(1 for x in regains if x["regain_fair_share_s"] is None and not x["not_measured"])
    return {"regain_fair_share_s": _mean(regained), "regains_not_reached": not_reached}


def analyse(flows: list[MediaFlow], duration_s: float, capacity: CapacityFn | None, tcp_flows: CompetitorsFn,
            steps: list[list[float]] | None, w: float = WINDOW_S, band: float = BAND,
            gap_s: float = PAUSE_GAP_S, scheduled: ScheduledPauses | None = None) -> dict[str, Any]:
    """The `rfc8867` section of metrics.json from the media flows' arrivals and the scenario's capacity, TCP
    competitors and the calls' scheduled pauses."""
    n = max(0, int(math.floor(duration_s / w + 1e-9)))
    starts = np.arange(n) * w
    cap_w = np.array([(capacity(s, s + w) if capacity else None) or np.nan for s in starts], dtype=float)
    tcp_w = np.array([tcp_flows(s, s + w) for s in starts], dtype=float)
    rates = np.array([window_rates(f.t_recv_s, f.nbytes, n, w) for f in flows]).reshape(len(flows), n)
    active = np.array([active_windows(f.t_media_s, n, w, gap_s) for f in flows], dtype=bool).reshape(len(flows), n)
    target = targets(cap_w, active, tcp_w)
    changes = capacity_changes(steps, duration_s)
    out_flows: list[dict[str, Any]] = []
    ratios: list[float] = []
    conv_times: list[float] = []
    conv_flags: list[bool] = []
    ramps: list[float] = []
    reactions: dict[str, list[float]] = {"down": [], "up": []}
    step_out: list[dict[str, Any]] = [{"at_s": at, "from_bps": a, "to_bps": b, "direction": "down" if b < a else "up",
                                       "flows": []} for at, a, b in changes]
    for i, f in enumerate(flows):
        r, tg, act = rates[i], target[i], active[i]
        has_target = act & np.isfinite(tg)
        ratio = float(r[has_target].sum() / tg[has_target].sum()) if has_target.any() else None
        if ratio is not None:
            ratios.append(ratio)
        segs = _target_segments(r, tg, w, band)
        conv_flags += [s["converged_after_s"] is not None for s in segs]
        conv_times += [s["converged_after_s"] for s in segs if s["converged_after_s"] is not None]
        ramp = _ramp_ups(f.t_media_s, r, tg, n, w, band, gap_s)
        ramps += [x["ramp_up_s"] for x in ramp if x["ramp_up_s"] is not None]
        for st, (at, _, _) in zip(step_out, changes):
            k0 = int(math.ceil(at / w - 1e-9))
            nxt = [c[0] for c in changes if c[0] > at]
            k1 = min(n, int(math.ceil(nxt[0] / w - 1e-9))) if nxt else n
            if k0 >= n or not has_target[k0]:
                continue
            k = first_crossing(r, tg, k0, k1, down=st["direction"] == "down", band=band)
            t_react = None if k is None else (k + 1) * w - at
            st["flows"].append({"flow": f.name, "target_bps": float(tg[k0]), "reaction_time_s": t_react})
            if t_react is not None:
                reactions[str(st["direction"])].append(t_react)
        qd = f.queuing_delay_ms
        out_flows.append({
            "name": f.name, "src": f.src, "dst": f.dst,
            "first_s": float(f.t_media_s[0]) if f.t_media_s.size else None,
            "last_s": float(f.t_media_s[-1]) if f.t_media_s.size else None,
            "pauses": [{"from_s": a, "to_s": b} for a, b in pauses(f.t_media_s, gap_s)],
            "rate_bps": [round(float(x), 1) for x in r],
            "target_bps": [None if not np.isfinite(x) else round(float(x), 1) for x in tg],
            "rate_to_target": ratio, "segments": segs, "ramp_ups": ramp,
            "queuing_delay_ms": {"mean": float(qd.mean()) if qd.size else None,
                                 "p95": float(np.percentile(qd, 95)) if qd.size else None},
            "loss_ratio": f.packets_lost / f.packets_sent if f.packets_sent else None,
        })
    # Fairness among the media flows: Jain's index over their mean rates in the windows where all of them are active.
    together = active.all(axis=0) if len(flows) >= 2 else np.zeros(n, dtype=bool)
    regains = _regains(flows, rates, target, scheduled or {}, n, w, band)
    jain = fairness.jain_index([float(rates[i][together].mean()) for i in range(len(flows))]) \
        if together.any() else None
    return {
        "window_s": w, "band": band, "pause_gap_s": gap_s, "windows": n,
        "capacity_bps": [None if not np.isfinite(x) else float(x) for x in cap_w],
        "tcp_competitors": [int(x) for x in tcp_w],
        "flows": out_flows, "capacity_changes": step_out, "scheduled_pauses": regains,
        "media_jain_index": jain, "media_jain_windows": int(together.sum()),
        "summary": {
            "rate_to_target_ratio": _mean(ratios),
            "convergence_time_s": _mean(conv_times),
            "converged_fraction": (sum(conv_flags) / len(conv_flags)) if conv_flags else None,
            "reaction_time_down_s": _mean(reactions["down"]),
            "reaction_time_up_s": _mean(reactions["up"]),
            "reactions_not_reached": sum(1 for st in step_out for x in st["flows"] if x["reaction_time_s"] is None),
            "ramp_up_s": _mean(ramps),
            **_regain_summary(regains),
            "media_jain_index": jain,
        },
    }


def media_flows(t: PacketTable, t0_ns: int, names: dict[tuple[str, str], str] | None = None) -> list[MediaFlow]:
    """The forward 5-tuples carrying RTP, in the order of their first arrival; named by `names` ((src, dst) as
    "ip:port" -> name, e.g. the calls' ids) else "media 1", "media 2", ..."""
    c = t.cols
    fwd = np.flatnonzero(c["direction"] == FORWARD)
    if fwd.size == 0:
        return []
    u = np.uint64
    key = (c["ip_src"][fwd].astype(u) << u(32)) ^ c["ip_dst"][fwd].astype(u) ^ \
        (c["sport"][fwd].astype(u) << u(48)) ^ (c["dport"][fwd].astype(u) << u(16)) ^ c["proto"][fwd].astype(u)
    found: list[tuple[float, MediaFlow]] = []
    for k in np.unique(key):
        rows = fwd[key == k]
        if not (c["cls"][rows] == CLS_RTP).any():
            continue
        st = c["status"][rows]
        arr = rows[(st == DELIVERED) | (st == UNMATCHED)]
        arr = arr[np.argsort(c["t_recv_ns"][arr], kind="stable")]
        got = rows[st == DELIVERED]
        qd = c["queuing_delay_ns"][got]
        r0 = int(rows[0])
        src = f"{int_to_ip(c['ip_src'][r0])}:{int(c['sport'][r0])}"
        dst = f"{int_to_ip(c['ip_dst'][r0])}:{int(c['dport'][r0])}"
        t_recv_s = (c["t_recv_ns"][arr] - t0_ns) / 1e9
        flow = MediaFlow(name="", src=src, dst=dst, t_recv_s=t_recv_s,
                         nbytes=c["ip_len"][arr].astype(np.int64) + ETHERNET_HEADER_BYTES,
                         t_media_s=t_recv_s[c["cls"][arr] == CLS_RTP],
                         queuing_delay_ms=qd[qd >= 0] / 1e6,
                         packets_sent=int(((st == DELIVERED) | (st == LOST)).sum()),
                         packets_lost=int((st == LOST).sum()))
        found.append((float(flow.t_media_s[0]) if flow.t_media_s.size else math.inf, flow))
    found.sort(key=lambda x: x[0])
    out = [f for _, f in found]
    for i, f in enumerate(out):
        f.name = (names or {}).get((f.src, f.dst)) or f"media {i + 1}"
    return out


def from_run(t: PacketTable, t0_ns: int, duration_s: float, scen: Scenario | None,
             steps: list[list[float]] | None, names: dict[tuple[str, str], str] | None = None,
             trace_capacity: CapacityFn | None = None, scheduled: ScheduledPauses | None = None) -> dict[str, Any]:
    """The section for one analysed run: its media flows against the scenario's forward capacity (a trace link's:
    `trace_capacity`, its delivery opportunities per window) and TCP flows, and its calls' scheduled pauses (by call
    id, as `names` names their flows)."""
    def tcp(lo: float, hi: float) -> int:
        return fairness.expected_tcp_flows(scen, lo, hi) or 0
    capacity = trace_capacity or (scen.forward.mean_capacity_bps if scen else None)
    return analyse(media_flows(t, t0_ns, names), duration_s, capacity, tcp, steps, scheduled=scheduled)
