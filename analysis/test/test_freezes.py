"""Freezes by Chrome's rule (rtclab/freezes.py) on frame times worked out by hand, each case one side of a threshold
of libwebrtc's VideoQualityObserver (gap >= max(3 x mean, mean + 150 ms), the mean of the last 30 gaps, the gap
itself included and the mean rounded down, from the 5th gap on, gaps over 5 s being pauses)."""

from __future__ import annotations

from itertools import accumulate

from rtclab.freezes import analyse, chrome_freezes, with_missed_frames


def times(gaps: list[float]) -> list[float]:
    return [0.0, *accumulate(gaps)]


def test_a_400_ms_gap_after_30_fps_is_a_freeze():
    # 9 gaps of 33 ms and the 400 ms one: mean (297 + 400) / 10 = 69.7 -> 69; threshold max(207, 219) = 219.
    assert chrome_freezes(times([33] * 9 + [400] + [33] * 5)) == [(297.0, 400.0)]


def test_a_180_ms_gap_is_not():
    # mean (297 + 180) / 10 = 47.7 -> 47; threshold max(141, 197) = 197 > 180.
    assert chrome_freezes(times([33] * 9 + [180] + [33] * 5)) == []


def test_no_freeze_before_five_gaps():
    assert chrome_freezes(times([33, 33, 434])) == []


def test_a_gap_over_5_s_is_a_pause():
    assert chrome_freezes(times([33] * 9 + [6000] + [33] * 5)) == []


def test_the_mean_is_rounded_down():
    # 4 gaps of 33 and one of 220: mean 352 / 5 = 70.4 -> 70, threshold 220: a freeze (with 70.4 it would not be).
    assert chrome_freezes(times([33] * 4 + [220])) == [(132.0, 220.0)]
    assert chrome_freezes(times([33] * 4 + [219])) == []


def test_a_gap_in_the_record_with_frames_presented_in_it_is_not_a_freeze():
    # 400 ms between two records while presentedFrames advanced by 12: 11 frames the page never heard of, taken as
    # 400 / 12 = 33.3 ms apart; without presentedFrames the same record shows the 400 ms freeze of the first test.
    t = times([33] * 9 + [400] + [33] * 5)
    presented = list(range(1, 11)) + list(range(22, 28))
    filled = with_missed_frames(t, presented)
    assert len(filled) == len(t) + 11 and filled[10:22] == [297.0 + 400 / 12 * j for j in range(1, 12)] + [697.0]
    m = analyse(t, None, 0.0, presented)
    assert (m["count"], m["missed_frames"]) == (0, 11)
    assert analyse(t, None, 0.0)["count"] == 1
    # Two frames over 1 s: each half 500 ms, both freezes by the rule (at least one is, whatever their spacing).
    t2 = times([33] * 9 + [1000])
    m2 = analyse(t2, None, 0.0, list(range(1, 11)) + [12])
    assert [f["duration_ms"] for f in m2["list"]] == [500.0, 500.0]


def test_the_receivers_counters_over_the_same_span():
    t = times([33] * 9 + [400] + [33] * 20)  # frames at 0..297, 697..1357
    inbound = [{"timestamp": 100.0, "freezeCount": 0, "totalFreezesDuration": 0.0, "framesDecoded": 3},
               {"timestamp": 1000.0, "freezeCount": 1, "totalFreezesDuration": 0.41, "framesDecoded": 20},
               {"timestamp": 5000.0, "freezeCount": 2, "totalFreezesDuration": 9.0, "framesDecoded": 99}]  # after
    out = analyse(t, inbound, t0_ms=0.0)
    assert (out["count"], out["total_ms"], out["list"]) == (1, 400.0, [{"start_s": 0.297, "duration_ms": 400.0}])
    g = out["getstats"]
    assert (g["start_s"], g["end_s"]) == (0.1, 1.0)
    assert (g["freeze_count"], g["frames_decoded"]) == (1.0, 17.0) and abs(g["freezes_ms"] - 410.0) < 1e-9
    # In (100, 1000] ms: frames at 132..297 (6) and 697..994 (10); the freeze ends at 697, inside.
    assert (g["records"], g["record_freeze_count"], g["record_freezes_ms"]) == (16, 1, 400.0)
