"""Transport-wide congestion control feedback (RTCP RTPFB, FMT 15, draft-holmer-rmcat-transport-wide-cc-extensions-01
section 3.1) read from the RTCP packets an RTC event log holds: for each packet the feedback reports, its transport-
wide sequence number and whether and when it arrived (on the receiver's clock, microseconds).

Packet layout after the 12-byte RTCP feedback header: base sequence number (16 bits), packet status count (16),
reference time (24 bits, signed, units of 64 ms), feedback packet count (8); packet status chunks (16 bits each) until
`status count` statuses are read: a run-length chunk (top bit 0: 2-bit status, 13-bit run length) or a status vector
(top bit 1: the next bit 0 = fourteen 1-bit statuses, 1 = seven 2-bit statuses); then one receive delta per received
packet: 1 byte unsigned for status 1 ("small delta"), 2 bytes signed for status 2 ("large delta"), in 250 us units,
each from the previous received packet's time (the first from the reference time).
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

RTPFB, FMT_TRANSPORT_CC = 205, 15
_DELTA_US = 250
_REFERENCE_US = 64_000


class FeedbackError(ValueError):
    pass


@dataclass
class Feedback:
    """One row per packet status of every transport feedback, in log order."""
    feedback_index: npt.NDArray[np.int64]  # which feedback message (0, 1, ...)
    log_time_ms: npt.NDArray[np.int64]  # when the log recorded the feedback (the sender's clock)
    seq: npt.NDArray[np.int64]  # transport-wide sequence number, 16 bits as sent
    received: npt.NDArray[np.bool_]
    recv_time_us: npt.NDArray[np.int64]  # the receiver's clock; -1 where not received

    def __len__(self) -> int:
        return len(self.seq)


def parse_transport_cc(fci: bytes) -> tuple[int, list[int], list[int | None]]:
    """(base sequence, statuses, receive times in us or None) of one feedback's FCI (the bytes after the media SSRC)."""
    if len(fci) < 8:
        raise FeedbackError(f"transport feedback of {len(fci)} bytes (8 at least)")
    base, count = struct.unpack_from("!HH", fci, 0)
    ref = int.from_bytes(fci[4:7], "big")
    if ref & 0x800000:
        ref -= 1 << 24
    pos = 8
    statuses: list[int] = []
    while len(statuses) < count:
        if pos + 2 > len(fci):
            raise FeedbackError("transport feedback: packet status chunks cut short")
        chunk = struct.unpack_from("!H", fci, pos)[0]
        pos += 2
        if not chunk & 0x8000:
            statuses += [(chunk >> 13) & 3] * (chunk & 0x1FFF)
        elif not chunk & 0x4000:
            statuses += [(chunk >> (13 - i)) & 1 for i in range(14)]
        else:
            statuses += [(chunk >> (12 - 2 * i)) & 3 for i in range(7)]
    statuses = statuses[:count]
    t_us = ref * _REFERENCE_US
    times: list[int | None] = []
    for s in statuses:
        if s == 1:
            if pos + 1 > len(fci):
                raise FeedbackError("transport feedback: receive deltas cut short")
            t_us += fci[pos] * _DELTA_US
            pos += 1
        elif s == 2:
            if pos + 2 > len(fci):
                raise FeedbackError("transport feedback: receive deltas cut short")
            t_us += struct.unpack_from("!h", fci, pos)[0] * _DELTA_US
            pos += 2
        elif s == 3:
            raise FeedbackError("transport feedback: reserved packet status 3")
        times.append(t_us if s in (1, 2) else None)
    return base, statuses, times


def rtcp_blocks(packet: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(packet type, count/format field, what follows the common header and the two SSRCs) of each RTCP packet in a
    compound packet, up to the first that is not version 2 or runs past the end."""
    pos = 0
    while pos + 4 <= len(packet):
        length = (struct.unpack_from("!H", packet, pos + 2)[0] + 1) * 4
        if packet[pos] >> 6 != 2 or pos + length > len(packet):
            return
        yield packet[pos + 1], packet[pos] & 0x1F, packet[pos + 12:pos + length]
        pos += length


def transport_feedback(rtcp: list[tuple[int, bytes]]) -> tuple[Feedback, int]:
    """Every transport feedback in a list of (time_ms, compound RTCP packet). Returns the feedback and how many
    feedback messages could not be read (malformed: left out)."""
    index: list[int] = []
    times: list[int] = []
    seqs: list[int] = []
    received: list[bool] = []
    recv_us: list[int] = []
    n_feedback = bad = 0
    for time_ms, packet in rtcp:
        for pt, fmt, body in rtcp_blocks(packet):
            if pt == RTPFB and fmt == FMT_TRANSPORT_CC:
                # Padding (P bit) would put its count in the last byte; Chrome does not pad feedback.
                try:
                    base, statuses, t = parse_transport_cc(body)
                except FeedbackError:
                    bad += 1
                else:
                    n = len(statuses)
                    index += [n_feedback] * n
                    times += [time_ms] * n
                    seqs += [(base + i) & 0xFFFF for i in range(n)]
                    received += [x is not None for x in t]
                    recv_us += [x if x is not None else -1 for x in t]
                    n_feedback += 1
    as64 = lambda v: np.array(v, dtype=np.int64)
    return Feedback(as64(index), as64(times), as64(seqs), np.array(received, dtype=bool), as64(recv_us)), bad


def unwrap16(seq: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """16-bit sequence numbers as a continuing count: each step is taken as the shortest way round (-32768..32767)."""
    if len(seq) == 0:
        return seq.astype(np.int64)
    steps = ((np.diff(seq) + 32768) & 0xFFFF) - 32768
    return np.concatenate([[int(seq[0])], int(seq[0]) + np.cumsum(steps)]).astype(np.int64)
