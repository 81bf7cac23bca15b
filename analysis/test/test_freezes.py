"""Freezes by Chrome's rule (rtclab/freezes.py) on frame times worked out by hand, each case one side of a threshold
of libwebrtc's VideoQualityObserver (gap >= max(3 x mean, mean + 150 ms), the mean of the last 30 gaps, the gap
itself included and the mean rounded down, from the 5th gap on, gaps over 5 s being pauses)."""

from __future__ import annotations

from itertools import accumulate

from rtclab.freezes import analyse, chrome_freezes, chrome_pause_ends, with_missed_frames, with_unpresented_frames


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


def _getstats_from(frames: list[float], at: list[float], freezes_found: list[tuple[float, float]],
                   pauses_at: list[float] = ()) -> list[dict]:
    """getStats inbound-rtp samples taken at `at` of a receiver that rendered `frames` (libwebrtc's view: every
    decoded frame) and counted `freezes_found` (ending at frame before + gap) and a pause ending at each of
    `pauses_at`."""
    return [{"timestamp": t, "framesDecoded": sum(1 for f in frames if f <= t),
             "freezeCount": sum(1 for b, g in freezes_found if b + g <= t),
             "totalFreezesDuration": sum(g for b, g in freezes_found if b + g <= t) / 1000.0,
             "pauseCount": sum(1 for p in pauses_at if p <= t), "totalPausesDuration": 0.0} for t in at]


def test_the_frames_decoded_but_not_presented_put_back_restore_chromes_freeze():
    # libwebrtc rendered a frame every 50 ms, then a 300 ms gap, then 50 ms again; the compositor presented every
    # other one (100 ms apart). By the rule on Chrome's frames the gap is a freeze: mean (29 x 50 + 300) / 30 = 58,
    # threshold max(174, 208) = 208. On the record's it is not: mean (29 x 100 + 300) / 30 = 106, threshold
    # max(318, 256) = 318 > 300. Put back (framesDecoded's increase per sample less the frames presented), one frame
    # beside each presented one makes it one again, the same 300 ms.
    chrome = [50.0 * i for i in range(59)] + [3200.0 + 50 * i for i in range(11)]  # 0..2900, 3200..3700
    shown = chrome[:59:2] + chrome[59::2]  # 0, 100, .., 2900, 3200, .., 3700
    found = chrome_freezes(chrome)
    assert found == [(2900.0, 300.0)] and chrome_freezes(shown) == []
    inbound = _getstats_from(chrome, [0.0, 1000.0, 2000.0, 3000.0, 3700.0], found)
    m = analyse(shown, inbound, 0.0)
    assert (m["count"], m["total_ms"]) == (0, 0)  # as shown
    assert m["as_chrome"]["put_back_frames"] == 69 - 35  # decoded in (0, 3700] less presented in it
    assert (m["as_chrome"]["count"], m["as_chrome"]["total_ms"]) == (1, 300.0)
    assert m["as_chrome"]["list"] == [{"start_s": 2.9, "duration_ms": 300.0}]
    g = m["getstats"]
    assert (g["freeze_count"], g["freezes_ms"]) == (1.0, 300.0)
    assert (g["as_chrome_freeze_count"], g["as_chrome_freezes_ms"]) == (g["freeze_count"], g["freezes_ms"])
    assert (g["record_freeze_count"], g["record_freezes_ms"], g["presented"], g["frames_decoded"]) == (0, 0, 35, 69.0)


def test_frames_presented_just_after_a_sample_are_no_deficit():
    # 30 fps, every frame presented; a sample lands between a frame's decode and its presentation, so framesDecoded
    # counts one frame the record has not presented yet: no frame is put back (the least deficit from then on is 0).
    shown = [33.0 * i for i in range(60)]
    inbound = [{"timestamp": 0.0, "framesDecoded": 1}, {"timestamp": 1000.0, "framesDecoded": 32},
               {"timestamp": 1947.0, "framesDecoded": 60}]  # frames in (0, 1000]: 30; the 31st shown at 1023
    fill, n = with_unpresented_frames(shown, inbound)
    assert (n, fill) == (0, shown)
    # Two frames skipped in the first second: put back there, at the times of its presented frames.
    inbound[1]["framesDecoded"], inbound[2]["framesDecoded"] = 34, 62
    fill, n = with_unpresented_frames(shown, inbound)
    assert n == 2 and len(fill) == 62 and sorted(set(fill)) == shown
    assert [t for t in shown if fill.count(t) == 2] == [33.0 * 8, 33.0 * 23]  # the 8th and 23rd of 30, evenly


def test_a_long_gap_with_the_stream_still_active_is_a_freeze_and_a_pause_only_when_chrome_counted_one():
    # A 6 s gap: without getStats' pauseCount it is taken for a pause (over 5 s); with pauseCount unchanged across it
    # (packets kept coming: libwebrtc never marked the stream inactive) it is a freeze; with pauseCount up by one in
    # the interval it ends in, a pause, neither a freeze nor in the window, as shown and as Chrome counts.
    t = times([33] * 30 + [6000] + [33] * 30)
    end = t[31]
    assert analyse(t, None, 0.0)["pauses"] == {"rule": "gap_over_5_s", "count": 1, "total_ms": 6000.0}
    active = _getstats_from(t, [0.0, 2000.0, 8000.0, t[-1]], chrome_freezes(t, set()))
    m = analyse(t, active, 0.0)
    assert (m["count"], m["total_ms"], m["pauses"]["count"]) == (1, 6000.0, 0)
    assert (m["as_chrome"]["count"], m["getstats"]["freeze_count"]) == (1, 1.0)
    paused = _getstats_from(t, [0.0, 2000.0, 8000.0, t[-1]], [], pauses_at=[end])
    m = analyse(t, paused, 0.0)
    assert (m["count"], m["as_chrome"]["count"]) == (0, 0)
    assert m["pauses"] == {"rule": "getstats_pause_count", "count": 1, "total_ms": 6000.0}
    assert chrome_pause_ends(t, paused) == {end}
    # The pause's frame presented up to PAUSE_MATCH_MS after the sample that counted it is still the pause's end.
    late = [dict(s, timestamp=s["timestamp"] - 500) if s["timestamp"] == 8000.0 else s for s in paused]
    late[2]["pauseCount"] = 1
    assert chrome_pause_ends(t, late) == {end}


def test_without_getstats_as_chrome_is_missing_with_its_reason():
    m = analyse(times([33] * 20), None, 0.0)
    assert m["as_chrome"] is None and "framesDecoded" in m["as_chrome_missing"] and m["getstats"] is None
