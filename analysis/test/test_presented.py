"""Which presented frames had their stamp read (rtclab/presented.py): the page's records joined with the track's every
frame on the RTP timestamp, on a hand-built stream through the RTP wrap, and on simulated calls against the truth the
simulation knows (the count is a lower bound, exact when the compositor skipped no frame)."""

from __future__ import annotations

import random
from typing import Any

from rtclab.presented import presented_read

TICKS = 1500  # 60 fps at 90 kHz
RTP0 = 2**32 - 2 * TICKS  # frame i has RTP (RTP0 + i TICKS) mod 2**32: the stream wraps at frame 2


def rtp(i: int) -> int:
    return (RTP0 + i * TICKS) % 2**32


def record(i: int, presented: int, read: bool, dropped: int | None) -> dict[str, Any]:
    return {"kind": "frame", "presented_frames": presented, "rtp_timestamp": rtp(i),
            "clip_index": i if read else None, "dropped_video_frames": dropped}


def track_frame(i: int, read: bool) -> dict[str, Any]:
    return {"kind": "track_frame", "rtp_timestamp": rtp(i), "clip_index": i if read else None}


def test_a_hand_built_stream_through_the_wrap():
    # Delivered frames 0..9; the compositor skipped frame 4 and presented the others (counters 1..9).
    # Records: frames 0, 1 (read), 3 (not read there), 7 (read), 9 (read); droppedVideoFrames 1 from frame 7's on.
    recs = [record(0, 1, True, 0), record(1, 2, True, 0), record(3, 4, False, 0), record(7, 7, True, 1),
            record(9, 9, True, 1)]
    # The worker missed frame 6 (a full queue); it read every other frame, the skipped frame 4 included.
    track = [track_frame(i, True) for i in range(10) if i != 6]
    out = presented_read(recs, track, None)
    # Presented 0 1 2 3 5 6 7 8 9; read: 0 1 7 9 by their record, 3 on the track, 2 and 8 (gaps of one) on the track,
    # 5 of the gap 3 -> 7 (presented 5 and 6 without a record: track frames 4 and 5 there, one of them skipped): 8.
    assert out == {"presented_read": 8, "presented_read_ratio": 8 / 9, "presented_read_from_track": 4,
                   "track_frames": 9, "track_frames_missing": None, "dropped_video_frames": 1}


def test_a_skipped_frame_is_never_counted_for_a_presented_one_unread():
    # Between the records of frames 0 and 4 the compositor presented frames 1 and 3 and skipped frame 2
    # (droppedVideoFrames 1); the track read frames 1 and 2, not 3: one counts, though two read frames lie there.
    recs = [record(0, 1, True, 0), record(4, 4, True, 1)]
    track = [track_frame(0, True), track_frame(1, True), track_frame(2, True), track_frame(3, False),
             track_frame(4, True)]
    assert presented_read(recs, track, None)["presented_read"] == 2 + 1
    # Without the counters only track frames beyond the gap's size tell of a skipped one: here the worker missed
    # frame 2, and the two it has are the two presented.
    no_counters = [dict(r, dropped_video_frames=None) for r in recs]
    track_two = [track_frame(0, True), track_frame(1, True), track_frame(3, False), track_frame(4, True)]
    out = presented_read(no_counters, track_two, None)
    assert (out["presented_read"], out["dropped_video_frames"]) == (3, None)


def test_a_run_without_track_frames_counts_the_records_only_and_says_why():
    recs = [record(0, 1, True, None), record(1, 3, True, None), record(3, 4, False, None)]
    out = presented_read(recs, [], "the page recorded no track frames")
    assert out == {"presented_read": 2, "presented_read_ratio": 2 / 4, "presented_read_from_track": 0,
                   "track_frames": None, "track_frames_missing": "the page recorded no track frames",
                   "dropped_video_frames": None}
    # The page read the track but nothing of it lies in the records' span: said so, never a silent 0.
    far = presented_read(recs, [track_frame(50, True)], None)
    assert far["track_frames"] is None and "none of its frames" in far["track_frames_missing"]
    assert presented_read([], [], None)["presented_read"] is None


def simulate(seed: int, skip: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """A call: 600 delivered frames, each skipped by the compositor with probability `skip`; a record for 85 % of the
    presented (its stamp read on 95 %); the worker gets 97 % of the delivered frames and reads 99 %. Returns the
    records, the track frames, the presented frames in the records' span and how many of them were read somewhere."""
    rnd = random.Random(seed)
    presented, dropped, recs, track, truth = 0, 0, [], [], {}
    for i in range(600):
        in_track, track_ok = rnd.random() < 0.97, rnd.random() < 0.99
        if in_track:
            track.append(track_frame(i, track_ok))
        if 0 < i < 599 and rnd.random() < skip:  # the first and the last are presented, with a record
            dropped += 1
            continue
        presented += 1
        has_record = i == 0 or i == 599 or rnd.random() < 0.85
        record_ok = rnd.random() < 0.95
        truth[presented] = (has_record and record_ok) or (in_track and track_ok)
        if has_record:
            recs.append(record(i, presented, record_ok, dropped))
    return recs, track, presented, sum(truth.values())


def test_simulated_calls_against_the_truth():
    for seed in range(20):
        recs, track, presented, truth = simulate(seed, skip=0.0)
        out = presented_read(recs, track, None)
        assert out["presented_read"] == truth, seed
        assert out["presented_read_ratio"] == truth / presented
        recs, track, presented, truth = simulate(seed, skip=0.08)
        counted = presented_read(recs, track, None)["presented_read"]
        # A lower bound, and a close one: the skipped frames cost at most one each.
        assert truth - 0.08 * 600 * 2 <= counted <= truth, (seed, counted, truth)
