"""Independent writers of the two getStats dump formats rtclab imports, written from the formats' sources (not from
rtclab/imports/): lab getstats-<side>.jsonl lines in, a chrome://webrtc-internals dump or an rtcstats dump out.

- webrtc_internals(): what Chrome's dump holds (content/browser/resources/webrtc/: each stats object's attribute a
  TimelineDataSeries stamped with the object's timestamp, toJSON {startTime, endTime, statsType, values as a JSON
  string}, and the object's own timestamps as `<id>-timestamp`: Chromium 156's layout); `layout="older"` the layout
  of older Chrome: times as ISO dates, no statsType, ids RTCOutboundRTPVideoStream_...; `layout="ms"` times in ms.
- rtcstats_classic(): fileFormat 2 of fippo/rtcstats (its deltaCompression: unchanged values dropped, the id dropped,
  the newest timestamp moved to the top and 0 in its objects; events [method, pc, value, Unix ms]).
- rtcstats_format3(): fileFormat 3 of rtcstats/rtcstats (rtcstats-shared/compression.js: the RTCStatsDump line, time
  deltas, method `g`, numeric stats ids, type and property tables, timestamp as top-level `t`, removed objects null).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

# Chrome's stats ids before M94 (a prefix by type), for the older layout
OLD_ID_PREFIX = {"outbound-rtp": "RTCOutboundRTPVideoStream_", "inbound-rtp": "RTCInboundRTPVideoStream_",
                 "remote-inbound-rtp": "RTCRemoteInboundRtpVideoStream_", "candidate-pair": "RTCIceCandidatePair_",
                 "transport": "RTCTransport_", "codec": "RTCCodec_"}
# rtcstats-shared's tables, the part these tests use (the rest stays uncompressed, as a client may leave it)
F3_TYPES = {"inbound-rtp": 1, "outbound-rtp": 2, "remote-inbound-rtp": 3, "transport": 5, "candidate-pair": 6,
            "codec": 14}
F3_PROPS = {"timestamp": "t", "ssrc": 10, "kind": 11, "packetsReceived": 14, "packetsLost": 15, "bytesReceived": 41,
            "roundTripTime": 75, "roundTripTimeMeasurements": 78, "packetsSent": 79, "bytesSent": 80,
            "targetBitrate": 87, "framesPerSecond": 25, "frameHeight": 24, "selectedCandidatePairId": 125,
            "nominated": 150, "state": 118, "availableOutgoingBitrate": 153, "mimeType": 6, "payloadType": 4}


def _iso(ms: float) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _renamed(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same samples with every id (and every *Id reference) spelled as older Chrome did."""
    names = {o["id"]: OLD_ID_PREFIX.get(o["type"], "RTCStats_") + o["id"] for ln in lines for o in ln["report"]}
    out = []
    for ln in lines:
        report = [{k: (names.get(v, v) if k == "id" or (k.endswith("Id") and isinstance(v, str)) else v)
                   for k, v in o.items()} for o in ln["report"]]
        out.append(dict(ln, report=report))
    return out


def webrtc_internals(pcs: dict[str, list[dict[str, Any]]], layout: str = "chromium") -> dict[str, Any]:
    """A webrtc-internals dump of these peer connections (id -> their getstats-<side>.jsonl lines), in a layout:
    - "chromium": what Chromium 156 writes (its data_series.js and stats_graph_helper.js, read from the browser):
      every attribute but id and timestamp a series (type too), each point stamped with its object's timestamp, the
      object's timestamps themselves the series `<id>-timestamp`; startTime/endTime JavaScript Dates (ISO dates, whole
      milliseconds), statsType, values a JSON string in which an object attribute stays an object;
    - "ms": times as Unix milliseconds, no timestamp series, objects as JSON text (a variant the importer reads);
    - "older": older Chrome: ISO dates, no statsType, ids RTCOutboundRTPVideoStream_..., no timestamp series."""
    if layout not in ("chromium", "ms", "older"):
        raise ValueError(f"unknown layout {layout!r}")
    doc: dict[str, Any] = {"getUserMedia": [], "PeerConnections": {}, "UserAgent": "Mozilla/5.0 (X11; Linux x86_64) "
                           "Chrome/156.0.0.0"}
    skip = ("id", "timestamp") if layout == "chromium" else ("id", "type", "timestamp")
    for pc_id, lines in pcs.items():
        series: dict[str, tuple[str, list[tuple[float, Any]]]] = {}
        for ln in _renamed(lines) if layout == "older" else lines:
            for o in ln["report"]:
                for attr, v in o.items():
                    if attr in skip:
                        continue
                    if isinstance(v, dict) and layout != "chromium":
                        v = json.dumps(v)
                    series.setdefault(f"{o['id']}-{attr}", (o["type"], []))[1].append((o["timestamp"], v))
                if layout == "chromium":
                    series.setdefault(f"{o['id']}-timestamp", (o["type"], []))[1].append(
                        (o["timestamp"], o["timestamp"]))
                if o["type"] == "outbound-rtp" and "bytesSent" in o:  # a rate Chrome computes: the importer skips it
                    series.setdefault(f"{o['id']}-[bytesSent_in_bits/s]", (o["type"], []))[1].append(
                        (o["timestamp"], 1.0))
        stats = {}
        for key, (typ, pts) in series.items():
            t0, t1 = pts[0][0], pts[-1][0]
            iso = layout != "ms"
            entry = {"startTime": _iso(t0) if iso else t0, "endTime": _iso(t1) if iso else t1,
                     "values": json.dumps([v for _, v in pts])}
            if layout != "older":
                entry["statsType"] = typ
            stats[key] = entry
        doc["PeerConnections"][pc_id] = {"pid": 1234, "rtcConfiguration": "{ iceServers: [] }",
                                         "stats": stats, "updateLog": [{"timestamp": 0, "type": "icecandidate",
                                                                        "value": ""}],
                                         "url": "https://field.example/call"}
    return doc


def _objects(line: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: {k: v for k, v in o.items() if k != "id"} for o in line["report"]}


def rtcstats_classic(pcs: dict[str, list[dict[str, Any]]]) -> str:
    """An rtcstats fileFormat 2 dump: the metadata line, then per peer connection its events, getstats delta-
    compressed; the peer connections' samples interleaved in time, as one client's trace holds them."""
    start = min(ln["t"] for lines in pcs.values() for ln in lines)
    events: list[tuple[float, list[Any]]] = [(start - 2, ["navigator.mediaDevices.getUserMedia", None,
                                                          {"video": True}])]
    for pc_id, lines in pcs.items():
        events.append((lines[0]["t"] - 1, ["createOffer", pc_id, None]))
        prev: dict[str, dict[str, Any]] = {}
        for ln in lines:
            now = _objects(ln)
            delta = copy.deepcopy(now)
            for sid, report in delta.items():
                for name in list(report):
                    if sid in prev and report[name] == prev[sid].get(name):
                        del report[name]
            newest = max(r["timestamp"] for r in delta.values() if "timestamp" in r)
            for r in delta.values():
                if r.get("timestamp") == newest:
                    r["timestamp"] = 0
            delta["timestamp"] = newest
            events.append((ln["t"], ["getstats", pc_id, delta]))
            prev = now
    events.sort(key=lambda e: e[0])
    meta = {"path": "/call", "origin": "https://field.example", "url": "https://field.example/call",
            "userAgent": "Mozilla/5.0 Chrome/156.0.0.0", "fileFormat": 2}
    return "\n".join([json.dumps(meta), *(json.dumps([*e, round(t * 1000)]) for t, e in events)]) + "\n"


def _compress3(prev: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]], ids: dict[str, str]) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for sid, report in now.items():
        r = copy.deepcopy(report)
        if sid in prev:
            for name in list(r):
                old = prev[sid].get(name)
                if isinstance(r[name], dict) and isinstance(old, dict):
                    r[name] = {k: v for k, v in r[name].items() if old.get(k) != v}
                    if not r[name]:
                        del r[name]
                elif r[name] == old:
                    del r[name]
        delta[sid] = r
    newest = max(r["timestamp"] for r in delta.values() if "timestamp" in r)
    for sid in list(delta):
        if delta[sid].get("timestamp") == newest:
            del delta[sid]["timestamp"]
        if not delta[sid]:
            del delta[sid]
    out: dict[str, Any] = {"t": newest}
    for sid, r in delta.items():
        ids.setdefault(sid, str(len(ids)))
        packed = {}
        for name, v in r.items():
            if name.endswith("Id") and isinstance(v, str):
                v = ids.setdefault(v, str(len(ids)))
            if name == "type":
                v = F3_TYPES.get(v, v)
            packed[str(F3_PROPS.get(name, name))] = v
        out[ids[sid]] = packed
    for sid in prev:
        if sid not in now:
            out[ids[sid]] = None
    return out


def rtcstats_format3(pcs: dict[str, list[dict[str, Any]]], drop_after: dict[str, int] | None = None) -> str:
    """An rtcstats fileFormat 3 dump; drop_after: per peer connection, from which sample on an object (by id) is gone
    from the reports (sent as null once)."""
    events: list[tuple[float, list[Any]]] = []
    for pc_id, lines in pcs.items():
        prev: dict[str, dict[str, Any]] = {}
        ids: dict[str, str] = {}
        for i, ln in enumerate(lines):
            now = _objects(ln)
            for sid, after in (drop_after or {}).items():
                if i >= after:
                    now.pop(sid, None)
            events.append((ln["t"], ["g", pc_id, _compress3(prev, now, ids)]))
            prev = now
    events.sort(key=lambda e: e[0])
    meta = {"fileFormat": 3, "url": "https://field.example/call", "userAgent": "Mozilla/5.0 Chrome/156.0.0.0"}
    out, last = ["RTCStatsDump", json.dumps(meta)], 0
    for t, e in events:
        ms = round(t * 1000)
        out.append(json.dumps([*e, ms - last]))
        last = ms
    return "\n".join(out) + "\n"
