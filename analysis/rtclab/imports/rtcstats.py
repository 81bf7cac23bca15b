"""An rtcstats dump (the files rtcstats-server stores for each client of the rtcstats library) read into each peer
connection's getStats samples (docs/export.md, "Importing getStats dumps").

A line-based JSON stream. Its first line is the client's metadata (a JSON object with `fileFormat`, `url`,
`userAgent`, ...); every further line one traced event, `[method, peer connection id, value, ..., time]`. getStats
comes as method `getStats` (the whole report, keyed by stats id) or `getstats` (delta-compressed against the same
peer connection's previous report: an object holds only what changed, its id left out; the newest timestamp is moved
to the report's top level and the objects that had it carry 0).
- fileFormat 1 and 2 (fippo/rtcstats and rtcstats-server): `time` is the event's Unix time in ms; from fileFormat 2
  on the stats objects keep their own timestamps.
- fileFormat 3 (rtcstats/rtcstats): the file starts with the line `RTCStatsDump`; `time` is the delta from the
  previous event's (the first: from the epoch); methods may be compressed to numbers (`getStats` is `g` or 1), stats
  ids to numbers, property names and stats types to numbers by rtcstats' fixed tables (those the analyzer reads are
  below), the report's timestamp is the top-level property `t`, and an object gone from the report is null.
Legacy (goog) stats objects are said as standard ones (legacy_stats.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from . import legacy_stats
from .statsdump import Dump, DumpError, PeerConnection, json_error, read_text

FORMAT3_HEADER = "RTCStatsDump"
GETSTATS_METHODS = {"getStats": False, "getstats": True, "g": True, "1": True}  # method -> delta-compressed
# rtcstats/rtcstats' fixed tables (packages/rtcstats-shared/compression.js): the stats types, and the property names
# the analyzer reads (others keep their compressed names and are not read).
FORMAT3_TYPES = {1: "inbound-rtp", 2: "outbound-rtp", 3: "remote-inbound-rtp", 4: "remote-outbound-rtp",
                 5: "transport", 6: "candidate-pair", 7: "local-candidate", 8: "remote-candidate", 9: "data-channel",
                 10: "peer-connection", 11: "certificate", 12: "media-source", 13: "media-playout", 14: "codec"}
FORMAT3_PROPERTIES = {
    "t": "timestamp", "4": "payloadType", "5": "transportId", "6": "mimeType", "7": "clockRate", "10": "ssrc",
    "11": "kind", "12": "codecId", "14": "packetsReceived", "15": "packetsLost", "16": "jitter", "19": "remoteId",
    "20": "framesDecoded", "22": "framesDropped", "23": "frameWidth", "24": "frameHeight", "25": "framesPerSecond",
    "30": "pauseCount", "31": "totalPausesDuration", "32": "freezeCount", "33": "totalFreezesDuration",
    "40": "fecSsrc", "41": "bytesReceived", "42": "nackCount", "44": "pliCount", "47": "jitterBufferDelay",
    "49": "jitterBufferEmittedCount", "60": "framesReceived", "70": "rtxSsrc", "74": "localId", "75": "roundTripTime",
    "76": "totalRoundTripTime", "78": "roundTripTimeMeasurements", "79": "packetsSent", "80": "bytesSent",
    "87": "targetBitrate", "89": "framesSent", "91": "framesEncoded", "95": "qualityLimitationReason",
    "96": "qualityLimitationDurations", "118": "state", "125": "selectedCandidatePairId", "148": "localCandidateId",
    "149": "remoteCandidateId", "150": "nominated", "152": "currentRoundTripTime", "153": "availableOutgoingBitrate"}


def _lines(path: Path, text: str) -> tuple[int, dict[str, Any], list[tuple[int, Any]]]:
    """(fileFormat, the metadata, [(line number, the event), ...]); DumpError for a line that is not JSON."""
    raw = text.split("\n")
    first = 0
    fmt3 = raw[0].strip() == FORMAT3_HEADER
    if fmt3:
        first = 1
    events: list[tuple[int, Any]] = []
    meta: dict[str, Any] | None = None
    for i in range(first, len(raw)):
        line = raw[i].strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            last = i == len(raw) - 1 or not any(x.strip() for x in raw[i + 1:])
            if last and not text.endswith("\n"):
                raise DumpError(f"{path}: its last line ({i + 1}) ends in the middle of its JSON ({e.msg}): the file "
                                f"is truncated; the lines before it are complete (keep them: head -n {i} FILE)") \
                    from None
            raise json_error(path, line, e, f"line {i + 1}") from None
        if meta is None:
            if not isinstance(value, dict):
                raise DumpError(f"{path}: its {'second' if fmt3 else 'first'} line is not the client's metadata "
                                "(a JSON object): not an rtcstats dump (a webrtc-internals dump? use `rtclab import "
                                "webrtc-internals`)")
            if "PeerConnections" in value:
                raise DumpError(f"{path}: a chrome://webrtc-internals dump, not an rtcstats dump: use `rtclab import "
                                "webrtc-internals`")
            meta = value
            continue
        events.append((i + 1, value))
    if meta is None:
        raise DumpError(f"{path}: empty: no metadata line and no event")
    file_format = meta.get("fileFormat", 3 if fmt3 else 1)
    if not isinstance(file_format, int) or file_format not in (1, 2, 3) or (file_format == 3) != fmt3:
        raise DumpError(f"{path}: fileFormat {file_format!r} is not one this reader knows (1 and 2 without the "
                        f"{FORMAT3_HEADER} line, 3 with it)")
    return file_format, meta, events


def _decompress_classic(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """fileFormat 1-2 `getstats`: the objects that changed merged into the previous report."""
    delta = copy.deepcopy(delta)
    timestamp = delta.pop("timestamp", None)
    out = copy.deepcopy(base)
    for sid, report in delta.items():
        if not isinstance(report, dict):
            continue
        if report.get("timestamp") == 0:
            report["timestamp"] = timestamp
        out.setdefault(sid, {}).update(report)
    return out


def _decompress_format3(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """fileFormat 3 `getStats`: property names and types restored by the tables, then merged into the previous
    report (objects merged key by key, a null object removed), the top-level timestamp given to every object that
    has none of its own."""
    new: dict[str, Any] = {}
    timestamp = delta.get("t")
    for sid, report in delta.items():
        if sid == "t":
            continue
        if report is None or not isinstance(report, dict):
            new[sid] = None
            continue
        r = {FORMAT3_PROPERTIES.get(k, k): v for k, v in report.items()}
        if "type" in r:
            r["type"] = FORMAT3_TYPES.get(r["type"], r["type"]) if isinstance(r["type"], int) else r["type"]
        new[sid] = r
    out: dict[str, Any] = {}
    for sid in set(base) | set(new):
        if sid in new and new[sid] is None:
            continue
        merged = copy.deepcopy(base.get(sid, {}))
        own_timestamp = "timestamp" in (new.get(sid) or {})
        for k, v in (new.get(sid) or {}).items():
            merged[k] = dict(merged[k], **v) if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
        if timestamp is not None and not own_timestamp:
            merged["timestamp"] = timestamp
        out[sid] = merged
    return out


def _event_parts(path: Path, n: int, event: Any) -> tuple[str, Any, Any, float]:
    if not isinstance(event, list) or len(event) < 3:
        raise DumpError(f"{path}: line {n} is not an rtcstats event ([method, peer connection, value, ..., time])")
    time = event[-1]
    if isinstance(time, bool) or not isinstance(time, (int, float)):
        raise DumpError(f"{path}: line {n}: its last item {time!r} is not a time in ms")
    return str(event[0]), event[1], event[2], float(time)


def read(path: Path) -> Dump:
    """Each peer connection of the dump with its getStats samples."""
    text = read_text(path)
    file_format, meta, events = _lines(path, text)
    pcs: dict[str, PeerConnection] = {}
    base: dict[str, dict[str, Any]] = {}
    clock_ms = 0.0
    legacy = False
    for n, event in events:
        method, pc_id, value, time = _event_parts(path, n, event)
        clock_ms = clock_ms + time if file_format == 3 else time
        if method not in GETSTATS_METHODS or pc_id is None:
            continue
        if not isinstance(value, dict):
            raise DumpError(f"{path}: line {n}: a getStats event whose value is not a stats report (an object)")
        pc = pcs.setdefault(str(pc_id), PeerConnection(id=str(pc_id)))
        previous = base.get(pc.id, {})
        if file_format == 3:
            report = _decompress_format3(previous, value)
        elif GETSTATS_METHODS[method]:
            report = _decompress_classic(previous, value)
        else:
            report = {k: v for k, v in value.items() if k != "timestamp"}
        base[pc.id] = report
        t_ms = value.get("t" if file_format == 3 else "timestamp")
        t_ms = t_ms if isinstance(t_ms, (int, float)) and t_ms > 0 and file_format >= 2 else clock_ms
        objs = [dict(r, id=sid, timestamp=r.get("timestamp") if file_format >= 2 and r.get("timestamp") else t_ms)
                for sid, r in report.items() if isinstance(r, dict)]
        if legacy_stats.is_legacy(objs):
            legacy = True
            objs = legacy_stats.to_standard(objs, t_ms)
        if objs:  # a report without objects (before the first transport) has no sample to give
            pc.samples.append((t_ms / 1000.0, objs))
    for pc in pcs.values():
        if legacy:
            pc.notes.append("legacy (goog) getStats, said as standard stats (docs/export.md, \"Older layouts\")")
        pc.samples.sort(key=lambda s: s[0])
    url, agent = meta.get("url") or meta.get("origin"), meta.get("userAgent")
    return Dump(layout=f"rtcstats, fileFormat {file_format}", peer_connections=list(pcs.values()),
                user_agent=agent if isinstance(agent, str) else None, origin=url if isinstance(url, str) else None)
