"""The RTC event log parser (rtclab.eventlog.parser, feedback): hand-built v2 and v1 logs with known events (the v2
batches delta-encoded by this test's own encoder), the detector-state numbering of each format, logs cut short and
files that are not logs; and a real log of this machine's Chromium (analysis/test/data/eventlog-chromium156-a.log:
side a of `node harness/cli.js --duration 20 --out /tmp/h3/run1`, scenarios/default.yaml, Chromium 156.0.8078.79,
2026-11-23; 82 KB)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from test_eventlog_delta import encode

from rtclab.eventlog import feedback, parser
from rtclab.eventlog import rtc_event_log2_pb2 as v2
from rtclab.eventlog import rtc_event_log_pb2 as v1

REAL_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-a.log"


def rtp_batch(msg, rows: list[dict]) -> None:
    """Fills an RTP batch: the first row in the plain fields, the others delta-encoded (widths chosen to fit)."""
    first = rows[0]
    for k, v in first.items():
        if v is not None:
            setattr(msg, k, v)
    msg.number_of_deltas = len(rows) - 1
    for k in first:
        base = first[k]
        vals = [r[k] for r in rows[1:]]
        if all(v == base for v in vals):
            continue
        if isinstance(base, bool):
            base, vals = int(base), [int(v) for v in vals]
        setattr(msg, k + "_deltas", encode(base, vals, 33, signed=True))


def v2_log() -> bytes:
    s = v2.EventStream()
    s.begin_log_events.add(timestamp_ms=1000, version=2, utc_time_ms=1_700_000_000_000)
    rows = [dict(timestamp_ms=1000 + 5 * i, marker=(i % 3 == 2), payload_type=96, sequence_number=(65534 + i) % 65536,
                 rtp_timestamp=90000 * i, ssrc=0xDEADBEEF, payload_size=1000 + i, header_size=24, padding_size=0,
                 transport_sequence_number=(i + 10) if i != 2 else None) for i in range(5)]
    rtp_batch(s.outgoing_rtp_packets.add(), rows)
    d = s.delay_based_bwe_updates.add(timestamp_ms=1100, bitrate_bps=500_000,
                                      detector_state=v2.DelayBasedBweUpdates.BWE_NORMAL)
    d.number_of_deltas = 2
    d.timestamp_ms_deltas = encode(1100, [1200, 1300], 8, signed=False)
    d.bitrate_bps_deltas = encode(500_000, [400_000, 450_000], 20, signed=True)
    d.detector_state_deltas = encode(1, [3, 2], 3, signed=True)
    s.loss_based_bwe_updates.add(timestamp_ms=1150, bitrate_bps=600_000, fraction_loss=3, total_packets=50)
    s.probe_clusters.add(timestamp_ms=1010, id=1, bitrate_bps=900_000, min_packets=5, min_bytes=4000)
    s.probe_success.add(timestamp_ms=1050, id=1, bitrate_bps=850_000)
    s.probe_failure.add(timestamp_ms=1060, id=2, failure=v2.BweProbeResultFailure.TIMEOUT)
    fb = transport_cc_packet(base=10, ref_64ms=2, statuses=[1, 0, 2, 1], deltas=[4, -8, 40])
    r = s.incoming_rtcp_packets.add(timestamp_ms=1090, raw_packet=fb)
    r.number_of_deltas = 1
    r.timestamp_ms_deltas = encode(1090, [1095], 4, signed=False)
    r.raw_packet_blobs = bytes([len(fb)]) + fb
    return s.SerializeToString()


def transport_cc_packet(base: int, ref_64ms: int, statuses: list[int], deltas: list[int]) -> bytes:
    """An RTCP transport feedback (RTPFB 205, FMT 15) with one status vector chunk of 2-bit statuses."""
    chunk = 0xC000
    for i, s in enumerate(statuses[:7]):
        chunk |= s << (12 - 2 * i)
    body = struct.pack("!HH", base, len(statuses)) + ref_64ms.to_bytes(3, "big") + bytes([0]) + struct.pack("!H", chunk)
    it = iter(deltas)
    for s in statuses:
        if s == 1:
            body += bytes([next(it)])
        elif s == 2:
            body += struct.pack("!h", next(it))
    body += b"\0" * (-len(body) % 4)
    header = struct.pack("!BBHII", 0x80 | 15, 205, (12 + len(body)) // 4 - 1, 1, 2)
    return header + body


def test_v2_batches_expand_to_their_events():
    log = parser.parse(v2_log())
    assert log.version == 2 and log.utc_offset_ms == 1_700_000_000_000 - 1000
    o = log.outgoing_rtp
    assert o["time_ms"].tolist() == [1000, 1005, 1010, 1015, 1020]
    assert o["seq"].tolist() == [65534, 65535, 0, 1, 2]
    assert o["transport_seq"].tolist() == [10, 11, -1, 13, 14]  # the third packet has none
    assert o["marker"].tolist() == [0, 0, 1, 0, 0]
    assert o["payload_size"].tolist() == [1000, 1001, 1002, 1003, 1004]
    assert o["rtp_ts"].tolist() == [0, 90000, 180000, 270000, 360000]
    assert set(o["ssrc"].tolist()) == {0xDEADBEEF}
    d = log.delay_based
    assert d["time_ms"].tolist() == [1100, 1200, 1300] and d["bitrate_bps"].tolist() == [500_000, 400_000, 450_000]
    assert [parser.DETECTOR_STATES[s] for s in d["state"].tolist()] == ["normal", "overusing", "underusing"]
    assert log.loss_based["fraction_loss"].tolist() == [3]
    assert log.probe_results["id"].tolist() == [1, 2] and log.probe_results["failure"].tolist() == [-1, 3]
    assert [t for t, _ in log.incoming_rtcp] == [1090, 1095]


def test_transport_feedback_statuses_and_times():
    log = parser.parse(v2_log())
    fb, bad = feedback.transport_feedback(log.incoming_rtcp[:1])
    assert bad == 0
    assert fb.seq.tolist() == [10, 11, 12, 13] and fb.received.tolist() == [True, False, True, True]
    # reference 2 * 64 ms, then +4, -8 and +40 quarter-milliseconds
    assert fb.recv_time_us.tolist() == [128_000 + 1000, -1, 128_000 + 1000 - 2000, 128_000 + 1000 - 2000 + 10_000]


def test_v1_events_and_its_detector_numbering():
    s = v1.EventStream()
    e = s.stream.add(timestamp_us=5_000_000, type=v1.Event.VIDEO_SENDER_CONFIG_EVENT)
    e.video_sender_config.ssrcs.append(0x1234)
    e.video_sender_config.header_extensions.add(name=parser.TRANSPORT_CC_URI, id=5)
    header = (struct.pack("!BBHII", 0x90, 96, 77, 3000, 0x1234) + struct.pack("!HH", 0xBEDE, 1)
              + bytes([0x51, 0x01, 0x02, 0]))
    e = s.stream.add(timestamp_us=5_001_000, type=v1.Event.RTP_EVENT)
    e.rtp_packet.incoming, e.rtp_packet.header, e.rtp_packet.packet_length = False, header, 1200
    for t, state in ((5_002_000, v1.DelayBasedBweUpdate.BWE_NORMAL), (5_003_000, v1.DelayBasedBweUpdate.BWE_OVERUSING),
                     (5_004_000, v1.DelayBasedBweUpdate.BWE_UNDERUSING)):
        e = s.stream.add(timestamp_us=t, type=v1.Event.DELAY_BASED_BWE_UPDATE)
        e.delay_based_bwe_update.bitrate_bps, e.delay_based_bwe_update.detector_state = 300_000, state
    log = parser.parse(s.SerializeToString())
    assert log.version == 1
    # v1 numbers NORMAL 0, UNDERUSING 1, OVERUSING 2; the parser gives v2's numbers for both formats
    states = [parser.DETECTOR_STATES[x] for x in log.delay_based["state"].tolist()]
    assert states == ["normal", "overusing", "underusing"]
    assert log.delay_based["time_ms"].tolist() == [5002, 5003, 5004]
    o = log.outgoing_rtp
    assert o["seq"].tolist() == [77] and o["transport_seq"].tolist() == [0x0102] and o["header_size"].tolist() == [20]
    assert log.transport_cc_ids == {5}


def test_a_log_cut_short_is_read_to_its_last_whole_record():
    data = v2_log()
    log = parser.parse(data[:-3])
    assert log.truncated_bytes > 0 and log.version == 2
    assert parser.complete_prefix(data) == len(data)


@pytest.mark.parametrize("data, words", [(b"", "empty"), (b"\x07\x01\x02", "not an RTC event log"),
                                         (b"\x82\x01\x05\xff\xff\xff\xff\xff", "not an RTC event log")])
def test_not_a_log(data, words):
    with pytest.raises(parser.EventLogError, match=words):
        parser.parse(data)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(parser.EventLogError, match="nope.log"):
        parser.read(tmp_path / "nope.log")


def test_real_chromium_log():
    log = parser.read(REAL_LOG)
    assert log.version == 2 and log.truncated_bytes == 0 and log.utc_offset_ms is not None
    o = log.outgoing_rtp
    assert len(o["time_ms"]) == 2012 and (np.diff(o["time_ms"]) >= 0).all()
    # Every packet Chrome sent carries a transport-wide sequence number; they are unique and, in send order, have
    # no gap (Chrome numbers packets as the pacer sends them; the log records them in that order per stream).
    tw = np.sort(o["transport_seq"])
    assert (tw >= 0).all() and (np.diff(tw) == 1).all()
    assert log.audio_send_ssrcs <= set(o["ssrc"].tolist()) and log.transport_cc_ids == {4}
    d = log.delay_based
    assert len(d["time_ms"]) == 212 and set(d["state"].tolist()) <= {parser.NORMAL, parser.UNDERUSING, parser.OVERUSING}
    assert (d["state"] == parser.OVERUSING).sum() == 5
    # Each batch's first event is what protobuf itself reads from the plain fields.
    raw = v2.EventStream.FromString(REAL_LOG.read_bytes())
    firsts = sorted((b.timestamp_ms, b.ssrc, b.sequence_number) for b in raw.outgoing_rtp_packets)
    rows = set(zip(o["time_ms"].tolist(), o["ssrc"].tolist(), o["seq"].tolist()))
    assert all(f in rows for f in firsts)
    fb, bad = feedback.transport_feedback(log.incoming_rtcp)
    assert bad == 0 and len(fb) == 1978 and fb.received.all()


def test_a_damaged_log_is_a_problem_not_a_crash(tmp_path):
    from rtclab.eventlog import analysis

    (tmp_path / "eventlog-a.log").write_bytes(b"\x07garbage")
    (tmp_path / "eventlog-b.log").write_bytes(REAL_LOG.read_bytes())
    problems: list[str] = []
    section = analysis.analyse(tmp_path, None, None, None, problems)
    assert section is not None and section["sides"]["a"] is None and section["n_dd"] is None
    assert len(problems) == 1 and "eventlog-a.log" in problems[0] and "not an RTC event log" in problems[0]
    assert section["sides"]["b"]["controller"]["delay_based_updates"] == 212
    assert analysis.analyse(tmp_path / "none", None, None, None, []) is None
