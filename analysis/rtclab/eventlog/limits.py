"""Which estimate set the send side's target rate, at each moment of the call, from the sender's RTC event log
(docs/metrics.md, "Which estimate limits the target"; docs/eventlog.md, "What limits the target").

The rule follows libwebrtc's goog_cc (webrtc-sdk/webrtc mirror, revision cd6792e5, 2024-10-19, the nearest to
Chromium 156 at hand), read, not copied:

- The logged loss-based update (`RtcEventBweUpdateLossBased`) is SendSideBandwidthEstimation's `current_target_`
  (send_side_bandwidth_estimation.cc `MaybeLogLossBasedEvent`, called by `UpdateTargetBitrate`): the loss-based
  controller's value (LossBasedBweV2's result, enabled by default there; the classic loss rule without it) capped by
  `GetUpperLimit()` = min(delay-based estimate, configured maximum). It is logged whenever it changes.
- The logged delay-based update is DelayBasedBwe's estimate (delay_based_bwe.cc `MaybeUpdateEstimate`), logged when
  it or the detector state changes. After a probe the estimate is set to the probe's rate there, and
  goog_cc_network_control.cc `OnTransportPacketsFeedback` also resets the send side's target to it (`SetSendBitrate`).
- The target sent to the encoder is `target_rate()` = min(current target, the receiver's limit: REMB), floored at the
  configured minimum (`GoogCcNetworkController::MaybeTriggerOnNetworkChanged`; the congestion window drops frames
  instead of lowering the target in the default configuration, rate_control_settings.cc "DropFrame:true").

So, from the latest value of each in force at a moment (L: loss-based update, D: delay-based, R: REMB, all logged in
whole bits per second; within one millisecond the last of each counts, as the log does not order event types within
a millisecond):

1. no D or no L logged yet: `undetermined`.
2. R < L - 1 bps: `receiver_limit`; |R - L| <= 1 bps: `undetermined`.
3. L != D for at most TICK_MS (one tick of the log's clock: the delay-based update and the loss-based one it causes
   can fall on either side of a tick): `undetermined`.
4. L < D - 1 bps: `loss_based` (the loss-based controller, or a configured maximum, which the log does not record,
   held the target below the delay-based estimate).
5. L == D: the delay-based estimate capped it. When a successful probe result was logged within TICK_MS of that
   delay-based update and the detector was not overusing (delay_based_bwe.cc then takes the probe branch):
   `probe` if one such result has the update's rate, else `undetermined` (the probe's rate was adjusted: the
   acknowledged-rate limit on probes or the rate controller's clamp). Otherwise `delay_based`.
6. otherwise (0 < |L - D| <= 1 bps, or L > D: the two straddle a millisecond, or the configured minimum raised the
   target): `undetermined`.

The acknowledged-rate bound (AimdRateControl caps the delay-based estimate's increase at 1.5 x the acknowledged rate
+ 10 kbps and backs off to 0.85 x it; LossBasedBweV2 bounds its candidates by it) acts inside the two estimates and
the log does not record the acknowledged rate: not determinable from the log (NOT_DETERMINABLE).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .feedback import rtcp_blocks
from .parser import OVERUSING, EventLog

Array = npt.NDArray[Any]

LIMITERS = ("delay_based", "probe", "loss_based", "receiver_limit", "undetermined")
EQUAL_BPS = 1  # a rounding step: the events carry whole bits per second (LossBasedBweV2 nudges by 1 bps)
TICK_MS = 1  # the log's clock tick: the events of one feedback can straddle it
PSFB, FMT_AFB = 206, 15  # RTCP payload-specific feedback, application layer (REMB: "REMB" identifier)

NOT_DETERMINABLE = {
    "acknowledged_rate": "not determinable from the log: the acknowledged rate is not logged; its bounds act inside "
                         "the delay-based estimate (AimdRateControl) and the loss-based one (LossBasedBweV2)",
    "configured_min_max": "not determinable from the log: the configured minimum and maximum bitrates are not "
                          "logged; a target held above the delay-based estimate is counted undetermined, one held "
                          "below it is counted loss_based",
}


@dataclass
class Steps:
    """The limiter as a step series: limiter[i] holds from time_ms[i] to time_ms[i + 1] (the last to the end)."""
    time_ms: Array
    limiter: list[str]


def remb(rtcp: list[tuple[int, bytes]]) -> tuple[Array, Array]:
    """(time_ms, bitrate_bps) of every REMB (draft-alvestrand-rmcat-remb) in a list of (time_ms, compound RTCP
    packet): exponent (6 bits) and mantissa (18 bits) after the "REMB" identifier and the SSRC count."""
    times: list[int] = []
    rates: list[int] = []
    for time_ms, packet in rtcp:
        for pt, fmt, body in rtcp_blocks(packet):
            if pt == PSFB and fmt == FMT_AFB and len(body) >= 8 and body[:4] == b"REMB":
                exp, mantissa = body[5] >> 2, ((body[5] & 3) << 16) | (body[6] << 8) | body[7]
                times.append(time_ms)
                rates.append(mantissa << exp)
    return np.array(times, dtype=np.int64), np.array(rates, dtype=np.int64)


def _in_force(times: Array, values: Array, at: Array) -> tuple[Array, Array]:
    """The index of the step in force at each time of `at` (the last logged at or before it; -1 before the first)."""
    if not len(times):
        return np.full(len(at), -1), np.zeros(len(at), dtype=np.int64)
    idx = np.searchsorted(times, at, side="right") - 1
    return idx, np.where(idx >= 0, values[np.maximum(idx, 0)], 0)


def probe_origin(log: EventLog) -> tuple[Array, Array]:
    """For each delay-based update: (set by a probe, probe origin undetermined) (rule 5 above)."""
    d, pr = log.delay_based, log.probe_results
    ok = pr["failure"] < 0
    pt, pb = pr["time_ms"][ok], pr["bitrate_bps"][ok]
    n = len(d["time_ms"])
    by_probe = np.zeros(n, dtype=bool)
    unknown = np.zeros(n, dtype=bool)
    for i in range(n):
        near = np.abs(pt - d["time_ms"][i]) <= TICK_MS
        if not near.any() or d["state"][i] == OVERUSING:  # over-use: the decrease branch, the probe is not used
            continue
        by_probe[i] = bool((pb[near] == d["bitrate_bps"][i]).any())
        unknown[i] = not by_probe[i]
    return by_probe, unknown


def steps(log: EventLog) -> Steps:
    """The limiter at every change of any input (delay-based, loss-based, REMB), from the first event on; before the
    first, undetermined."""
    d, lo = log.delay_based, log.loss_based
    r_t, r_v = remb(log.incoming_rtcp)
    times = np.union1d(np.union1d(d["time_ms"], lo["time_ms"]), r_t).astype(np.int64)
    di, dv = _in_force(d["time_ms"], d["bitrate_bps"], times)
    li, lv = _in_force(lo["time_ms"], lo["bitrate_bps"], times)
    ri, rv = _in_force(r_t, r_v, times)
    by_probe, unknown = probe_origin(log)
    out: list[str] = []
    lasts = np.append(np.diff(times), np.iinfo(np.int64).max)
    for k in range(len(times)):
        if di[k] < 0 or li[k] < 0:
            out.append("undetermined")
        elif ri[k] >= 0 and rv[k] < lv[k] - EQUAL_BPS:
            out.append("receiver_limit")
        elif ri[k] >= 0 and abs(rv[k] - lv[k]) <= EQUAL_BPS:
            out.append("undetermined")
        elif lv[k] != dv[k] and lasts[k] <= TICK_MS:
            out.append("undetermined")
        elif lv[k] < dv[k] - EQUAL_BPS:
            out.append("loss_based")
        elif lv[k] == dv[k]:
            out.append("probe" if by_probe[di[k]] else "undetermined" if unknown[di[k]] else "delay_based")
        else:
            out.append("undetermined")
    return Steps(times, out)


def durations_s(s: Steps, start_ms: float, end_ms: float) -> dict[str, float]:
    """Seconds of each limiter within [start_ms, end_ms]; time before the first step is undetermined."""
    out = {name: 0.0 for name in LIMITERS}
    if end_ms <= start_ms:
        return out
    begins = np.concatenate([[start_ms], s.time_ms.astype(float)])
    ends = np.append(begins[1:], np.inf)
    names = ["undetermined"] + s.limiter
    span = np.clip(ends, start_ms, end_ms) - np.clip(begins, start_ms, end_ms)
    for name, seconds in zip(names, span):
        out[name] += float(seconds) / 1000.0
    return out


def shares(seconds: dict[str, float]) -> dict[str, float | None]:
    total = sum(seconds.values())
    return {k: (v / total if total > 0 else None) for k, v in seconds.items()}


def bands(s: Steps, start_ms: float, end_ms: float) -> list[tuple[float, float, str]]:
    """[start_ms, end_ms, limiter] covering [start_ms, end_ms] without gap, equal neighbours merged."""
    out: list[tuple[float, float, str]] = []
    if end_ms <= start_ms:
        return out
    begins = np.concatenate([[start_ms], s.time_ms.astype(float)])
    ends = np.append(begins[1:], end_ms)
    for a, b, name in zip(np.clip(begins, start_ms, end_ms), np.clip(ends, start_ms, end_ms),
                          ["undetermined"] + s.limiter):
        if b <= a:
            continue
        if out and out[-1][2] == name and out[-1][1] == a:
            out[-1] = (out[-1][0], float(b), name)
        else:
            out.append((float(a), float(b), name))
    return out


def summary(log: EventLog, start_ms: float, end_ms: float, phases_ms: list[tuple[str, float, float]],
            to_s: Any | None) -> dict[str, Any]:
    """The `limits` section of one side: seconds and shares per phase (each phase clipped to [start_ms, end_ms]),
    and the bands in seconds since call start (`to_s` converts log ms; None when the log's time cannot be placed on
    the call's clock)."""
    s = steps(log)
    per_phase: dict[str, Any] = {}
    for name, lo, hi in phases_ms:
        a, b = max(lo, start_ms), min(hi, end_ms)
        sec = durations_s(s, a, b)
        per_phase[name] = {"window_s": max(0.0, (b - a) / 1000.0), "seconds": sec, "share": shares(sec)}
    out: dict[str, Any] = {
        "rule": "eventlog/limits.py (docs/metrics.md); libwebrtc goog_cc at revision cd6792e5",
        "window_s": max(0.0, (end_ms - start_ms) / 1000.0),
        "phases": per_phase,
        "remb_messages": int(len(remb(log.incoming_rtcp)[0])),
        "not_determinable": dict(NOT_DETERMINABLE),
    }
    if to_s is None:
        out["bands"] = None
        out["bands_missing"] = "the log's times cannot be placed on the call's clock (no offset or no call start)"
    else:
        out["bands"] = [[round(float(to_s(a)), 4), round(float(to_s(b)), 4), n]
                        for a, b, n in bands(s, start_ms, end_ms)]
    return out
