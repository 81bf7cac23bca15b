"""The per-frame join (rtclab/frames.py) on a hand-built call whose every number is worked out by hand below: a
4-frame clip looping, RTP timestamps that wrap through 2**32, a frame repeated, one shown late, one never shown, one
unreadable stamp, one frame whose packets no capture saw, and a retransmission stream beside the media."""

from __future__ import annotations

import numpy as np
import pytest

from rtclab import frames
from rtclab.packets import CLS_RTP, DELIVERED, FORWARD, LOST, PacketTable
from rtclab.rundir import FramesFile

E_MS = 1_700_000_000_000  # epoch ms of t = 0
MEDIA, AUDIO, RTX = 111, 222, 333
TICKS = 3000  # 90 kHz / 30 fps
TS0 = 2**32 - 2 * TICKS  # frame k: (TS0 + k * TICKS) mod 2**32, so frame 2 has timestamp 0


def ts(k: int) -> int:
    return (TS0 + k * TICKS) % 2**32


def capture_ms(k: int) -> int:
    return 40 * k


def build_table() -> PacketTable:
    """Frame k (0..6): captured at 40k ms; packet 1 leaves at +5+k ms and takes 30 ms, packet 2 leaves at +8+k and
    takes 32 ms; frame 5 has a third packet (+9+k) that is lost. Frame 7 never appears on a capture."""
    rows: list[tuple[int, int, int, float, float]] = []  # ssrc, rtp_ts, status, send_ms, recv_ms
    for k in range(7):
        c = capture_ms(k)
        rows.append((MEDIA, ts(k), DELIVERED, c + 5 + k, c + 5 + k + 30))
        rows.append((MEDIA, ts(k), DELIVERED, c + 8 + k, c + 8 + k + 32))
        if k == 5:
            rows.append((MEDIA, ts(k), LOST, c + 9 + k, -1))
        rows.append((AUDIO, 777 + 960 * k, DELIVERED, c + 1, c + 31))
    rows.append((RTX, ts(2), DELIVERED, 500, 530))  # a retransmission of frame 2, long after it was shown
    n = len(rows)
    ns = lambda ms: np.array([-1 if v < 0 else int((E_MS + v) * 1_000_000) for v in ms], dtype=np.int64)
    send, recv = ns([r[3] for r in rows]), ns([r[4] for r in rows])
    cols = {
        "direction": np.full(n, FORWARD, np.uint8), "cls": np.full(n, CLS_RTP, np.uint8),
        "ssrc": np.array([r[0] for r in rows], np.uint32), "rtp_ts": np.array([r[1] for r in rows], np.uint32),
        "status": np.array([r[2] for r in rows], np.uint8), "t_send_ns": send, "t_recv_ns": recv,
        "owd_ns": np.where(recv >= 0, recv - send, -1),
    }
    return PacketTable(cols=cols, flow_first=np.zeros(0, np.int64), order=np.arange(n), bounds=np.array([0, n]))


def record(k: int, display_ms: float, presented: int, clip_index: int | None) -> dict:
    return {"kind": "frame", "presented_frames": presented, "expected_display_ms": E_MS + display_ms,
            "capture_ms": E_MS + capture_ms(k), "receive_ms": None, "rtp_timestamp": ts(k), "read": True,
            "clip_index": clip_index, "contrast": 250 if clip_index is not None else 10, "read_ms": 0.5}


def frames_file() -> FramesFile:
    """Shown in this order: frames 0, 1 (stamp unreadable), 3, 2 (late), 4, 4 again 33 ms later, 6, 7; frame 5
    never. The clip started at its index 2, so frame k shows index (k + 2) % 4; presentedFrames skips 7 (a callback
    missed). Display: 20 ms after the frame's last packet arrived (last packet: 40k + 8 + k + 32 ms)."""
    last = lambda k: capture_ms(k) + 40 + k
    recs = [record(0, last(0) + 20, 1, 2), record(1, last(1) + 20, 2, None), record(3, last(3) + 20, 3, 1),
            record(2, last(2) + 20, 4, 0), record(4, last(4) + 20, 5, 2), record(4, last(4) + 53, 6, 2),
            record(6, last(6) + 20, 8, 0), record(7, 400, 9, 1)]
    header = {"kind": "header", "read_every": 1, "clip": {"frames": 4, "fps": 30, "stamp_version": 1}}
    return FramesFile(header=header, frames=recs, dropped=0)


@pytest.fixture
def side() -> dict:
    return frames.analyse({"b": frames_file()}, build_table(), E_MS * 1_000_000 - 10**9, 60.0)["b"]


def test_counts_by_hand(side):
    assert side["ssrc"] == MEDIA  # not the RTX stream, which carries one of the shown timestamps too
    assert (side["records"], side["presented_frames"], side["callbacks_missed"]) == (8, 9, 1)
    assert (side["read"], side["numbered"]) == (8, 7)
    # Frame 7's packets are on no capture: 7 of 8 records joined.
    assert (side["joined"], side["joined_ratio"]) == (7, 7 / 8)


def test_numbers_across_loops_by_hand(side):
    # Numbers (loop 0 from the first read frame, index 2): frames 0..7 are 2..9. Shown in the order 2, (unread), 5,
    # 4, 6, 6, 8, 9: 4 came after 5, 6 was shown twice, frame 5 (number 7) left a and was never shown.
    assert (side["out_of_order"], side["out_of_order_numbers"]) == (1, [4])
    assert (side["shown_twice"], side["shown_twice_numbers"]) == (1, [6])
    assert (side["sent_frames"], side["never_shown"], side["never_shown_numbers"]) == (7, 1, [7])
    assert (side["number_jumps"], side["repeated_pictures"]) == (0, 0)


def with_index(changes: dict[int, int | None]) -> FramesFile:
    """frames_file() with some records' stamps read differently (record position -> clip index)."""
    f = frames_file()
    for i, index in changes.items():
        f.frames[i]["clip_index"] = index
    return f


def test_a_camera_repeat_is_a_repeated_picture_not_a_frame_shown_twice():
    # Record 1 (frame 1) shows the picture of frame 0 (index 2): the camera sent it twice. Numbers: 2, 2, then frame
    # 2's index 0 lands on 4 (the RTP time says one frame after 2: 3, and 4 is the nearest number with index 0).
    side = frames.analyse({"b": with_index({1: 2})}, build_table(), E_MS * 1_000_000 - 10**9, 60.0)["b"]
    assert (side["repeated_pictures"], side["shown_twice"], side["number_jumps"]) == (1, 1, 0)


def test_a_misread_stamp_makes_two_jumps():
    # Record 6 (frame 6, truly index 0) read as index 2: from frame 4's number 6 and two frames of RTP time (8), the
    # nearest numbers with index 2 are 6 and 10, a tie that goes to 10 (round half to even of 1.5 loops); frame 7
    # (index 1) then lands on 9. Steps in RTP order: 6 -> 10 over 2 frames, 10 -> 9 over 1 frame: two jumps, and 9
    # shown after 10 is out of order.
    side = frames.analyse({"b": with_index({6: 2})}, build_table(), E_MS * 1_000_000 - 10**9, 60.0)["b"]
    assert side["number_jumps"] == 2
    assert side["out_of_order_numbers"] == [4, 9]


def test_delays_by_hand(side):
    # Joined records, in ms: sender = 5 + k, network = (8 + k + 32) - (5 + k) = 35, receiver = 20 (53 for the repeat),
    # glass-to-glass = their sum: frames 0, 1, 3, 2, 4, 4', 6 -> 60, 61, 63, 62, 64, 97, 66.
    g2g, sender, receiver = side["glass_to_glass_ms"], side["sender_ms"], side["receiver_ms"]
    assert g2g["count"] == 7 and g2g["p50"] == pytest.approx(63)
    # p95 by linear interpolation between ranks: sorted 60 61 62 63 64 66 97, 0.95 * 6 = 5.7 -> 66 + 0.7 * 31.
    assert g2g["p95"] == pytest.approx(87.7)
    assert (sender["p50"], sender["p95"]) == (pytest.approx(8), pytest.approx(9 + 0.7 * 2))
    assert side["network_ms"]["min"] == pytest.approx(35) and side["network_ms"]["max"] == pytest.approx(35)
    assert (receiver["p50"], receiver["max"]) == (pytest.approx(20), pytest.approx(53))
    assert side["last_packet_owd_ms"]["mean"] == pytest.approx(32)


def test_frame_numbers_follow_a_long_gap():
    # 30 fps, 150-frame clip: index 10, then 2.2 s (66 frames) of RTP time later index 76, then 3 s (90 frames) later
    # index 16 (76 + 90 = 166 = 150 + 16): the third is in loop 1.
    rtp = np.array([0, 66 * TICKS, 156 * TICKS], dtype=np.int64)
    assert frames.frame_numbers([10, 76, 16], rtp, 150, 30.0) == [10, 76, 166]


def test_rtp_unwraps_through_zero_and_back():
    raw = np.array([2**32 - 3000, 0, 3000, 0, 6000], dtype=np.int64)
    assert frames.unwrap_rtp(raw).tolist() == [2**32 - 3000, 2**32, 2**32 + 3000, 2**32, 2**32 + 6000]


def test_capture_time_from_the_senders_reports():
    # One sender report: RTP timestamp ts(3) (just past the 2**32 wrap) was captured at 121 ms. Frame k was then
    # captured at 121 + (k - 3) * 1000 / 30 ms, whatever Chrome's estimate (the records' capture_ms, 40 k) says.
    reports = {MEDIA: (np.array([ts(3)], np.int64), np.array([E_MS + 121.0]))}
    side = frames.analyse_side(frames_file(), build_table(), "b", E_MS * 1_000_000 - 10**9, 60.0, reports)
    assert side["capture_source"] == "sender_reports"
    shown = [0, 1, 3, 2, 4, 4, 6]  # the joined records' frames, display order
    capture = {k: 121 + (k - 3) * 1000 / 30 for k in range(7)}
    sender = sorted((40 * k + 5 + k) - capture[k] for k in shown)
    assert side["sender_ms"]["min"] == pytest.approx(sender[0]) and side["sender_ms"]["p50"] == pytest.approx(sender[3])
    # Chrome's estimate (40 k) against the reports' clock, per record with an estimate (all 8 records).
    err = sorted(40 * k - capture.get(k, 121 + (k - 3) * 1000 / 30) for k in [0, 1, 3, 2, 4, 4, 6, 7])
    assert side["chrome_capture_estimate_error_ms"]["max"] == pytest.approx(err[-1])
    other = frames.analyse_side(frames_file(), build_table(), "b", E_MS * 1_000_000 - 10**9, 60.0,
                                {AUDIO: reports[MEDIA]})
    assert other["capture_source"] == "chrome_estimate"  # no report of the displayed stream


def test_sampled_reads_count_only_the_frames_tried():
    # read_every 2: the stamp was tried on records 1, 3, 5, 7 only (the others carry no index): 4 tried, 3 read
    # (record 1's stamp is unreadable in frames_file()); every record is still joined.
    f = frames_file()
    f.header["read_every"] = 2
    for i, r in enumerate(f.frames):
        if i % 2 == 0:
            r.update(read=False, clip_index=None, read_ms=None)
    side = frames.analyse({"b": f}, build_table(), E_MS * 1_000_000 - 10**9, 60.0)["b"]
    assert (side["read_every"], side["read"], side["numbered"]) == (2, 4, 3)
    assert side["numbered_ratio"] == 3 / 4 and side["joined"] == 7


# ---- frames completed by a retransmission (RTX, RFC 4588) -----------------------------------------------------------

def rtx_table() -> tuple[PacketTable, dict[str, int]]:
    """Five frames of MEDIA (frame k: RTP timestamp ts(k), captured at 40k ms) and the RTX stream's packets, each with
    its RTP payload length (an RTX packet's = its original's + 2, the encrypted OSN). Times in ms since E_MS:
    frame 0: 5 -> 35 (1000 bytes), 8 lost (1000), 9 -> 41 (990); RTX 1002 bytes 60 -> 90 repairs the lost one;
    frame 1: both packets lost, 45 (800) and 46 (801); RTX 803 bytes 70 -> 101 repairs the second, 802 bytes
      72 -> 103 the first; then a padding packet (253 bytes, 74 -> 104) and a second copy of the first (802 bytes,
      120 -> 150) repair nothing;
    frame 2: 85 -> 115 (700), 86 lost (600); its one RTX packet (702 bytes, 95 -> 125) is a copy of the packet that
      arrived: the lost one has no repair;
    frame 3: 125 lost (500), 126 -> 156 (500, the same size); RTX 502 bytes 160 -> 190 repairs the lost one;
    frame 4: 165 -> 195 (900), nothing lost."""
    rows = [(MEDIA, 0, DELIVERED, 5, 35, 1000), (MEDIA, 0, LOST, 8, -1, 1000), (MEDIA, 0, DELIVERED, 9, 41, 990),
            (RTX, 0, DELIVERED, 60, 90, 1002),
            (MEDIA, 1, LOST, 45, -1, 800), (MEDIA, 1, LOST, 46, -1, 801), (RTX, 1, DELIVERED, 70, 101, 803),
            (RTX, 1, DELIVERED, 72, 103, 802), (RTX, 1, DELIVERED, 74, 104, 253), (RTX, 1, DELIVERED, 120, 150, 802),
            (MEDIA, 2, DELIVERED, 85, 115, 700), (MEDIA, 2, LOST, 86, -1, 600), (RTX, 2, DELIVERED, 95, 125, 702),
            (MEDIA, 3, LOST, 125, -1, 500), (MEDIA, 3, DELIVERED, 126, 156, 500), (RTX, 3, DELIVERED, 160, 190, 502),
            (MEDIA, 4, DELIVERED, 165, 195, 900)]
    n = len(rows)
    ns = lambda ms: np.array([-1 if v < 0 else int((E_MS + v) * 1_000_000) for v in ms], dtype=np.int64)
    send, recv = ns([r[3] for r in rows]), ns([r[4] for r in rows])
    cols = {
        "direction": np.full(n, FORWARD, np.uint8), "cls": np.full(n, CLS_RTP, np.uint8),
        "ssrc": np.array([r[0] for r in rows], np.uint32), "rtp_ts": np.array([ts(r[1]) for r in rows], np.uint32),
        "status": np.array([r[2] for r in rows], np.uint8), "t_send_ns": send, "t_recv_ns": recv,
        "owd_ns": np.where(recv >= 0, recv - send, -1), "rtp_payload_len": np.array([r[5] for r in rows], np.int32),
    }
    row_of = {"f0_lost": 1, "f1_first": 4, "f1_second": 5, "f2_lost": 11, "f3_lost": 13}
    return PacketTable(cols=cols, flow_first=np.zeros(0, np.int64), order=np.arange(n),
                       bounds=np.array([0, n])), row_of


def rtx_frames_file() -> FramesFile:
    """Each of the five frames shown once, at 100, 110, 130, 200 and 215 ms."""
    recs = [record(k, d, k + 1, None) for k, d in enumerate([100, 110, 130, 200, 215])]
    return FramesFile(header={"kind": "header", "read_every": 1, "clip": {"fps": 30}}, frames=recs, dropped=0)


def test_each_lost_packet_is_tied_to_the_retransmission_that_repaired_it():
    table, row = rtx_table()
    got = frames.rtx_repairs(table, FORWARD, MEDIA, RTX)
    at = lambda ms: int((E_MS + ms) * 1_000_000)
    assert got == {row["f0_lost"]: (at(90), 30 * 1_000_000), row["f1_second"]: (at(101), 31 * 1_000_000),
                   row["f1_first"]: (at(103), 31 * 1_000_000), row["f3_lost"]: (at(190), 30 * 1_000_000)}
    assert frames.rtx_repairs(table, FORWARD, MEDIA, None) == {}
    sf = frames.sent_frames(table, FORWARD, MEDIA, RTX)
    k = [[ts(k) for k in range(5)].index(t) for t in sf.rtp_ts.tolist()]  # rows in RTP order: frames 2, 3, 4, 0, 1
    by_frame = lambda v: [x for _, x in sorted(zip(k, v.tolist()))]
    assert by_frame(sf.lost) == [1, 2, 1, 1, 0] and by_frame(sf.repaired) == [1, 2, 0, 1, 0]
    assert by_frame(sf.missing) == [0, 0, 1, 0, 0]
    assert by_frame(sf.last_recv_ns) == [at(90), at(103), -1, at(190), at(195)]


def test_a_frame_completed_by_a_retransmission_is_joined_and_timed_by_its_arrival():
    table, _ = rtx_table()
    side = frames.analyse({"b": rtx_frames_file()}, table, E_MS * 1_000_000 - 10**9, 60.0, rtx={MEDIA: RTX})["b"]
    assert side["ssrc"] == MEDIA and side["rtx_ssrc"] == RTX
    # Frames 0, 1, 3 complete when their last repair arrives, 4 by its own packet; 2's lost packet has no repair.
    assert (side["joined"], side["joined_ratio"], side["completed_by_rtx"], side["unrepaired"]) == (4, 4 / 5, 3, 1)
    t0 = 1000  # the call starts 1 s before E_MS: every time below is + 1000 ms from t0
    network = sorted([90 - 5, 103 - 45, 190 - 125, 195 - 165])
    receiver = sorted([100 - 90, 110 - 103, 200 - 190, 215 - 195])
    assert side["network_ms"]["min"] == pytest.approx(network[0]) and side["network_ms"]["max"] == network[-1]
    assert side["network_ms"]["mean"] == pytest.approx(sum(network) / 4)
    assert side["receiver_ms"]["mean"] == pytest.approx(sum(receiver) / 4)
    assert side["last_packet_owd_ms"]["mean"] == pytest.approx((30 + 31 + 30 + 30) / 4)
    assert side["series"]["network_ms"] == [85.0, 58.0, None, 65.0, 30.0]
    assert side["series"]["t_s"][0] == pytest.approx((t0 + 100) / 1000)
    assert (side["sent_frames"], side["never_shown"]) == (5, 0)  # frame 2 was shown, though not joined
    # Without the RTX stream (no getStats, no recorded tracks) a frame that lost a packet has no completion time.
    blind = frames.analyse({"b": rtx_frames_file()}, table, E_MS * 1_000_000 - 10**9, 60.0)["b"]
    assert (blind["rtx_ssrc"], blind["joined"], blind["completed_by_rtx"], blind["unrepaired"]) == (None, 1, 0, 4)
