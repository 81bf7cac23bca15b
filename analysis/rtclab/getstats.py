"""The browsers' own view, from getstats-a.jsonl and getstats-b.jsonl (standard RTCStats objects): per-interval send
and receive bitrates, the congestion controller's target and available outgoing bitrate, RTCP round-trip times and
the queuing delay Tq = RTT - RTTm (Carlucci et al. 2016; RTTm the configured round-trip propagation delay, and beside
it RTT minus the smallest RTT sample), frame rate, resolution, freezes, jitter buffer delay,
NACK/PLI counts and the quality limitation reason. Series are lists of (t seconds since call start, value)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .rundir import RunDir, read_jsonl
from .stats import distribution, percentiles

TQ_PERCENTILES = (5, 25, 50, 75, 95)


@dataclass
class SideStats:
    """Everything read from one side's file, keyed by the RTP stream's SSRC."""
    samples: int = 0
    outbound: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # ssrc -> stats objects over time
    inbound: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    remote_inbound: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pair: list[dict[str, Any]] = field(default_factory=list)  # the selected candidate pair over time
    codecs: dict[str, dict[str, Any]] = field(default_factory=dict)  # codec id -> codec stats
    untimed: int = 0  # stats objects left out: neither their line's time nor a timestamp of their own

    def first_time(self) -> float | None:
        """The earliest time (epoch s) of a stats object read, None without one."""
        times = [o["_t"] for objs in (*self.outbound.values(), *self.inbound.values(),
                                      *self.remote_inbound.values(), self.pair) for o in objs]
        return min(times, default=None)


def _selected_pair(report: list[dict[str, Any]]) -> dict[str, Any] | None:
    by_id = {o.get("id"): o for o in report}
    for o in report:
        if o.get("type") == "transport" and o.get("selectedCandidatePairId") in by_id:
            return by_id[o["selectedCandidatePairId"]]
    for o in report:
        if o.get("type") == "candidate-pair" and o.get("nominated") and o.get("state") == "succeeded":
            return o
    return None


def read_side(path: Path, problems: list[str]) -> SideStats | None:
    if not path.exists():
        problems.append(f"{path.name} missing: the browser's view of that side (bitrates, RTT, fps, getStats loss) is "
                        "not available")
        return None
    side = SideStats()
    for line in read_jsonl(path, problems):
        report = line.get("report")
        if not isinstance(report, list):
            continue
        side.samples += 1
        t = line.get("t")
        for o in report:
            if not isinstance(o, dict):
                continue
            typ = o.get("type")
            own = o.get("timestamp")  # ms
            when = t if isinstance(t, (int, float)) else own / 1000 if isinstance(own, (int, float)) else None
            if when is None:
                side.untimed += 1  # without a time it belongs nowhere in a series: left out, counted below
                continue
            o = dict(o, _t=when)
            if typ in ("outbound-rtp", "inbound-rtp", "remote-inbound-rtp") and isinstance(o.get("ssrc"), int):
                target = {"outbound-rtp": side.outbound, "inbound-rtp": side.inbound,
                          "remote-inbound-rtp": side.remote_inbound}[typ]
                target.setdefault(o["ssrc"], []).append(o)
            elif typ == "codec" and "payloadType" in o:
                side.codecs[o.get("id", "")] = o
        pair = _selected_pair(report)
        if pair is not None and isinstance(t, (int, float)):
            side.pair.append(dict(pair, _t=t))
    if side.samples == 0:
        problems.append(f"{path.name} holds no getStats sample")
    if side.untimed:
        problems.append(f"{path.name}: {side.untimed} stats object(s) with no time (neither the line's t nor a "
                        "timestamp) left out")
    return side


def _rate_series(objs: list[dict[str, Any]], counter: str, t0: float) -> list[tuple[float, float]]:
    """Bits per second between consecutive samples of a cumulative byte counter."""
    out = []
    prev = None
    for o in objs:
        v = o.get(counter)
        if not isinstance(v, (int, float)):
            continue
        if prev is not None and o["_t"] > prev[0] and v >= prev[1]:
            out.append((o["_t"] - t0, (v - prev[1]) * 8 / (o["_t"] - prev[0])))
        prev = (o["_t"], v)
    return out


def _series(objs: list[dict[str, Any]], key: str, t0: float, scale: float = 1.0) -> list[tuple[float, float]]:
    return [(o["_t"] - t0, o[key] * scale) for o in objs if isinstance(o.get(key), (int, float))]


def _last(objs: list[dict[str, Any]], key: str) -> Any:
    for o in reversed(objs):
        if key in o:
            return o[key]
    return None


def _summary(series: list[tuple[float, float]]) -> dict[str, float | None]:
    v = np.array([x[1] for x in series], dtype=float)
    return {"mean": float(v.mean()) if v.size else None, "sd": float(v.std()) if v.size else None}


def _rtp_streams(sides: dict[str, SideStats | None]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """Every side's outbound-rtp and inbound-rtp streams: (SSRC, its objects over the samples)."""
    for side in sides.values():
        if side is not None:
            for group in (side.outbound, side.inbound):
                yield from group.items()


def kinds(sides: dict[str, SideStats | None]) -> tuple[dict[int, str], dict[int, str], dict[int, float]]:
    """SSRC -> kind ('video', 'audio', 'rtx', 'fec'), payload type -> kind, payload type -> RTP clock rate."""
    ssrc_kinds: dict[int, str] = {}
    pt_kinds: dict[int, str] = {}
    clocks: dict[int, float] = {}
    for ssrc, objs in _rtp_streams(sides):
        kind = _last(objs, "kind")
        if kind in ("video", "audio"):
            ssrc_kinds[ssrc] = kind
        for extra, label in (("rtxSsrc", "rtx"), ("fecSsrc", "fec")):
            if isinstance(_last(objs, extra), int):
                ssrc_kinds[_last(objs, extra)] = label
    for side in sides.values():
        if side is None:
            continue
        for codec in side.codecs.values():
            mime = str(codec.get("mimeType", "")).lower()
            pt = codec["payloadType"]
            if mime.endswith("/rtx"):
                pt_kinds[pt] = "rtx"
            elif mime.endswith(("/ulpfec", "/flexfec-03")):
                pt_kinds[pt] = "fec"
            elif mime.startswith(("video/", "audio/")):
                pt_kinds[pt] = mime.split("/")[0]
            if isinstance(codec.get("clockRate"), (int, float)):
                clocks[pt] = float(codec["clockRate"])
    return ssrc_kinds, pt_kinds, clocks


def rtx_ssrcs(sides: dict[str, SideStats | None]) -> dict[int, int]:
    """Media SSRC -> the SSRC of its RTX stream (RFC 4588), as the sender's outbound-rtp and the receiver's
    inbound-rtp `rtxSsrc` name it."""
    out: dict[int, int] = {}
    for ssrc, objs in _rtp_streams(sides):
        rtx = _last(objs, "rtxSsrc")
        if isinstance(rtx, int):
            out[ssrc] = rtx
    return out


def _add_sent_streams(d: dict[str, Any], sender: SideStats, run: RunDir, t0: float, rttm_ms: float | None) -> None:
    """The direction's streams as their sender saw them (outbound-rtp and the receiver's reports back: RTT, Tq), and
    their series, added to d."""
    for ssrc, objs in sender.outbound.items():
        kind = _last(objs, "kind")
        send_rate = _rate_series(objs, "bytesSent", t0)
        target = _series(objs, "targetBitrate", t0)
        fps = _series(objs, "framesPerSecond", t0)
        height = _series(objs, "frameHeight", t0)
        reasons: dict[str, int] = {}
        for o in objs:
            r = o.get("qualityLimitationReason")
            if isinstance(r, str):
                reasons[r] = reasons.get(r, 0) + 1
        rtt = _rtt_samples(sender.remote_inbound.get(ssrc, []), t0)
        rtt_min = min((v for _, v in rtt), default=None)
        # Carlucci et al.'s Tq = RTT - RTTm, RTTm the configured round-trip propagation delay; beside it the
        # older baseline, the smallest RTT sample (which holds any standing queue the call never saw drain).
        tq = [(t, v - run.scenario.round_trip_propagation_ms_at(t)) for t, v in rtt] if run.scenario else []
        tq_vs_min = [(t, v - rtt_min) for t, v in rtt] if rtt_min is not None else []
        stream = {
            "ssrc": ssrc, "kind": kind,
            "sent_bitrate_bps": _summary(send_rate),
            "target_bitrate_bps": _summary(target),
            "sent_fps": _summary(fps),
            "sent_frame_height": _summary(height),
            "quality_limitation": reasons,
            "quality_limitation_durations_s": _last(objs, "qualityLimitationDurations"),
            "nack_received": _last(objs, "nackCount"), "pli_received": _last(objs, "pliCount"),
            "rtt_ms": distribution(np.array([v for _, v in rtt])) if rtt else None,
            "rtt_min_ms": rtt_min,
            "rttm_ms": rttm_ms,
            "tq_ms": _tq(tq),
            "tq_vs_min_rtt_ms": _tq(tq_vs_min),
            "packets_sent": _last(objs, "packetsSent"),
            "remote_packets_lost": _last(sender.remote_inbound.get(ssrc, []), "packetsLost"),
        }
        d["streams"].append(stream)
        d["series"][f"sent_bitrate_bps:{kind}:{ssrc}"] = send_rate
        if target:
            d["series"][f"target_bitrate_bps:{kind}:{ssrc}"] = target
        if rtt:
            d["series"][f"rtt_ms:{kind}:{ssrc}"] = rtt
            if tq:
                d["series"][f"tq_ms:{kind}:{ssrc}"] = tq
            d["series"][f"tq_vs_min_rtt_ms:{kind}:{ssrc}"] = tq_vs_min
        if fps:
            d["series"][f"sent_fps:{kind}:{ssrc}"] = fps


def _add_received_streams(d: dict[str, Any], receiver: SideStats, t0: float) -> None:
    """The direction's streams as their receiver saw them (inbound-rtp), merged into d's streams by SSRC (a stream
    its sender did not report is added), and their series."""
    for ssrc, objs in receiver.inbound.items():
        kind = _last(objs, "kind")
        recv_rate = _rate_series(objs, "bytesReceived", t0)
        fps = _series(objs, "framesPerSecond", t0)
        width, height = _series(objs, "frameWidth", t0), _series(objs, "frameHeight", t0)
        jb = _jitter_buffer_ms(objs, t0)
        match = next((s for s in d["streams"] if s["ssrc"] == ssrc), None)
        rx = {
            "received_bitrate_bps": _summary(recv_rate),
            "received_fps": _summary(fps),
            "frame_width": _summary(width), "frame_height": _summary(height),
            "freeze_count": _last(objs, "freezeCount"),
            "total_freezes_duration_s": _last(objs, "totalFreezesDuration"),
            "jitter_buffer_delay_ms": _summary(jb),
            "nack_sent": _last(objs, "nackCount"), "pli_sent": _last(objs, "pliCount"),
            "packets_lost": _last(objs, "packetsLost"), "packets_received": _last(objs, "packetsReceived"),
            "jitter_ms": _summary(_series(objs, "jitter", t0, 1000.0)),
            "jitter_ms_last": (_last(objs, "jitter") or 0) * 1000
            if _last(objs, "jitter") is not None else None,
        }
        if match is None:
            match = {"ssrc": ssrc, "kind": kind}
            d["streams"].append(match)
        match.update(rx)
        d["series"][f"received_bitrate_bps:{kind}:{ssrc}"] = recv_rate
        if fps:
            d["series"][f"received_fps:{kind}:{ssrc}"] = fps
        if height:
            d["series"][f"frame_height:{kind}:{ssrc}"] = height
        if jb:
            d["series"][f"jitter_buffer_delay_ms:{kind}:{ssrc}"] = jb


def analyse(run: RunDir, t0: float) -> dict[str, Any]:
    """getStats summary and time series per direction ('forward': a sends, b receives)."""
    sides = {s: read_side(run.file(f"getstats-{s}.jsonl"), run.problems) for s in ("a", "b")}
    rttm_ms = run.scenario.round_trip_propagation_ms if run.scenario else None
    out: dict[str, Any] = {"available": {s: v is not None and v.samples > 0 for s, v in sides.items()},
                           "rttm_ms": rttm_ms, "directions": {}}
    for direction, snd, rcv in (("forward", "a", "b"), ("reverse", "b", "a")):
        sender, receiver = sides[snd], sides[rcv]
        d: dict[str, Any] = {"streams": [], "series": {}}
        if sender is not None:
            _add_sent_streams(d, sender, run, t0, rttm_ms)
            avail = _series(sender.pair, "availableOutgoingBitrate", t0)
            d["series"]["available_outgoing_bitrate_bps"] = avail
            d["available_outgoing_bitrate_bps"] = _summary(avail)
            pair_rtt = _series(sender.pair, "currentRoundTripTime", t0, 1000.0)
            d["series"]["candidate_pair_rtt_ms"] = pair_rtt
        if receiver is not None:
            _add_received_streams(d, receiver, t0)
        out["directions"][direction] = d
    out["_sides"] = sides  # for flow classification; removed before JSON output
    return out


def _rtt_samples(objs: list[dict[str, Any]], t0: float) -> list[tuple[float, float]]:
    """One sample per new RTCP RTT measurement (roundTripTimeMeasurements grows), in ms."""
    out = []
    last_count = None
    for o in objs:
        rtt = o.get("roundTripTime")
        count = o.get("roundTripTimeMeasurements")
        if not isinstance(rtt, (int, float)):
            continue
        if count is not None and count == last_count:
            continue
        last_count = count
        out.append((o["_t"] - t0, rtt * 1000.0))
    return out


def _tq(tq: list[tuple[float, float]]) -> dict[str, float | None] | None:
    if not tq:
        return None
    v = np.array([x[1] for x in tq])
    out: dict[str, float | None] = {"mean": float(v.mean()), "sd": float(v.std())}
    out.update({f"p{p}": x for p, x in zip(TQ_PERCENTILES, percentiles(v, TQ_PERCENTILES) or [])})
    return out


def _jitter_buffer_ms(objs: list[dict[str, Any]], t0: float) -> list[tuple[float, float]]:
    """Mean jitter buffer delay of the frames emitted in each interval (delta delay / delta count)."""
    out = []
    prev = None
    for o in objs:
        d, n = o.get("jitterBufferDelay"), o.get("jitterBufferEmittedCount")
        if not isinstance(d, (int, float)) or not isinstance(n, (int, float)):
            continue
        if prev is not None and n > prev[1]:
            out.append((o["_t"] - t0, (d - prev[0]) / (n - prev[1]) * 1000.0))
        prev = (d, n)
    return out


def per_phase(gs: dict[str, Any], phases: list[tuple[str, float, float]]) -> None:
    """Adds `phases` to each direction: per phase and stream, the getStats series' summaries over [start, end)
    seconds since call start (Tq with its percentiles as over the whole call; its baselines stay the configured RTTm
    and the whole call's smallest RTT)."""
    for d in gs.get("directions", {}).values():
        out: dict[str, dict[str, Any]] = {}
        for name, lo, hi in phases:
            entry: dict[str, Any] = {}
            for key, pts in d.get("series", {}).items():
                inside = [p for p in pts if lo <= p[0] < hi]
                metric = key.split(":")[0]
                label = ":".join(key.split(":")[1:]) or "all"
                if metric in ("tq_ms", "tq_vs_min_rtt_ms"):
                    entry.setdefault(label, {})[metric] = _tq(inside)
                else:
                    entry.setdefault(label, {})[metric] = _summary(inside)
            out[name] = entry
        d["phases"] = out
