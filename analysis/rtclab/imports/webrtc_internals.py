"""chrome://webrtc-internals' dump ("Create a WebRTC-Internals dump", saved as a .txt or gzipped) read into each peer
connection's getStats samples (docs/export.md, "Importing getStats dumps").

The dump is one JSON object: `PeerConnections` maps each peer connection's id (`<pid>-<lid>`) to its `url`,
`updateLog` and `stats`. `stats` holds one time series per stats object and attribute, keyed `<stats id>-<attribute>`:
`{"startTime", "endTime", "statsType", "values"}`, `values` a JSON string of the attribute's values, one per getStats
call the page made (once a second) while the object existed (Chrome's TimelineDataSeries.toJSON: the series keeps
its last 1000 points). Only the first and last point's times are kept, so a point's time is laid evenly between
them. Newer Chrome writes the times as milliseconds since the Unix epoch, older Chrome as ISO dates (JavaScript
Dates); older dumps may lack `statsType` (the type is then read from the id's prefix, RTCOutboundRTPVideoStream_...)
or hold the legacy goog stats (legacy_stats.py). Attributes Chrome computes itself (`[bytesSent_in_bits/s]`, named in
brackets) are left out: the analyzer computes its rates from the counters, as for a lab run.

The points of all series of one peer connection are grouped into samples, one per getStats call: points less than
half a polling interval (the series' median spacing) after a sample's first belong to it, and the sample's time is
its points' median. Remote-inbound-rtp and remote-outbound-rtp objects carry the time of the RTCP report they repeat
(seconds before the call that read it): their points join the first sample at or after their time."""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import legacy_stats
from .statsdump import Dump, DumpError, PeerConnection, Sample, json_error, read_text

DEFAULT_STEP_MS = 1000.0  # webrtc-internals polls getStats once a second
REMOTE_TYPES = ("remote-inbound-rtp", "remote-outbound-rtp")  # stamped with their RTCP report's time
# Older dumps without statsType: the type from the id's prefix (Chrome's RTCStats ids before ~M94, legacy ids)
TYPE_BY_ID_PREFIX = (("RTCOutboundRTP", "outbound-rtp"), ("RTCInboundRTP", "inbound-rtp"),
                     ("RTCRemoteInboundRtp", "remote-inbound-rtp"), ("RTCRemoteOutboundRTP", "remote-outbound-rtp"),
                     ("RTCIceCandidatePair_", "candidate-pair"), ("RTCTransport_", "transport"),
                     ("RTCCodec_", "codec"), ("ssrc_", "ssrc"), ("bweforvideo", "VideoBwe"),
                     ("Conn-", "googCandidatePair"))


@dataclass
class Series:
    stat_id: str
    attribute: str
    stats_type: str | None
    times_ms: list[float]
    values: list[Any]


def _split_key(key: str) -> tuple[str, str] | None:
    """`<stats id>-<attribute>` (ids may hold dashes, attributes do not); None for a computed `-[...]` series."""
    if "-[" in key or "-" not in key:
        return None
    stat_id, attribute = key.rsplit("-", 1)
    return stat_id, attribute


def _time_ms(path: Path, key: str, v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            t = _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return (t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)).timestamp() * 1000.0
    raise DumpError(f"{path}: stats series {key!r} has a time {v!r} that is neither milliseconds nor an ISO date")


def _value(v: Any) -> Any:
    """Objects (qualityLimitationDurations) may come as JSON strings."""
    if isinstance(v, str) and v.startswith("{"):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _series(path: Path, key: str, entry: Any) -> Series | None:
    parts = _split_key(key)
    if parts is None or not isinstance(entry, dict) or not entry:  # a computed series, or an empty one ({})
        return None
    try:
        values = json.loads(entry["values"]) if isinstance(entry["values"], str) else entry["values"]
        start, end = _time_ms(path, key, entry["startTime"]), _time_ms(path, key, entry["endTime"])
    except KeyError as e:
        raise DumpError(f"{path}: stats series {key!r} has no {e.args[0]}") from None
    except json.JSONDecodeError as e:
        raise DumpError(f"{path}: stats series {key!r}: its values are not a JSON list ({e.msg})") from None
    if not isinstance(values, list) or not values:
        return None
    if end < start:
        raise DumpError(f"{path}: stats series {key!r} ends ({end:.0f} ms) before it starts ({start:.0f} ms)")
    n = len(values)
    times = [start + i * (end - start) / (n - 1) for i in range(n)] if n > 1 else [start]
    stats_type = entry.get("statsType") or next((t for p, t in TYPE_BY_ID_PREFIX if parts[0].startswith(p)), None)
    return Series(parts[0], parts[1], stats_type, times, [_value(v) for v in values])


def _groups(series: list[Series], local: list[int], step: float) -> list[list[tuple[float, int, int]]]:
    """The local objects' points (series index `local`) grouped into getStats calls: a point less than half a step
    after a group's first belongs to it."""
    groups: list[list[tuple[float, int, int]]] = []
    for p in sorted((t, i, k) for i in local for k, t in enumerate(series[i].times_ms)):
        if not groups or p[0] - groups[-1][0][0] > step / 2:
            groups.append([])
        groups[-1].append(p)
    return groups


def _samples(series: list[Series]) -> list[Sample]:
    """The series' points grouped into getStats calls, each call's objects rebuilt. A remote-inbound-rtp (or
    remote-outbound-rtp) object is stamped with the time of the RTCP report it repeats, not the call's: its points
    join the first call at or after their time (less half a step), the calls being those the other objects make."""
    steps = [(s.times_ms[-1] - s.times_ms[0]) / (len(s.times_ms) - 1) for s in series if len(s.times_ms) > 1]
    step = statistics.median(steps) if steps else DEFAULT_STEP_MS
    remote = {i for i, s in enumerate(series) if s.stats_type in REMOTE_TYPES}
    if len(remote) == len(series):
        remote = set()
    groups = _groups(series, [i for i in range(len(series)) if i not in remote], step)
    times = [statistics.median(p[0] for p in g) for g in groups]
    for i in remote:
        for k, t in enumerate(series[i].times_ms):
            groups[min(bisect.bisect_left(times, t - step / 2), len(groups) - 1)].append((t, i, k))
    samples: list[Sample] = []
    for t_ms, group in zip(times, groups):
        objs: dict[str, dict[str, Any]] = {}
        for t_point, i, k in group:
            s = series[i]
            o = objs.setdefault(s.stat_id, {"id": s.stat_id, "type": s.stats_type, "timestamp": t_point})
            o[s.attribute] = s.values[k]
        report = list(objs.values())
        if legacy_stats.is_legacy(report):
            report = legacy_stats.to_standard(report, t_ms)
        samples.append((t_ms / 1000.0, report))
    return samples


def _peer_connection(path: Path, pc_id: str, conn: Any) -> PeerConnection:
    pc = PeerConnection(id=pc_id)
    stats = conn.get("stats") if isinstance(conn, dict) else None
    if not isinstance(stats, dict):
        pc.notes.append("no stats in the dump")
        return pc
    series = [s for key, entry in stats.items() if (s := _series(path, key, entry)) is not None]
    untyped = sorted({s.stat_id for s in series if s.stats_type is None})
    if untyped:
        pc.notes.append(f"{len(untyped)} stats object(s) without a type left out (e.g. {untyped[0]})")
    pc.samples = _samples([s for s in series if s.stats_type is not None])
    if any(s.stats_type in legacy_stats.LEGACY_TYPES for s in series):
        pc.notes.append("legacy (goog) getStats, said as standard stats (docs/export.md, \"Older layouts\")")
    return pc


def layout_of(doc: dict[str, Any]) -> str:
    """Which of Chrome's dump layouts: times as milliseconds (newer) or as ISO dates (older)."""
    for conn in doc["PeerConnections"].values():
        for entry in ((conn or {}).get("stats") or {}).values() if isinstance(conn, dict) else []:
            if isinstance(entry, dict) and "startTime" in entry:
                return ("webrtc-internals, times in ms (newer Chrome)" if not isinstance(entry["startTime"], str)
                        else "webrtc-internals, times as ISO dates (older Chrome)")
    return "webrtc-internals, no stats series"


def read(path: Path) -> Dump:
    """Each peer connection of the dump with its samples, the dump's layout and its browser."""
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise json_error(path, text, e, "the webrtc-internals dump") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("PeerConnections"), dict):
        raise DumpError(f"{path}: no \"PeerConnections\" object at its top level: not a chrome://webrtc-internals "
                        "dump (an rtcstats file? use `rtclab import rtcstats`)")
    pcs = [_peer_connection(path, pc_id, conn) for pc_id, conn in doc["PeerConnections"].items()]
    urls = [c["url"] for c in doc["PeerConnections"].values() if isinstance(c, dict) and isinstance(c.get("url"), str)]
    agent = doc.get("UserAgent")
    return Dump(layout=layout_of(doc), peer_connections=pcs, user_agent=agent if isinstance(agent, str) else None,
                origin=urls[0] if urls else None)
