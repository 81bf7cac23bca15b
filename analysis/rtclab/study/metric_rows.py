"""A run's rows of study.parquet: one per flow x phase, its metrics read from the run's metrics.json (docs/metrics.md),
the flows labelled the same way in every run so that runs can be pooled (labels in aggregate.py's docstring)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .catalogue import (
    CATALOGUE,
    CONTROLLER_FLOW,
    CPU_COMPONENTS,
    CPU_FLOW,
    FRAMES_METRICS,
    FRAMES_PREFIX,
    LIMITERS,
    LIMITS_FLOW,
    RFC_FLOW,
    _get,
)


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _tq(m: dict[str, Any], flow: dict[str, Any], phase: str, key: str) -> Any:
    """The getStats Tq statistic of the flow's SSRC in the phase (whole call: the stream's own tq_ms)."""
    ssrc = flow.get("ssrc")
    if ssrc is None:
        return None
    direction = _get(m, "getstats", "directions", str(flow.get("direction")))
    if not isinstance(direction, dict):
        return None
    if phase == "all":
        for s in direction.get("streams") or []:
            if s.get("ssrc") == ssrc:
                return _get(s, "tq_ms", key)
        return None
    for name, entry in (_get(direction, "phases", phase) or {}).items():
        if str(name).rsplit(":", 1)[-1] == str(ssrc):
            return _get(entry, "tq_ms", key)
    return None


def flow_values(m: dict[str, Any], flow: dict[str, Any], phase: str) -> dict[str, float | None]:
    f = flow if phase == "all" else (_get(flow, "phases", phase) or {})
    raw = {
        "loss_ratio_bytes": f.get("loss_ratio_bytes"),
        "loss_ratio_packets": f.get("loss_ratio"),
        "utilisation": f.get("utilisation"),
        "throughput_bps": _get(f, "throughput_bps", "mean"),
        "send_rate_bps": f.get("send_rate_bps"),
        "queuing_delay_ms_mean": _get(f, "queuing_delay_ms", "mean"),
        "queuing_delay_ms_p50": _get(f, "queuing_delay_ms", "p50"),
        "queuing_delay_ms_p95": _get(f, "queuing_delay_ms", "p95"),
        "owd_ms_mean": _get(f, "owd_ms", "mean"),
        "jitter_ms": _get(f, "jitter_ms", "mean"),
        "tq_ms_mean": _tq(m, flow, phase, "mean"),
        "tq_ms_p95": _tq(m, flow, phase, "p95"),
    }
    return {k: _finite(v) for k, v in raw.items()}


def bottleneck_values(fair: dict[str, Any]) -> dict[str, float | None]:
    conns = fair.get("connections") or []
    call = [c for c in conns if c.get("role") == "call"]
    tcp = [c for c in conns if c.get("role") == "tcp"]
    shares = [_finite(c.get("share_of_fair_share")) for c in tcp]
    call_shares = [_finite(c.get("share_of_fair_share")) for c in call]
    call_rates = [_finite(c.get("throughput_bps")) for c in call]  # one unknown: the call's sum is unknown
    raw = {
        "jain_index": fair.get("jain_index"),
        "bottleneck_utilisation": fair.get("utilisation"),
        "received_bps": fair.get("received_bps"),
        "call_throughput_bps": sum(x for x in call_rates if x is not None)
        if call and all(x is not None for x in call_rates) else None,
        "call_share_of_fair_share": sum(x for x in call_shares if x is not None)
        if call and all(x is not None for x in call_shares) else None,
        "tcp_share_of_fair_share": float(np.mean([x for x in shares if x is not None]))
        if tcp and all(x is not None for x in shares) else None,
    }
    return {k: _finite(v) for k, v in raw.items()}


def controller_values(cc: dict[str, Any]) -> dict[str, float | None]:
    side = _get(cc, "sides", "a") or {}
    ctrl = side.get("controller") or {}
    raw = {"n_dd": ctrl.get("n_dd"), "overuse_events": ctrl.get("overuse_events"),
           "overusing_fraction": _get(ctrl, "detector_state_fraction", "overusing"),
           "replay_update_agreement": _get(side, "replay", "update_agreement")}
    return {k: _finite(v) for k, v in raw.items()}


def limits_values(phase: dict[str, Any]) -> dict[str, float | None]:
    """One phase of congestion_controller.sides.a.limits: each limiter's share (null over an empty window)."""
    share = phase.get("share") or {}
    return {f"limited_by_{x}": _finite(share.get(x)) for x in LIMITERS}


def rfc_values(r: dict[str, Any]) -> dict[str, float | None]:
    summary = r.get("summary") or {}
    return {m.name: _finite(summary.get(m.name)) for m in CATALOGUE.values() if m.family == "rfc8867"}


def frames_values(side: dict[str, Any]) -> dict[str, float | None]:
    """One receiving side's frames (metrics.json frames.<side>): its delays' percentiles (every frame's too), the
    freeze time ratio, the share of frames sent but never shown and the sampled frames' mean PSNR and SSIM (also in
    dB) (null where the run has no value: no frame joined, no sent frame, no frame compared)."""
    raw: dict[str, Any] = {name: _get(side, name.rsplit("_", 1)[0], name.rsplit("_", 1)[1])
                           for name in FRAMES_METRICS if name.endswith(("_p50", "_p95", "_p99"))}
    raw["freeze_time_ratio"] = _get(side, "freezes", "time_ratio")
    raw["psnr_db_mean"] = _get(side, "quality", "psnr_db", "mean")
    raw["ssim_mean"] = _get(side, "quality", "ssim", "mean")
    raw["ssim_db_mean"] = _get(side, "quality", "ssim_db", "mean")
    sent, never = _finite(side.get("sent_frames")), _finite(side.get("never_shown"))
    raw["never_shown_ratio"] = never / sent if sent and never is not None else None
    return {k: _finite(v) for k, v in raw.items()}


def cpu_values(c: dict[str, Any]) -> dict[str, float | None]:
    """The run's CPU over the call (metrics.json `cpu`). A component the run accounted no process of is null, not 0:
    the accounting may have missed a process that ran, and a study's mean of a component is over the runs that had
    it (its n says how many)."""
    comps = c.get("components") or {}
    browsers = [_finite(_get(comps, n, "mean_cores")) for n in comps if n.startswith("chromium-")]
    raw = {"cpu_host_busy_cores": _get(c, "host_busy", "mean_cores"),
           "cpu_host_busy_fraction": _get(c, "host_busy", "mean_fraction"),
           "cpu_run_cores": _get(c, "run", "mean_cores"), "cpu_outside_run_cores": _get(c, "outside_run", "mean_cores"),
           "cpu_kernel_cores": _get(c, "kernel_irq_softirq", "mean_cores"),
           "cpu_steal_cores": _get(c, "steal", "mean_cores"), "cpu_steal_max_cores": _get(c, "steal", "max_cores"),
           "cpu_chromium_cores": sum(x for x in browsers if x is not None)
           if browsers and all(x is not None for x in browsers) else None,
           **{f"cpu_{n.replace('-', '_')}_cores": _get(comps, n, "mean_cores") for n in CPU_COMPONENTS}}
    return {k: _finite(v) for k, v in raw.items()}


def flow_labels(flows: list[dict[str, Any]]) -> list[str]:
    """Labels that mean the same flow in every run: direction:kind, then :2, :3 ... by packets sent."""
    labels = [""] * len(flows)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(flows):
        groups.setdefault((str(f.get("direction")), str(f.get("kind"))), []).append(i)
    for (direction, kind), idx in groups.items():
        idx.sort(key=lambda i: (-(flows[i].get("packets_sent") or 0), flows[i].get("id", i)))
        for rank, i in enumerate(idx, start=1):
            labels[i] = f"{direction}:{kind}" + ("" if rank == 1 else f":{rank}")
    return labels


def run_rows(m: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per flow x phase of one run's metrics.json (and the bottleneck's per phase)."""
    rows: list[dict[str, Any]] = []
    phases = m.get("phases") or [{"name": "all", "start_s": 0.0, "end_s": _get(m, "run", "duration_s"),
                                  "cross_traffic": False}]
    flows = m.get("flows") or []
    fairness = m.get("fairness") or {}
    for label, flow in zip(flow_labels(flows), flows):
        for ph in phases:
            name = ph["name"]
            if name != "all" and name not in (flow.get("phases") or {}):
                continue
            rows.append({"flow": label, "direction": flow.get("direction"), "kind": flow.get("kind"),
                         "ssrc": flow.get("ssrc"), "phase": name, "phase_start_s": _finite(ph.get("start_s")),
                         "phase_end_s": _finite(ph.get("end_s")), "phase_cross_traffic": bool(ph.get("cross_traffic")),
                         **flow_values(m, flow, name)})
    for ph in phases:
        fair = fairness.get(ph["name"])
        if isinstance(fair, dict):
            rows.append({"flow": "bottleneck", "direction": "forward", "kind": "bottleneck", "ssrc": None,
                         "phase": ph["name"], "phase_start_s": _finite(ph.get("start_s")),
                         "phase_end_s": _finite(ph.get("end_s")), "phase_cross_traffic": bool(ph.get("cross_traffic")),
                         **bottleneck_values(fair)})
    cc = m.get("congestion_controller")
    if isinstance(cc, dict) and isinstance(_get(cc, "sides", "a"), dict):
        whole = next((ph for ph in phases if ph["name"] == "all"), phases[0])
        rows.append({"flow": CONTROLLER_FLOW, "direction": "forward", "kind": "controller", "ssrc": None,
                     "phase": "all", "phase_start_s": _finite(whole.get("start_s")),
                     "phase_end_s": _finite(whole.get("end_s")), "phase_cross_traffic": False,
                     **controller_values(cc)})
        by_phase = {ph["name"]: ph for ph in phases}
        for name, lim in (_get(cc, "sides", "a", "limits", "phases") or {}).items():
            ph = by_phase.get(name, {})
            rows.append({"flow": LIMITS_FLOW, "direction": "forward", "kind": "limits", "ssrc": None, "phase": name,
                         "phase_start_s": _finite(ph.get("start_s")), "phase_end_s": _finite(ph.get("end_s")),
                         "phase_cross_traffic": bool(ph.get("cross_traffic")), **limits_values(lim)})
    rfc = m.get("rfc8867")
    if isinstance(rfc, dict) and rfc.get("flows"):
        whole = next((ph for ph in phases if ph["name"] == "all"), phases[0])
        rows.append({"flow": RFC_FLOW, "direction": "forward", "kind": "rfc8867", "ssrc": None, "phase": "all",
                     "phase_start_s": _finite(whole.get("start_s")), "phase_end_s": _finite(whole.get("end_s")),
                     "phase_cross_traffic": False, **rfc_values(rfc)})
    for side, entry in sorted((m.get("frames") or {}).items()):
        if isinstance(entry, dict) and entry.get("records"):
            whole = next((ph for ph in phases if ph["name"] == "all"), phases[0])
            rows.append({"flow": FRAMES_PREFIX + side, "direction": entry.get("direction"), "kind": "frames",
                         "ssrc": entry.get("ssrc"), "phase": "all", "phase_start_s": _finite(whole.get("start_s")),
                         "phase_end_s": _finite(whole.get("end_s")), "phase_cross_traffic": False,
                         **frames_values(entry)})
    cpu = m.get("cpu")
    if isinstance(cpu, dict) and _get(cpu, "window", "samples"):
        whole = next((ph for ph in phases if ph["name"] == "all"), phases[0])
        rows.append({"flow": CPU_FLOW, "direction": None, "kind": "cpu", "ssrc": None, "phase": "all",
                     "phase_start_s": _finite(whole.get("start_s")), "phase_end_s": _finite(whole.get("end_s")),
                     "phase_cross_traffic": False, **cpu_values(cpu)})
    return rows
