"""`rtclab show`: one packet, or one flow's packets, in Wireshark's full dissection through pyshark. Slow (tshark
per call) and meant for a handful of packets, which is where full dissection is worth its time."""

from __future__ import annotations

import json
from pathlib import Path

FLOW_FILTER_MAX_PACKETS = 200


class DetailError(Exception):
    pass


def _capture(run: Path, side: str) -> Path:
    path = run / f"capture-{side}.pcap"
    if not path.exists():
        raise DetailError(f"{path} missing")
    return path


def show_frame(run: Path, side: str, number: int) -> str:
    import pyshark
    cap = pyshark.FileCapture(str(_capture(run, side)), display_filter=f"frame.number == {number}",
                              override_prefs={"rtp.heuristic_rtp": "TRUE"})
    try:
        pkts = list(cap)
    finally:
        cap.close()
    if not pkts:
        raise DetailError(f"no frame {number} in capture-{side}.pcap")
    return str(pkts[0])


def flow_filter(run: Path, flow_id: int) -> str:
    """A Wireshark display filter for a flow of metrics.json."""
    path = run / "metrics.json"
    if not path.exists():
        raise DetailError(f"{path} missing: run `rtclab analyze {run}` first")
    flows = {f["id"]: f for f in json.loads(path.read_text())["flows"]}
    if flow_id not in flows:
        raise DetailError(f"no flow {flow_id} in metrics.json (ids 0..{len(flows) - 1})")
    f = flows[flow_id]
    (sip, sport), (dip, dport) = f["src"].rsplit(":", 1), f["dst"].rsplit(":", 1)
    proto = f["protocol"]
    flt = f"ip.src == {sip} && ip.dst == {dip} && {proto}.srcport == {sport} && {proto}.dstport == {dport}"
    if f.get("ssrc") is not None:
        flt += f" && rtp.ssrc == {f['ssrc']:#010x}"
    elif f["kind"] in ("rtcp", "stun", "dtls"):
        flt += f" && {f['kind']}"
    return flt


def show_flow(run: Path, side: str, flow_id: int, limit: int) -> str:
    import pyshark
    flt = flow_filter(run, flow_id)
    cap = pyshark.FileCapture(str(_capture(run, side)), display_filter=flt, keep_packets=False,
                              override_prefs={"rtp.heuristic_rtp": "TRUE"})
    lines = [f"flow {flow_id} in capture-{side}.pcap ({flt}):"]
    try:
        for i, p in enumerate(cap):
            if i >= min(limit, FLOW_FILTER_MAX_PACKETS):
                lines.append("...")
                break
            fields = ""
            if hasattr(p, "rtp"):
                fields = (f"ssrc {p.rtp.ssrc} seq {p.rtp.seq} ts {p.rtp.timestamp} pt {p.rtp.p_type} "
                          f"marker {p.rtp.marker}")
            elif hasattr(p, "tcp"):
                fields = f"seq {p.tcp.seq_raw} ack {p.tcp.ack_raw} len {p.tcp.len} flags {p.tcp.flags}"
            lines.append(f"{p.number:>8} {p.sniff_timestamp} {p.ip.src} -> {p.ip.dst} {p.highest_layer} "
                         f"{p.length} bytes ip.id {p.ip.id} ecn {p.ip.dsfield_ecn} {fields}")
    finally:
        cap.close()
    return "\n".join(lines)


def show(run: Path, side: str, frame: int | None = None, flow: int | None = None, limit: int = 20) -> str:
    if frame is not None:
        return show_frame(run, side, frame)
    if flow is None:
        raise DetailError("give --frame or --flow")
    return show_flow(run, side, flow, limit)
