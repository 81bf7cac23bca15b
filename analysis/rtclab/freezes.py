"""Freezes from the per-frame record, by the rule Chrome's getStats counts them with (libwebrtc
video/video_quality_observer2.cc, VideoQualityObserver::OnRenderedFrame): each gap between consecutive rendered
frames is added to a moving window of the last 30 gaps; once the window holds 5, a gap is a freeze when it is at
least max(3 x the window's mean, the mean + 150 ms), the mean rounded down to whole ms as libwebrtc's integer
average is. A gap over 5 s is a pause (the stream stopped), neither a freeze nor in the window. Cross-checked with
the receiver's own counters (inbound-rtp freezeCount, totalFreezesDuration, framesDecoded) over the same span.
The record misses a frame now and then (no requestVideoFrameCallback while the page's main thread was busy, e.g.
copying a sampled frame): presentedFrames then advances by more than one, and the frames not reported are taken as
presented evenly over the gap (`with_missed_frames`), so a gap in the record is not a freeze in the video.
docs/metrics.md, "frames"."""

from __future__ import annotations

from collections import deque
from typing import Any

WINDOW_FRAMES = 30
MIN_SAMPLES = 5
MIN_INCREASE_MS = 150
PAUSE_MS = 5000


def chrome_freezes(times_ms: list[float]) -> list[tuple[float, float]]:
    """The freezes among frames rendered at `times_ms` (in order): (time of the frame before the gap, gap ms)."""
    window: deque[float] = deque(maxlen=WINDOW_FRAMES)
    out = []
    for before, t in zip(times_ms, times_ms[1:]):
        gap = t - before
        if gap > PAUSE_MS:
            continue
        window.append(gap)  # libwebrtc adds the gap before it judges it
        if len(window) >= MIN_SAMPLES:
            mean = int(sum(window) // len(window))
            if gap >= max(3 * mean, mean + MIN_INCREASE_MS):
                out.append((before, gap))
    return out


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


Sample = dict[str, Any]


def _span(inbound: list[Sample], first_ms: float, last_ms: float) -> tuple[Sample, Sample] | None:
    """The first and the last getStats sample of the stream taken within [first_ms, last_ms]."""
    inside = [s for s in inbound
              if isinstance(s.get("timestamp"), (int, float)) and first_ms <= s["timestamp"] <= last_ms]
    return (inside[0], inside[-1]) if len(inside) > 1 else None


def analyse(times_ms: list[float], inbound: list[dict[str, Any]] | None, t0_ms: float,
            presented: list[int | None] | None = None) -> dict[str, Any]:
    """metrics.json `frames.<side>.freezes`: the freezes of the frames presented at `times_ms` (epoch ms, in order;
    `presented`: each record's presentedFrames, for the frames the record missed), their total against the span from
    the first frame to the last (`time_ratio`), and, over the span between the first and the last getStats sample
    taken while they played, the receiver's own counters beside the same counts from the record."""
    reported = times_ms
    if presented is not None:
        times_ms = with_missed_frames(times_ms, presented)
    found = chrome_freezes(times_ms)
    total_ms = sum(g for _, g in found)
    # The span the rule looked at: the first frame presented to the last (pauses included).
    span_ms = times_ms[-1] - times_ms[0] if len(times_ms) > 1 else 0.0
    out: dict[str, Any] = {
        "count": len(found), "total_ms": total_ms, "span_ms": span_ms,
        "time_ratio": total_ms / span_ms if span_ms > 0 else None,
        "list": [{"start_s": (t - t0_ms) / 1000.0, "duration_ms": g} for t, g in found][:100],
        "missed_frames": len(times_ms) - len(reported),
        "getstats": None,
    }
    span = _span(inbound or [], times_ms[0], times_ms[-1]) if times_ms else None
    if span is None:
        return out
    a, b = span
    lo, hi = a["timestamp"], b["timestamp"]
    delta = lambda key, scale=1.0: (float(b[key]) - float(a[key])) * scale \
        if isinstance(a.get(key), (int, float)) and isinstance(b.get(key), (int, float)) else None
    # A freeze belongs to the span when the frame that ends it was rendered in it (getStats counts it then).
    within = [(t, g) for t, g in found if lo < t + g <= hi]
    out["getstats"] = {
        "start_s": (lo - t0_ms) / 1000.0, "end_s": (hi - t0_ms) / 1000.0,
        "freeze_count": delta("freezeCount"), "freezes_ms": delta("totalFreezesDuration", 1000.0),
        "frames_decoded": delta("framesDecoded"),
        "record_freeze_count": len(within), "record_freezes_ms": sum(g for _, g in within),
        "records": sum(1 for t in reported if lo < t <= hi),
    }
    return out
