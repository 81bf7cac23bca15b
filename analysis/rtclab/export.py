"""What the analyzer reads, as JSON on stdout, for tools outside Python (the Node integration and end-to-end tests):
one reader of captures and ground-truth logs and one packet join for the whole project. (Their percentiles are
netem/test-support/percentile.js's, checked against stats.percentiles bit for bit.)

  python -m rtclab.export packets CAPTURE.pcap           each IPv4 packet of a capture (rundir.read_capture)
  python -m rtclab.export gtlog FILE.gtlog               the ground-truth log's header and records (rundir.read_gtlog)
  python -m rtclab.export join CAPTURE_A CAPTURE_B [--gtlog FILE] [--addr-a A] [--addr-b B]
                                                         the analyzer's packet table (packets.build): one row per
                                                         departure and per unmatched arrival, with its fate and
                                                         one-way delay; --gtlog adds each forward departure's log
                                                         record, joined as crosscheck.gtlog_owd joins them

Output is columnar: {"columns": {name: [value per row]}}. 64-bit integers (epoch nanoseconds, keys) are decimal
strings, because JSON readers without big integers (JavaScript's) would round them. Exit status 2 with a message on
stderr for a file that cannot be read."""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

from . import packets, rundir


def _strings(values: np.ndarray) -> list[str]:
    return [str(v) for v in values.tolist()]


def _addresses(values: np.ndarray) -> list[str]:
    """Dotted IPv4 addresses; converted once per distinct address (a capture holds a handful)."""
    uniq, inverse = np.unique(values, return_inverse=True)
    names = [rundir.int_to_ip(int(u)) for u in uniq.tolist()]
    return [names[i] for i in inverse.tolist()]


def _or_null(values: np.ndarray, absent: int) -> list[Any]:
    return [None if v == absent else v for v in values.tolist()]


def _ns_or_null(values: np.ndarray) -> list[str | None]:
    return [None if v < 0 else str(v) for v in values.tolist()]


def _ipv4_header_ok(frame: bytes) -> bool | None:
    """Whether the IPv4 header checksum of an Ethernet frame verifies (it must stay valid after the bottleneck
    rewrites ECN bits); None when the frame is not Ethernet + IPv4 or is cut inside the header. The analyzer's
    decoder does not check it (nothing it computes depends on it), so this is the one field read here."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if ihl < 20 or len(frame) < 14 + ihl:
        return None
    total = sum(struct.unpack_from(f">{ihl // 2}H", frame, 14))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def export_packets(path: Path) -> dict[str, Any]:
    cap = rundir.read_capture(path)
    c = cap.cols
    # The wire length and the header checksum come from the raw records (rundir.pcap_records); the decoder's `frame`
    # column (1-based record number) says which record each IPv4 packet is.
    wire_len: list[int] = []
    header_ok: list[bool | None] = []
    for _, orig, data in rundir.pcap_records(path):
        wire_len.append(orig)
        header_ok.append(_ipv4_header_ok(data))
    rec = c["frame"].astype(np.int64) - 1
    rtp = c["cls"] == packets.CLS_RTP
    return {
        "file": str(path), "records": cap.records, "non_ipv4": cap.non_ipv4, "error": cap.error,
        "columns": {
            "t_ns": _strings(c["ts_ns"]),
            "frame_len": [wire_len[i] for i in rec.tolist()],
            "ip_len": c["ip_len"].tolist(), "ip_id": c["ip_id"].tolist(), "proto": c["proto"].tolist(),
            "src": _addresses(c["ip_src"]), "dst": _addresses(c["ip_dst"]),
            "dscp": (c["tos"] >> 2).tolist(), "ecn": (c["tos"] & 3).tolist(),
            "sport": c["sport"].tolist(), "dport": c["dport"].tolist(),
            "cls": [packets.CLS_NAMES.get(v, str(v)) for v in c["cls"].tolist()],
            # RTP header fields only for RTP (the decoder puts the RTCP sender's SSRC in the same column).
            "rtp_ssrc": np.where(rtp, c["ssrc"].astype(np.int64), -1).tolist(),
            "rtp_seq": np.where(rtp, c["rtp_seq"].astype(np.int64), -1).tolist(),
            "rtp_pt": np.where(rtp, c["rtp_pt"].astype(np.int64), -1).tolist(),
            "ip_checksum_ok": [header_ok[i] for i in rec.tolist()],
        },
    }


def export_gtlog(path: Path) -> dict[str, Any]:
    log = rundir.read_gtlog(path)
    r = log.records
    columns: dict[str, list[Any]] = {}
    for name in rundir.GTLOG_DTYPE.names or ():
        col = r[name]
        columns[name] = _strings(col) if col.dtype.itemsize == 8 else col.tolist()
    columns["event_name"] = [rundir.GTLOG_EVENTS.get(v, str(v)) for v in r["event"].tolist()]
    return {"file": str(path), "header": log.header, "trailing_bytes": log.trailing_bytes, "columns": columns}


def export_join(path_a: Path, path_b: Path, gtlog: Path | None, addr_a: str, addr_b: str) -> dict[str, Any]:
    cap_a, cap_b = rundir.read_capture(path_a), rundir.read_capture(path_b)
    table = packets.build(cap_a, cap_b, rundir.ip_to_int(addr_a), rundir.ip_to_int(addr_b))
    c = table.cols
    out: dict[str, Any] = {
        "direction": [packets.DIRECTION_NAMES[v] for v in c["direction"].tolist()],
        "status": [packets.STATUS_NAMES[v] for v in c["status"].tolist()],
        "t_send_ns": _ns_or_null(c["t_send_ns"]), "t_recv_ns": _ns_or_null(c["t_recv_ns"]),
        "owd_ns": _or_null(c["owd_ns"], -1),
        "src": _addresses(c["ip_src"]), "dst": _addresses(c["ip_dst"]), "proto": c["proto"].tolist(),
        "sport": c["sport"].tolist(), "dport": c["dport"].tolist(), "ip_len": c["ip_len"].tolist(),
        "ip_id": c["ip_id"].tolist(), "dscp": c["dscp"].tolist(),
        "ecn_send": _or_null(c["ecn_send"], 255), "ecn_recv": _or_null(c["ecn_recv"], 255),
        "cls": [packets.CLS_NAMES.get(v, str(v)) for v in c["cls"].tolist()],
        "frame_send": _or_null(c["frame_send"], 0), "frame_recv": _or_null(c["frame_recv"], 0),
    }
    errors = {"capture_a": cap_a.error, "capture_b": cap_b.error}
    doc: dict[str, Any] = {"files": [str(path_a), str(path_b)], "errors": errors, "columns": out}
    if gtlog is not None:
        # The forward departures against the log, as crosscheck.gtlog_owd joins them: the packet join key on the
        # FNV-1a key, k-th occurrence to k-th occurrence.
        log = rundir.read_gtlog(gtlog)
        rec = log.records
        dep = np.flatnonzero((c["direction"] == packets.FORWARD) & (c["t_send_ns"] >= 0))
        dep_match, _ = packets.match(packets.join_key(c, dep, "key"), rundir.join_keys(rec["key"], rec["ip_id"]))
        gt = np.full(len(table), -1, dtype=np.int64)
        gt[dep] = dep_match
        out["gt"] = _or_null(gt, -1)
        doc["gtlog"] = str(gtlog)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rtclab.export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("packets").add_argument("capture", type=Path)
    sub.add_parser("gtlog").add_argument("log", type=Path)
    j = sub.add_parser("join")
    j.add_argument("capture_a", type=Path)
    j.add_argument("capture_b", type=Path)
    j.add_argument("--gtlog", type=Path)
    j.add_argument("--addr-a", default=rundir.DEFAULT_A)
    j.add_argument("--addr-b", default=rundir.DEFAULT_B)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "packets":
            doc: Any = export_packets(args.capture)
        elif args.cmd == "gtlog":
            doc = export_gtlog(args.log)
        else:
            doc = export_join(args.capture_a, args.capture_b, args.gtlog, args.addr_a, args.addr_b)
    except (rundir.CaptureError, ValueError, OSError) as e:
        print(f"rtclab.export: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
