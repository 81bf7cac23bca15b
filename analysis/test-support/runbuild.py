"""Test-side run directories from hand-listed packets: which side sent each one when, and when (if ever) the other
side captured it. Writes the two captures with pcapbuild and a manifest with the scenario given; independent of the
analyzer's code."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pcapbuild import Pcap, fnv1a64, ipv4_frame, rtp, tcp, udp

T0_NS = 1_700_000_000 * 1_000_000_000
A, B = "10.0.1.2", "10.0.2.2"
MS = 1_000_000


@dataclass
class Sent:
    forward: bool  # a -> b
    t_send: int  # ns
    frame: bytes
    arrivals: list[int]  # ns; [] lost


@dataclass
class Run:
    packets: list[Sent] = field(default_factory=list)
    extra_a: list[tuple[int, bytes]] = field(default_factory=list)  # records of capture-a outside the model
    extra_b: list[tuple[int, bytes]] = field(default_factory=list)
    ip_ids: dict[str, int] = field(default_factory=lambda: {A: 0, B: 0})

    def frame(self, src: str, dst: str, proto: int, transport: bytes) -> bytes:
        self.ip_ids[src] = (self.ip_ids[src] + 1) % 65536
        return ipv4_frame(src, dst, proto, transport, self.ip_ids[src])

    def rtp(self, t_send: int, arrivals: list[int], *, pt: int = 96, seq: int, ts: int, ssrc: int = 0x1111,
            size: int = 1000, forward: bool = True, port: int = 50000) -> Sent:
        src, dst = (A, B) if forward else (B, A)
        p = Sent(forward, t_send, self.frame(src, dst, 17, udp(port, port + 1, rtp(pt, seq, ts, ssrc, size))), arrivals)
        self.packets.append(p)
        return p

    def tcp(self, t_send: int, arrivals: list[int], *, sport: int, dport: int = 5201, seq: int, payload: int,
            forward: bool = True) -> Sent:
        src, dst = (A, B) if forward else (B, A)
        p = Sent(forward, t_send, self.frame(src, dst, 6, tcp(sport, dport, seq, 1, payload)), arrivals)
        self.packets.append(p)
        return p

    def write(self, run: Path, scenario: dict[str, Any], *, getstats_a: list[dict] | None = None,
              duration_s: float | None = None, manifest_extra: dict[str, Any] | None = None) -> None:
        cap_a, cap_b = Pcap(), Pcap()
        for p in self.packets:
            send_cap, recv_cap = (cap_a, cap_b) if p.forward else (cap_b, cap_a)
            send_cap.add(p.t_send, p.frame)
            for t in p.arrivals:
                recv_cap.add(t, p.frame)
        for t, f in self.extra_a:
            cap_a.add(t, f)
        for t, f in self.extra_b:
            cap_b.add(t, f)
        cap_a.write(run / "capture-a.pcap")
        cap_b.write(run / "capture-b.pcap")
        duration = duration_s if duration_s is not None else scenario["duration_s"]
        manifest = {"id": run.name, "status": "complete", "error": None, "scenario": scenario,
                    "topology": {"data": {"a": A, "b": B}},
                    "timings": {"call_start": T0_NS / 1e9, "call_end": T0_NS / 1e9 + duration},
                    "validity": {"valid": True, "checks": []}, **(manifest_extra or {})}
        (run / "manifest.json").write_text(json.dumps(manifest))
        if getstats_a is not None:
            (run / "getstats-a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in getstats_a))


def scenario(duration_s: float, forward: dict[str, Any], reverse: dict[str, Any] | None = None,
             cross: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A normalised scenario as the harness writes it: every field the analyzer reads filled in."""
    def link(d: dict[str, Any]) -> dict[str, Any]:
        return {"delay_ms": 0, "jitter_ms": 0, "loss_percent": 0, "rate": None, "qdisc": {"kind": "fifo"}, **d}
    items = [{"kind": "tcp", "flows": 1, "congestion_control": "cubic", "direction": "forward", "start_s": 0,
              "stop_s": None, "dscp": 0, **c} for c in (cross or [])]
    return {"name": "hand-built", "duration_s": duration_s,
            "network": {"forward": link(forward), "reverse": link(reverse or {})}, "cross_traffic": items}


def write_gtlog(path: Path, records: list[dict[str, int]], header: dict[str, Any] | None = None) -> None:
    """A ground-truth log in the layout of docs/bottleneck-log.md, packed here with struct."""
    head = json.dumps(header or {"version": 1, "direction": "forward", "record_size": 64}).encode()
    rec = struct.Struct("<QQQQQQHHBBBBII")
    body = b"".join(rec.pack(r["arrival_ns"], r["dequeue_ns"], r["tx_end_ns"], r["due_ns"], r["release_ns"], r["key"],
                             r["ip_len"], r["ip_id"], r.get("event", 0), r.get("band", 0), r.get("ecn_in", 0),
                             r.get("ip_proto", 17), 0, 0)
                    for r in records)
    path.write_bytes(b"RTCGTLG1" + struct.pack("<I", len(head)) + head + body)


def log_key(frame: bytes) -> tuple[int, int, int]:
    """(FNV-1a key over the first 64 bytes after a 20-byte IPv4 header, ip_len, ip_id) of an Ethernet frame."""
    ip_len, ip_id = struct.unpack("!HH", frame[16:20])
    return fnv1a64(frame[34:34 + 64]), ip_len, ip_id
