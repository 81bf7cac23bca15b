"""Reads Chrome's RTC event log, the current (v2) format and the legacy (v1) one, into numpy columns.

A log file is a sequence of protobuf `EventStream` messages written one after another (concatenating two of them is
one message holding both), so a log cut short by a browser that was killed is readable up to its last complete
top-level field; `EventLog.truncated_bytes` says how much was left over. The format descriptions are in
rtc_event_log2.proto (v2) and rtc_event_log.proto (v1); v2 batches are expanded with delta.py.

Times: `*_ms` columns are Chrome's own monotonic clock in milliseconds (the log's timestamps). `EventLog.utc_offset_ms`
(from the log's begin event; v1 logs have none) turns them into Unix time. Detector states use the v2 numbering for
both formats (DETECTOR_STATES): the v1 format numbers the same states from 0.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from . import rtc_event_log2_pb2 as v2
from . import rtc_event_log_pb2 as v1
from .delta import DeltaDecodingError, decode_deltas

Column = npt.NDArray[Any]

# Detector states in the v2 numbering (rtc_event_log2.proto, DelayBasedBweUpdates.DetectorState).
UNKNOWN, NORMAL, UNDERUSING, OVERUSING = 0, 1, 2, 3
DETECTOR_STATES = {UNKNOWN: "unknown", NORMAL: "normal", UNDERUSING: "underusing", OVERUSING: "overusing"}
# v1 DelayBasedBweUpdate.DetectorState -> v2 numbering.
_V1_STATE = {0: NORMAL, 1: UNDERUSING, 2: OVERUSING}
# Probe failure reasons (the same numbers in both formats; v1's 0 is success).
PROBE_FAILURES = {0: "unknown", 1: "invalid_send_receive_interval", 2: "invalid_send_receive_ratio", 3: "timeout"}

TRANSPORT_CC_URI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

# The RTP columns of EventLog.outgoing_rtp / incoming_rtp; transport_seq is -1 where the packet has none.
RTP_COLUMNS = ("time_ms", "ssrc", "seq", "rtp_ts", "payload_type", "marker", "header_size", "payload_size",
               "padding_size", "transport_seq")


class EventLogError(ValueError):
    """A file that is not an RTC event log, or one whose content contradicts the format."""


@dataclass
class EventLog:
    version: int  # 1 or 2
    utc_offset_ms: int | None  # Unix time (ms) minus log time (ms); None when the log has no begin event with it
    outgoing_rtp: dict[str, Column]
    incoming_rtp: dict[str, Column]
    incoming_rtcp: list[tuple[int, bytes]]  # (time_ms, compound RTCP packet), in log order
    outgoing_rtcp: list[tuple[int, bytes]]
    delay_based: dict[str, Column]  # time_ms, bitrate_bps, state (v2 numbering)
    loss_based: dict[str, Column]  # time_ms, bitrate_bps, fraction_loss (of 256), total_packets
    probe_clusters: dict[str, Column]  # time_ms, id, bitrate_bps, min_packets, min_bytes
    probe_results: dict[str, Column]  # time_ms, id, bitrate_bps (0 on failure), failure (-1 on success)
    alr: dict[str, Column]  # time_ms, in_alr
    video_send_ssrcs: set[int] = field(default_factory=set)
    rtx_send_ssrcs: set[int] = field(default_factory=set)
    audio_send_ssrcs: set[int] = field(default_factory=set)
    # The transport-wide sequence number's RTP header extension id(s) of the sent streams (from their configs).
    transport_cc_ids: set[int] = field(default_factory=set)
    has_end: bool = False  # the log's end event was written (the browser closed it)
    truncated_bytes: int = 0  # bytes after the last complete top-level field

    def unix_ms(self, log_ms: Column) -> Column:
        if self.utc_offset_ms is None:
            raise EventLogError("the log has no begin event with its Unix time")
        return log_ms + self.utc_offset_ms


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise IndexError
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
        if shift > 63:
            raise EventLogError("a varint longer than 10 bytes at the top level")


def complete_prefix(data: bytes) -> int:
    """Length of the longest prefix made of whole top-level protobuf fields (the rest was cut off mid-write)."""
    pos = 0
    while pos < len(data):
        start = pos
        try:
            key, pos = _varint(data, pos)
            wire = key & 7
            if wire == 2:
                length, pos = _varint(data, pos)
                pos += length
            elif wire == 0:
                _, pos = _varint(data, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                raise EventLogError(f"not an RTC event log: wire type {wire} at byte {start}")
        except IndexError:
            return start
        if pos > len(data):
            return start
    return pos


def read(path: Path) -> EventLog:
    """Parses one log file (either format)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise EventLogError(f"{path}: {e.strerror}") from None
    try:
        return parse(data)
    except EventLogError as e:
        raise EventLogError(f"{path}: {e}") from None


def parse(data: bytes) -> EventLog:
    if not data:
        raise EventLogError("empty file (the browser wrote no event)")
    end = complete_prefix(data)
    body = data[:end]
    # Both formats start with an EventStream; v1 holds only field 1 (Event), v2 starts with its begin event (16).
    first_field = data[0] >> 3 if data[0] < 0x80 else _varint(data, 0)[0] >> 3
    try:
        if first_field == 1:
            log = _parse_v1(v1.EventStream.FromString(body))
        else:
            log = _parse_v2(v2.EventStream.FromString(body))
    except DeltaDecodingError as e:
        raise EventLogError(str(e)) from None
    except Exception as e:  # protobuf's DecodeError and its kin: the bytes are not this format
        if type(e).__name__ == "DecodeError" or isinstance(e, (ValueError, TypeError)):
            raise EventLogError(f"not an RTC event log ({e})") from None
        raise
    log.truncated_bytes = len(data) - end
    return log


# ---- v2 ----------------------------------------------------------------------------------------------------------

def _signed(values: Column, bits: int) -> Column:
    """Two's complement of `bits` width, as stored for the format's signed fields."""
    v = values.astype(np.uint64)
    if bits == 64:
        return v.view(np.int64)
    top = np.uint64(1 << (bits - 1))
    out = v.astype(np.int64)
    return np.where(v >= top, out - (1 << bits), out)


def _field(msg: Any, name: str, n: int, *, signed_bits: int = 0, optional: bool = False) -> tuple[Column, Column]:
    """A batch's column: the first event's value, then its deltas. Returns (values, present)."""
    has = msg.HasField(name)
    if not has and not optional:
        raise EventLogError(f"{type(msg).__name__} without its required field {name}")
    base: int | None = None
    if has:
        raw = getattr(msg, name)
        base = int(raw) & (2**64 - 1) if signed_bits else int(raw)
    deltas, present = decode_deltas(getattr(msg, name + "_deltas"), base, n - 1) if n > 1 else \
        (np.zeros(0, np.uint64), np.zeros(0, bool))
    values = np.concatenate([[np.uint64(base if base is not None else 0)], deltas]).astype(np.uint64)
    present = np.concatenate([[has], present])
    if signed_bits:
        return _signed(values, signed_bits), present
    return values.astype(np.int64), present


def _batches(batches: Iterable[Any], columns: dict[str, tuple[str, int, bool]]) -> dict[str, Column]:
    """Expands batches into columns. columns: output name -> (proto field, signed width or 0, optional);
    an optional field's absent values become -1."""
    parts: dict[str, list[Column]] = {c: [] for c in columns}
    for b in batches:
        n = (b.number_of_deltas if b.HasField("number_of_deltas") else 0) + 1
        for out, (name, signed_bits, optional) in columns.items():
            values, present = _field(b, name, n, signed_bits=signed_bits, optional=optional)
            parts[out].append(np.where(present, values, -1) if optional else values)
    return {c: (np.concatenate(p).astype(np.int64) if p else np.zeros(0, np.int64)) for c, p in parts.items()}


_RTP_V2 = {"time_ms": ("timestamp_ms", 64, False), "ssrc": ("ssrc", 0, False), "seq": ("sequence_number", 0, False),
           "rtp_ts": ("rtp_timestamp", 0, False), "payload_type": ("payload_type", 0, False),
           "marker": ("marker", 0, False), "header_size": ("header_size", 0, False),
           "payload_size": ("payload_size", 0, False), "padding_size": ("padding_size", 0, False),
           "transport_seq": ("transport_sequence_number", 0, True)}


def _rtcp_v2(batches: Iterable[Any]) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for b in batches:
        n = (b.number_of_deltas if b.HasField("number_of_deltas") else 0) + 1
        times, _ = _field(b, "timestamp_ms", n, signed_bits=64)
        packets = [bytes(b.raw_packet)] + (_blobs(b.raw_packet_blobs, n - 1) if n > 1 else [])
        out += [(int(t), p) for t, p in zip(times, packets)]
    return out


def _blobs(data: bytes, count: int) -> list[bytes]:
    """A varint length per blob, then the blobs (libwebrtc's blob encoding)."""
    lengths, pos = [], 0
    try:
        for _ in range(count):
            length, pos = _varint(data, pos)
            lengths.append(length)
    except IndexError:
        raise EventLogError("RTCP blob lengths cut short") from None
    blobs = []
    for length in lengths:
        blobs.append(bytes(data[pos:pos + length]))
        pos += length
    if pos != len(data):
        raise EventLogError(f"RTCP blobs: {len(data) - pos} bytes left over")
    return blobs


def _single(events: Iterable[Any], columns: dict[str, str]) -> dict[str, Column]:
    rows = [[int(getattr(e, f)) for f in columns.values()] for e in events]
    arr = np.array(rows, dtype=np.int64).reshape(-1, len(columns))
    return {c: arr[:, i] for i, c in enumerate(columns)}


def _parse_v2(s: Any) -> EventLog:
    delay = _batches(s.delay_based_bwe_updates, {"time_ms": ("timestamp_ms", 64, False),
                                                 "bitrate_bps": ("bitrate_bps", 0, False),
                                                 "state": ("detector_state", 0, False)})
    loss = _batches(s.loss_based_bwe_updates, {"time_ms": ("timestamp_ms", 64, False),
                                               "bitrate_bps": ("bitrate_bps", 0, False),
                                               "fraction_loss": ("fraction_loss", 0, False),
                                               "total_packets": ("total_packets", 0, False)})
    success = _single(s.probe_success, {"time_ms": "timestamp_ms", "id": "id", "bitrate_bps": "bitrate_bps"})
    failure = _single(s.probe_failure, {"time_ms": "timestamp_ms", "id": "id", "failure": "failure"})
    results = {"time_ms": np.concatenate([success["time_ms"], failure["time_ms"]]),
               "id": np.concatenate([success["id"], failure["id"]]),
               "bitrate_bps": np.concatenate([success["bitrate_bps"], np.zeros(len(failure["id"]), np.int64)]),
               "failure": np.concatenate([np.full(len(success["id"]), -1, np.int64), failure["failure"]])}
    order = np.argsort(results["time_ms"], kind="stable")
    begin = [b for b in s.begin_log_events if b.HasField("utc_time_ms")]
    log = EventLog(
        version=2,
        utc_offset_ms=(begin[0].utc_time_ms - begin[0].timestamp_ms) if begin else None,
        outgoing_rtp=_batches(s.outgoing_rtp_packets, _RTP_V2),
        incoming_rtp=_batches(s.incoming_rtp_packets, _RTP_V2),
        incoming_rtcp=_rtcp_v2(s.incoming_rtcp_packets),
        outgoing_rtcp=_rtcp_v2(s.outgoing_rtcp_packets),
        delay_based=delay, loss_based=loss,
        probe_clusters=_single(s.probe_clusters, {"time_ms": "timestamp_ms", "id": "id", "bitrate_bps": "bitrate_bps",
                                                  "min_packets": "min_packets", "min_bytes": "min_bytes"}),
        probe_results={k: v[order] for k, v in results.items()},
        alr=_single(s.alr_states, {"time_ms": "timestamp_ms", "in_alr": "in_alr"}),
        video_send_ssrcs={c.ssrc for c in s.video_send_stream_configs},
        rtx_send_ssrcs={c.rtx_ssrc for c in s.video_send_stream_configs if c.HasField("rtx_ssrc")},
        audio_send_ssrcs={c.ssrc for c in s.audio_send_stream_configs},
        transport_cc_ids={c.header_extensions.transport_sequence_number_id
                          for c in list(s.video_send_stream_configs) + list(s.audio_send_stream_configs)
                          if c.header_extensions.HasField("transport_sequence_number_id")},
        has_end=len(s.end_log_events) > 0,
    )
    _sort_rtp(log)
    return log


def _sort_rtp(log: EventLog) -> None:
    """Batches are per event type, written in time order; a stable sort by time keeps the order within a ms."""
    for table in (log.outgoing_rtp, log.incoming_rtp):
        order = np.argsort(table["time_ms"], kind="stable")
        for k in table:
            table[k] = table[k][order]


# ---- v1 ----------------------------------------------------------------------------------------------------------

def rtp_header_fields(header: bytes, transport_cc_id: int | None) -> tuple[int, ...] | None:
    """(marker, payload type, sequence number, RTP timestamp, SSRC, header size, transport seq or -1) of a raw RTP
    header (RFC 3550 with RFC 8285 extensions), or None when it is not one."""
    if len(header) < 12 or header[0] >> 6 != 2:
        return None
    cc = header[0] & 0x0F
    marker, pt = header[1] >> 7, header[1] & 0x7F
    seq, ts, ssrc = struct.unpack_from("!HII", header, 2)
    pos = 12 + 4 * cc
    twcc = -1
    if header[0] & 0x10 and len(header) >= pos + 4:
        profile, words = struct.unpack_from("!HH", header, pos)
        ext, ext_end = pos + 4, min(pos + 4 + 4 * words, len(header))
        pos += 4 + 4 * words
        one_byte, two_byte = profile == 0xBEDE, profile & 0xFFF0 == 0x1000
        while transport_cc_id is not None and ext < ext_end and (one_byte or two_byte):
            if header[ext] == 0:  # padding
                ext += 1
                continue
            if one_byte:
                ident, length, ext = header[ext] >> 4, (header[ext] & 0x0F) + 1, ext + 1
                if ident == 15:
                    break
            else:
                if ext + 1 >= ext_end:
                    break
                ident, length, ext = header[ext], header[ext + 1], ext + 2
            if ident == transport_cc_id and length >= 2 and ext + 2 <= ext_end:
                twcc = struct.unpack_from("!H", header, ext)[0]
            ext += length
    return marker, pt, seq, ts, ssrc, pos, twcc


def _v1_stream_configs(events: list[Any]) -> tuple[dict[int, int], set[int], set[int], set[int]]:
    """From a v1 log's stream configs: each SSRC's transport-cc extension id, and the video, RTX and audio SSRCs
    sent."""
    ext_ids: dict[int, int] = {}  # ssrc -> transport-cc extension id, from the stream configs
    video: set[int] = set()
    rtx: set[int] = set()
    audio: set[int] = set()
    for e in events:
        if e.HasField("video_sender_config"):
            c = e.video_sender_config
            video.update(c.ssrcs)
            rtx.update(c.rtx_ssrcs)
            ids = [x.id for x in c.header_extensions if x.name == TRANSPORT_CC_URI]
            for ssrc in list(c.ssrcs) + list(c.rtx_ssrcs):
                if ids:
                    ext_ids[ssrc] = ids[0]
        for name in ("audio_sender_config",):
            if e.HasField(name):
                audio.add(e.audio_sender_config.ssrc)
                ids = [x.id for x in e.audio_sender_config.header_extensions if x.name == TRANSPORT_CC_URI]
                if ids:
                    ext_ids[e.audio_sender_config.ssrc] = ids[0]
        for name in ("video_receiver_config", "audio_receiver_config"):
            if e.HasField(name):
                c = getattr(e, name)
                ids = [x.id for x in c.header_extensions if x.name == TRANSPORT_CC_URI]
                if ids:
                    ext_ids[c.remote_ssrc] = ids[0]
    return ext_ids, video, rtx, audio


def _parse_v1(s: Any) -> EventLog:
    events = list(s.stream)
    ext_ids, video, rtx, audio = _v1_stream_configs(events)
    default_id = next(iter(ext_ids.values()), None)
    rows: dict[bool, list[tuple[int, ...]]] = {True: [], False: []}
    rtcp: dict[bool, list[tuple[int, bytes]]] = {True: [], False: []}
    delay, loss, clusters, results, alr = [], [], [], [], []
    has_end = False
    for e in events:
        t_ms = e.timestamp_us // 1000
        kind = e.WhichOneof("subtype")
        if kind == "rtp_packet":
            p = e.rtp_packet
            header = bytes(p.header)
            ssrc = struct.unpack_from("!I", header, 8)[0] if len(header) >= 12 else -1
            fields = rtp_header_fields(header, ext_ids.get(ssrc, default_id))
            if fields is None:
                continue
            marker, pt, seq, ts, ssrc, hsize, twcc = fields
            # v1 logs the packet length; the payload here includes any padding.
            rows[p.incoming].append((t_ms, ssrc, seq, ts, pt, marker, hsize, p.packet_length - hsize, 0, twcc))
        elif kind == "rtcp_packet":
            rtcp[e.rtcp_packet.incoming].append((t_ms, bytes(e.rtcp_packet.packet_data)))
        elif kind == "delay_based_bwe_update":
            u = e.delay_based_bwe_update
            delay.append((t_ms, u.bitrate_bps, _V1_STATE.get(u.detector_state, UNKNOWN)))
        elif kind == "loss_based_bwe_update":
            u = e.loss_based_bwe_update
            loss.append((t_ms, u.bitrate_bps, u.fraction_loss, u.total_packets))
        elif kind == "probe_cluster":
            c = e.probe_cluster
            clusters.append((t_ms, c.id, c.bitrate_bps, c.min_packets, c.min_bytes))
        elif kind == "probe_result":
            r = e.probe_result
            ok = r.result == v1.BweProbeResult.SUCCESS
            results.append((t_ms, r.id, r.bitrate_bps if ok else 0, -1 if ok else int(r.result)))
        elif kind == "alr_state":
            alr.append((t_ms, int(e.alr_state.in_alr)))
        elif e.type == v1.Event.LOG_END:
            has_end = True

    def cols(rows_: Sequence[tuple[int, ...]], names: tuple[str, ...]) -> dict[str, Column]:
        arr = np.array(rows_, dtype=np.int64).reshape(-1, len(names))
        return {n: arr[:, i] for i, n in enumerate(names)}

    log = EventLog(
        version=1, utc_offset_ms=None,
        outgoing_rtp=cols(rows[False], RTP_COLUMNS), incoming_rtp=cols(rows[True], RTP_COLUMNS),
        incoming_rtcp=rtcp[True], outgoing_rtcp=rtcp[False],
        delay_based=cols(delay, ("time_ms", "bitrate_bps", "state")),
        loss_based=cols(loss, ("time_ms", "bitrate_bps", "fraction_loss", "total_packets")),
        probe_clusters=cols(clusters, ("time_ms", "id", "bitrate_bps", "min_packets", "min_bytes")),
        probe_results=cols(results, ("time_ms", "id", "bitrate_bps", "failure")),
        alr=cols(alr, ("time_ms", "in_alr")),
        video_send_ssrcs=video, rtx_send_ssrcs=rtx, audio_send_ssrcs=audio, has_end=has_end,
        transport_cc_ids={i for ssrc, i in ext_ids.items() if ssrc in video | rtx | audio},
    )
    _sort_rtp(log)
    return log
