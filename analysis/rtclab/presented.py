"""Which presented frames had their stamp read. The page's per-frame callback (its records, `kind: frame`) fires at
most once per rendering step, so at 60 fps it misses frames the compositor presented (a gap in the records'
`presented_frames`); the page also reads every frame the video track delivers, in a worker (`kind: track_frame`,
client/track-frames.js). Joined on the RTP timestamp, the two say of each presented frame whether its stamp was read.
docs/metrics.md, "Frames"."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

_WRAP = 2**32


def _unwrapped(rtp: int, ref: int) -> int:
    """An RTP timestamp on the unwrapped axis of `ref` (the nearest in signed 32-bit difference)."""
    return ref + ((rtp - ref + 2**31) % _WRAP) - 2**31


def _between(sorted_us: list[int], a: int, b: int) -> int:
    """How many of `sorted_us` lie strictly between a and b (a <= b)."""
    return bisect_left(sorted_us, b) - bisect_right(sorted_us, a)


def _read(r: dict[str, Any]) -> bool:
    return isinstance(r.get("clip_index"), int) and not isinstance(r.get("clip_index"), bool)


def presented_read(recs: list[dict[str, Any]], track: list[dict[str, Any]],
                   track_missing: str | None) -> dict[str, Any]:
    """metrics.json `frames.<side>` fields over the presented frames from the first record's to the last's (in
    `presented_frames` order): `presented_read` (presented frames whose stamp was read, by the record or on the
    track), `presented_read_ratio` (of `presented_frames`), `presented_read_from_track` (of them, read only on the
    track), `track_frames` (track records whose RTP timestamp lies in the records' span), `track_frames_missing`
    (why the page recorded none; null when it did), `dropped_video_frames` (frames decoded for the element that the
    compositor skipped, never presented: the records' droppedVideoFrames, last less first; null when the page
    recorded none).

    A record's frame counts as read when its stamp was read there or on the track frame of its RTP timestamp. Between
    two consecutive records whose counters advance by m > 1 the compositor presented m - 1 frames without a record,
    each one the track delivered with an RTP timestamp between the two records'. The track frames there that no
    record holds are those m - 1 and the ones the compositor skipped, which are not told apart: the skipped ones are
    taken to be read ones (at least the records' droppedVideoFrames step between the two, at least the track frames
    there beyond m - 1), so the count is a lower bound: max(0, min(m - 1, read there - skipped))."""
    ordered = sorted((r for r in recs if isinstance(r.get("presented_frames"), int)
                      and isinstance(r.get("rtp_timestamp"), int)), key=lambda r: r["presented_frames"])
    out: dict[str, Any] = {"presented_read": None, "presented_read_ratio": None, "presented_read_from_track": None,
                           "track_frames": None, "track_frames_missing": track_missing,
                           "dropped_video_frames": None}
    if not ordered:
        return out
    drops = [r["dropped_video_frames"] for r in ordered if isinstance(r.get("dropped_video_frames"), int)]
    if len(drops) == len(ordered):
        out["dropped_video_frames"] = drops[-1] - drops[0]
    ref = ordered[0]["rtp_timestamp"]
    rec_u = [_unwrapped(r["rtp_timestamp"], ref) for r in ordered]
    lo, hi = min(rec_u), max(rec_u)
    track_read: dict[int, bool] = {}
    for t in track:
        if isinstance(t.get("rtp_timestamp"), int):
            u = _unwrapped(t["rtp_timestamp"], ref)
            if lo <= u <= hi:
                track_read[u] = track_read.get(u, False) or _read(t)
    if track_read:
        out["track_frames"], out["track_frames_missing"] = len(track_read), None
    elif track_missing is None:
        out["track_frames_missing"] = "the page read the track, but none of its frames falls in the records' span"
    held = set(rec_u)
    read = sum(_read(r) or track_read.get(u, False) for r, u in zip(ordered, rec_u))
    from_track = sum(not _read(r) and track_read.get(u, False) for r, u in zip(ordered, rec_u))
    unheld = sorted(u for u in track_read if u not in held)
    read_unheld = sorted(u for u in unheld if track_read[u])
    for i in range(len(ordered) - 1):
        missed = ordered[i + 1]["presented_frames"] - ordered[i]["presented_frames"] - 1
        if missed <= 0:
            continue
        a, b = sorted((rec_u[i], rec_u[i + 1]))
        d0, d1 = ordered[i].get("dropped_video_frames"), ordered[i + 1].get("dropped_video_frames")
        counted = d1 - d0 if isinstance(d0, int) and isinstance(d1, int) else 0
        skipped = max(counted, _between(unheld, a, b) - missed)
        k = max(0, min(missed, _between(read_unheld, a, b) - skipped))
        read, from_track = read + k, from_track + k
    presented = ordered[-1]["presented_frames"] - ordered[0]["presented_frames"] + 1
    return out | {"presented_read": read, "presented_read_ratio": read / presented,
                  "presented_read_from_track": from_track}
