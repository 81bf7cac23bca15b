"""Aggregation of a study directory: `study.parquet` (one row per valid run x flow x phase, the point's parameters as
columns) and `study.json` (per point, flow and phase: mean, sd, 95% confidence interval and n of each metric), read
from the runs' own metrics.json (docs/metrics.md) and nothing else. Invalid, incomplete and interrupted attempts are
excluded and listed. Definitions in docs/studies.md.

Flows are labelled the same way in every run, so that runs can be pooled: `<direction>:<kind>` (forward:video,
reverse:audio, forward:tcp, ...), with `:2`, `:3`, ... for further flows of the same direction and kind, ranked by
packets sent in the run; and `bottleneck`, the forward bottleneck's fairness entry of each phase (metrics.json
`fairness[phase]`); `controller:a`, `cpu` and `frames:b` (what the viewer at b saw), pseudo-flows of the whole
call."""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .. import __version__ as RTCLAB_VERSION
from . import studydir
from .tdist import t_quantile

STUDY_JSON_FORMAT_VERSION = 1
CONFIDENCE = 0.95

Extractor = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Metric:
    name: str
    family: str  # "flow": a packet flow's entry (flows[i], flows[i].phases[p]); "bottleneck": fairness[p];
    # "rfc8867": RFC 8867's metrics of the media flows (metrics.json rfc8867.summary, whole call only);
    # "controller": the forward sender's congestion controller from its RTC event log (whole call only); "cpu": the
    # machine's CPU during the run (cpu.jsonl, whole call only); "frames": the frames a receiving page presented
    # (metrics.json frames.<side>, whole call only)
    unit: str
    definition: str


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


CATALOGUE: dict[str, Metric] = {m.name: m for m in [
    Metric("loss_ratio_bytes", "flow", "ratio", "metrics.json flow loss_ratio_bytes: link-layer bytes lost / bytes "
           "sent (Carlucci et al.'s l), from the two captures"),
    Metric("loss_ratio_packets", "flow", "ratio", "flow loss_ratio: packets lost / packets sent, from the captures"),
    Metric("utilisation", "flow", "ratio", "flow utilisation: U = throughput_bps.mean / the forward link's capacity "
           "over the same span (forward flows)"),
    Metric("throughput_bps", "flow", "bit/s", "flow throughput_bps.mean: goodput, link-layer bits received per second"),
    Metric("send_rate_bps", "flow", "bit/s", "flow send_rate_bps: link-layer bits sent per second"),
    Metric("queuing_delay_ms_mean", "flow", "ms", "flow queuing_delay_ms.mean: one-way delay from the captures minus "
           "the configured propagation delay"),
    Metric("queuing_delay_ms_p50", "flow", "ms", "flow queuing_delay_ms.p50 (the run's median)"),
    Metric("queuing_delay_ms_p95", "flow", "ms", "flow queuing_delay_ms.p95 (the run's 95th percentile)"),
    Metric("owd_ms_mean", "flow", "ms", "flow owd_ms.mean: one-way delay from the captures"),
    Metric("jitter_ms", "flow", "ms", "flow jitter_ms.mean: RFC 3550 interarrival jitter (RTP flows)"),
    Metric("tq_ms_mean", "flow", "ms", "getStats tq_ms.mean of the flow's SSRC: Tq = RTCP RTT - RTTm, RTTm the "
           "configured round-trip propagation delay (Carlucci et al. 2016)"),
    Metric("tq_ms_p95", "flow", "ms", "getStats tq_ms.p95 of the flow's SSRC"),
    Metric("jain_index", "bottleneck", "index", "fairness[phase].jain_index over the competitors at the forward "
           "bottleneck (the call and the scenario's forward TCP flows)"),
    Metric("bottleneck_utilisation", "bottleneck", "ratio", "fairness[phase].utilisation: all forward bits received "
           "at b / the link's capacity"),
    Metric("received_bps", "bottleneck", "bit/s", "fairness[phase].received_bps: all forward bits received at b per "
           "second"),
    Metric("call_throughput_bps", "bottleneck", "bit/s", "fairness[phase]: the call's connections' throughput_bps, "
           "summed"),
    Metric("call_share_of_fair_share", "bottleneck", "ratio", "fairness[phase]: the call's share_of_fair_share "
           "(its rate / (capacity / competitors)), summed over its connections (one with bundling)"),
    Metric("tcp_share_of_fair_share", "bottleneck", "ratio", "fairness[phase]: mean share_of_fair_share of the TCP "
           "competitors (a starved one counts 0)"),
    Metric("n_dd", "controller", "count", "congestion_controller.sides.a.controller.n_dd: delay-based decrease events "
           "of the forward sender's GCC over the call (Carlucci et al., CDC 2014; from its RTC event log)"),
    Metric("overuse_events", "controller", "count", "congestion_controller.sides.a.controller.overuse_events: "
           "transitions into the over-use detector's overusing state over the call"),
    Metric("overusing_fraction", "controller", "ratio", "congestion_controller.sides.a.controller."
           "detector_state_fraction.overusing: share of the call the detector spent overusing"),
    Metric("replay_update_agreement", "controller", "ratio", "congestion_controller.sides.a.replay.update_agreement: "
           "share of logged detector updates the trendline replay agrees with"),
    # RFC 8867's metrics of the run's media flows (metrics.json rfc8867.summary; docs/metrics.md "RFC 8867 metrics").
    Metric("rate_to_target_ratio", "rfc8867", "ratio", "rfc8867.summary.rate_to_target_ratio: per media flow, its "
           "bits delivered / its target's (capacity or fair share) over its active windows; the flows' mean"),
    Metric("convergence_time_s", "rfc8867", "s", "rfc8867.summary.convergence_time_s: mean over the media flows' "
           "constant-target segments that converged of the time from the segment's start until the rate stays "
           "within the band (±rfc8867.band of the target) to the segment's end"),
    Metric("converged_fraction", "rfc8867", "ratio", "rfc8867.summary.converged_fraction: segments that converged / "
           "segments"),
    Metric("reaction_time_down_s", "rfc8867", "s", "rfc8867.summary.reaction_time_down_s: mean over capacity "
           "decreases and media flows of the time from the step to the end of the first window whose rate is at "
           "most (1 + band) x the flow's new target (not reached before the next step: left out)"),
    Metric("reaction_time_up_s", "rfc8867", "s", "rfc8867.summary.reaction_time_up_s: the same for capacity "
           "increases, the first window whose rate is at least (1 - band) x the new target"),
    Metric("ramp_up_s", "rfc8867", "s", "rfc8867.summary.ramp_up_s: mean over the media flows' starts and resumes "
           "after a pause of the time to the end of the first window whose rate is at least (1 - band) x target"),
    Metric("media_jain_index", "rfc8867", "index", "rfc8867.summary.media_jain_index: Jain's index over the media "
           "flows' mean rates in the windows where all of them are active (two flows or more)"),
    # What the viewer saw (metrics.json frames.<side>; docs/metrics.md "Frames"): the run's own percentiles of its
    # frames' delays, and two ratios of the whole call.
    Metric("glass_to_glass_ms_p50", "frames", "ms", "frames.<side>.glass_to_glass_ms.p50: the run's median over its "
           "shown frames of glass-to-glass delay (display - capture)"),
    Metric("glass_to_glass_ms_p95", "frames", "ms", "frames.<side>.glass_to_glass_ms.p95: the run's 95th percentile of "
           "glass-to-glass delay"),
    Metric("sender_ms_p50", "frames", "ms", "frames.<side>.sender_ms.p50: the run's median of the sender part "
           "(capture to the frame's first packet leaving, on the sender's capture)"),
    Metric("sender_ms_p95", "frames", "ms", "frames.<side>.sender_ms.p95: its 95th percentile"),
    Metric("network_ms_p50", "frames", "ms", "frames.<side>.network_ms.p50: the run's median of the network part "
           "(the frame's first packet leaving to its last arriving, on the two captures)"),
    Metric("network_ms_p95", "frames", "ms", "frames.<side>.network_ms.p95: its 95th percentile"),
    Metric("receiver_ms_p50", "frames", "ms", "frames.<side>.receiver_ms.p50: the run's median of the receiver part "
           "(the last packet arriving to display)"),
    Metric("receiver_ms_p95", "frames", "ms", "frames.<side>.receiver_ms.p95: its 95th percentile"),
    Metric("freeze_time_ratio", "frames", "ratio", "frames.<side>.freezes.time_ratio: the freezes' total duration "
           "(Chrome's rule, from the per-frame record) / the span from the first frame presented to the last"),
    Metric("never_shown_ratio", "frames", "ratio", "frames.<side>.never_shown / sent_frames: frames that left the "
           "sender between the first and the last shown frame and were never shown, of those sent in that span"),
    Metric("psnr_db_mean", "frames", "dB", "frames.<side>.quality.psnr_db.mean: the run's mean PSNR of its sampled "
           "shown frames against the source frame of the same number (ffmpeg's psnr, capped at 48 dB)"),
    Metric("ssim_mean", "frames", "index", "frames.<side>.quality.ssim.mean: the run's mean SSIM of the same frames "
           "(ffmpeg's ssim, the planes weighted 4:1:1)"),
]}
RFC_FLOW = "rfc8867"  # the pseudo-flow that carries RFC 8867's metrics of the run's media flows (whole call only)
CONTROLLER_FLOW = "controller:a"  # the pseudo-flow that carries the forward sender's controller metrics
FRAMES_PREFIX = "frames:"  # frames:b (and frames:a when a receives video): the frames that side's page presented
FRAMES_FLOW = FRAMES_PREFIX + "b"  # the forward stream's, the one the reports show
FRAMES_METRICS = [m.name for m in CATALOGUE.values() if m.family == "frames"]

# Where the machine's CPU went during each run (metrics.json `cpu`, from the harness's cpu.jsonl; whole call only).
# Not in CATALOGUE: a study file's `metrics` picks among the network metrics (studies/schema.json); these are always
# aggregated, as a property of the runs themselves (was the machine busy, what did the call cost).
CPU_FLOW = "cpu"  # the pseudo-flow that carries them
CPU_COMPONENTS = ["chromium-a", "chromium-b", "bottleneck", "capture", "iperf3", "harness"]
CPU_CATALOGUE: dict[str, Metric] = {m.name: m for m in [
    Metric("cpu_host_busy_cores", "cpu", "cores", "cpu.host_busy.mean_cores: the host's busy CPU (/proc/stat: all "
           "but idle and iowait) over the call, in cores (CPU-seconds per second)"),
    Metric("cpu_host_busy_fraction", "cpu", "ratio", "cpu.host_busy.mean_fraction: cpu_host_busy_cores / the "
           "machine's cores"),
    Metric("cpu_run_cores", "cpu", "cores", "cpu.run.mean_cores: every process the run started, summed"),
    Metric("cpu_outside_run_cores", "cpu", "cores", "cpu.outside_run.mean_cores: host busy - the run's processes "
           "(clamped at 0 per interval): other processes and kernel time charged to none"),
    Metric("cpu_kernel_cores", "cpu", "cores", "cpu.kernel_irq_softirq.mean_cores: the host's irq + softirq time"),
    Metric("cpu_chromium_cores", "cpu", "cores", "every chromium-* component of cpu.components (all calls' "
           "browsers), summed (null when the run accounted no browser)"),
    *(Metric(f"cpu_{c.replace('-', '_')}_cores", "cpu", "cores", f"cpu.components['{c}'].mean_cores (null when the "
             f"run accounted no such process: n counts the runs that had one)") for c in CPU_COMPONENTS),
]}
# Which estimate set the forward sender's target (metrics.json congestion_controller.sides.a.limits;
# eventlog/limits.py), per phase. Not in CATALOGUE either: always aggregated when the runs have it, as the CPU's are.
LIMITS_FLOW = "limits:a"  # the pseudo-flow that carries them, one row per phase
LIMITERS = ["delay_based", "probe", "loss_based", "receiver_limit", "undetermined"]
LIMITS_CATALOGUE: dict[str, Metric] = {m.name: m for m in [
    Metric(f"limited_by_{x}", "limits", "ratio", f"congestion_controller.sides.a.limits.phases[phase].share.{x}: "
           f"share of the phase (within the call window the log covers) during which the forward sender's target "
           f"was set by {'no estimate the log can tell' if x == 'undetermined' else x.replace('_', '-')} "
           f"(docs/metrics.md, \"Which estimate limits the target\")") for x in LIMITERS
]}
# Every per-run metric, for lookups of unit and family.
METRICS: dict[str, Metric] = {**CATALOGUE, **CPU_CATALOGUE, **LIMITS_CATALOGUE}

FIXED_COLUMNS = ["study", "quick_factor", "point", "rep", "attempt", "run_dir", "run_id", "accepted_invalid", "flow",
                 "direction", "kind", "ssrc", "phase", "phase_start_s", "phase_end_s", "phase_cross_traffic"]


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
    """One receiving side's frames (metrics.json frames.<side>): its delays' percentiles, the freeze time ratio, the
    share of frames sent but never shown and the sampled frames' mean PSNR and SSIM (null where the run has no value:
    no frame joined, no sent frame, no frame compared)."""
    raw: dict[str, Any] = {name: _get(side, name.rsplit("_", 1)[0], name.rsplit("_", 1)[1])
                           for name in FRAMES_METRICS if name.endswith(("_p50", "_p95"))}
    raw["freeze_time_ratio"] = _get(side, "freezes", "time_ratio")
    raw["psnr_db_mean"] = _get(side, "quality", "psnr_db", "mean")
    raw["ssim_mean"] = _get(side, "quality", "ssim", "mean")
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


# Box plots (Carlucci et al. 2016 draw queuing delay as boxes at the 25/50/75th percentiles with whiskers at the 5th and
# 95th): per point, flow and phase, the quantiles of the samples pooled over the point's valid runs.
BOX_PERCENTILES = (5, 25, 50, 75, 95)
DISTRIBUTIONS = {
    "queuing_delay_ms": "per-packet queuing delay from the captures (one-way delay - the configured propagation "
                        "delay; packets.parquet queuing_delay_ns of the flow's delivered packets, a packet in a phase "
                        "by its departure time), pooled over the point's valid runs",
    "tq_ms": "Tq = RTCP RTT - RTTm, one sample per getStats report of the flow's SSRC (metrics.json getstats series "
             "tq_ms:<kind>:<ssrc>, a sample in a phase by its time), pooled over the point's valid runs",
}
PACKET_COLUMNS = ["flow", "status", "t_send_ns", "queuing_delay_ns"]


def box(samples: list[np.ndarray], runs: int,
        left_out: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The quantiles of the pooled samples (numpy's linear rule, as metrics.json's percentiles), their mean, min, max,
    n_samples and n_runs (runs that gave at least one sample) out of `runs` (the point's valid runs), and `left_out`:
    the runs whose samples could not be read, each with why ({"run", "reason"})."""
    x = np.concatenate(samples) if samples else np.empty(0)
    out: dict[str, Any] = {"n_samples": int(x.size), "n_runs": sum(1 for s in samples if s.size), "runs": runs,
                           "left_out": left_out or []}
    if not x.size:
        return {**out, "mean": None, "min": None, "max": None, **{f"p{q}": None for q in BOX_PERCENTILES}}
    qs = np.percentile(x, BOX_PERCENTILES)
    return {**out, "mean": float(x.mean()), "min": float(x.min()), "max": float(x.max()),
            **{f"p{q}": float(v) for q, v in zip(BOX_PERCENTILES, qs)}}


SampleKey = tuple[str, str, str]  # (flow label, phase, distribution)


@dataclass
class RunSamples:
    """One run's samples for the boxes, and the (flow, phase, distribution) it could not give, each with why."""
    dir: str  # relative to the study directory, as listed
    samples: dict[SampleKey, np.ndarray]
    left_out: dict[SampleKey, str]


def run_samples(run_dir: Path, m: dict[str, Any], wanted: Callable[[str], bool], listed_dir: str = "") -> RunSamples:
    """One run's samples for the boxes: {(flow label, phase, distribution): values}, for the packet flows `wanted`
    accepts. Queuing delay needs the run's packets.parquet, and for a phase other than the whole call the run's
    call_start (packet times are epoch ns); Tq its metrics.json. What cannot be read is left out with its reason."""
    phases = m.get("phases") or [{"name": "all", "start_s": 0.0, "end_s": _get(m, "run", "duration_s")}]
    flows = m.get("flows") or []
    labels = {int(f.get("id", i)): lab for i, (lab, f) in enumerate(zip(flow_labels(flows), flows)) if wanted(lab)}
    out: dict[SampleKey, np.ndarray] = {}
    left_out: dict[SampleKey, str] = {}
    call_start = _finite(_get(m, "run", "call_start"))
    ppath = run_dir / "packets.parquet"
    t, why = None, "no packets.parquet"
    if labels and ppath.exists():
        import pyarrow.parquet as pq
        try:
            t = pq.read_table(ppath, columns=PACKET_COLUMNS)
        except Exception as e:  # pyarrow raises several kinds for a damaged table
            why = f"packets.parquet unreadable: {type(e).__name__}: {e}"
    if labels and t is None:
        left_out.update({(label, ph["name"], "queuing_delay_ms"): why for label in labels.values() for ph in phases})
    if t is not None:
        import pyarrow.compute as pc
        keep = pc.and_(pc.equal(t["status"].cast("string"), "delivered"),
                       pc.greater_equal(t["queuing_delay_ns"], 0))
        t = t.filter(keep)
        flow_ids = t["flow"].to_numpy().astype(np.int64)
        t_send = t["t_send_ns"].to_numpy()
        qd_ms = t["queuing_delay_ns"].to_numpy() / 1e6
        order = np.argsort(flow_ids, kind="stable")
        sorted_ids = flow_ids[order]
        for fid, label in labels.items():
            rows = order[np.searchsorted(sorted_ids, fid, "left"):np.searchsorted(sorted_ids, fid, "right")]
            for ph in phases:
                key = (label, ph["name"], "queuing_delay_ms")
                if ph["name"] == "all":
                    out[key] = qd_ms[rows]
                elif call_start is None:  # a phase is seconds since the call's start: without it, nowhere
                    left_out[key] = "no run.call_start in metrics.json: packets cannot be placed in the phase"
                else:  # as the analyzer's phases: departures in [start, end)
                    t0_ns = int(round(call_start * 1e9))
                    lo = t0_ns + int(float(ph["start_s"]) * 1e9)
                    hi = t0_ns + int(float(ph["end_s"]) * 1e9)
                    out[key] = qd_ms[rows[(t_send[rows] >= lo) & (t_send[rows] < hi)]]
    for fid, label in labels.items():
        flow: dict[str, Any] = next((f for i, f in enumerate(flows) if int(f.get("id", i)) == fid), {})
        ssrc = flow.get("ssrc")
        series = _get(m, "getstats", "directions", str(flow.get("direction")), "series") or {}
        pts = next((v for k, v in series.items() if k.startswith("tq_ms:") and k.rsplit(":", 1)[-1] == str(ssrc)),
                   None) if ssrc is not None else None
        if not pts:
            continue
        arr = np.asarray([p for p in pts if _finite(p[1]) is not None], dtype=float).reshape(-1, 2)
        for ph in phases:
            if ph["name"] == "all":
                sel = arr[:, 1]
            else:  # as getstats.per_phase: samples in [start, end) seconds since call start
                sel = arr[(arr[:, 0] >= float(ph["start_s"])) & (arr[:, 0] < float(ph["end_s"])), 1]
            out[(label, ph["name"], "tq_ms")] = sel
    return RunSamples(dir=listed_dir, samples=out, left_out=left_out)


def boxes(runs: list[RunSamples]) -> dict[str, dict[str, dict[str, Any]]]:
    """{flow: {phase: {distribution: box}}} over one point's runs."""
    keys = sorted({k for r in runs for k in (*r.samples, *r.left_out)})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for flow, phase, dist in keys:
        key = (flow, phase, dist)
        per_run = [r.samples[key] for r in runs if key in r.samples]
        left_out = [{"run": r.dir, "reason": r.left_out[key]} for r in runs if key in r.left_out]
        out.setdefault(flow, {}).setdefault(phase, {})[dist] = box(per_run, len(runs), left_out)
    return out


def summarise(values: list[float], confidence: float = CONFIDENCE) -> dict[str, float | int | None]:
    """mean, sample sd (n - 1), the Student t confidence interval of the mean and n, over the runs' values."""
    n = len(values)
    if n == 0:
        return {"mean": None, "sd": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None, "n": 0}
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if n == 1:
        return {"mean": mean, "sd": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None, "n": 1}
    sd = float(x.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci95_low": mean - half, "ci95_high": mean + half, "ci95_half_width": half, "n": n}


def _analyse(run_dir: Path) -> str | None:
    """Runs the analyzer on a run without metrics.json; None on success, else why not."""
    proc = subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(run_dir), "-q"], capture_output=True,
                          text=True)
    if proc.returncode != 0 or not (run_dir / "metrics.json").exists():
        return f"the analyzer failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
    return None


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float"
    return "string"


def _as_string(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def accepted_attempt(r: studydir.Repetition, accept_invalid: frozenset[str]) -> studydir.Attempt | None:
    """A repetition without a valid attempt: its last invalid attempt whose failed checks are all in accept_invalid."""
    for a in reversed(r.attempts):
        if a.status == studydir.INVALID and a.failed_names and set(a.failed_names) <= accept_invalid:
            return a
    return None


def aggregate(out: Path, analyse_missing: bool = True, accept_invalid: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Writes OUT/study.parquet and OUT/study.json from OUT/plan.json and the runs; returns study.json's content.
    accept_invalid: validity checks whose failure alone does not exclude a run (a repetition without a valid attempt
    then uses its last attempt that failed only those); every output names them (`invalid_note`).

    Read (read_study, used_runs: the plan, and each repetition's run), compute (collect_runs: the per-run rows, phases
    and samples; point_statistics: mean, sd, CI and n), present (write_parquet, study_doc, write_json)."""
    study = read_study(out, accept_invalid)
    listing = Listing(used_dirs={name: [] for name in study.point_names})
    collected = collect_runs(study, used_runs(out, study, listing, analyse_missing))
    statistics = point_statistics(study, collected)
    write_parquet(out, study, collected.rows, listing)
    doc = study_doc(study, listing, collected, statistics)
    write_json(out, doc)
    return doc


# --- read ---------------------------------------------------------------------------------------------------------


@dataclass
class Study:
    """What aggregation takes from plan.json and the study directory's scan, before any run is read."""
    plan: dict[str, Any]
    quick_factor: float
    points: list[dict[str, Any]]
    point_names: list[str]
    reps: dict[tuple[str, int], studydir.Repetition]
    max_attempts: int
    accept_invalid: frozenset[str]
    selected_metrics: list[str]  # the plan's network metrics, then RFC 8867's and the frames' (always)
    flow_patterns: list[str]  # the plan's `flows`: which flows study.json aggregates
    param_columns: list[str]  # study.parquet's parameter columns, in order
    params_of: dict[str, dict[str, Any]]  # point name -> its parameter columns' values
    log_damaged_lines: list[int]  # attempts.jsonl's unreadable lines (studydir.AttemptLog)


def read_study(out: Path, accept_invalid: frozenset[str]) -> Study:
    """The plan and the attempts on disk, read once: every later step works from these. Refuses an accept_invalid
    naming a check no attempt failed (a typo would otherwise silently accept nothing)."""
    plan = json.loads((out / "plan.json").read_text())
    quick_factor = float(plan.get("quick_factor", 1.0))
    points = plan["points"]
    point_names = [p["name"] for p in points]
    log = studydir.read_log(out)
    reps = studydir.scan(out, point_names, studydir.planned_repetitions(plan), log)
    failed_anywhere = {n for r in reps.values() for a in r.attempts for n in a.failed_names}
    unknown = sorted(accept_invalid - failed_anywhere)
    if unknown:
        raise ValueError(f"--accept-invalid {', '.join(unknown)}: no attempt of this study failed "
                         f"{'that check' if len(unknown) == 1 else 'those checks'} (checks that failed: "
                         f"{', '.join(sorted(failed_anywhere)) or 'none'})")
    max_attempts = int(plan["max_attempts"])
    selected_metrics = [x for x in plan.get("metrics") or list(CATALOGUE) if x in CATALOGUE]
    # RFC 8867's metrics always, as the CPU's: a plan written before they existed lists the catalogue of its day.
    selected_metrics += [m.name for m in CATALOGUE.values() if m.family in ("rfc8867", "frames")
                         and m.name not in selected_metrics]
    flow_patterns = list(plan.get("flows") or ["*"])
    param_columns, params_of = parameter_columns(plan, points)
    return Study(plan=plan, quick_factor=quick_factor, points=points, point_names=point_names, reps=reps,
                 max_attempts=max_attempts, accept_invalid=accept_invalid, selected_metrics=selected_metrics,
                 flow_patterns=flow_patterns, param_columns=param_columns, params_of=params_of,
                 log_damaged_lines=log.damaged_lines)


def parameter_columns(plan: dict[str, Any],
                      points: list[dict[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """study.parquet's parameter columns, so that a row says which point it belongs to without the plan: each axis by
    name (its label), each varied field by its path (its value); a name taken by a fixed or metric column gets
    `param_`. Returns the columns in order and each point's values."""
    varied_paths: list[str] = []
    for ax in plan.get("axes") or []:
        for p in ax["paths"]:
            if p not in varied_paths:
                varied_paths.append(p)
    for p in points:
        for s in p.get("settings") or []:
            if s["path"] not in varied_paths:
                varied_paths.append(s["path"])
    axis_names = [ax["name"] for ax in plan.get("axes") or []]
    reserved = set(FIXED_COLUMNS) | set(METRICS)
    axis_col = {a: (a if a not in reserved else f"param_{a}") for a in axis_names}
    path_col = {p: (p if p not in reserved and p not in axis_col.values() else f"param_{p}") for p in varied_paths}
    params_of: dict[str, dict[str, Any]] = {}
    for p in points:
        row: dict[str, Any] = {axis_col[a]: (p.get("labels") or {}).get(a) for a in axis_names}
        values = {s["path"]: s["value"] for s in p.get("settings") or []}
        row.update({path_col[k]: values.get(k) for k in varied_paths})
        params_of[p["name"]] = row
    return list(dict.fromkeys([*axis_col.values(), *path_col.values()])), params_of


@dataclass
class Listing:
    """Every attempt as study.json lists it (used or why not) and the repetitions still without a run; used_runs fills
    it in while the runs are read, so it is complete once they all have been."""
    used_dirs: dict[str, list[str]]  # point name -> its used runs' directories
    runs: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    accepted_runs: list[str] = field(default_factory=list)  # the used INVALID attempts' directories
    # The repetitions' chosen runs (valid, or accepted) that could not be read: {point, rep, dir, reason}. Their
    # repetition has a run but no values, so each point's n is short of them; every output names them.
    left_out: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class UsedRun:
    """One repetition's run, chosen and read."""
    point: str
    rep: int
    attempt: studydir.Attempt
    dir: str  # relative to the study directory, as listed
    accepted: bool  # an INVALID attempt used under accept_invalid
    metrics: dict[str, Any]


def used_runs(out: Path, study: Study, listing: Listing, analyse_missing: bool) -> Iterator[UsedRun]:
    """Each repetition's run, point by point in the plan's order: its valid attempt, or else (accept_invalid) the one
    accepted_attempt picks, with its metrics.json (analysed now when missing and analyse_missing). A generator, so that
    one run's metrics.json is in memory at a time; every attempt goes into `listing`."""
    for (point, rep), r in sorted(study.reps.items(), key=lambda kv: (study.point_names.index(kv[0][0]), kv[0][1])):
        chosen = r.valid or (accepted_attempt(r, study.accept_invalid) if study.accept_invalid else None)
        for a in r.attempts:
            entry = a.to_json(out)
            entry["used"] = False
            accepted = a is chosen and a.status == studydir.INVALID
            m: dict[str, Any] | None = None
            if a is chosen:
                m, why = read_run_metrics(a, accepted, analyse_missing)
                if m is None:
                    entry["excluded_because"] = why
                    listing.excluded.append(entry)
                    listing.left_out.append({"point": point, "rep": rep, "dir": entry["dir"], "reason": why})
                else:
                    entry["used"] = True
                    if accepted:
                        entry["accepted_invalid"] = a.failed_names
                        listing.accepted_runs.append(entry["dir"])
                    listing.used_dirs[point].append(entry["dir"])
            else:
                entry["excluded_because"] = _not_chosen_because(a)
                listing.excluded.append(entry)
            listing.runs.append(entry)
            if m is not None:
                yield UsedRun(point=point, rep=rep, attempt=a, dir=entry["dir"], accepted=accepted, metrics=m)
        st = r.state(study.max_attempts)
        if st != "done":
            listing.missing.append({"point": point, "rep": rep, "state": st, "attempts": len(r.attempts),
                                    "counted_attempts": r.counted()})


def read_run_metrics(a: studydir.Attempt, accepted: bool, analyse_missing: bool) -> tuple[dict[str, Any] | None,
                                                                                          str | None]:
    """The chosen attempt's metrics.json, or None and why it cannot be used: missing (analysed now if asked),
    unreadable, or failing the analyzer's own checks (a run analysed only now, study run --no-analyze)."""
    mpath = a.path / "metrics.json"
    why = None
    if not mpath.exists():
        why = _analyse(a.path) if analyse_missing else "no metrics.json"
    m: dict[str, Any] | None = None
    if why is None:
        try:
            m = json.loads(mpath.read_text())
        except (OSError, ValueError) as e:
            why = f"metrics.json unreadable: {e}"
    if m is not None and not accepted:
        # analysed only now (study run --no-analyze): the analyzer's own checks may fail it
        own = studydir.classify(a.path, a.point, a.rep, a.attempt, None)
        if own.status == studydir.INVALID:
            why, m = "invalid: " + "; ".join(own.failed_checks), None
    return m, why


def _not_chosen_because(a: studydir.Attempt) -> str:
    """Why study.json's `excluded` lists an attempt that was not its repetition's choice."""
    return {studydir.INVALID: "invalid: " + "; ".join(a.failed_checks or ["?"]),
            studydir.INCOMPLETE: f"incomplete: {a.error}",
            studydir.INTERRUPTED: f"interrupted: {a.error}"}.get(
        a.status, "a later attempt of the same repetition was used")


# --- compute ------------------------------------------------------------------------------------------------------


@dataclass
class Collected:
    """What the runs give, read once each: study.parquet's rows and, per point, its phases and boxes."""
    rows: list[dict[str, Any]]  # one per used run x flow or pseudo-flow x phase
    phase_info: dict[str, dict[str, dict[str, Any]]]  # point -> phase -> its scheduled start_s, end_s, cross_traffic
    distributions: dict[str, dict[str, Any]]  # point -> boxes()


def pooled_flow(label: str, flow_patterns: list[str]) -> bool:
    """Whether the boxes pool a flow's samples: a packet flow (no pseudo-flow) the plan's `flows` select."""
    return (label not in ("bottleneck", CONTROLLER_FLOW, CPU_FLOW, RFC_FLOW, LIMITS_FLOW)
            and not label.startswith(FRAMES_PREFIX) and any(fnmatch.fnmatchcase(label, pat) for pat in flow_patterns))


def collect_runs(study: Study, runs: Iterable[UsedRun]) -> Collected:
    """The per-run step, one pass over the used runs: each one's rows (study_rows), its point's phases as scheduled
    and its samples for the boxes. The runs come point by point, so the samples are pooled one point at a time and
    memory holds one point's."""
    rows: list[dict[str, Any]] = []
    phase_info: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in study.point_names}
    distributions: dict[str, dict[str, Any]] = {name: {} for name in study.point_names}
    point_samples: list[RunSamples] = []
    pooling: str | None = None

    def wanted(label: str) -> bool:
        return pooled_flow(label, study.flow_patterns)
    for run in runs:
        if pooling != run.point:
            if pooling is not None:
                distributions[pooling] = boxes(point_samples)
            pooling, point_samples = run.point, []
        point_samples.append(run_samples(run.attempt.path, run.metrics, wanted, run.dir))
        # A point's phase is named by its schedule; each run's measured bounds (the cross traffic's first and last
        # data) stay in its rows of study.parquet (phase_start_s, phase_end_s).
        for ph in run.metrics.get("phases") or []:
            phase_info[run.point].setdefault(ph["name"], {
                "start_s": ph.get("scheduled_start_s", ph.get("start_s")),
                "end_s": ph.get("scheduled_end_s", ph.get("end_s")),
                "cross_traffic": ph.get("cross_traffic")})
        rows += study_rows(study, run)
    if pooling is not None:
        distributions[pooling] = boxes(point_samples)
    return Collected(rows=rows, phase_info=phase_info, distributions=distributions)


def study_rows(study: Study, run: UsedRun) -> list[dict[str, Any]]:
    """One run's rows of study.parquet: run_rows (its flows and pseudo-flows x phases) with the columns that say
    which study, point, repetition and attempt they come from, and the point's parameters."""
    run_id = _get(run.metrics, "run", "id")
    return [{"study": study.plan["study"], "quick_factor": study.quick_factor, "point": run.point, "rep": run.rep,
             "attempt": run.attempt.attempt, "run_dir": run.dir, "run_id": run_id,
             "accepted_invalid": ",".join(run.attempt.failed_names) if run.accepted else None,
             **study.params_of[run.point], **x} for x in run_rows(run.metrics)]


def aggregated_flow(label: str, flow_patterns: list[str]) -> bool:
    """Whether study.json carries a flow's statistics: the plan's `flows` select them, but the CPU, RFC 8867,
    frames and limits pseudo-flows always (properties of the whole call, of the sender's controller)."""
    return label in (CPU_FLOW, RFC_FLOW, LIMITS_FLOW) or label.startswith(FRAMES_PREFIX) or \
        any(fnmatch.fnmatchcase(label, pat) for pat in flow_patterns)


def flow_family(label: str) -> str:
    """The Metric.family whose metrics a flow's rows carry."""
    return {"bottleneck": "bottleneck", CONTROLLER_FLOW: "controller", CPU_FLOW: "cpu", RFC_FLOW: "rfc8867",
            LIMITS_FLOW: "limits"}.get(label, "frames" if label.startswith(FRAMES_PREFIX) else "flow")


def point_statistics(study: Study, collected: Collected) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """The per-point step: {point: {flow: {phase: {metric: summarise()}}}} over the point's runs, for the aggregated
    flows and the selected metrics (and the CPU's) of each flow's family; flows sorted by label, phases in the
    point's order (a phase no run scheduled last)."""
    groups: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    wanted: dict[str, bool] = {}
    for x in collected.rows:
        label = x["flow"]
        if label not in wanted:
            wanted[label] = aggregated_flow(label, study.flow_patterns)
        if wanted[label]:
            groups.setdefault(x["point"], {}).setdefault((label, x["phase"]), []).append(x)
    metrics = study.selected_metrics + list(CPU_CATALOGUE) + list(LIMITS_CATALOGUE)
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for name in study.point_names:
        phase_order = list(collected.phase_info[name])
        flows: dict[str, dict[str, dict[str, Any]]] = {}
        for (flow, phase), grp in groups.get(name, {}).items():
            family = flow_family(flow)
            stats: dict[str, Any] = {}
            for metric in metrics:
                if METRICS[metric].family != family:
                    continue
                present = [float(v) for v in (g.get(metric) for g in grp) if v is not None]
                stats[metric] = summarise(present)
            flows.setdefault(flow, {})[phase] = stats
        out[name] = {f: {ph: flows[f][ph] for ph in sorted(flows[f], key=lambda ph: phase_order.index(ph)
                                                            if ph in phase_order else 99)}
                     for f in sorted(flows)}
    return out


# --- present ------------------------------------------------------------------------------------------------------


def _invalid_note(study: Study, listing: Listing) -> str | None:
    """The warning every output carries when INVALID runs were used (--accept-invalid)."""
    if not listing.accepted_runs:
        return None
    return (f"INCLUDES {len(listing.accepted_runs)} INVALID run(s): repetitions without a valid run use an attempt "
            f"that failed only {', '.join(sorted(study.accept_invalid))} (--accept-invalid; column accepted_invalid)")


def write_parquet(out: Path, study: Study, rows: list[dict[str, Any]], listing: Listing) -> None:
    """OUT/study.parquet: the rows with fixed types (metrics float, parameters by their values' kind), the study's
    name and notes in the schema's metadata; written to a temporary file and renamed, so a reader never sees half."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    param_columns = study.param_columns
    columns: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for c in FIXED_COLUMNS + param_columns + list(METRICS):
        vals = [x.get(c) for x in rows]
        if c in METRICS or c in ("quick_factor", "phase_start_s", "phase_end_s"):
            columns[c], types[c] = vals, pa.float64()
        elif c in ("rep", "attempt", "ssrc"):
            columns[c], types[c] = vals, pa.int64()
        elif c == "phase_cross_traffic":
            columns[c], types[c] = vals, pa.bool_()
        elif c in param_columns:
            kind = _column_type(vals)
            if kind == "float":
                columns[c], types[c] = [None if v is None else float(v) for v in vals], pa.float64()
            elif kind == "bool":
                columns[c], types[c] = vals, pa.bool_()
            else:
                columns[c], types[c] = [_as_string(v) for v in vals], pa.string()
        else:
            columns[c], types[c] = [_as_string(v) for v in vals], pa.string()
    table = pa.table({c: pa.array(columns[c], type=types[c]) for c in columns})
    table = table.replace_schema_metadata({"rtclab_study": study.plan["study"], "quick_factor": str(study.quick_factor),
                                           "quick_note": study.plan.get("quick_note") or "",
                                           "invalid_note": _invalid_note(study, listing) or "",
                                           "phase_column": "every row is one phase"})
    tmp = out / "study.parquet.tmp"
    pq.write_table(table, tmp)
    tmp.replace(out / "study.parquet")


def study_doc(study: Study, listing: Listing, collected: Collected,
              statistics: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> dict[str, Any]:
    """study.json's content: what the statistics and boxes are over, the metrics' definitions, the plan's size, every
    attempt (used or why not) and per point its runs, phases, statistics and boxes."""
    plan, points = study.plan, study.points
    invalid_note = _invalid_note(study, listing)
    used_runs = (f"runs used: valid, or INVALID only for {', '.join(sorted(study.accept_invalid))}"
                 if listing.accepted_runs else "valid runs")
    out_points = []
    for p in points:
        name = p["name"]
        out_points.append({"name": name, "params": p.get("params"), "labels": p.get("labels"),
                           "settings": p.get("settings"), "scenario_file": p.get("scenario_file"),
                           "runs_used": listing.used_dirs[name], "n_runs": len(listing.used_dirs[name]),
                           "runs_left_out": [{"dir": x["dir"], "reason": x["reason"]} for x in listing.left_out
                                             if x["point"] == name],
                           "phases": [{"name": k, **v} for k, v in collected.phase_info[name].items()],
                           "flows": statistics[name], "distributions": collected.distributions[name]})
    counts: dict[str, int] = {}
    for listed in listing.runs:
        counts[listed["status"]] = counts.get(listed["status"], 0) + 1
    return {
        "study_format_version": STUDY_JSON_FORMAT_VERSION,
        "study": plan["study"], "description": plan.get("description", ""),
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "rtclab_version": RTCLAB_VERSION,
        "quick_factor": study.quick_factor, "quick_note": plan.get("quick_note"),
        "accept_invalid": sorted(study.accept_invalid), "invalid_note": invalid_note,
        "statistics": {
            "over": f"the {used_runs} of a point (one per repetition); a run where a metric is undefined (null in "
                    "its metrics.json) is left out of that metric's n; a chosen run whose metrics.json cannot be "
                    "read is left out of every n and listed with why (`left_out`, each point's `runs_left_out`)",
            "mean": "arithmetic mean", "sd": "sample standard deviation (n - 1); null when n < 2",
            "ci95": "mean -/+ t(0.975, n - 1) * sd / sqrt(n), Student's t; null when n < 2",
            "n": "runs with a value", "phase": "each statistic sits under its phase: 'all' is the whole call, the "
                                              "others as metrics.json defines phases (cross traffic)"},
        "distributions": {"over": f"the samples of the point's {used_runs} pooled "
                                  "(a run with more samples weighs more)",
                          "quantiles": "p5, p25, p50, p75, p95: numpy.percentile (linear interpolation) of the pooled "
                                       "samples; the box is p25-p50-p75, the whiskers p5 and p95",
                          "n_samples": "pooled samples", "n_runs": "runs that gave a sample",
                          "left_out": "runs whose samples could not be read (no or a damaged packets.parquet, no "
                                      "call_start for a phase), each with why",
                          "runs": f"the point's {used_runs}", **DISTRIBUTIONS},
        "metrics": {k: {"family": METRICS[k].family, "unit": METRICS[k].unit,
                        "definition": METRICS[k].definition} for k in study.selected_metrics + list(CPU_CATALOGUE)
                    + list(LIMITS_CATALOGUE)},
        "flows_aggregated": study.flow_patterns,
        "plan": {"repetitions": plan["repetitions"],
                 **({"repetitions_per_point": plan["repetitions_per_point"],
                     "repetitions_from": plan.get("repetitions_from")} if plan.get("repetitions_per_point") else {}),
                 "max_attempts": study.max_attempts, "seed": plan["seed"],
                 "shuffle": plan["shuffle"], "points": len(points), "runs_planned": len(plan["order"]),
                 "total_call_s": plan.get("total_call_s")},
        "summary": {"repetitions_with_valid_run": sum(1 for r in study.reps.values() if r.valid is not None),
                    "repetitions_without": len(listing.missing), "attempts": counts, "runs_used": len(
                        [e for e in listing.runs if e["used"]]), "runs_used_invalid": len(listing.accepted_runs),
                    "runs_left_out": len(listing.left_out),
                    "attempts_log_damaged_lines": study.log_damaged_lines},
        "runs": listing.runs, "excluded": listing.excluded, "missing": listing.missing, "left_out": listing.left_out,
        "points": out_points,
    }


def write_json(out: Path, doc: dict[str, Any]) -> None:
    """OUT/study.json, written to a temporary file and renamed, so a reader never sees half."""
    tmpj = out / "study.json.tmp"
    tmpj.write_text(json.dumps(doc, indent=1) + "\n")
    tmpj.replace(out / "study.json")


def text_summary(doc: dict[str, Any], metrics: tuple[str, ...] = ("throughput_bps", "queuing_delay_ms_mean",
                                                                   "loss_ratio_bytes", "tq_ms_mean")) -> str:
    """A short table of the forward video flow over the whole call, per point (mean +- CI half-width, n); in a study
    without a call (no forward video in any point), of the busiest forward TCP flow."""
    lines = []
    flow = "forward:video" if any("forward:video" in p["flows"] for p in doc["points"]) else "forward:tcp"
    if doc.get("quick_note"):
        lines.append(f"[{doc['quick_note']}]")
    if doc.get("invalid_note"):
        lines.append(f"[{doc['invalid_note']}]")
    head = ["point", "n"] + [f"{m} (all)" for m in metrics]
    body = []
    for p in doc["points"]:
        st = (p["flows"].get(flow) or {}).get("all") or {}
        cells = [p["name"], str(p["n_runs"])]
        for m in metrics:
            s = st.get(m) or {}
            if s.get("mean") is None:
                cells.append("-")
            else:
                hw = s.get("ci95_half_width")
                cells.append(f"{s['mean']:.4g}" + ("" if hw is None else f" ±{hw:.2g}"))
        body.append(cells)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    over = "runs used (INVALID ones among them, above)" if doc.get("invalid_note") else "valid runs"
    lines.append(f"{flow} over the whole run; mean ±95% CI half-width (Student t) over the {over}")
    s = doc["summary"]
    lines.append(f"repetitions with a valid run: {s['repetitions_with_valid_run']}, without: {s['repetitions_without']}"
                 f"; attempts: {', '.join(f'{k} {v}' for k, v in sorted(s['attempts'].items())) or 'none'}")
    lines += left_out_lines(doc)
    return "\n".join(lines) + "\n"


def left_out_lines(doc: dict[str, Any]) -> list[str]:
    """What the study could not read, one line each with why: the chosen runs (study.json `left_out`; n is short of
    them) and the attempt log's damaged lines (summary `attempts_log_damaged_lines`)."""
    left_out = doc.get("left_out") or []
    lines = [f"{len(left_out)} run(s) left out, their repetition's n short of them:"] if left_out else []
    lines += [f"  {x['dir']}: {x['reason']}" for x in left_out]
    damaged = (doc.get("summary") or {}).get("attempts_log_damaged_lines") or []
    if damaged:
        lines.append(f"attempts.jsonl: {len(damaged)} damaged line(s) skipped (line {', '.join(map(str, damaged))}): "
                     "the attempts they recorded are classified without their start or end")
    return lines
