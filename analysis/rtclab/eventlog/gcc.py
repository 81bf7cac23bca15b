"""GCC's state over time from one browser's event log: its delay-based and loss-based estimates, the target derived
from them, probes, and the over-use detector's state; and the counts a study reports (docs/metrics.md,
"Congestion controller"):

- time in each detector state: the logged state holds from its update to the next (Chrome logs a delay-based update
  only when the estimate or the state changes); counted from the first delay-based update to `end_ms`.
- target: the lower of the latest delay-based and loss-based estimates (the loss-based one is capped by the
  delay-based one when Chrome computes it, so the lower of the two is what the sender was allowed).
- n_dd, the number of delay-based decrease events (Carlucci et al., CDC 2014, for a send-side controller): the
  delay-based updates that lower the delay-based estimate below its previous value while it is the binding one,
  i.e. below the latest loss-based estimate logged before it (none logged yet counts as no bound).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .parser import DETECTOR_STATES, NORMAL, OVERUSING, UNDERUSING, EventLog

Array = npt.NDArray[Any]


def latest_before(times: Array, values: Array, at: Array, fill: float) -> Array:
    """The value of a step series (times, values) at each time in `at`, `fill` before its first step (and
    everywhere for an empty series: a browser that sends no media logs no estimates)."""
    if not len(values):
        return np.full(np.shape(at), fill, dtype=float)
    idx = np.searchsorted(times, at, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], fill)
    return out.astype(float)


def n_dd(delay_time_ms: Array, delay_bps: Array, loss_time_ms: Array, loss_bps: Array,
         start_ms: float = -np.inf, end_ms: float = np.inf) -> int:
    """Delay-based decrease events among the updates logged within [start_ms, end_ms]."""
    if len(delay_bps) < 2:
        return 0
    # The loss-based estimate in force at a delay-based update is the last one logged strictly before it: Chrome
    # computes the loss-based one after the delay-based one of the same feedback.
    idx = np.searchsorted(loss_time_ms, delay_time_ms, side="left") - 1
    loss_at = np.where(idx >= 0, loss_bps[np.maximum(idx, 0)], np.inf)
    lowered = delay_bps[1:] < delay_bps[:-1]
    binding = delay_bps[1:] < loss_at[1:]
    inside = (delay_time_ms[1:] >= start_ms) & (delay_time_ms[1:] <= end_ms)
    return int((lowered & binding & inside).sum())


def state_durations_s(time_ms: Array, state: Array, end_ms: float, start_ms: float = -np.inf) -> dict[str, float]:
    """Seconds spent in each detector state within [start_ms, end_ms], each logged state lasting until the next
    update (the last until end_ms); before the first update the state is unknown and not counted."""
    out = {DETECTOR_STATES[s]: 0.0 for s in (NORMAL, UNDERUSING, OVERUSING)}
    if not len(time_ms):
        return out
    begins = np.clip(time_ms.astype(float), start_ms, end_ms)
    ends = np.clip(np.append(time_ms[1:], end_ms).astype(float), start_ms, end_ms)
    for s, name in DETECTOR_STATES.items():
        if name in out or (state == s).any():
            out[name] = float(((ends - begins)[state == s]).sum() / 1000.0)
    return out


def log_end_ms(log: EventLog) -> float:
    """The log's last sign of life: its last outgoing RTP packet or estimate."""
    d, lo = log.delay_based, log.loss_based
    candidates = [float(x[-1]) for x in (log.outgoing_rtp["time_ms"], d["time_ms"], lo["time_ms"]) if len(x)]
    return max(candidates) if candidates else 0.0


def controller_summary(log: EventLog, start_ms: float = -np.inf, end_ms: float | None = None) -> dict[str, Any]:
    """The congestion controller's counts from a sender's log within [start_ms, end_ms] (log time; default: all of
    it, to the log's last sign of life; an end past that is cut to it: the log says nothing later)."""
    d, lo = log.delay_based, log.loss_based
    end_ms = min(log_end_ms(log), end_ms) if end_ms is not None else log_end_ms(log)
    durations = state_durations_s(d["time_ms"], d["state"], end_ms, start_ms)
    total = sum(durations.values())
    failures = log.probe_results["failure"]
    return {
        "delay_based_updates": int(len(d["time_ms"])),
        "loss_based_updates": int(len(lo["time_ms"])),
        "n_dd": n_dd(d["time_ms"], d["bitrate_bps"], lo["time_ms"], lo["bitrate_bps"], start_ms, end_ms),
        "window_s": max(0.0, (end_ms - max(start_ms, float(d["time_ms"][0])
                                           if len(d["time_ms"]) else end_ms)) / 1000.0),
        "detector_state_s": durations,
        "detector_state_fraction": {k: (v / total if total else None) for k, v in durations.items()},
        "overuse_events": int(((d["state"] == OVERUSING) & (np.r_[-1, d["state"][:-1]] != OVERUSING)
                               & (d["time_ms"] >= start_ms) & (d["time_ms"] <= end_ms)).sum()),
        "probe_clusters": int(len(log.probe_clusters["id"])),
        "probes_succeeded": int((failures == -1).sum()),
        "probes_failed": int((failures >= 0).sum()),
    }


def series(log: EventLog) -> dict[str, Any]:
    """Step series for plotting, times in log ms: delay-based, loss-based, target (at every change of either)."""
    d, lo = log.delay_based, log.loss_based
    times = np.union1d(d["time_ms"], lo["time_ms"])
    target = np.minimum(latest_before(d["time_ms"], d["bitrate_bps"], times, np.inf),
                        latest_before(lo["time_ms"], lo["bitrate_bps"], times, np.inf))
    return {"delay_based": (d["time_ms"], d["bitrate_bps"]), "loss_based": (lo["time_ms"], lo["bitrate_bps"]),
            "target": (times, target), "state": (d["time_ms"], d["state"])}
