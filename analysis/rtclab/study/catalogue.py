"""The per-run metrics a study aggregates: what each is, its unit and where in a run's metrics.json it is read; the
pseudo-flows that carry the whole call's metrics; study.parquet's fixed columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

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
    Metric("regain_fair_share_s", "rfc8867", "s", "rfc8867.summary.regain_fair_share_s: mean over the calls' scheduled "
           "pauses (RFC 8867 5.8) of the time from the resume to the end of the first window whose rate is at least "
           "(1 - band) x the flow's fair share (not reached: left out)"),
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
    Metric("every_frame_delay_ms_p50", "frames", "ms", "frames.<side>.every_frame_delay_ms.p50: the run's median over "
           "every frame the camera produced of the time until that frame or a newer one was shown (to the call's end "
           "when none was)"),
    Metric("every_frame_delay_ms_p95", "frames", "ms", "frames.<side>.every_frame_delay_ms.p95: its 95th percentile"),
    Metric("every_frame_delay_ms_p99", "frames", "ms", "frames.<side>.every_frame_delay_ms.p99: its 99th percentile"),
    Metric("freeze_time_ratio", "frames", "ratio", "frames.<side>.freezes.time_ratio: the freezes' total duration "
           "(Chrome's rule, from the per-frame record) / the span from the first frame presented to the last"),
    Metric("never_shown_ratio", "frames", "ratio", "frames.<side>.never_shown / sent_frames: frames that left the "
           "sender between the first and the last shown frame and were never shown, of those sent in that span"),
    Metric("psnr_db_mean", "frames", "dB", "frames.<side>.quality.psnr_db.mean: the run's mean PSNR of its sampled "
           "shown frames against the source frame of the same number (ffmpeg's psnr, capped at 48 dB)"),
    Metric("ssim_mean", "frames", "index", "frames.<side>.quality.ssim.mean: the run's mean SSIM of the same frames "
           "(ffmpeg's ssim, the planes weighted 4:1:1)"),
    Metric("ssim_db_mean", "frames", "dB", "frames.<side>.quality.ssim_db.mean: the run's mean over the same frames "
           "of -10 log10(1 - SSIM), a frame with SSIM 1 counted as 60 dB"),
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
    Metric("cpu_steal_cores", "cpu", "cores", "cpu.steal.mean_cores: the hypervisor's steal time (part of host busy)"),
    Metric("cpu_steal_max_cores", "cpu", "cores", "cpu.steal.max_cores: the steal of the call's worst interval"),
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
