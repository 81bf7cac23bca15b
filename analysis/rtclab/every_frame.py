"""The delay of every frame the camera produced, as the real-time video literature measures it (Salsify, Fouladi et
al., NSDI 2018: a frame's delay is the time from its capture until that frame or a newer one is displayed): frames
the encoder dropped, lost ones and ones the compositor skipped wait for the next newer frame shown; a frame no newer
frame was shown after by the end of the call counts to the end of the call and is flagged. Glass-to-glass delay
(frames.py) counts only the frames shown. docs/metrics.md, "Frames", "Every frame"."""

from __future__ import annotations

from typing import Any

import numpy as np

from .stats import distribution

VIDEO_CLOCK_HZ = 90_000.0  # frames.VIDEO_CLOCK_HZ (frames.py imports this module)
# A step between two sent frames of more than this many camera intervals holds frames the camera produced that were
# never sent (the encoder dropped them): round(step / interval) - 1 of them.
GAP_INTERVALS = 1.5


def camera_frames(sent_u: np.ndarray, interval: float) -> tuple[np.ndarray, np.ndarray]:
    """The camera's frames between the first and the last sent one, in unwrapped RTP time: every sent frame's
    timestamp, and in each step between consecutive ones longer than GAP_INTERVALS camera intervals, round(step /
    interval) - 1 frames spread evenly over it (the camera's own timestamps of frames never sent are unknown). Returns
    the timestamps and whether each was sent."""
    sent = np.unique(sent_u.astype(float))
    if sent.size < 2:
        return sent, np.ones(sent.size, bool)
    steps = np.diff(sent)
    missing = np.where(steps > GAP_INTERVALS * interval, np.rint(steps / interval) - 1, 0).astype(np.int64)
    filled = [sent[i] + steps[i] * np.arange(1, k + 1) / (k + 1) for i, k in enumerate(missing.tolist()) if k > 0]
    ts = np.concatenate([sent, *filled])
    was_sent = np.concatenate([np.ones(sent.size, bool), np.zeros(ts.size - sent.size, bool)])
    order = np.argsort(ts, kind="stable")
    return ts[order], was_sent[order]


def put_back(shown_u: np.ndarray, shown_ms: np.ndarray, presented: np.ndarray,
             sent_u: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The frames presented without a record, put back: between two records consecutive in display order whose
    `presented_frames` counters advance by m > 1, the compositor presented m - 1 frames no callback recorded, in
    order, so frames with RTP timestamps between the two records'. The newest m - 1 sent frames there that no record
    holds take the last of the m - 1 display times spread evenly over the gap (the j-th at j / m of it), as
    freezes.py puts missed frames back. Returns the records with them added and how many were put back."""
    order = np.argsort(shown_ms, kind="stable")
    u, d, p = shown_u[order].astype(float), shown_ms[order], presented[order]
    candidates = np.setdiff1d(np.unique(sent_u.astype(float)), u)
    add_u: list[float] = []
    add_ms: list[float] = []
    for k in np.flatnonzero(np.isfinite(p[:-1]) & np.isfinite(p[1:]) & (p[1:] - p[:-1] > 1)).tolist():
        missed = int(p[k + 1] - p[k]) - 1
        between = candidates[(candidates > u[k]) & (candidates < u[k + 1])][-missed:]
        first = missed - between.size + 1  # the newest take the last slots
        add_u += between.tolist()
        add_ms += [d[k] + (first + i) * (d[k + 1] - d[k]) / (missed + 1) for i in range(between.size)]
    return np.r_[shown_u.astype(float), add_u], np.r_[shown_ms, add_ms], len(add_u)


def frame_delays(camera_u: np.ndarray, camera_ms: np.ndarray, shown_u: np.ndarray, shown_ms: np.ndarray,
                 end_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Each camera frame's delay: the earliest display time of a shown frame with an RTP timestamp at or after its
    own (that frame or a newer one), less its capture time; with none, the call's end less its capture time. Returns
    the delays (ms) and which frames counted to the end of the call. `shown_u` must not be empty."""
    order = np.argsort(shown_u, kind="stable")
    su, sd = shown_u[order].astype(float), shown_ms[order]
    earliest_after = np.minimum.accumulate(sd[::-1])[::-1]  # earliest display among frames at or after each
    pos = np.searchsorted(su, camera_u, side="left")
    to_end = pos >= su.size
    served = np.where(to_end, end_ms, earliest_after[np.minimum(pos, su.size - 1)])
    return served - camera_ms, to_end


def analyse(shown_u: np.ndarray, shown_ms: np.ndarray, presented: np.ndarray, sent_u: np.ndarray,
            to_capture_ms: Any, camera_fps: float | None, fps_source: str,
            end_ms: float) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """metrics.json `frames.<side>.every_frame` (what was counted) and `every_frame_delay_ms` (the delays'
    distribution; None with `every_frame.missing` saying why):
    `shown_u`/`shown_ms`/`presented`: the records' unwrapped RTP timestamps, display times (ms since t0) and
    `presented_frames` counters (NaN: none), the frames presented without a record put back (put_back); `sent_u`:
    every sent frame's unwrapped RTP timestamp (on either capture); `to_capture_ms`: unwrapped RTP timestamps ->
    capture times (ms since t0); `camera_fps`: the camera's frame rate (`fps_source` names where it comes
    from); `end_ms`: the call's end. The camera frames counted are those captured from the first frame shown (the
    one of least RTP time) to the call's end; after the last sent frame the camera goes on at its rate."""
    out: dict[str, Any] = {"camera_fps": camera_fps, "camera_fps_source": fps_source}
    if not camera_fps or camera_fps <= 0:
        return out | {"missing": "the camera's frame rate is unknown (no camera settings, no clip frame rate)"}, None
    if not shown_u.size:
        return out | {"missing": "no frame shown"}, None
    interval = VIDEO_CLOCK_HZ / camera_fps
    start = float(shown_u.min())
    shown_u, shown_ms, put = put_back(shown_u, shown_ms, presented, sent_u)
    known = np.unique(np.concatenate([sent_u, shown_u]).astype(float))
    known = known[known >= start]
    cam_u, was_sent = camera_frames(known, interval)
    # The camera goes on after the last sent frame: frames at its interval up to the call's end.
    last_ms = float(to_capture_ms(cam_u[-1:])[0])
    tail = cam_u[-1] + interval * np.arange(1, max(int(np.ceil((end_ms - last_ms) * camera_fps / 1000)) + 1, 1))
    cam_u = np.concatenate([cam_u, tail])
    was_sent = np.concatenate([was_sent, np.zeros(tail.size, bool)])
    cam_ms = np.asarray(to_capture_ms(cam_u), dtype=float)
    keep = cam_ms < end_ms
    cam_u, cam_ms, was_sent = cam_u[keep], cam_ms[keep], was_sent[keep]
    delays, to_end = frame_delays(cam_u, cam_ms, shown_u, shown_ms, end_ms)
    shown_set = np.isin(cam_u, shown_u.astype(float))
    out |= {"camera_frames": int(cam_u.size), "sent": int(was_sent.sum()), "never_sent": int((~was_sent).sum()),
            "shown": int(shown_set.sum()), "put_back": put, "not_shown": int((~shown_set).sum()),
            "to_call_end": int(to_end.sum()),
            "to_call_end_first_capture_s": round(float(cam_ms[to_end].min()) / 1000, 4) if to_end.any() else None,
            "missing": None}
    return out, distribution(delays)


def camera_rates(events: list[dict[str, Any]], first_call: str | None) -> dict[str, tuple[float, str]]:
    """Per receiving side, the frame rate of the camera that sent to it: the sending page's first `page_media` event
    of the first call (events.jsonl; its `video.frameRate`, Chrome's getSettings of the camera track: the rate the
    fake camera delivers its clip at, after any adjustment to the scenario's `call.fps`)."""
    out: dict[str, tuple[float, str]] = {}
    for e in events:
        if e.get("event") != "page_media" or e.get("call", first_call) != first_call:
            continue
        sender, rate = e.get("side"), ((e.get("page") or {}).get("video") or {}).get("frameRate")
        receiver = {"a": "b", "b": "a"}.get(sender) if isinstance(sender, str) else None
        if receiver and receiver not in out and isinstance(rate, (int, float)) and rate > 0:
            out[receiver] = (float(rate), "camera_settings")
    return out
