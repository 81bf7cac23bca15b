"""Test-side packet and pcap writer, independent of the analyzer's code: plain struct packing of Ethernet, IPv4, UDP,
RTP (with RFC 8285 one-byte header extensions), RTCP and TCP, and a nanosecond pcap writer."""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from pathlib import Path


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def ip4(addr: str) -> bytes:
    return ipaddress.IPv4Address(addr).packed


def ipv4_frame(src: str, dst: str, proto: int, transport: bytes, ip_id: int, tos: int = 0, ttl: int = 64) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(transport), ip_id, 0x4000, ttl, proto, 0, ip4(src), ip4(dst))
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + transport


_RAMP = bytes(range(256))


def ramp(start: int, n: int) -> bytes:
    """n bytes counting up from start mod 256 ((start + i) & 0xFF): a payload each packet can be told apart by."""
    first = start & 0xFF
    return (_RAMP * ((first + n) // 256 + 1))[first:first + n]


def udp(sport: int, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def rtp(pt: int, seq: int, ts: int, ssrc: int, payload_len: int, twcc: int | None = None, twcc_id: int = 3,
        marker: bool = False) -> bytes:
    ext = b""
    if twcc is not None:
        elems = bytes([(twcc_id << 4) | 1]) + struct.pack("!H", twcc)
        elems += b"\0" * (-len(elems) % 4)
        ext = struct.pack("!HH", 0xBEDE, len(elems) // 4) + elems
    b0 = 0x80 | (0x10 if ext else 0)
    hdr = struct.pack("!BBHII", b0, (0x80 if marker else 0) | pt, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc)
    body = ramp(seq * 7, payload_len)
    return hdr + ext + body


def rtcp_rr(ssrc: int, n: int) -> bytes:
    return struct.pack("!BBHI", 0x81, 201, 7, ssrc) + struct.pack("!IIIIII", 0xABCDEF, n, n * 3, n * 5, n * 7, n)


def tcp(sport: int, dport: int, seq: int, ack: int, payload_len: int) -> bytes:
    flags = 0x18 if payload_len else 0x10
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack, 0x50, flags, 502, 0, 0) + \
        ramp(seq, payload_len)


@dataclass
class Pcap:
    snaplen: int = 256
    records: list[tuple[int, bytes]] = field(default_factory=list)

    def add(self, ts_ns: int, frame: bytes) -> None:
        self.records.append((ts_ns, frame))

    def write(self, path: Path) -> None:
        out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, self.snaplen, 1)]
        for ts, frame in sorted(self.records, key=lambda r: r[0]):
            cut = frame[: self.snaplen]
            out.append(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(cut), len(frame)) + cut)
        path.write_bytes(b"".join(out))


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (the definition docs/metrics.md states)."""
    s = sorted(values)
    rank = p / 100 * (len(s) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (rank - lo)
