"""chrome://webrtc-internals' dump ("Create a WebRTC-Internals dump", saved as a .txt or gzipped) read into each peer
connection's getStats samples (docs/export.md, "Importing getStats dumps").

The dump is one JSON object: `PeerConnections` maps each peer connection's id (`<pid>-<lid>`) to its `url`,
`updateLog` and `stats`. `stats` holds one time series per stats object and attribute, keyed `<stats id>-<attribute>`:
`{"startTime", "endTime", "statsType", "values"}`, `values` a JSON string of the attribute's values, one per getStats
call the page made (once a second) while the object existed (Chrome's TimelineDataSeries.toJSON: the series keeps
its last 1000 points). A series keeps only its first and last point's times (JavaScript Dates, written as ISO dates;
milliseconds are read too), but Chromium 156 also writes each object's own timestamps as the series
`<id>-timestamp`, which gives every point its time; without it (older dumps) a point's time is laid evenly between
the first and last. Older dumps may lack `statsType` (the type is then read from the id's prefix,
RTCOutboundRTPVideoStream_...) or hold the legacy goog stats (legacy_stats.py). Attributes Chrome computes itself
(`[bytesSent_in_bits/s]`, named in brackets) are left out: the analyzer computes its rates from the counters, as for
a lab run.

The series of one peer connection are regrouped into samples, one per getStats call. An object's attributes share
its longest series' times (an attribute that appeared later, as the RTT after the first RTCP report, is aligned at
the end). The local objects' points less than half a polling interval (the series' median spacing) after a call's
first belong to it, and the call's time is their median. Remote-inbound-rtp and remote-outbound-rtp objects carry the
time of the RTCP report they repeat, seconds before the call that read it: their points are counted back from the
last call that read their stream's local object (outbound-rtp, inbound-rtp of the same SSRC)."""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import legacy_stats
from .statsdump import Dump, DumpError, PeerConnection, Sample, json_error, number, read_text

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


@dataclass
class StatsObject:
    """One stats object's series: its times (its longest series', one per getStats call that read it) and per
    attribute the calls it missed at the start and its values (an attribute that appeared later, RTT after the first
    RTCP report, ends with the others: it is aligned at the end)."""
    stat_id: str
    stats_type: str
    times_ms: list[float]
    attributes: dict[str, tuple[int, list[Any]]]

    def at(self, k: int) -> dict[str, Any]:
        o: dict[str, Any] = {"id": self.stat_id, "type": self.stats_type, "timestamp": self.times_ms[k]}
        o.update({a: values[k - skip] for a, (skip, values) in self.attributes.items() if k >= skip})
        return o

    def last(self, attribute: str) -> Any:
        values = self.attributes.get(attribute, (0, [None]))[1]
        return values[-1] if values else None


def _own_times(group: list[Series], n: int) -> list[float] | None:
    """The object's own timestamps, one per point: Chrome's `<id>-timestamp` series (stats_graph_helper.js adds it
    with every report), when it has all n points as numbers; None otherwise (older dumps: the times are laid evenly)."""
    own = next((s for s in group if s.attribute == "timestamp"), None)
    if own is None or len(own.values) != n or any(number(v) is None for v in own.values):
        return None
    return [float(v) for v in own.values]


def _objects(series: list[Series]) -> list[StatsObject]:
    by_id: dict[str, list[Series]] = {}
    for s in series:
        by_id.setdefault(s.stat_id, []).append(s)
    out = []
    for sid, group in by_id.items():
        ref = max(group, key=lambda s: len(s.times_ms))
        n = len(ref.times_ms)
        out.append(StatsObject(sid, str(ref.stats_type), _own_times(group, n) or ref.times_ms,
                               {s.attribute: (n - len(s.values), s.values) for s in group}))
    return out


def _calls(objects: list[StatsObject], local: list[int], step: float) -> dict[tuple[int, int], int]:
    """The local objects' points (object, index) placed into getStats calls: a point less than half a step after a
    call's first belongs to it. Returns each point's call, numbered in time order."""
    placed: dict[tuple[int, int], int] = {}
    call, first = -1, None
    for t, obj, k in sorted((t, i, k) for i in local for k, t in enumerate(objects[i].times_ms)):
        if first is None or t - first > step / 2:
            call, first = call + 1, t
        placed[(obj, k)] = call
    return placed


def _place_remote(objects: list[StatsObject], i: int, placed: dict[tuple[int, int], int], times: list[float],
                  step: float) -> None:
    """A remote-inbound-rtp (remote-outbound-rtp) object repeats its last RTCP report's time, seconds before the call
    that read it: its points are the calls that read its stream's local object, counted back from that object's last
    (the RTCP view lasts as long as its stream); without that object, from the first call after its last time."""
    o = objects[i]
    local_type = "outbound-rtp" if o.stats_type == "remote-inbound-rtp" else "inbound-rtp"
    twin = next((j for j, x in enumerate(objects) if x.stats_type == local_type and x.last("ssrc") == o.last("ssrc")
                 and (j, len(x.times_ms) - 1) in placed), None)
    last = placed[(twin, len(objects[twin].times_ms) - 1)] if twin is not None else \
        min(bisect.bisect_left(times, o.times_ms[-1] - step / 2), len(times) - 1)
    n = len(o.times_ms)
    for k in range(n):
        if last - (n - 1 - k) >= 0:
            placed[(i, k)] = last - (n - 1 - k)


def _samples(series: list[Series]) -> list[Sample]:
    """The series regrouped into getStats calls, each call's objects rebuilt; its time is the median of its local
    objects' times."""
    steps = [(s.times_ms[-1] - s.times_ms[0]) / (len(s.times_ms) - 1) for s in series if len(s.times_ms) > 1]
    step = statistics.median(steps) if steps else DEFAULT_STEP_MS
    objects = _objects(series)
    remote = [i for i, o in enumerate(objects) if o.stats_type in REMOTE_TYPES]
    local = [i for i in range(len(objects)) if i not in remote] if len(remote) < len(objects) else remote
    placed = _calls(objects, local, step)
    members: dict[int, list[tuple[int, int]]] = {}
    for point, call in placed.items():
        members.setdefault(call, []).append(point)
    times = [statistics.median(objects[i].times_ms[k] for i, k in members[c]) for c in sorted(members)]
    for i in remote if local is not remote else []:
        _place_remote(objects, i, placed, times, step)
    by_call: dict[int, list[dict[str, Any]]] = {}
    for (i, k), call in sorted(placed.items(), key=lambda x: (x[1], x[0])):
        by_call.setdefault(call, []).append(objects[i].at(k))
    samples: list[Sample] = []
    for call, t_ms in enumerate(times):
        report = by_call.get(call, [])
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
    """Which of Chrome's dump layouts, in words: the series' first and last times as ISO dates (JavaScript Dates, as
    Chromium 156 and older Chrome write them) or as milliseconds; each point's time from its object's own timestamp
    series (Chromium 156) or laid evenly between them; the stats type named (statsType) or read from the id."""
    entries = [(key, entry) for conn in doc["PeerConnections"].values() if isinstance(conn, dict)
               for key, entry in (conn.get("stats") or {}).items() if isinstance(entry, dict) and "startTime" in entry]
    if not entries:
        return "webrtc-internals, no stats series"
    iso = isinstance(entries[0][1]["startTime"], str)
    stamped = any(key.endswith("-timestamp") for key, _ in entries)
    typed = any("statsType" in entry for _, entry in entries)
    return ", ".join(["webrtc-internals", "times as ISO dates" if iso else "times in ms",
                      "each point's time from its object's timestamp series" if stamped
                      else "points laid evenly between each series' first and last time",
                      "stats types named" if typed else "no statsType (older Chrome: the type read from the id)"])


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
