"""The delay of every frame the camera produced (rtclab/every_frame.py through frames.py) on a hand-built call, against
a computation by the definition that walks the camera's frames one by one: a 30 fps camera whose frames the encoder
sometimes dropped, frames sent but never shown, one shown late (after a newer one), a stall the last frames never
leave, and the camera going on after its last sent frame until the call ends."""

from __future__ import annotations

import numpy as np
import pytest

from rtclab import every_frame, frame_gate, frames
from rtclab.packets import CLS_RTP, DELIVERED, FORWARD, PacketTable
from rtclab.rundir import FramesFile

E_MS = 1_700_000_000_000  # epoch ms of capture time 0
T0_MS = E_MS - 1000  # the call starts 1 s before it
MEDIA = 111
FPS = 30
TICKS = 90_000 // FPS
TS0 = 2**32 - 5 * TICKS  # frame k has RTP timestamp (TS0 + k TICKS) mod 2**32: the stream wraps at frame 5
DURATION_S = 3.99
END_MS = 2990.0  # the call's end, ms since capture time 0
# The analysis holds the sender report's time as epoch ms in a float64 (about 0.24 us apart at 1.7e12 ms).
TIME_TOL = 1e-3

# The camera produced frames 0..89 (k at k / 30 s) up to the call's end.
CAMERA = range(90)
NOT_SENT = {3, 4, 10, 11, 12, 40}  # dropped by the encoder: never on the wire
SENT_LAST = 79  # the encoder sent nothing after frame 79 (80..89: the camera's frames after the last sent one)
SHOWN = {k: 100.0 + 34.0 * k for k in range(0, 70) if k not in NOT_SENT and k not in {5, 6, 20, 21, 22}}
SHOWN[21] = SHOWN[23] + 5.0  # frame 21 shown after frame 23: late, out of order
# 70..79 were sent and never shown (the stall at the end); 5, 6, 20, 22 sent and never shown.


def ts(k: int) -> int:
    return (TS0 + k * TICKS) % 2**32


def capture_ms(k: int) -> float:
    return k * 1000.0 / FPS


def table() -> PacketTable:
    """One packet per sent frame, leaving 5 ms after its capture and arriving 30 ms later."""
    sent = [k for k in CAMERA if k <= SENT_LAST and k not in NOT_SENT]
    n = len(sent)
    send = np.array([int((E_MS + capture_ms(k) + 5) * 1e6) for k in sent], np.int64)
    cols = {"direction": np.full(n, FORWARD, np.uint8), "cls": np.full(n, CLS_RTP, np.uint8),
            "ssrc": np.full(n, MEDIA, np.uint32), "rtp_ts": np.array([ts(k) for k in sent], np.uint32),
            "status": np.full(n, DELIVERED, np.uint8), "t_send_ns": send, "t_recv_ns": send + 30_000_000,
            "owd_ns": np.full(n, 30_000_000, np.int64)}
    return PacketTable(cols=cols, flow_first=np.zeros(0, np.int64), order=np.arange(n), bounds=np.array([0, n]))


def frames_file(estimates: bool = False, without: int | None = None) -> FramesFile:
    """The shown frames' records in display order; with `estimates`, each with a capture time estimate 0.4 ms off
    the true one, early and late in turn (their median offset is 0)."""
    recs = [{"presented_frames": i + 1, "expected_display_ms": E_MS + d, "presentation_ms": E_MS + d,
             "capture_ms": E_MS + capture_ms(k) + (0.4 if i % 2 else -0.4) if estimates else None,
             "receive_ms": None, "rtp_timestamp": ts(k), "read": True, "clip_index": k % 150}
            for i, (k, d) in enumerate(sorted(SHOWN.items(), key=lambda kv: kv[1]))]
    # Frame `without` presented without a callback: no record, the counters go on.
    recs = [r for r in recs if without is None or r["rtp_timestamp"] != ts(without)]
    return FramesFile(header={"kind": "header", "read_every": 1,
                              "clip": {"fps": FPS, "frames": 150, "stamp_version": 1}}, frames=recs, dropped=0)


REPORTS = {MEDIA: (np.array([ts(7)], np.int64), np.array([E_MS + capture_ms(7)]))}


def by_definition() -> tuple[list[float], int]:
    """Each camera frame from the first shown one on: the earliest display among the shown frames of its number or
    a greater one, less its capture; with none, the call's end less its capture."""
    delays, to_end = [], 0
    for k in CAMERA:
        if k < min(SHOWN):
            continue
        later = [d for j, d in SHOWN.items() if j >= k]
        if later:
            delays.append(min(later) - capture_ms(k))
        else:
            delays.append(END_MS - capture_ms(k))
            to_end += 1
    return delays, to_end


def analysed(camera: tuple[float, str] | None = None, with_reports: bool = True, estimates: bool = False,
             without: int | None = None) -> dict:
    return frames.analyse_side(frames_file(estimates, without), table(), "b", T0_MS * 1_000_000, DURATION_S,
                               REPORTS if with_reports else {}, camera=camera)


def test_every_frame_delay_against_the_definition() -> None:
    side = analysed((30.0, "camera_settings"))
    delays, to_end = by_definition()
    want = np.array(delays)
    got = side["every_frame_delay_ms"]
    assert got["count"] == len(delays) == 90
    for q in (50, 95, 99):
        assert got[f"p{q}"] == pytest.approx(float(np.percentile(want, q)), abs=TIME_TOL)
    assert got["max"] == pytest.approx(want.max(), abs=TIME_TOL)
    assert got["min"] == pytest.approx(want.min(), abs=TIME_TOL)
    assert got["mean"] == pytest.approx(want.mean(), abs=TIME_TOL)
    ef = side["every_frame"]
    assert ef["capture_source"] == "sender_reports"
    assert ef["camera_fps"] == 30.0 and ef["camera_fps_source"] == "camera_settings" and ef["missing"] is None
    assert ef["camera_frames"] == 90 and ef["shown"] == len(SHOWN) and ef["not_shown"] == 90 - len(SHOWN)
    assert ef["never_sent"] == len(NOT_SENT) + (89 - SENT_LAST) and ef["sent"] == 90 - ef["never_sent"]
    assert ef["to_call_end"] == to_end == 90 - 70  # frames 70..89: nothing newer than 69 was shown
    assert ef["to_call_end_first_capture_s"] == pytest.approx((1000 + capture_ms(70)) / 1000, abs=1e-4)
    # Glass-to-glass counts only the frames shown: its median is below the every-frame one here.
    assert side["glass_to_glass_ms"]["count"] == len(SHOWN)


def test_by_hand_a_skipped_frame_waits_for_the_next_newer_one_shown() -> None:
    cam_u = np.array([0.0, 1.0, 2.0, 3.0])
    cam_ms = np.array([0.0, 10.0, 20.0, 30.0])
    # Frame 1 never shown; frame 2 shown at 50, frame 0 at 60 (late: after 2), frame 3 not before the end at 100.
    delays, to_end = every_frame.frame_delays(cam_u, cam_ms, np.array([2.0, 0.0]), np.array([50.0, 60.0]), 100.0)
    assert delays.tolist() == [50.0, 40.0, 30.0, 70.0] and to_end.tolist() == [False, False, False, True]


def test_a_frame_presented_without_a_record_is_put_back_in_its_gap() -> None:
    # Frame 30 presented between 29 and 31 without a callback: put back at the middle of their displays, which is
    # where it was, so the delays are the full record's.
    side = analysed((30.0, "camera_settings"), without=30)
    assert side["records"] == len(SHOWN) - 1 and side["callbacks_missed"] == 1
    assert side["every_frame"]["put_back"] == 1 and side["every_frame"]["shown"] == len(SHOWN)
    want = np.array(by_definition()[0])
    for q in (50, 95, 99):
        assert side["every_frame_delay_ms"][f"p{q}"] == pytest.approx(float(np.percentile(want, q)), abs=TIME_TOL)
    assert side["every_frame_delay_ms"]["mean"] == pytest.approx(want.mean(), abs=TIME_TOL)


def test_put_back_by_hand() -> None:
    # Records of 0 at 10 ms and 3 at 40 ms, the counter advanced by 3: 1 and 2 presented at 20 and 30 ms.
    u, d, n = every_frame.put_back(np.array([0.0, 3.0]), np.array([10.0, 40.0]), np.array([1.0, 4.0]),
                                   np.array([0, 1, 2, 3]))
    assert (u.tolist(), d.tolist(), n) == ([0.0, 3.0, 1.0, 2.0], [10.0, 40.0, 20.0, 30.0], 2)
    # Two presented without a record, one sent frame between: the newer slot is its (the other was not a new frame).
    u, d, n = every_frame.put_back(np.array([0.0, 3.0]), np.array([10.0, 40.0]), np.array([1.0, 4.0]),
                                   np.array([0, 2, 3]))
    assert (u.tolist(), d.tolist(), n) == ([0.0, 3.0, 2.0], [10.0, 40.0, 30.0], 1)
    # Counters that do not advance past one, or are missing, put nothing back.
    u, d, n = every_frame.put_back(np.array([0.0, 3.0]), np.array([10.0, 40.0]), np.array([1.0, np.nan]),
                                   np.array([0, 1, 2, 3]))
    assert n == 0 and u.tolist() == [0.0, 3.0]


def test_camera_frames_fill_the_encoders_gaps_at_the_camera_interval() -> None:
    ts_, sent = every_frame.camera_frames(np.array([0, 3000, 12000, 13400, 16400]), 3000.0)
    # 3000 -> 12000 holds two frames never sent; 13400 -> 16400 (one interval) and 12000 -> 13400 (under 1.5) none.
    assert ts_.tolist() == [0, 3000, 6000, 9000, 12000, 13400, 16400]
    assert sent.tolist() == [True, True, False, False, True, True, True]


def test_the_clips_rate_stands_in_for_the_cameras_and_a_wrong_rate_shows() -> None:
    # Without the camera's settings the clip's rate is the camera's, named as such.
    side = analysed()
    assert side["every_frame"]["camera_fps_source"] == "clip"
    assert side["every_frame_delay_ms"]["count"] == 90
    # A camera at 60 fps would have produced a frame between each two sent ones: twice as many, all counted.
    # Frames 0..79 at 60 fps are 159, then 21 more before the end (the last at 2633.3 + 21 x 16.7 = 2983.3 ms).
    at60 = analysed((60.0, "camera_settings"))
    assert at60["every_frame"]["camera_frames"] == 159 + 21 and at60["every_frame"]["never_sent"] == 180 - 74


def test_without_the_senders_reports_chromes_estimates_set_the_rtp_clock() -> None:
    side = analysed((30.0, "camera_settings"), with_reports=False, estimates=True)
    assert side["capture_source"] == "chrome_estimate" and side["every_frame"]["capture_source"] == "chrome_estimate"
    want = np.array(by_definition()[0])
    got = side["every_frame_delay_ms"]
    assert got["count"] == want.size
    for q in (50, 95, 99):
        assert got[f"p{q}"] == pytest.approx(float(np.percentile(want, q)), abs=TIME_TOL)
    # With neither reports nor estimates the frames never shown have no capture time: missing, with the reason.
    none = analysed(with_reports=False)
    assert none["every_frame_delay_ms"] is None and none["every_frame"]["capture_source"] is None
    assert "no RTCP sender report" in none["every_frame"]["missing"]


def test_the_camera_rate_is_read_from_the_sending_pages_media_event() -> None:
    ev = [{"event": "page_media", "side": "a", "page": {"video": {"frameRate": 60}}},
          {"event": "page_media", "side": "b", "page": {"video": None}},
          {"event": "page_media", "side": "a", "page": {"video": {"frameRate": 30}}}]  # a later one: not the first
    assert every_frame.camera_rates(ev, None) == {"b": (60.0, "camera_settings")}
    two_calls = [{**e, "call": c} for e, c in zip(ev, ["c2", "c1", "c1"])]
    assert every_frame.camera_rates(two_calls, "c1") == {"b": (30.0, "camera_settings")}


def test_a_record_with_holes_withholds_it() -> None:
    side = analysed((30.0, "camera_settings"))
    side["callbacks_missed"] = side["presented_frames"]  # more than 25 % presented without a callback
    out = frame_gate.apply(side)
    assert out["every_frame_delay_ms"] is None and "without a callback" in out["withheld"]["every_frame"]
