"""The over-use detector replayed with other constants: the same measured delays (each feedback message's send-group
deltas, replay.group_deltas) run through the trendline and the detector (replay.detect) with each variant's
parameters, and the over-use signals each would have raised counted over the call and per phase (docs/eventlog.md,
"The detector replayed with other constants"; docs/metrics.md, `counterfactual`).

A counterfactual on fixed input: had Chrome's detector used a variant's constants, the sender would have reacted
differently and the delays themselves would have changed. The counts say which variants are worth a real run with a
field trial (Chrome's components switched one at a time), not what the variant would do.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from . import gcc, replay
from .feedback import Feedback
from .parser import OVERUSING, EventLog

KIND = "counterfactual_on_fixed_input"
TODAY = "libwebrtc"


@dataclass(frozen=True)
class Variant:
    name: str
    params: replay.Params
    source: str  # where its values come from


D = replay.DEFAULTS
VARIANTS: tuple[Variant, ...] = (
    Variant(TODAY, D, "today's constants, libwebrtc's goog_cc trendline estimator (replay.py)"),
    Variant("gains_2016", replace(D, k_up=0.01, k_down=0.00018),
            "draft-ietf-rmcat-gcc-02 (Holmer, Lundin, Carlucci, De Cicco, Mascolo, 2016) section 5.4: K_u 0.01, "
            "K_d 0.00018, the adaptive threshold's gains of the model Carlucci et al. analysed"),
    Variant("threshold_fixed", replace(D, k_up=0.0, k_down=0.0),
            "gamma never adapts: held at its start value, 12.5 ms"),
    Variant("window_10", replace(D, window=10), "trendline window of 10 groups (libwebrtc: 20; field trial "
            "WebRTC-Bwe-TrendlineEstimatorSettings window_size)"),
    Variant("window_40", replace(D, window=40), "trendline window of 40 groups (libwebrtc: 20; field trial "
            "WebRTC-Bwe-TrendlineEstimatorSettings window_size)"),
    Variant("smoothing_080", replace(D, smoothing=0.8), "smoothing coefficient 0.8 (libwebrtc: 0.9), chosen here"),
    Variant("smoothing_095", replace(D, smoothing=0.95), "smoothing coefficient 0.95 (libwebrtc: 0.9), chosen here"),
)


def differs_in(params: replay.Params) -> dict[str, float]:
    """The constants whose values differ from today's, with the variant's values."""
    return {f.name: getattr(params, f.name) for f in fields(params)
            if getattr(params, f.name) != getattr(replay.DEFAULTS, f.name)}


def signals(r: replay.Replay, start_ms: float, end_ms: float) -> dict[str, Any] | None:
    """Over-use transitions (feedback messages after which the state is overusing and was not after the previous
    one) within [start_ms, end_ms], and seconds in each state there: a state holds from the feedback message after
    which it was reached to the next one (the last to end_ms); before the first message nothing is counted, so
    `window_s` (what is counted) starts at the first message. None when that leaves nothing of the span."""
    t, s = r.feedback_time_ms, r.state
    window_s = (end_ms - max(start_ms, float(t[0]))) / 1000.0 if len(t) else 0.0
    if window_s <= 0:
        return None
    entered = (s == OVERUSING) & (np.r_[-1, s[:-1]] != OVERUSING)
    inside = (t >= start_ms) & (t <= end_ms)
    return {"window_s": window_s, "overuse_transitions": int((entered & inside).sum()),
            "state_s": gcc.state_durations_s(t, s, end_ms, start_ms)}


def analyse(log: EventLog, fb: Feedback, start_ms: float, end_ms: float,
            phases_ms: list[tuple[str, float, float]] | None, phases_reason: str | None,
            variants: tuple[Variant, ...] = VARIANTS) -> dict[str, Any]:
    """metrics.json's `counterfactual` for one sender: each variant's over-use signals over [start_ms, end_ms] (log
    time: the call, cut at the log's end; from the log's start when the call cannot be placed on its clock) and over
    each phase (name, start, end in log time; None with phases_reason when the phases cannot be placed)."""
    inputs: dict[tuple[float, ...], list[replay.Message]] = {}
    first = inputs.setdefault(variants[0].params.grouping(), replay.group_deltas(log, fb, params=variants[0].params))
    out: dict[str, Any] = {
        "kind": KIND, "window": "call" if np.isfinite(start_ms) else "log", "send_times": "log",
        "feedback_messages": len(first), "group_deltas": sum(len(m.deltas) for m in first), "reason": None,
        "phases_reason": phases_reason, "variants": None}
    if not first:
        out["reason"] = ("no transport feedback reports a received packet the log holds as sent: the detector has no "
                         "input")
        return out
    out["variants"] = {}
    for v in variants:
        messages = inputs.get(v.params.grouping())
        if messages is None:
            messages = inputs[v.params.grouping()] = replay.group_deltas(log, fb, params=v.params)
        r = replay.detect(messages, v.params)
        out["variants"][v.name] = {
            "kind": KIND, "differs_in": differs_in(v.params), "source": v.source,
            "call": signals(r, start_ms, end_ms), "update_agreement": replay.agreement(log, r)["update_agreement"],
            # A phase the log does not reach (it ends a few seconds early) is null, not zero.
            "phases": None if phases_ms is None else
            {name: signals(r, max(a, start_ms), min(b, end_ms)) for name, a, b in phases_ms}}
    return out
