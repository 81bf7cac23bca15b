"""GCC's state over time from one browser's event log: its delay-based and loss-based estimates, the target derived
from them, probes, and the over-use detector's state; and the counts a study reports (docs/metrics.md,
"Congestion controller"):

- time in each detector state: the logged state holds from its update to the next (Chrome logs a delay-based update
  only when the estimate or the state changes); counted from the first delay-based update to `end_ms`.
- target: the lower of the latest delay-based and loss-based estimates (the loss-based one is capped by the
  delay-based one when Chrome computes it, so the lower of the two is what the sender was allowed).
- n_dd, the number of delay-based decrease events (Carlucci et al., CDC 2014, for a send-side controller): the
  delay-based updates that lower the delay-based estimate below its previous value while it is the binding one,
  i.e. below the latest loss-based estimate (the loss-based estimate not yet logged counts as no bound).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .parser import DETECTOR_STATES, NORMAL, OVERUSING, UNDERUSING, EventLog

Array = npt.NDArray[Any]


def latest_before(times: Array, values: Array, at: Array, fill: float) -> Array:
    """The value of a step series (times, values) at each time in `at`, `fill` before its first step."""
    idx = np.searchsorted(times, at, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], fill)
    return out.astype(float)


def n_dd(delay_time_ms: Array, delay_bps: Array, loss_time_ms: Array, loss_bps: Array) -> int:
    if len(delay_bps) < 2:
        return 0
    loss_at = latest_before(loss_time_ms, loss_bps, delay_time_ms, np.inf)
    lowered = delay_bps[1:] < delay_bps[:-1]
    binding = delay_bps[1:] < loss_at[1:]
    return int((lowered & binding).sum())


def state_durations_s(time_ms: Array, state: Array, end_ms: float) -> dict[str, float]:
    """Seconds spent in each detector state, each logged state lasting until the next update (the last until end_ms)."""
    out = {DETECTOR_STATES[s]: 0.0 for s in (NORMAL, UNDERUSING, OVERUSING)}
    if not len(time_ms):
        return out
    ends = np.append(time_ms[1:], max(float(end_ms), float(time_ms[-1])))
    for s, name in DETECTOR_STATES.items():
        if name in out or (state == s).any():
            out[name] = float(((ends - time_ms)[state == s]).sum() / 1000.0)
    return out


def controller_summary(log: EventLog, end_ms: float | None = None) -> dict[str, Any]:
    """The congestion controller's counts from a sender's log; end_ms: where the last state ends (default: the last
    logged outgoing RTP packet, the log's last sign of life)."""
    d, lo = log.delay_based, log.loss_based
    if end_ms is None:
        candidates = [float(x[-1]) for x in (log.outgoing_rtp["time_ms"], d["time_ms"], lo["time_ms"]) if len(x)]
        end_ms = max(candidates) if candidates else 0.0
    durations = state_durations_s(d["time_ms"], d["state"], end_ms)
    total = sum(durations.values())
    failures = log.probe_results["failure"]
    return {
        "delay_based_updates": int(len(d["time_ms"])),
        "loss_based_updates": int(len(lo["time_ms"])),
        "n_dd": n_dd(d["time_ms"], d["bitrate_bps"], lo["time_ms"], lo["bitrate_bps"]),
        "detector_state_s": durations,
        "detector_state_fraction": {k: (v / total if total else None) for k, v in durations.items()},
        "overuse_events": int(((d["state"] == OVERUSING) & (np.r_[-1, d["state"][:-1]] != OVERUSING)).sum()),
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
