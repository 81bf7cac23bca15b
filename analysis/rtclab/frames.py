"""What the viewer saw, frame by frame: each frame the receiving page presented (frames-<side>.jsonl, client/frames.js)
joined with the RTP packets that carried it on both captures (by SSRC and RTP timestamp), on the run's one clock
(the host's: the page's times are performance.timeOrigin + performance.now(), the captures' are the kernel's
CLOCK_REALTIME). Per frame: glass-to-glass delay = display - capture and its parts, sender (capture to the first
packet on the wire at the sender's capture), network (that first packet leaving to the last packet arriving at the
receiver's capture) and receiver (the last packet to display); the frame's number from its stamp, the loops of the
clip told apart by RTP time; frames sent but never shown, shown twice, out of order. docs/metrics.md, "frames"."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import every_frame, freezes
from .eventlog import parser as eventlog_parser
from .packets import CLS_RTP, FORWARD, LOST, REVERSE, PacketTable
from .presented import presented_read
from .rundir import FramesFile
from .stats import distribution

# The RTP clock of every video codec Chrome sends (VP8, VP9, H264, AV1: RFC 7741, 9628, 6184, AV1 RTP spec).
VIDEO_CLOCK_HZ = 90_000.0
_NS = 1_000_000  # ns per ms
NTP_TO_UNIX_S = 2_208_988_800  # seconds from 1900 (NTP's epoch) to 1970


def sender_reports(log_path: Path, problems: list[str]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The RTCP sender reports the sending browser wrote into its RTC event log, per SSRC: (RTP timestamps, their
    NTP times as epoch ms). libwebrtc fills a report's pair from the capture times of the frames it sent (RTP time =
    the last frame's RTP timestamp + the time since its capture), and its NTP clock is the host's real-time clock:
    the pair maps any RTP timestamp of the stream to its capture time on the run's clock. Empty without a log."""
    if not log_path.exists():
        return {}
    try:
        log = eventlog_parser.read(log_path)
    except (eventlog_parser.EventLogError, OSError) as e:
        problems.append(f"{log_path.name}: {e}: frames fall back to Chrome's capture-time estimate")
        return {}
    found: dict[int, list[tuple[int, float]]] = {}
    for _, packet in log.outgoing_rtcp:
        pos = 0
        while pos + 20 <= len(packet):
            pt, words = packet[pos + 1], struct.unpack_from("!H", packet, pos + 2)[0]
            if pt == 200:  # SR: SSRC, NTP seconds, NTP fraction, RTP timestamp (RFC 3550 6.4.1)
                ssrc, sec, frac, rtp = struct.unpack_from("!IIII", packet, pos + 4)
                found.setdefault(ssrc, []).append((rtp, ((sec - NTP_TO_UNIX_S) + frac / 2**32) * 1000.0))
            pos += 4 * (words + 1)
    return {ssrc: (np.array([r for r, _ in v], np.int64), np.array([t for _, t in v])) for ssrc, v in found.items()}


def capture_from_reports(rtp: np.ndarray, reports: tuple[np.ndarray, np.ndarray],
                         clock_hz: float = VIDEO_CLOCK_HZ) -> np.ndarray:
    """Each RTP timestamp's capture time (epoch ms) by the sender report nearest it in RTP time."""
    sr_rtp, sr_ms = reports
    dist = _signed32(rtp[:, None] - sr_rtp[None, :])
    nearest = np.argmin(np.abs(dist), axis=1)
    return sr_ms[nearest] + dist[np.arange(len(rtp)), nearest] * 1000.0 / clock_hz


@dataclass
class SentFrames:
    """One row per RTP timestamp of the media stream: the frame's packets on both captures (epoch ns, -1: none)."""
    rtp_ts: np.ndarray
    first_send_ns: np.ndarray
    last_send_ns: np.ndarray
    first_recv_ns: np.ndarray
    last_recv_ns: np.ndarray  # when the frame was complete at the receiver: -1 while a lost packet has no repair
    last_owd_ns: np.ndarray  # one-way delay of the packet that arrived last (-1: none arrived)
    packets: np.ndarray
    lost: np.ndarray  # original packets that left and never arrived
    repaired: np.ndarray  # of them, those an RTX packet seen arriving repaired
    missing: np.ndarray  # of them, those no RTX packet seen arriving repaired: the frame's completion is unknown


# RFC 4588: an RTX packet's payload is the original sequence number (2 bytes) and the original payload.
RTX_OSN_BYTES = 2


def rtx_repairs(table: PacketTable, direction: int, ssrc: int, rtx_ssrc: int | None) -> dict[int, tuple[int, int]]:
    """Each lost original packet of stream `ssrc` that an RTX packet repaired: its row -> (the repair's arrival,
    epoch ns; the repair's one-way delay, ns or -1). SRTP encrypts the RTX payload and with it the original sequence
    number (OSN), so a repair is tied to its original by what stays in the clear: the RTX packet carries the
    original's RTP timestamp (libwebrtc copies the header) and its payload is the original's + the 2-byte OSN. In
    arrival order, each RTX packet repairs the earliest-sent lost original of its frame of that payload length that
    left before it; one that matches none (a padding packet, a second copy, a probe of a packet that arrived) repairs
    nothing."""
    c = table.cols
    rtp = (c["direction"] == direction) & (c["cls"] == CLS_RTP)
    lost = np.flatnonzero(rtp & (c["ssrc"] == ssrc) & (c["status"] == LOST))
    if rtx_ssrc is None or not lost.size:
        return {}
    waiting: dict[tuple[int, int], list[int]] = {}  # (RTP timestamp, payload length) -> lost rows in send order
    for r in lost[np.argsort(c["t_send_ns"][lost], kind="stable")].tolist():
        waiting.setdefault((int(c["rtp_ts"][r]), int(c["rtp_payload_len"][r])), []).append(r)
    rtx = np.flatnonzero(rtp & (c["ssrc"] == rtx_ssrc) & (c["t_recv_ns"] >= 0))
    out: dict[int, tuple[int, int]] = {}
    for r in rtx[np.argsort(c["t_recv_ns"][rtx], kind="stable")].tolist():
        length = int(c["rtp_payload_len"][r])
        originals = waiting.get((int(c["rtp_ts"][r]), length - RTX_OSN_BYTES)) if length >= RTX_OSN_BYTES else None
        if not originals:
            continue
        sent = int(c["t_send_ns"][r])
        i = next((i for i, o in enumerate(originals) if sent < 0 or int(c["t_send_ns"][o]) <= sent), None)
        if i is not None:
            out[originals.pop(i)] = (int(c["t_recv_ns"][r]), int(c["owd_ns"][r]))
    return out


def sent_frames(table: PacketTable, direction: int, ssrc: int, rtx_ssrc: int | None = None) -> SentFrames:
    """The frames of one RTP stream, grouped by RTP timestamp: the original transmissions, each lost one replaced
    by its repair on the RTX stream `rtx_ssrc` (rtx_repairs) where one arrived. A frame is complete when its last
    missing packet arrives; with a lost packet no repair was seen for, it has no completion time (docs/metrics.md
    "frames")."""
    c = table.cols
    rows = np.flatnonzero((c["direction"] == direction) & (c["cls"] == CLS_RTP) & (c["ssrc"] == ssrc))
    ts = c["rtp_ts"][rows].astype(np.int64)
    send = c["t_send_ns"][rows]
    recv = c["t_recv_ns"][rows].copy()
    owd = c["owd_ns"][rows].copy()
    lost = c["status"][rows] == LOST
    repaired = np.zeros(rows.size, bool)
    repairs = rtx_repairs(table, direction, ssrc, rtx_ssrc)
    for i in np.flatnonzero(lost).tolist():
        got = repairs.get(int(rows[i]))
        if got is not None:
            recv[i], owd[i] = got
            repaired[i] = True
    order = np.lexsort((recv, ts))  # by timestamp, then arrival: a group's last row arrived last
    ts, send, recv, owd = ts[order], send[order], recv[order], owd[order]
    lost, repaired = lost[order], repaired[order]
    if not ts.size:
        empty = np.zeros(0, np.int64)
        return SentFrames(empty, empty, empty, empty, empty, empty, empty, empty, empty, empty)
    start = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    end = np.r_[start[1:], ts.size] - 1
    big = np.iinfo(np.int64).max
    first_send = np.minimum.reduceat(np.where(send >= 0, send, big), start)
    first_recv = np.minimum.reduceat(np.where(recv >= 0, recv, big), start)
    missing = np.add.reduceat((lost & ~repaired).astype(np.int64), start)
    last_recv = np.where(missing > 0, -1, recv[end])
    return SentFrames(
        rtp_ts=ts[start],
        first_send_ns=np.where(first_send == big, -1, first_send),
        last_send_ns=np.maximum.reduceat(send, start),
        first_recv_ns=np.where(first_recv == big, -1, first_recv),
        last_recv_ns=last_recv,
        last_owd_ns=np.where(last_recv >= 0, owd[end], -1),
        packets=np.diff(np.r_[start, ts.size]),
        lost=np.add.reduceat(lost.astype(np.int64), start),
        repaired=np.add.reduceat(repaired.astype(np.int64), start),
        missing=missing,
    )


def media_ssrc(table: PacketTable, direction: int, rtp_timestamps: np.ndarray) -> int | None:
    """The RTP stream the page displayed: of the direction's RTP streams, the one carrying the most of the displayed
    frames' RTP timestamps (the page's video element does not name its SSRC; an RTX stream carries only the
    timestamps of the frames it repairs)."""
    c = table.cols
    rtp = (c["direction"] == direction) & (c["cls"] == CLS_RTP)
    best, best_hits = None, 0
    wanted = np.unique(rtp_timestamps)
    for ssrc in np.unique(c["ssrc"][rtp]):
        hits = int(np.isin(wanted, c["rtp_ts"][rtp & (c["ssrc"] == ssrc)]).sum())
        if hits > best_hits:
            best, best_hits = int(ssrc), hits
    return best


def unwrap_rtp(ts: np.ndarray) -> np.ndarray:
    """32-bit RTP timestamps in their order, unwrapped: each step taken as the signed 32-bit difference."""
    if not ts.size:
        return ts.astype(np.int64)
    steps = _signed32(np.diff(ts.astype(np.int64)))
    return int(ts[0]) + np.r_[0, np.cumsum(steps)]


def _signed32(d: np.ndarray) -> np.ndarray:
    """Differences of 32-bit counters as the signed step they most likely were."""
    return np.mod(d + 2**31, 2**32) - 2**31


def frame_numbers(clip_index: list[int | None], rtp_unwrapped: np.ndarray, clip_frames: int, fps: float,
                  clock_hz: float = VIDEO_CLOCK_HZ) -> list[int | None]:
    """Clip indexes to frame numbers that go on across the clip's loops (Chrome plays the clip over and over): in RTP
    order, each read index is put in the loop that brings it nearest to the number the RTP time since the previous
    read frame predicts. The first read frame is in loop 0. None where no index was read."""
    out: list[int | None] = [None] * len(clip_index)
    prev: tuple[int, int] | None = None  # (number, unwrapped rtp) of the previous read frame
    for i in np.argsort(rtp_unwrapped, kind="stable"):
        idx = clip_index[i]
        if idx is None:
            continue
        if prev is None:
            number = idx
        else:
            predicted = prev[0] + (int(rtp_unwrapped[i]) - prev[1]) * fps / clock_hz
            number = idx + clip_frames * round((predicted - idx) / clip_frames)
        out[i] = number
        prev = (number, int(rtp_unwrapped[i]))
    return out


def _ms(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) else np.nan


def _packet_ms(v: np.ndarray, t0_ns: int) -> np.ndarray:
    """Packet times (epoch ns, -1 when not seen) as ms since t0 (NaN when not seen)."""
    return np.where(v >= 0, (v - t0_ns) / _NS, np.nan)


def _record_counts(recs: list[dict[str, Any]], index: list[int | None], frames: FramesFile) -> dict[str, Any]:
    """How many frames the page presented and how many of its records were read and numbered (index: each
    record's clip_index, None when not read); how many presented frames had their stamp read, the track's every
    frame joined in (presented.py)."""
    out: dict[str, Any] = {}
    presented = [r.get("presented_frames") for r in recs]
    ints = [p for p in presented if isinstance(p, int)]
    out["presented_frames"] = (max(ints) - min(ints) + 1) if ints else None
    out["callbacks_missed"] = (out["presented_frames"] - len(recs)) if ints else None
    read = [bool(r.get("read")) for r in recs]
    out["read"] = sum(read)
    out["numbered"] = sum(i is not None for i in index)
    out["numbered_ratio"] = out["numbered"] / out["read"] if out["read"] else None
    read_ms = np.array([r["read_ms"] for r in recs if isinstance(r.get("read_ms"), (int, float))])
    out["read_ms"] = distribution(read_ms) if read_ms.size else None
    missing = frames.header.get("track_frames_missing", "the run's page recorded no track frames (a run from before)")
    return out | presented_read(recs, frames.track_frames, missing)


def _display_order(numbers: list[int | None], rtp: np.ndarray, rtp_u: np.ndarray,
                   fps: float) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """What the frame numbers say about the order frames were shown in (shown twice, repeated pictures, out of order,
    jumps against the RTP clock); with the numbered records' indices in RTP order and their numbers."""
    out: dict[str, Any] = {}
    # Shown twice: one sent frame (one RTP timestamp) in more than one record. The same picture in two different
    # sent frames is the camera's doing (Chrome's file camera delivers a clip frame twice now and then, and the first
    # frame twice at every loop): counted apart, as repeated pictures.
    by_ts: dict[int, int] = {}
    for t in rtp.tolist():
        by_ts[t] = by_ts.get(t, 0) + 1
    twice = {t for t, k in by_ts.items() if k > 1}
    out["shown_twice"] = len(twice)
    out["shown_twice_numbers"] = sorted({n for n, t in zip(numbers, rtp.tolist()) if t in twice and n is not None})[:50]
    pictures: dict[int, set[int]] = {}
    for n, t in zip(numbers, rtp.tolist()):
        if n is not None:
            pictures.setdefault(n, set()).add(t)
    out["repeated_pictures"] = sum(1 for ts in pictures.values() if len(ts) > 1)
    highest, late = -1, []
    for n in numbers:
        if n is None:
            continue
        if n < highest:
            late.append(n)
        highest = max(highest, n)
    out["out_of_order"] = len(late)
    out["out_of_order_numbers"] = late[:50]
    # Read numbers against the RTP clock, step by step in RTP order: a step whose numbers advance more than one frame
    # away from what the RTP time between them says (a misread stamp makes two such steps; the camera repeating a
    # picture makes a step of one frame, not counted).
    has = np.array([n is not None for n in numbers])
    order = np.argsort(rtp_u, kind="stable")
    order = order[has[order]]
    nums = np.array([numbers[i] for i in order], dtype=float)
    if nums.size > 1:
        steps = np.diff(nums) - np.diff(rtp_u[order]) * fps / VIDEO_CLOCK_HZ
        out["number_jumps"] = int((np.abs(steps) > 1.5).sum())
    else:
        out["number_jumps"] = 0
    return out, order, nums


def _join(sf: SentFrames, rtp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each record's sent frame by RTP timestamp: its index in sf, whether it is there, the frame's first send and
    last receive (ns, -1 when not seen), and whether both were seen (joined)."""
    pos = np.searchsorted(sf.rtp_ts, rtp)
    pos = np.minimum(pos, max(len(sf.rtp_ts) - 1, 0))
    matched = (sf.rtp_ts[pos] == rtp) if sf.rtp_ts.size else np.zeros(len(rtp), bool)
    first_send = np.where(matched, sf.first_send_ns[pos], -1)
    last_recv = np.where(matched, sf.last_recv_ns[pos], -1)
    joined = matched & (first_send >= 0) & (last_recv >= 0)
    return pos, matched, first_send, last_recv, joined


def _never_shown(sf: SentFrames, first_send: np.ndarray, joined: np.ndarray, rtp: np.ndarray, rtp_u: np.ndarray,
                 order: np.ndarray, nums: np.ndarray, fps: float,
                 t0_ns: int) -> tuple[dict[str, Any], np.ndarray]:
    """Frames that left the sender between the first and the last frame shown and were never shown, with their
    estimated numbers; and their send times (ms since t0) for the series."""
    out: dict[str, Any] = {}
    # (A frame shown but not joined, e.g. one whose repair no capture saw, was shown.)
    if joined.any():
        fs_shown = first_send[joined]
        window = (sf.first_send_ns >= fs_shown.min()) & (sf.first_send_ns <= fs_shown.max())
        never = window & ~np.isin(sf.rtp_ts, rtp)
        out["sent_frames"] = int(window.sum())
        out["never_shown"] = int(never.sum())
        out["never_shown_numbers"] = []
        if never.any() and nums.size:
            # Their numbers: the nearest numbered record's (in RTP time) + the RTP time between them in frames.
            u = int(rtp_u[0]) + _signed32(sf.rtp_ts[never] - int(rtp[0]))
            ref_u = rtp_u[order]
            near = np.clip(np.searchsorted(ref_u, u), 1, len(ref_u)) - 1
            near = np.where((near + 1 < len(ref_u)) & (np.abs(ref_u[np.minimum(near + 1, len(ref_u) - 1)] - u)
                                                       < np.abs(ref_u[near] - u)), near + 1, near)
            est = nums[near] + (u - ref_u[near]) * fps / VIDEO_CLOCK_HZ
            out["never_shown_numbers"] = [int(round(x)) for x in est][:50]
        never_send_ms = _packet_ms(sf.first_send_ns[never], t0_ns)
    else:
        never_send_ms = np.zeros(0)
    return out, never_send_ms


def _capture_times(rtp: np.ndarray, chrome_capture: np.ndarray,
                   stream_reports: tuple[np.ndarray, np.ndarray] | None,
                   t0_ms: float) -> tuple[np.ndarray, dict[str, Any]]:
    """Each frame's capture time (ms since t0): from the sender's reports when the stream has any, else Chrome's
    estimate; with the source named (and, with reports, the estimate's error against them)."""
    out: dict[str, Any] = {}
    if stream_reports is not None and stream_reports[0].size:
        out["capture_source"] = "sender_reports"
        capture = capture_from_reports(rtp, (stream_reports[0], stream_reports[1] - t0_ms))
        got_both = ~np.isnan(chrome_capture)
        out["chrome_capture_estimate_error_ms"] = distribution((chrome_capture - capture)[got_both])
    else:
        out["capture_source"] = "chrome_estimate"
        capture = chrome_capture
    return capture, out


def analyse_side(frames: FramesFile, table: PacketTable, side: str, t0_ns: int, duration_s: float,
                 reports: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
                 inbound: dict[int, list[dict[str, Any]]] | None = None,
                 rtx: dict[int, int] | None = None, camera: tuple[float, str] | None = None) -> dict[str, Any]:
    """The frames side `side` presented during the call, joined with the packets of the stream it received.
    `reports`: the sender's RTCP sender reports (sender_reports), the capture clock; without them (or without one
    for the stream) the page's captureTime, Chrome's estimate, is the capture time. `inbound`: the receiver's
    getStats inbound-rtp samples per SSRC, for the freeze cross-check. `rtx`: media SSRC -> its RTX SSRC. `camera`:
    the sending camera's frame rate and where it was read (without it, the clip's)."""
    direction = FORWARD if side == "b" else REVERSE
    clip = frames.header.get("clip") or {}
    clip_frames = clip.get("frames") if isinstance(clip.get("frames"), int) else None
    fps = float(clip.get("fps") or 30.0)
    stamped = clip.get("stamp_version") is not None and clip_frames is not None
    # The call's span in whole milliseconds (the clock the page and the harness stamp in): compared in floating-point
    # nanoseconds, a frame shown in the very millisecond the call started fell in or out by rounding.
    lo = round(t0_ns / 1e6)
    hi = lo + round(duration_s * 1000)
    recs = [r for r in frames.frames if isinstance(r.get("expected_display_ms"), (int, float))
            and lo <= r["expected_display_ms"] < hi and isinstance(r.get("rtp_timestamp"), int)]
    out: dict[str, Any] = {"direction": "forward" if direction == FORWARD else "reverse",
                           "read_every": frames.header.get("read_every"), "clip": clip or None,
                           "records": len(recs), "dropped_records": frames.dropped}
    if not recs:
        return out | {"ssrc": None}
    rtp = np.array([r["rtp_timestamp"] for r in recs], dtype=np.int64)
    index = [r.get("clip_index") if isinstance(r.get("clip_index"), int) else None for r in recs]
    out |= _record_counts(recs, index, frames)

    # Frame numbers across the clip's loops, and what they say about the order frames were shown in.
    rtp_u = unwrap_rtp(rtp)
    numbers: list[int | None] = \
        frame_numbers(index, rtp_u, clip_frames, fps) if stamped and clip_frames else [None] * len(recs)
    out["frame_numbers"] = stamped
    order_fields, order, nums = _display_order(numbers, rtp, rtp_u, fps)
    out |= order_fields

    # The join with the packets.
    ssrc = media_ssrc(table, direction, rtp)
    out["ssrc"] = ssrc
    shown = [r for r in recs if isinstance(r.get("presentation_ms"), (int, float))]
    out["freezes"] = freezes.analyse([float(r["presentation_ms"]) for r in shown],
                                     (inbound or {}).get(ssrc) if ssrc is not None else None, t0_ns / _NS,
                                     [r.get("presented_frames") for r in shown])
    if ssrc is None:
        return out | {"joined": 0, "joined_ratio": 0.0}
    rtx_ssrc = (rtx or {}).get(ssrc)
    out["rtx_ssrc"] = rtx_ssrc
    sf = sent_frames(table, direction, ssrc, rtx_ssrc)
    pos, matched, first_send, last_recv, joined = _join(sf, rtp)
    out["joined"] = int(joined.sum())
    out["joined_ratio"] = out["joined"] / len(recs)
    out["completed_by_rtx"] = int((joined & (np.where(matched, sf.repaired[pos], 0) > 0)).sum())
    out["unrepaired"] = int((matched & (np.where(matched, sf.missing[pos], 0) > 0)).sum())

    # Times in ms since t0, so float64 keeps sub-microsecond precision (epoch ns in a float do not).
    t0_ms = t0_ns / _NS
    rel = lambda key: np.array([_ms(r.get(key)) for r in recs], dtype=float) - t0_ms
    display, chrome_capture, receive = rel("expected_display_ms"), rel("capture_ms"), rel("receive_ms")
    capture, capture_fields = _capture_times(rtp, chrome_capture, (reports or {}).get(ssrc), t0_ms)
    out |= capture_fields
    first_send_ms, last_recv_ms = _packet_ms(first_send, t0_ns), _packet_ms(last_recv, t0_ns)
    full = joined & ~np.isnan(capture)
    out["with_capture_time"] = int((~np.isnan(capture)).sum())
    out["glass_to_glass_ms"] = distribution((display - capture)[full])
    out["sender_ms"] = distribution((first_send_ms - capture)[full])
    out["network_ms"] = distribution((last_recv_ms - first_send_ms)[joined])
    out["receiver_ms"] = distribution((display - last_recv_ms)[joined])
    owd = np.where(matched, sf.last_owd_ns[pos], -1)
    out["last_packet_owd_ms"] = distribution(owd[joined & (owd >= 0)].astype(float) / _NS)
    # Chrome's own receive time (rVFC receiveTime: its last packet of the frame) against the capture's.
    got = joined & ~np.isnan(receive)
    out["receive_time_vs_capture_ms"] = distribution((receive - last_recv_ms)[got])

    never_fields, never_send_ms = _never_shown(sf, first_send, joined, rtp, rtp_u, order, nums, fps, t0_ns)
    out |= never_fields
    out["series"] = frame_series(display, capture, first_send_ms, last_recv_ms, joined, never_send_ms)
    out |= _every_frame(recs, rtp, rtp_u, display, chrome_capture, sf, (reports or {}).get(ssrc), t0_ms, hi - t0_ms,
                        camera or (clip.get("fps"), "clip"))
    return out


def _every_frame(recs: list[dict[str, Any]], rtp: np.ndarray, rtp_u: np.ndarray, display: np.ndarray,
                 chrome_capture: np.ndarray, sf: SentFrames, stream_reports: tuple[np.ndarray, np.ndarray] | None,
                 t0_ms: float, end_ms: float, camera: tuple[float | None, str]) -> dict[str, Any]:
    """`every_frame` and `every_frame_delay_ms` (every_frame.py): the records and the stream's sent frames in one
    unwrapped RTP time (the first record's), captured at the times the sender's reports give; without a report of
    the stream, at the RTP clock (90 kHz) set by the records' capture estimates (Chrome's; their median offset). With
    neither the frames never shown have no capture time: missing, with the reason."""
    sent_u = int(rtp_u[0]) + _signed32(sf.rtp_ts - int(rtp[0]))
    ms_per_tick = 1000.0 / VIDEO_CLOCK_HZ
    if stream_reports is not None and stream_reports[0].size:
        source, reports = "sender_reports", (stream_reports[0], stream_reports[1] - t0_ms)
        to_capture = lambda u: capture_from_reports(np.mod(u, 2**32), reports)
    elif (~np.isnan(chrome_capture)).any():
        has = ~np.isnan(chrome_capture)
        source, offset = "chrome_estimate", float(np.median(chrome_capture[has] - rtp_u[has] * ms_per_tick))
        to_capture = lambda u: offset + np.asarray(u, dtype=float) * ms_per_tick
    else:
        return {"every_frame": {"camera_fps": camera[0], "camera_fps_source": camera[1], "capture_source": None,
                                "missing": "no RTCP sender report of the stream in the sender's RTC event log and no "
                                           "capture time estimate: the frames never shown have no capture time"},
                "every_frame_delay_ms": None}
    shown = ~np.isnan(display)
    presented = np.array([float(r["presented_frames"]) if isinstance(r.get("presented_frames"), int) else np.nan
                          for r in recs])
    fields, delays = every_frame.analyse(rtp_u[shown], display[shown], presented[shown], sent_u, to_capture,
                                         camera[0], camera[1], end_ms)
    return {"every_frame": {**fields, "capture_source": source}, "every_frame_delay_ms": delays}


def frame_series(display: np.ndarray, capture: np.ndarray, first_send_ms: np.ndarray, last_recv_ms: np.ndarray,
                 joined: np.ndarray, never_send_ms: np.ndarray) -> dict[str, list[float | None]]:
    """metrics.json `frames.<side>.series`, the per-frame rows the dashboard draws (the delays above, frame by frame,
    not recomputed): per record in record order, its display time (s since call start) and its glass-to-glass
    delay and parts in ms (null where the distributions above leave it out: no packets joined, no capture time);
    and the departure times (s since call start, the first packet leaving) of the frames never shown."""
    full = joined & ~np.isnan(capture)

    def col(v: np.ndarray, keep: np.ndarray, digits: int) -> list[float | None]:
        return [round(float(x), digits) if k and np.isfinite(x) else None for x, k in zip(v, keep)]
    shown = ~np.isnan(display)
    return {"t_s": col(display / 1000.0, shown, 4),
            "glass_to_glass_ms": col(display - capture, full, 2), "sender_ms": col(first_send_ms - capture, full, 2),
            "network_ms": col(last_recv_ms - first_send_ms, joined, 2),
            "receiver_ms": col(display - last_recv_ms, joined, 2),
            "never_shown_t_s": [round(float(x) / 1000.0, 4) for x in never_send_ms if np.isfinite(x)]}


def analyse(frames_by_side: dict[str, FramesFile], table: PacketTable | None, t0_ns: int, duration_s: float,
            run_path: Path | None = None, problems: list[str] | None = None,
            inbound: dict[str, dict[int, list[dict[str, Any]]]] | None = None,
            rtx: dict[int, int] | None = None,
            cameras: dict[str, tuple[float, str]] | None = None) -> dict[str, Any] | None:
    """metrics.json `frames`: per receiving side ('b': the forward stream, 'a': the reverse), or None when no page
    recorded frames. `run_path`: where the sending side's RTC event log is (eventlog-<sender>.log); `inbound`: per
    receiving side, its getStats inbound-rtp samples per SSRC; `rtx`: media SSRC -> its RTX SSRC; `cameras`: per
    receiving side, the sending camera's frame rate and its source (every_frame.camera_rates)."""
    if not frames_by_side:
        return None
    if table is None:
        return {side: {"records": len(f.frames), "ssrc": None, "joined": 0, "joined_ratio": 0.0,
                       "note": "no packet table: the frames cannot be joined"} for side, f in frames_by_side.items()}
    out = {}
    for side, f in frames_by_side.items():
        sender = "a" if side == "b" else "b"
        reports = sender_reports(run_path / f"eventlog-{sender}.log", problems if problems is not None else []) \
            if run_path is not None else {}
        out[side] = analyse_side(f, table, side, t0_ns, duration_s, reports, (inbound or {}).get(side), rtx,
                                 (cameras or {}).get(side))
    return out
