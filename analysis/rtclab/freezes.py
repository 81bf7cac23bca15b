"""Freezes from the per-frame record, by the rule Chrome's getStats counts them with (libwebrtc
video/video_quality_observer2.cc, VideoQualityObserver::OnRenderedFrame): each gap between consecutive rendered
frames is added to a moving window of the last 30 gaps; once the window holds 5, a gap is a freeze when it is at
least max(3 x the window's mean, the mean + 150 ms), the mean rounded down to whole ms as libwebrtc's integer
average is. A pause (the stream went inactive: no packet of it for 5 s) is neither a freeze nor in the window.

Two counts, each defined (docs/metrics.md, "Freezes"):
- as shown: the frames the compositor presented (the record), what the viewer saw. The record misses a frame now
  and then (no requestVideoFrameCallback while the page's main thread was busy): presentedFrames then advances by
  more than one, and the frames not reported are taken as presented evenly over the gap (`with_missed_frames`).
- as Chrome counts: the same with the frames decoded but never presented put back (`with_unpresented_frames`):
  libwebrtc applies the rule to every frame the decoder hands the renderer, the compositor's smoothing skips some.
Pauses are the ones Chrome itself counted (getStats pauseCount, `chrome_pause_ends`); without getStats, a gap over
5 s stands in for one."""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from typing import Any

WINDOW_FRAMES = 30
MIN_SAMPLES = 5
MIN_INCREASE_MS = 150
# Without getStats' pauseCount, a gap longer than this is taken for a pause (libwebrtc's inactivity timeout: a
# stream with no packet for 5 s).
PAUSE_MS = 5000
# A pause getStats counted in a sampling interval ends in the record at most this long after the interval: the record
# times a frame when the compositor presents it, libwebrtc when the decoder hands it to the renderer, tens of ms before.
PAUSE_MATCH_MS = 1000

Sample = dict[str, Any]


def _is_pause(gap: float, end: float, pause_ends: set[float] | None) -> bool:
    """Whether the gap ending at `end` is a pause: one of `pause_ends` (a put-back frame at the same time makes a gap
    of 0 after it, no pause), or without them a gap over 5 s."""
    return gap > PAUSE_MS if pause_ends is None else gap > 0 and end in pause_ends


def chrome_freezes(times_ms: list[float], pause_ends: set[float] | None = None) -> list[tuple[float, float]]:
    """The freezes among frames rendered at `times_ms` (in order): (time of the frame before the gap, gap ms).
    `pause_ends`: the times of the frames that ended a pause (their gap is a pause); None: every gap over 5 s is."""
    window: deque[float] = deque(maxlen=WINDOW_FRAMES)
    out = []
    for before, t in zip(times_ms, times_ms[1:]):
        gap = t - before
        if _is_pause(gap, t, pause_ends):
            continue
        window.append(gap)  # libwebrtc adds the gap before it judges it
        if len(window) >= MIN_SAMPLES:
            mean = int(sum(window) // len(window))
            if gap >= max(3 * mean, mean + MIN_INCREASE_MS):
                out.append((before, gap))
    return out


def pauses(times_ms: list[float], pause_ends: set[float] | None = None) -> list[tuple[float, float]]:
    """The gaps `chrome_freezes` takes for pauses: (time of the frame before the gap, gap ms)."""
    return [(before, t - before) for before, t in zip(times_ms, times_ms[1:]) if _is_pause(t - before, t, pause_ends)]


def with_missed_frames(times_ms: list[float], presented: list[int | None]) -> list[float]:
    """The presentation times with the frames the record missed put back: where presentedFrames advanced by k > 1
    between two records, k - 1 frames evenly spaced between them (their times are unknown; their count is not, and
    the mean of the window's gaps is exact whatever their spacing)."""
    out = times_ms[:1]
    for i in range(1, len(times_ms)):
        a, b = presented[i - 1], presented[i]
        k = b - a if isinstance(a, int) and isinstance(b, int) and b - a > 1 else 1
        step = (times_ms[i] - times_ms[i - 1]) / k
        out += [times_ms[i - 1] + j * step for j in range(1, k)] + [times_ms[i]]
    return out


def _counter(samples: list[Sample], key: str) -> list[tuple[float, float]]:
    """(timestamp ms, value) of the samples that have both."""
    return [(float(s["timestamp"]), float(s[key])) for s in samples
            if isinstance(s.get("timestamp"), (int, float)) and isinstance(s.get(key), (int, float))]


def with_unpresented_frames(times_ms: list[float], samples: list[Sample]) -> tuple[list[float], int]:
    """The presented frames' times (in order) with the frames decoded but never presented put back, and how many were.
    At each getStats sample, framesDecoded's increase since the first sample less the frames presented since then is
    the deficit; the frames put back up to a sample are the least deficit from that sample on (never below 0): a frame
    decoded just before a sample and presented just after it is no deficit, and over the span exactly framesDecoded's
    increase less the frames presented is put back. Those of an interval go at the times of its presented frames,
    spread evenly over them (an interval with none passes them to the next): the compositor skips a frame when a newer
    one is there at its rendering step, so the skipped frame was decoded shortly before a presented one. A frame put
    back there makes a gap of 0 ms: it leaves every gap of the record whole, freezes included, and adds to the
    window what libwebrtc's has, one more frame. Where the compositor itself stalled while frames were decoded, they
    were inside the gap instead, and put back beside it they can make it a freeze getStats did not count (seen once
    under load, bench/freezes/RESULTS.md)."""
    marks = _counter(samples, "framesDecoded")
    if len(marks) < 2:
        return times_ms, 0
    cut = [bisect_right(times_ms, t) for t, _ in marks]
    deficit = [(decoded - marks[0][1]) - (i - cut[0]) for (_, decoded), i in zip(marks, cut)]
    owed_by = deficit[:]  # the least deficit from each sample on
    for i in range(len(owed_by) - 2, -1, -1):
        owed_by[i] = min(owed_by[i], owed_by[i + 1])
    extra: list[float] = []
    for k in range(1, len(marks)):
        shown = times_ms[cut[k - 1]:cut[k]]
        n = int(max(0.0, owed_by[k])) - len(extra)
        if n > 0 and shown:
            extra += [shown[int((j + 0.5) * len(shown) / n)] for j in range(n)]
    return sorted(times_ms + extra), len(extra)


def chrome_pause_ends(times_ms: list[float], samples: list[Sample]) -> set[float] | None:
    """The times of the frames that ended the pauses Chrome counted: where getStats' pauseCount rose by k between two
    samples, the k longest gaps of the record that end in that interval (or within PAUSE_MATCH_MS after it). A pause
    is Chrome's own decision (the stream marked inactive when a frame timeout found no packet for 5 s), which no rule
    on the record or the packets reproduces to the second. None when the samples carry no pauseCount."""
    marks = _counter(samples, "pauseCount")
    if len(marks) < 2:
        return None
    ends: set[float] = set()
    for (lo, before), (hi, after) in zip(marks, marks[1:]):
        k = int(after - before)
        if k <= 0:
            continue
        first, last = bisect_right(times_ms, lo), bisect_right(times_ms, hi + PAUSE_MATCH_MS)
        gaps = [(times_ms[i] - times_ms[i - 1], times_ms[i]) for i in range(max(first, 1), last)
                if times_ms[i] not in ends and times_ms[i] > times_ms[i - 1]]
        ends.update(t for _, t in sorted(gaps, reverse=True)[:k])
    return ends


def _in_span(inbound: list[Sample], first_ms: float, last_ms: float) -> list[Sample]:
    """The getStats samples of the stream taken within [first_ms, last_ms], in order."""
    return [s for s in inbound
            if isinstance(s.get("timestamp"), (int, float)) and first_ms <= s["timestamp"] <= last_ms]


def _listed(found: list[tuple[float, float]], t0_ms: float) -> list[dict[str, float]]:
    return [{"start_s": (t - t0_ms) / 1000.0, "duration_ms": g} for t, g in found][:100]


def analyse(times_ms: list[float], inbound: list[dict[str, Any]] | None, t0_ms: float,
            presented: list[int | None] | None = None) -> dict[str, Any]:
    """metrics.json `frames.<side>.freezes`: the freezes of the frames presented at `times_ms` (epoch ms, in order;
    `presented`: each record's presentedFrames, for the frames the record missed) as shown, their total against the
    span from the first frame to the last (`time_ratio`); as Chrome counts them (`as_chrome`: with the frames decoded
    but not presented put back); and, over the span between the first and the last getStats sample taken while they
    played, the receiver's own counters beside the same counts from the record."""
    reported = times_ms
    if presented is not None:
        times_ms = with_missed_frames(times_ms, presented)
    samples = _in_span(inbound or [], times_ms[0], times_ms[-1]) if times_ms else []
    pause_ends = chrome_pause_ends(times_ms, samples)
    found = chrome_freezes(times_ms, pause_ends)
    paused = pauses(times_ms, pause_ends)
    total_ms = sum(g for _, g in found)
    # The span the rule looked at: the first frame presented to the last (pauses included).
    span_ms = times_ms[-1] - times_ms[0] if len(times_ms) > 1 else 0.0
    out: dict[str, Any] = {
        "count": len(found), "total_ms": total_ms, "span_ms": span_ms,
        "time_ratio": total_ms / span_ms if span_ms > 0 else None,
        "list": _listed(found, t0_ms),
        "missed_frames": len(times_ms) - len(reported),
        "pauses": {"rule": "getstats_pause_count" if pause_ends is not None else "gap_over_5_s",
                   "count": len(paused), "total_ms": sum(g for _, g in paused)},
        "as_chrome": None, "as_chrome_missing": None,
        "getstats": None,
    }
    if len(_counter(samples, "framesDecoded")) < 2:
        out["as_chrome_missing"] = "no two getStats samples with framesDecoded while the records played"
    else:
        chrome_times, put_back = with_unpresented_frames(times_ms, samples)
        as_chrome = chrome_freezes(chrome_times, pause_ends)
        out["as_chrome"] = {"count": len(as_chrome), "total_ms": sum(g for _, g in as_chrome),
                            "list": _listed(as_chrome, t0_ms), "put_back_frames": put_back}
    if len(samples) < 2:
        return out
    a, b = samples[0], samples[-1]
    lo, hi = a["timestamp"], b["timestamp"]
    delta = lambda key, scale=1.0: (float(b[key]) - float(a[key])) * scale \
        if isinstance(a.get(key), (int, float)) and isinstance(b.get(key), (int, float)) else None
    # A freeze belongs to the span when the frame that ends it was rendered in it (getStats counts it then).
    within = lambda fs: [(t, g) for t, g in fs if lo < t + g <= hi]
    shown_in = within(found)
    counters: dict[str, Any] = {
        "start_s": (lo - t0_ms) / 1000.0, "end_s": (hi - t0_ms) / 1000.0,
        "freeze_count": delta("freezeCount"), "freezes_ms": delta("totalFreezesDuration", 1000.0),
        "pause_count": delta("pauseCount"), "pauses_ms": delta("totalPausesDuration", 1000.0),
        "frames_decoded": delta("framesDecoded"),
        "record_freeze_count": len(shown_in), "record_freezes_ms": sum(g for _, g in shown_in),
        "records": sum(1 for t in reported if lo < t <= hi),
        "presented": sum(1 for t in times_ms if lo < t <= hi),
        "as_chrome_freeze_count": None, "as_chrome_freezes_ms": None,
    }
    if out["as_chrome"] is not None:
        chrome_in = within(as_chrome)
        counters["as_chrome_freeze_count"] = len(chrome_in)
        counters["as_chrome_freezes_ms"] = sum(g for _, g in chrome_in)
    out["getstats"] = counters
    return out
