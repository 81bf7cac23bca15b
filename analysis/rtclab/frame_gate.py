"""Whether a receiving side's frame record (frames.py) is good enough for the per-frame metrics built on it: under a
bound of its own quality indicators a group of metrics is withheld (null in metrics.json, its reason in `withheld`),
so that no study averages a number made of a poor record at full weight. The bounds and why: docs/metrics.md,
"Frames", "Withheld"."""

from __future__ import annotations

from typing import Any

# The delays need the records joined with their packets: below this share the joined records are a selection (the
# frames whose packets a capture missed, or a stream the join did not find), not the call.
MIN_JOINED_RATIO = 0.95
# Freezes by Chrome's rule read the gaps between records: records the page dropped and frames presented without a
# callback are put back evenly over their gap (freezes.py), which is exact for the window's mean but not for where a
# freeze fell. Above these shares too much of the timeline is put back rather than seen.
MAX_DROPPED_SHARE = 0.01  # dropped_records / (records + dropped_records)
# Callbacks are missed in every call (the page copies a sampled frame meanwhile): 6.7 % of 581 presented frames in a
# 20 s default call, 9.4 % of 616 when every 5th frame is sampled (the outage test), on 2026-11-28; a bound at 10 %
# would withhold normal calls, so it sits well above what sampling costs.
MAX_MISSED_SHARE = 0.25  # callbacks_missed / presented_frames
# PSNR and SSIM compare each sampled frame with the source frame its stamp names: below this share of stamps read
# the compared frames are those whose stamp survived, a selection by picture quality itself.
MIN_NUMBERED_RATIO = 0.95

DELAY_FIELDS = ("glass_to_glass_ms", "sender_ms", "network_ms", "receiver_ms")


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def reasons(side: dict[str, Any]) -> dict[str, str]:
    """Per group of metrics (`delays`, `freezes`, `every_frame`, `quality`) the reason it is withheld; empty when
    none is. An indicator the record does not have (null: nothing was read, no frame presented) withholds nothing: the
    metrics it would gate are then absent for that reason already."""
    out: dict[str, str] = {}
    joined = _number(side.get("joined_ratio"))
    if side.get("records") and joined is not None and joined < MIN_JOINED_RATIO:
        out["delays"] = (f"packets found for {100 * joined:.1f}% of the {side['records']} records "
                         f"(at least {100 * MIN_JOINED_RATIO:g}% needed)")
    records, dropped = _number(side.get("records")) or 0.0, _number(side.get("dropped_records")) or 0.0
    presented, missed = _number(side.get("presented_frames")), _number(side.get("callbacks_missed"))
    record_holes = []
    if records + dropped and dropped / (records + dropped) > MAX_DROPPED_SHARE:
        record_holes.append(f"the page dropped {dropped:.0f} of {records + dropped:.0f} records "
                            f"(at most {100 * MAX_DROPPED_SHARE:g}%)")
    if presented and missed is not None and missed / presented > MAX_MISSED_SHARE:
        record_holes.append(f"{missed:.0f} of {presented:.0f} presented frames came without a callback "
                            f"(at most {100 * MAX_MISSED_SHARE:g}%)")
    if record_holes:
        out["freezes"] = "; ".join(record_holes)
        # The every-frame delay reads the same timeline: a frame shown without a record waits for the next record.
        out["every_frame"] = out["freezes"]
    numbered = _number(side.get("numbered_ratio"))
    if numbered is not None and numbered < MIN_NUMBERED_RATIO:
        out["quality"] = (f"the stamp was read on {100 * numbered:.1f}% of the {side.get('read')} frames tried "
                          f"(at least {100 * MIN_NUMBERED_RATIO:g}% needed)")
    return out


def apply(side: dict[str, Any]) -> dict[str, Any]:
    """The side with the metrics its record cannot carry withheld: the delays' distributions, `freezes`,
    `every_frame_delay_ms` and `quality`'s PSNR and SSIM set to null (quality: `{"withheld": reason}`), and
    `withheld` naming each group's reason.
    A side that passes is returned as it is. Applying it twice changes nothing more."""
    why = reasons(side)
    if not why:
        return side
    out = dict(side)
    if "delays" in why:
        out.update({f: None for f in DELAY_FIELDS if f in out})
    if "freezes" in why and "freezes" in out:
        out["freezes"] = None
    if "every_frame" in why and "every_frame_delay_ms" in out:
        out["every_frame_delay_ms"] = None
    if "quality" in why and out.get("quality") is not None:
        out["quality"] = {"withheld": why["quality"]}
    out["withheld"] = why
    return out
