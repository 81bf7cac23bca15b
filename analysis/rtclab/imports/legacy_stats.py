"""Chrome's legacy (callback-based, "goog") getStats, which older webrtc-internals dumps and old rtcstats clients
recorded, said as the standard RTCStats objects the analyzer reads (docs/export.md, "Older layouts"): an `ssrc` report
`ssrc_<n>_send` becomes an outbound-rtp stream and the remote-inbound-rtp report of its receiver's RTCP (googRtt),
`ssrc_<n>_recv` an inbound-rtp stream, and `bweforvideo` (VideoBwe) the selected candidate pair's available outgoing
bitrate (and, with one video sender, that sender's target bitrate). Legacy values are strings; a value that is not a
number stays out (missing, never 0). Every other legacy report is left out."""

from __future__ import annotations

from typing import Any

LEGACY_TYPES = ("ssrc", "VideoBwe", "googCandidatePair")

# (legacy attribute, standard attribute, scale) per legacy direction
SEND = (("bytesSent", "bytesSent", 1.0), ("packetsSent", "packetsSent", 1.0),
        ("googFrameRateSent", "framesPerSecond", 1.0), ("googFrameHeightSent", "frameHeight", 1.0),
        ("googFrameWidthSent", "frameWidth", 1.0), ("googNacksReceived", "nackCount", 1.0),
        ("googPlisReceived", "pliCount", 1.0))
RECV = (("bytesReceived", "bytesReceived", 1.0), ("packetsReceived", "packetsReceived", 1.0),
        ("packetsLost", "packetsLost", 1.0), ("googFrameRateReceived", "framesPerSecond", 1.0),
        ("googFrameHeightReceived", "frameHeight", 1.0), ("googFrameWidthReceived", "frameWidth", 1.0),
        ("googJitterReceived", "jitter", 1e-3), ("googNacksSent", "nackCount", 1.0), ("googPlisSent", "pliCount", 1.0))


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _int_or_float(v: float) -> int | float:
    return int(v) if v.is_integer() else v


def _copy(src: dict[str, Any], dst: dict[str, Any], table: tuple[tuple[str, str, float], ...]) -> None:
    for legacy, standard, scale in table:
        v = _num(src.get(legacy))
        if v is not None:
            dst[standard] = _int_or_float(v * scale)


def _ssrc_objects(o: dict[str, Any], timestamp: float) -> list[dict[str, Any]]:
    ssrc = _num(o.get("ssrc"))
    kind = o.get("mediaType") or o.get("kind")
    sid = str(o.get("id", ""))
    if ssrc is None or kind not in ("audio", "video") or not sid.endswith(("_send", "_recv")):
        return []
    base = {"ssrc": int(ssrc), "kind": kind, "timestamp": timestamp}
    if sid.endswith("_recv"):
        inbound = dict(base, id=f"legacy-{sid}", type="inbound-rtp")
        _copy(o, inbound, RECV)
        return [inbound]
    outbound = dict(base, id=f"legacy-{sid}", type="outbound-rtp")
    _copy(o, outbound, SEND)
    out = [outbound]
    rtt = _num(o.get("googRtt"))
    lost = _num(o.get("packetsLost"))
    if (rtt is not None and rtt >= 0) or lost is not None:
        remote = dict(base, id=f"legacy-{sid}-remote", type="remote-inbound-rtp")
        if rtt is not None and rtt >= 0:
            remote["roundTripTime"] = rtt / 1000.0
        if lost is not None:
            remote["packetsLost"] = int(lost)
        out.append(remote)
    return out


def to_standard(objs: list[dict[str, Any]], timestamp_ms: float) -> list[dict[str, Any]]:
    """One sample's objects with its legacy reports replaced by standard ones; standard objects pass unchanged."""
    out = [o for o in objs if o.get("type") not in LEGACY_TYPES]
    for o in objs:
        if o.get("type") == "ssrc":
            out += _ssrc_objects(o, timestamp_ms)
    bwe = next((o for o in objs if o.get("type") == "VideoBwe"), None)
    if bwe is not None:
        pair: dict[str, Any] = {"id": "legacy-bweforvideo", "type": "candidate-pair", "nominated": True,
                                "state": "succeeded", "timestamp": timestamp_ms}
        available = _num(bwe.get("googAvailableSendBandwidth"))
        if available is not None:
            pair["availableOutgoingBitrate"] = available
        active = next((o for o in objs if o.get("type") == "googCandidatePair"
                       and str(o.get("googActiveConnection")) == "true"), None)
        rtt = _num((active or {}).get("googRtt"))
        if rtt is not None:
            pair["currentRoundTripTime"] = rtt / 1000.0
        out.append(pair)
        target = _num(bwe.get("googTargetEncBitrate"))
        video_senders = [o for o in out if o.get("type") == "outbound-rtp" and o.get("kind") == "video"]
        if target is not None and len(video_senders) == 1:
            video_senders[0]["targetBitrate"] = target
    return out


def is_legacy(objs: list[dict[str, Any]]) -> bool:
    return any(o.get("type") in LEGACY_TYPES for o in objs)
