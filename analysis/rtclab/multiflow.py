"""Several media flows through one bottleneck (docs/multiflow.md): each forward RTP stream attributed to its call and
track, metrics per track and per call (rates at 0.15 s and 1 s windows, loss, one-way and queuing delay, frame rate
and resolution, time to converge after the flow joins, rate oscillation), and across the video flows Jain's index,
each flow's share against the share its priority asks for, and the aggregate's queue. Also the `dscp_marked`
validity check: the fraction of each call's (and track's) packets at capture-a that carry the DSCP it asked for.

A call's packets are found by its forward 5-tuple (the caller's selected ICE candidate pair); a track's by the SSRCs
its sender announced (media and RTX, from the caller's local description, manifest `calls[].tracks.a`). Runs of
format 1-2 (one call) have one call c1 whose video is track v1."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import getstats
from .fairness import ETHERNET_HEADER_BYTES, jain_index
from .metrics import windowed_rate
from .packets import CLS_RTP, DELIVERED, FORWARD, LOST, UNMATCHED, PacketTable
from .rundir import Capture, RunDir, ip_to_int
from .stats import distribution

# Chrome's bitrate_priority for RTCRtpEncodingParameters.priority (webrtc/api/rtp_parameters.h: kDefaultBitratePriority
# 1.0 for "low"; PriorityToBitratePriority in Chromium's RTCRtpSender): how its allocator weighs tracks of one
# connection against each other.
BITRATE_PRIORITY = {"very-low": 0.5, "low": 1.0, "medium": 2.0, "high": 4.0}
# The DSCP Chromium 156 puts on a stream's packets for its RTCRtpEncodingParameters.networkPriority, as measured
# here on Linux (docs/multiflow.md; the mapping of the W3C webrtc-priority spec and RFC 8837): video very-low CS1,
# low default, medium AF42, high AF41; audio very-low CS1, low default, medium and high EF.
CHROME_DSCP = {"video": {"very-low": 8, "low": 0, "medium": 36, "high": 34},
               "audio": {"very-low": 8, "low": 0, "medium": 46, "high": 46}}
CONVERGED_FRACTION = 0.8  # a flow has converged once a 1 s window reaches this fraction of its steady rate
MARKED_FRACTION_MIN = 0.99  # dscp_marked: at least this share of a flow's packets must carry the asked DSCP
SHARED_PERIOD_MIN_S = 2.0  # shares and Jain's index need the flows to overlap at least this long
WINDOWS_S = (0.15, 1.0)


@dataclass
class Track:
    id: str
    kind: str  # video or audio
    priority: str
    dscp: int  # set by nftables when not 0
    network_priority: str = "low"  # Chrome's own marking (CHROME_DSCP) when dscp is 0
    ssrcs: list[int] = field(default_factory=list)  # media then RTX; empty when the run did not record them

    @property
    def wanted_dscp(self) -> int:
        """The DSCP its RTP packets should carry: the scenario's dscp, else the one Chrome sets."""
        return self.dscp or CHROME_DSCP[self.kind].get(self.network_priority, 0)


@dataclass
class Call:
    id: str
    start_s: float
    stop_s: float | None
    dscp: int
    tracks: list[Track]
    files: dict[str, str]  # getstats file per side
    five_tuple: tuple[int, int, int, int] | None  # forward (src ip, sport, dst ip, dport) as numbers
    # (at_s, resume_s) of each pause the scenario scheduled (calls[].pauses; none in runs recorded before them)
    pauses: list[tuple[float, float]] = field(default_factory=list)
    direction: str = "both"  # the scenario's call.direction: forward, the callee sends no media
    delay_ms: float | None = None  # its own one-way propagation delay (calls[].delay_ms); None: the links'


def _pair_tuple(pair_a: Any, pair_b: Any) -> tuple[int, int, int, int] | None:
    """The forward 5-tuple from the caller's selected pair; a peer-reflexive remote (address "") from the callee's own
    local candidate."""
    if not isinstance(pair_a, dict):
        return None
    local, remote = pair_a.get("local") or {}, pair_a.get("remote") or {}
    if not remote.get("address") and isinstance(pair_b, dict):
        remote = pair_b.get("local") or {}
    try:
        return (ip_to_int(local["address"]), int(local["port"]), ip_to_int(remote["address"]), int(remote["port"]))
    except (KeyError, ValueError, TypeError):
        return None


def calls(run: RunDir) -> list[Call]:
    """The run's calls: from the manifest's `calls` (format 3), else the one call of a format 1-2 run."""
    doc = run.scenario_doc
    recorded = run.manifest.get("calls") if isinstance(run.manifest.get("calls"), list) else None
    listed = doc.get("calls")
    scenario_calls: list[Any] = listed if isinstance(listed, list) else [doc.get("call") or {}]
    out: list[Call] = []
    for i, sc in enumerate(scenario_calls):
        rec = recorded[i] if recorded and i < len(recorded) and isinstance(recorded[i], dict) else {}
        cid = sc.get("id") or f"c{i + 1}"
        pairs = rec.get("selected_pairs") or {}
        if not rec:  # format 1-2: the caller's first selected pair from events.jsonl
            for side in ("a", "b"):
                pairs[side] = next(({"local": e.get("local"), "remote": e.get("remote")} for e in run.events
                                    if e.get("event") == "selected_pair" and e.get("side") == side), None)
        reported = {t.get("id"): t for t in ((rec.get("tracks") or {}).get("a") or []) if isinstance(t, dict)}
        dscp = int(sc.get("dscp", 0) or 0)
        tracks = [Track(id=t.get("id") or f"v{k + 1}", kind="video", priority=t.get("priority") or "low",
                        dscp=dscp if t.get("dscp") is None else int(t["dscp"]),
                        network_priority=t.get("network_priority") or sc.get("network_priority") or "low",
                        ssrcs=[int(s) for s in (reported.get(t.get("id") or f"v{k + 1}") or {}).get("ssrcs") or []])
                  for k, t in enumerate(sc.get("tracks") or [{}])]
        if sc.get("audio", True):
            tracks.append(Track(id="audio", kind="audio", priority=sc.get("priority") or "low", dscp=dscp,
                                network_priority=sc.get("network_priority") or "low",
                                ssrcs=[int(s) for s in (reported.get("audio") or {}).get("ssrcs") or []]))
        files = rec.get("getstats") or {"a": "getstats-a.jsonl", "b": "getstats-b.jsonl"}
        out.append(Call(id=cid, start_s=float(sc.get("start_s", 0) or 0), stop_s=sc.get("stop_s"), dscp=dscp,
                        tracks=tracks, files=files, five_tuple=_pair_tuple(pairs.get("a"), pairs.get("b")),
                        pauses=[(float(p["at_s"]), float(p["resume_s"])) for p in sc.get("pauses") or []],
                        direction=str(sc.get("direction") or "both"),
                        delay_ms=None if sc.get("delay_ms") is None else float(sc["delay_ms"])))
    return out


def calls_active(run: RunDir, lo_s: float, hi_s: float, duration_s: float) -> int:
    """How many of the run's calls send during any part of [lo_s, hi_s) (the fairness competitors among calls)."""
    return sum(1 for c in calls(run) if _active(c, duration_s)[0] < hi_s and _active(c, duration_s)[1] > lo_s)


def recorded_kinds(run: RunDir) -> dict[int, str]:
    """Kinds of the SSRCs each call's caller announced (media, then RTX): what names the streams of calls whose
    getStats the single-call reader does not read."""
    out: dict[int, str] = {}
    for call in calls(run):
        for tr in call.tracks:
            for i, ssrc in enumerate(tr.ssrcs):
                out[ssrc] = tr.kind if i == 0 else "rtx"
    return out


def _call_rows(t: PacketTable, call: Call) -> np.ndarray:
    """Forward rows of the call's 5-tuple (every class: RTP, RTCP, STUN, DTLS)."""
    if call.five_tuple is None:
        return np.zeros(0, np.int64)
    c = t.cols
    src, sport, dst, dport = call.five_tuple
    return np.flatnonzero((c["direction"] == FORWARD) & (c["ip_src"] == src) & (c["sport"] == sport) &
                          (c["ip_dst"] == dst) & (c["dport"] == dport))


def _fill_ssrcs(t: PacketTable, call: Call, rows: np.ndarray, ssrc_kinds: dict[int, str]) -> None:
    """A run that did not record its tracks' SSRCs (format 1-2, one video track): the call's RTP streams by kind."""
    if any(tr.ssrcs for tr in call.tracks):
        return
    rtp = rows[t.cols["cls"][rows] == CLS_RTP]
    for ssrc in (int(s) for s in np.unique(t.cols["ssrc"][rtp])):
        # Without getStats an SSRC's kind is unknown: it counts as the one video track's.
        kind = "audio" if ssrc_kinds.get(ssrc) == "audio" else "video"
        target = next((tr for tr in call.tracks if tr.kind == kind), None)
        if target is not None:
            target.ssrcs.append(ssrc)


def _active(call: Call, duration_s: float) -> tuple[float, float]:
    stop = duration_s if call.stop_s is None else min(float(call.stop_s), duration_s)
    return call.start_s, stop


def _rates(t: PacketTable, rows: np.ndarray, lo_ns: int, hi_ns: int, window_s: float) -> np.ndarray:
    """Received link-layer bit rate of `rows` in consecutive windows over [lo, hi)."""
    c = t.cols
    arrived = rows[((c["status"][rows] == DELIVERED) | (c["status"][rows] == UNMATCHED))]
    tr = c["t_recv_ns"][arrived]
    keep = (tr >= lo_ns) & (tr < hi_ns)
    order = np.argsort(tr[keep], kind="stable")
    return windowed_rate(tr[keep][order], (c["ip_len"][arrived][keep][order].astype(np.int64) + ETHERNET_HEADER_BYTES),
                         lo_ns, hi_ns, window_s)


def convergence(rates_1s: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """(time to converge s, steady rate, coefficient of variation): the steady rate is the mean of the 1 s windows of
    the second half of the flow's active period; it has converged at the end of the first window that reaches
    CONVERGED_FRACTION of it; the CV is sd / mean of those second-half windows."""
    if rates_1s.size < 2:
        return None, None, None
    steady = rates_1s[rates_1s.size // 2:]
    mean = float(steady.mean())
    if mean <= 0:
        return None, 0.0, None
    reached = np.flatnonzero(rates_1s >= CONVERGED_FRACTION * mean)
    return (float(reached[0] + 1) if reached.size else None), mean, float(steady.std() / mean)


def _frames(side: getstats.SideStats | None, ssrc: int | None, lo_s: float, hi_s: float, t0_s: float) -> dict[str, Any]:
    """The receiver's frames per second and resolution for one video SSRC over [lo_s, hi_s) since call start (t0_s,
    epoch seconds)."""
    objs = [] if side is None or ssrc is None else \
        [o for o in side.inbound.get(ssrc, []) if lo_s <= o["_t"] - t0_s < hi_s]
    fps = np.array([o["framesPerSecond"] for o in objs if isinstance(o.get("framesPerSecond"), (int, float))], float)
    heights = np.array([o["frameHeight"] for o in objs if isinstance(o.get("frameHeight"), (int, float))], float)
    widths = np.array([o["frameWidth"] for o in objs if isinstance(o.get("frameWidth"), (int, float))], float)
    return {"fps_mean": float(fps.mean()) if fps.size else None,
            "frame_height_median": float(np.median(heights)) if heights.size else None,
            "frame_width_median": float(np.median(widths)) if widths.size else None}


def _track_metrics(t: PacketTable, rows: np.ndarray, lo_ns: int, hi_ns: int) -> dict[str, Any]:
    c = t.cols
    t_send = c["t_send_ns"][rows]
    sent = rows[(t_send >= lo_ns) & (t_send < hi_ns) & ((c["status"][rows] == DELIVERED) | (c["status"][rows] == LOST))]
    lost = int((c["status"][sent] == LOST).sum())
    got = sent[c["status"][sent] == DELIVERED]
    qd = c["queuing_delay_ns"][got]
    out: dict[str, Any] = {"packets_sent": int(sent.size), "packets_lost": lost,
                           "loss_ratio": (lost / sent.size) if sent.size else None,
                           "owd_ms": distribution(c["owd_ns"][got] / 1e6),
                           "queuing_delay_ms": distribution(qd[qd >= 0] / 1e6), "rate_windows": {}}
    for w in WINDOWS_S:
        r = _rates(t, rows, lo_ns, hi_ns, w)
        mean = float(r.mean()) if r.size else None
        out["rate_windows"][f"{w:g}s"] = {"mean_bps": mean, "sd_bps": float(r.std()) if r.size else None,
                                          "cv": (float(r.std()) / mean) if mean else None, "count": int(r.size)}
    dur_s = (hi_ns - lo_ns) / 1e9
    arrived = rows[(c["status"][rows] == DELIVERED) | (c["status"][rows] == UNMATCHED)]
    tr = c["t_recv_ns"][arrived]
    inside = arrived[(tr >= lo_ns) & (tr < hi_ns)]
    frame_bytes = c["ip_len"][inside].astype(np.int64) + ETHERNET_HEADER_BYTES
    out["rate_bps"] = (float(frame_bytes.sum()) * 8 / dur_s) if dur_s > 0 else None
    return out


def analyse(run: RunDir, t: PacketTable, t0_ns: int, duration_s: float, ssrc_kinds: dict[int, str],
            capacity_bps: float | None) -> dict[str, Any]:
    """Per call and track metrics, the flows' shares and the aggregate; `flow_owner` maps ssrc -> (call, track)."""
    out_calls: list[dict[str, Any]] = []
    video: list[tuple[Call, Track, np.ndarray]] = []
    owner: dict[int, tuple[str, str]] = {}
    all_media = []
    for call in calls(run):
        rows = _call_rows(t, call)
        _fill_ssrcs(t, call, rows, ssrc_kinds)
        lo_s, hi_s = _active(call, duration_s)
        lo_ns, hi_ns = t0_ns + int(lo_s * 1e9), t0_ns + int(hi_s * 1e9)
        callee = getstats.read_side(run.file(call.files.get("b", "")), []) if call.files.get("b") else None
        tracks_out = []
        for tr in call.tracks:
            trows = rows[np.isin(t.cols["ssrc"][rows], np.array(tr.ssrcs, dtype=np.int64)) &
                         (t.cols["cls"][rows] == CLS_RTP)] if tr.ssrcs else np.zeros(0, np.int64)
            for s in tr.ssrcs:
                owner[s] = (call.id, tr.id)
            m = _track_metrics(t, trows, lo_ns, hi_ns)
            conv, steady, cv = convergence(_rates(t, trows, lo_ns, hi_ns, 1.0))
            entry = {"id": tr.id, "kind": tr.kind, "priority": tr.priority,
                     "bitrate_priority": BITRATE_PRIORITY.get(tr.priority),
                     "dscp": tr.dscp, "ssrcs": tr.ssrcs, **m, "steady_rate_bps": steady,
                     "convergence_s": conv, "rate_cv": cv}
            if tr.kind == "video":
                entry.update(_frames(callee, tr.ssrcs[0] if tr.ssrcs else None, lo_s, hi_s, t0_ns / 1e9))
                video.append((call, tr, trows))
            tracks_out.append(entry)
            all_media.append(trows)
        call_m = _track_metrics(t, rows, lo_ns, hi_ns)
        out_calls.append({"id": call.id, "start_s": lo_s, "stop_s": hi_s, "dscp": call.dscp, "delay_ms": call.delay_ms,
                          "five_tuple_found": call.five_tuple is not None, **call_m, "tracks": tracks_out})
    return {"calls": out_calls, "shares": shares(t, video, t0_ns, duration_s),
            "aggregate": _aggregate(t, all_media, t0_ns, duration_s, capacity_bps),
            "owner": {str(k): list(v) for k, v in owner.items()}}


def shares(t: PacketTable, video: list[tuple[Call, Track, np.ndarray]], t0_ns: int,
           duration_s: float) -> dict[str, Any]:
    """Over the period every video flow is active: each flow's rate, the share its priority asks for (its bitrate
    priority over the sum of all flows'), the share it got (its rate over the sum of rates), their ratio, and Jain's
    index over the flows' rates."""
    if not video:
        return {"start_s": None, "end_s": None, "flows": [], "jain_index": None}
    lo_s = max(_active(c, duration_s)[0] for c, _, _ in video)
    hi_s = min(_active(c, duration_s)[1] for c, _, _ in video)
    if hi_s - lo_s < SHARED_PERIOD_MIN_S:
        return {"start_s": lo_s, "end_s": hi_s, "flows": [], "jain_index": None,
                "note": f"the video flows overlap for less than {SHARED_PERIOD_MIN_S:g} s"}
    lo_ns, hi_ns = t0_ns + int(lo_s * 1e9), t0_ns + int(hi_s * 1e9)
    rates = [_track_metrics(t, rows, lo_ns, hi_ns)["rate_bps"] or 0.0 for _, _, rows in video]
    weights = [BITRATE_PRIORITY.get(tr.priority, 1.0) for _, tr, _ in video]
    total_rate, total_weight = sum(rates), sum(weights)
    flows = []
    for (call, tr, _), rate, w in zip(video, rates, weights):
        asked = w / total_weight
        got = rate / total_rate if total_rate > 0 else None
        flows.append({"call": call.id, "track": tr.id, "priority": tr.priority, "rate_bps": rate,
                      "asked_share": asked, "achieved_share": got,
                      "achieved_over_asked": (got / asked) if got is not None else None})
    return {"start_s": lo_s, "end_s": hi_s, "flows": flows, "jain_index": jain_index(rates)}


def _aggregate(t: PacketTable, media: list[np.ndarray], t0_ns: int, duration_s: float,
               capacity_bps: float | None) -> dict[str, Any]:
    """Every attributed media packet of every call over the whole call: its queue, loss and rate."""
    rows = np.concatenate(media) if media else np.zeros(0, np.int64)
    m = _track_metrics(t, rows, t0_ns, t0_ns + int(duration_s * 1e9))
    m["utilisation"] = (m["rate_bps"] / capacity_bps) if capacity_bps and m["rate_bps"] is not None else None
    return m


def dscp_marked(run: RunDir, cap_a: Capture | None, t0_ns: int) -> dict[str, Any] | None:
    """The validity check `dscp_marked`: of the packets that left a after call start (capture-a) the fraction with
    the DSCP the scenario asked for: every packet of a call's forward 5-tuple for a call with a `dscp` (nftables),
    the RTP packets of a track for a track whose DSCP differs from its call's (its own `dscp`, or the one Chrome sets
    for its `network_priority`). None when nothing asks for a DSCP other than 0."""
    cs = calls(run)
    wanted: list[tuple[Call, str, int, list[int] | None]] = []  # (call, name, dscp, SSRCs or None: the whole call)
    for call in cs:
        if call.dscp:
            wanted.append((call, call.id, call.dscp, None))
        for tr in call.tracks:
            if tr.wanted_dscp != call.dscp:
                wanted.append((call, f"{call.id}/{tr.id}", tr.wanted_dscp, tr.ssrcs))
    if not wanted:
        return None
    if cap_a is None:
        return {"name": "dscp_marked", "ok": False, "detail": "capture-a unreadable: the DSCP on the wire is unknown"}
    c = cap_a.cols
    dscp = c["tos"] >> 2
    parts, ok = [], True
    for call, name, want, ssrcs in wanted:
        if call.five_tuple is None:
            parts.append(f"{name}: no selected candidate pair recorded, its packets cannot be found")
            ok = False
            continue
        src, sport, dst, dport = call.five_tuple
        rows = np.flatnonzero((c["ip_src"] == src) & (c["sport"] == sport) & (c["ip_dst"] == dst) &
                              (c["dport"] == dport) & (c["ts_ns"] >= t0_ns))
        is_rtp = c["cls"][rows] == CLS_RTP
        if ssrcs is None:  # the whole call but the RTP of tracks asking for another DSCP
            others = np.array([s for tr in call.tracks if tr.wanted_dscp != call.dscp for s in tr.ssrcs], np.int64)
            g = rows[~(is_rtp & np.isin(c["ssrc"][rows], others))]
        else:
            g = rows[is_rtp & np.isin(c["ssrc"][rows], np.array(ssrcs, np.int64))]
        n = int(g.size)
        if n == 0 and ssrcs is None and any(w[0] is call and w[3] is not None for w in wanted):
            parts.append(f"{name}: no packets besides its tracks' own")  # all of them checked per track
            continue
        marked = int((dscp[g] == want).sum())
        frac = marked / n if n else 0.0
        ok &= n > 0 and frac >= MARKED_FRACTION_MIN
        parts.append(f"{name}: {marked}/{n} packets ({frac * 100:.1f}%) carried DSCP {want}")
    return {"name": "dscp_marked", "ok": bool(ok),
            "detail": "; ".join(parts)
            + f" (at least {MARKED_FRACTION_MIN * 100:g}% needed, at capture-a after call start)"}


def run_shares(metrics_file: Path) -> tuple[bool, dict[str, Any]] | str:
    """(valid, multiflow.shares) of one analysed run, or why it has none: no metrics.json, unreadable, no shares."""
    try:
        m = json.loads(metrics_file.read_text().replace("NaN", "null"))
    except FileNotFoundError:
        return "no metrics.json (not analysed)"
    except (OSError, ValueError) as e:
        return f"metrics.json unreadable: {type(e).__name__}: {e}"
    if not isinstance(m, dict):
        return "metrics.json is no JSON object"
    sh = (m.get("multiflow") or {}).get("shares") or {}
    if not sh.get("flows"):
        return "no priority shares in metrics.json" + (f" ({sh['note']})" if sh.get("note") else "")
    return (m.get("validity") or {}).get("valid") is True, sh


def pooled_shares(shares: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per flow (call/track) over several runs' shares: its priority, asked share and the achieved shares."""
    flows: dict[str, dict[str, Any]] = {}
    for sh in shares:
        for f in sh["flows"]:
            e = flows.setdefault(f"{f['call']}/{f['track']}", {"priority": f["priority"],
                                                               "asked_share": f["asked_share"],
                                                               "achieved": []})
            if f["achieved_share"] is not None:
                e["achieved"].append(float(f["achieved_share"]))
    return flows


def study_shares(out: Path) -> list[dict[str, Any]]:
    """Each study point's priority shares (a study directory: runs/<point>/<rep>-<attempt>/metrics.json): per flow
    (call/track) its asked share and its achieved share averaged over the point's valid runs (all its analysed runs
    when none is valid, said so). A run without shares is left out and named with why (`left_out`)."""
    points = []
    for point_dir in sorted(p for p in (out / "runs").glob("*") if p.is_dir()):
        runs: list[tuple[bool, dict[str, Any]]] = []
        left_out: list[dict[str, str]] = []
        for run_dir in sorted(d for d in point_dir.iterdir() if d.is_dir()):
            got = run_shares(run_dir / "metrics.json")
            if isinstance(got, str):
                left_out.append({"dir": f"runs/{point_dir.name}/{run_dir.name}", "reason": got})
            else:
                runs.append(got)
        chosen = [sh for valid, sh in runs if valid] or [sh for _, sh in runs]
        flows = pooled_shares(chosen)
        jains = [sh["jain_index"] for sh in chosen if sh.get("jain_index") is not None]
        points.append({"point": point_dir.name, "runs": len(chosen), "valid_runs": sum(valid for valid, _ in runs),
                       "jain_index": float(np.mean(jains)) if jains else None,
                       "flows": [{"flow": k, "priority": v["priority"], "asked_share": v["asked_share"],
                                  "achieved_share": float(np.mean(v["achieved"])) if v["achieved"] else None}
                                 for k, v in flows.items()],
                       "left_out": left_out})
    return points


def left_out_lines(points: list[dict[str, Any]]) -> list[str]:
    """The runs no point's shares include, one line each with why."""
    left_out = [x for p in points for x in p["left_out"]]
    if not left_out:
        return []
    return [f"{len(left_out)} run(s) left out of the shares:"] + [f"  {x['dir']}: {x['reason']}" for x in left_out]


def shares_page(points: list[dict[str, Any]], title: str) -> str:
    """An HTML page: asked against achieved share per flow and point (grouped bars) and the table."""
    from html import escape

    from . import page
    x = [f"{p['point']} {f['flow']}" for p in points for f in p["flows"]]
    fig = {"data": [{"type": "bar", "name": "asked (priority)", "x": x,
                     "y": [f["asked_share"] for p in points for f in p["flows"]]},
                    {"type": "bar", "name": "achieved", "x": x,
                     "y": [f["achieved_share"] for p in points for f in p["flows"]]}],
           "layout": {"barmode": "group", "height": 460, "yaxis": {"title": {"text": "share of the flows' rate"}},
                      "margin": {"b": 160}, "title": {"text": title}}}

    def num(v: float | None, digits: int) -> str:
        return "-" if v is None else f"{v:.{digits}f}"
    rows = "".join(f"<tr><td>{escape(p['point'])}</td><td>{escape(f['flow'])}</td><td>{escape(f['priority'])}</td>"
                   f"<td>{num(f['asked_share'], 2)}</td><td>{num(f['achieved_share'], 2)}</td>"
                   f"<td>{p['valid_runs']}/{p['runs']}</td><td>{num(p['jain_index'], 3)}</td></tr>"
                   for p in points for f in p["flows"])
    body = ("<p>Each flow's share of the video flows' summed rate while all are active, against the share its "
            "RTCRtpEncodingParameters.priority asks for (docs/multiflow.md), averaged over each point's valid runs.</p>"
            '<div class="chart" id="shares"></div><table><tr><th>point</th><th>flow</th><th>priority</th>'
            f"<th>asked</th><th>achieved</th><th>valid runs</th><th>Jain's index</th></tr>{rows}</table>")
    lines = left_out_lines(points)
    if lines:
        body += f"<p>{escape(lines[0])}</p><ul>" + "".join(f"<li>{escape(x.strip())}</li>" for x in lines[1:]) + "</ul>"
    return page.render(title, body, [("shares", fig)])


def main(argv: list[str] | None = None) -> int:
    """`python -m rtclab.multiflow shares STUDY_DIR`: each point's asked and achieved priority shares, printed and
    written to STUDY_DIR/shares.html."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "shares":
        print("usage: python -m rtclab.multiflow shares STUDY_DIR", file=sys.stderr)
        return 2
    out = Path(args[1])
    if not (out / "runs").is_dir():
        print(f"{out} is not a study directory (no runs/ in it)", file=sys.stderr)
        return 2
    points = study_shares(out)
    for p in points:
        for f in p["flows"]:
            got = "-" if f["achieved_share"] is None else f"{f['achieved_share']:.2f}"
            print(f"{p['point']:32s} {f['flow']:10s} {f['priority']:9s} asked {f['asked_share']:.2f} "
                  f"achieved {got}  ({p['valid_runs']}/{p['runs']} valid)")
    for line in left_out_lines(points):
        print(line)
    (out / "shares.html").write_text(shares_page(points, f"priority shares: {out.name}"), encoding="utf-8")
    print(f"wrote {out / 'shares.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
