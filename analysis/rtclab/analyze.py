"""`rtclab analyze`: reads a run directory, joins the captures, computes every metric, runs the cross-checks and
writes metrics.json and packets.parquet (the command adds report.txt and dashboard.html). Whatever cannot be read is
named in `gaps`; the rest is still computed. Raises NothingToAnalyse only when neither capture nor getStats could be
read. A run without a call (scenario `calls: []`) has no call sections: `getstats`, `multiflow`, `chrome_ecn` and
`congestion_controller` are absent from metrics.json and `run.calls` is 0; the cross-checks against getStats and
tshark's RTP analysis are skipped with that reason.

Three steps, each with one job: `read_run` (the run directory, its captures and getStats, and the call's clock they
define), `compute_metrics` (the join, the metrics, the validity and cross-checks, assembled into metrics.json's
document; its fields and types are metrics.schema.json, what they mean docs/metrics.md) and `write_outputs`
(metrics.json, checked against the schema when RTCLAB_CHECK_METRICS=1, and packets.parquet)."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import (
    __version__,
    call_delay,
    chrome_ecn,
    cpu,
    crosscheck,
    every_frame,
    fairness,
    frame_gate,
    frames,
    getstats,
    hops,
    l4s_chain,
    metrics,
    metrics_schema,
    multiflow,
    packets,
    phases,
    quality,
    queue,
    rfcmetrics,
    rundir,
    scenario,
    short_tcp,
    trace_capacity,
    validity,
)
from .eventlog import analysis as eventlog_analysis

# 2: queuing_delay_ms and getStats' tq_ms are measured from the configured propagation delay (their earlier
# baselines are queuing_delay_vs_min_owd_ms and tq_vs_min_rtt_ms); throughput spans arrivals; fairness counts the
# scenario's competitors; inputs name the packets left out of the join.
METRICS_SCHEMA_VERSION = 2
TRACE_MARGIN_S = 10.0  # a trace's opportunities are laid out this far past the last captured packet
# The sections only a run with a call has: absent, not empty, in a run without one.
CALL_SECTIONS = ("multiflow", "getstats", "frames", "chrome_ecn", "congestion_controller")

Progress = Callable[[str], None] | None


class NothingToAnalyse(Exception):
    pass


@contextmanager
def _step(progress: Progress, what: str, timings: dict[str, float]) -> Iterator[None]:
    if progress:
        progress(what)
    t = time.perf_counter()
    yield
    timings[what] = round(time.perf_counter() - t, 3)


def twcc_ext_id(run: rundir.RunDir) -> int:
    """The transport-wide-cc extension id: from the run's SDP when it recorded one, else from the sender's RTC event
    log (its stream configs name it; Chromium 156 offers 4), else 3."""
    for e in run.events:
        sdp = e.get("sdp") if isinstance(e.get("sdp"), str) else None
        if sdp:
            for line in sdp.splitlines():
                if "transport-wide-cc" in line and line.startswith("a=extmap:"):
                    return int(line.split(":", 1)[1].split()[0].split("/")[0])
    from_log = eventlog_analysis.transport_cc_id(run.path)
    return from_log if from_log is not None else 3


def capacity_steps(link: scenario.Link, duration_s: float) -> list[list[float]] | None:
    """The forward capacity over the call as steps [[t_s, bit/s], ...] from 0 to duration_s (the last point closes the
    last step), from the scenario's schedule; None without a rate limit (or with a trace)."""
    if not link.schedule:
        return None
    starts = [0.0, *(at for at, _ in link.schedule if 0.0 < at < duration_s)]
    steps = [[t, float(link.capacity_bps_at(t) or 0.0)] for t in starts]
    return [*steps, [duration_s, steps[-1][1]]]


# --- read: the run directory ------------------------------------------------------------------------------------------


@dataclass
class RunInputs:
    """What the run directory gives before any metric is computed: the run (manifest, scenario and the problems met
    reading it), its two captures and the browsers' getStats, and the call's clock they define (t0, duration). The
    files only one part of the analysis uses (cpu.jsonl, frames, RTC event logs, the ground-truth log, iperf3's and
    the queue's counters) are read by that part, in compute_metrics, so that each reader stays beside its use."""
    path: Path
    run: rundir.RunDir
    captures: dict[str, rundir.Capture | None]  # side -> capture; None when unreadable
    getstats_summary: dict[str, Any] | None  # getstats.analyse without its readers' state; None without a call
    sides: dict[str, getstats.SideStats | None]  # what getstats read per side (empty without a call)
    t0: float  # epoch s of t = 0: the call's start, else the first captured packet, else the first getStats sample
    duration_s: float  # the call's length, cut to what the captures recorded
    gaps: list[str]  # what cannot be computed, so far (compute_metrics adds its own)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step, metrics.json timings_s
    # A trace link's delivery opportunities over the call (trace_capacity.py); None for any other link
    forward_trace: trace_capacity.TraceCapacity | None = None

    @property
    def scenario(self) -> scenario.Scenario | None:
        return self.run.scenario

    @property
    def t0_ns(self) -> int:
        return int(round(self.t0 * 1e9))


def read_run(path: Path, progress: Progress = None, timings: dict[str, float] | None = None) -> RunInputs:
    """Reads the run directory (manifest and scenario), both captures and both sides' getStats, and fixes t0 and the
    call's duration. Raises NothingToAnalyse when the directory cannot be read or holds neither a readable capture
    nor a getStats sample."""
    timings = {} if timings is None else timings
    if not path.is_dir():
        raise NothingToAnalyse(f"{path} is not a directory")
    try:
        run = rundir.load(path)
    except rundir.RunDirError as e:
        raise NothingToAnalyse(str(e)) from None
    gaps: list[str] = []
    if run.scenario is None:
        gaps.append("no valid scenario: queuing delay against the propagation delay, Tq against RTTm, capacity, "
                    "utilisation and the scenario's fairness competitors are unknown")
    with _step(progress, "reading captures", timings):
        caps = _read_captures(run, gaps)
    first_ts = [int(c.cols["ts_ns"][0]) for c in caps.values() if c is not None and c.packets]
    last_ts = [int(c.cols["ts_ns"][-1]) for c in caps.values() if c is not None and c.packets]
    t0 = run.call_start_s or (min(first_ts) / 1e9 if first_ts else None)

    gs: dict[str, Any] | None = None
    sides: dict[str, getstats.SideStats | None] = {}
    if run.has_calls:
        with _step(progress, "reading getStats", timings):
            gs = getstats.analyse(run, t0 or 0.0)
            sides = gs.pop("_sides")
            if t0 is None:  # no call start, no capture: t = 0 is the first getStats sample (then read again from it)
                t0 = min((t for s in sides.values() if s is not None if (t := s.first_time()) is not None),
                         default=None)
                if t0 is not None:
                    gaps.append("no call start and no readable capture: t = 0 is the first getStats sample")
                    gs = getstats.analyse(run, t0)
                    sides = gs.pop("_sides")
        if not any(gs["available"].values()):
            gaps.append("no getStats: the browsers' view (bitrates, RTT, Tq, fps, freezes) is missing")
    if t0 is None:
        raise NothingToAnalyse(f"{path}: no call start, no readable capture and no timed getStats sample; problems: "
                               + "; ".join(run.problems))
    duration_s = _duration_s(run, t0, last_ts)
    # Opportunities as far as any packet of the captures (a rate's span may run past the call's end).
    until_s = max(duration_s, (max(last_ts) / 1e9 - t0) if last_ts else 0.0) + TRACE_MARGIN_S
    trace = trace_capacity.forward_trace(run, run.scenario.forward, t0, until_s, gaps) if run.scenario else None
    return RunInputs(path, run, caps, gs, sides, t0, duration_s, gaps, timings, forward_trace=trace)


def _read_captures(run: rundir.RunDir, gaps: list[str]) -> dict[str, rundir.Capture | None]:
    """capture-a.pcap and capture-b.pcap (None for one that cannot be read), naming what each missing part costs."""
    caps: dict[str, rundir.Capture | None] = {}
    for side in ("a", "b"):
        try:
            cap = rundir.read_capture(run.file(f"capture-{side}.pcap"), twcc_ext_id(run))
            if cap.error:
                run.problems.append(f"capture-{side}.pcap: {cap.error}")
                gaps.append(f"capture-{side}.pcap ends early: delay and loss are unknown after its last packet")
            caps[side] = cap
        except rundir.CaptureError as e:
            run.problems.append(str(e))
            caps[side] = None
    if caps["a"] is None and caps["b"] is None:
        gaps.append("no capture readable: no per-packet metrics (delay, loss, reordering, throughput, jitter)")
    elif caps["a"] is None or caps["b"] is None:
        missing = "a" if caps["a"] is None else "b"
        gaps.append(f"capture-{missing}.pcap unreadable: no one-way delay, loss or reordering; rates, jitter and "
                    f"RTP sequence-number loss come from the other capture alone")
    return caps


def _duration_s(run: rundir.RunDir, t0: float, last_ts: list[int]) -> float:
    """The call's length: call_end - call_start when both were recorded, else the scenario's, cut to what the
    captures recorded when the call never ended (interrupted, crashed)."""
    duration_s = float(run.scenario.duration_s) if run.scenario else None
    recorded_s = ((max(last_ts) / 1e9) - t0) if last_ts else None
    if run.call_end_s and run.call_start_s:
        duration_s = run.call_end_s - run.call_start_s
    elif recorded_s is not None and (duration_s is None or recorded_s < duration_s):
        # The call never ended (interrupted, crashed): phases, rates and utilisation cover what was recorded.
        duration_s = recorded_s
    return 0.0 if duration_s is None else duration_s


# --- compute: the join, the metrics, the validity, the document -------------------------------------------------------


def compute_metrics(inputs: RunInputs, *, run_tshark: bool = True,
                    progress: Progress = None) -> tuple[dict[str, Any], packets.PacketTable | None]:
    """metrics.json's document and the per-packet table from what read_run gave: the packet join, the phases, the
    per-flow metrics and fairness, the calls and RFC 8867's metrics, the validity, the cross-checks, the CPU, the
    frames and the congestion controller, in that order (each may add to run.problems and the gaps)."""
    run = inputs.run
    ssrc_kinds, pt_kinds, clocks = getstats.kinds(inputs.sides)
    ssrc_kinds = multiflow.recorded_kinds(run) | ssrc_kinds  # every call's streams, getStats' word first
    table = _join(inputs, progress)
    timing, phase_list = _phases(inputs, table)
    if inputs.getstats_summary is not None:  # the browsers' series summarised per phase, as the flows are
        getstats.per_phase(inputs.getstats_summary,
                           [(p.name, p.start_s, p.end_s) for p in phase_list if p.name != "all"])
    flows, fair = _flows_and_fairness(inputs, table, phase_list, ssrc_kinds, pt_kinds, clocks, progress)
    multi = _calls_and_tracks(inputs, table, flows, ssrc_kinds, progress)
    hop_doc = hops.analyse(run, table, inputs.t0_ns, inputs.duration_s) if run.has_calls else None
    rfc = _rfc8867(inputs, table)
    validity_doc = _validity(inputs, table)
    checks, gt_summary = _crosschecks(inputs, table, flows, clocks, run_tshark, progress)
    cpu_use = _cpu(inputs)
    frame_join = _frames(inputs, table, progress)
    controller = _congestion_controller(inputs, table, phase_list, progress)
    ecn_by_chrome = chrome_ecn.analyse(run, table, inputs.t0) if run.has_calls else None
    if ecn_by_chrome is not None:  # the L4S calls' four joins need the ground-truth log's join (crosscheck.py)
        ecn_by_chrome["l4s_chain"] = l4s_chain.chain(run, table, gt_summary)
    result = _document(inputs, table, validity=validity_doc, phase_list=phase_list, timing=timing, flows=flows,
                       fair=fair, rfc=rfc, multi=multi, hop_doc=hop_doc, frame_join=frame_join,
                       ecn_by_chrome=ecn_by_chrome, iperf3=rundir.iperf3_summaries(run),
                       short_flows=short_tcp.analyse(run, inputs.scenario), bottleneck=queue.analyse(run, inputs.t0),
                       gt_summary=gt_summary, controller=controller, cpu_use=cpu_use, checks=checks)
    return result, table


def _capacity(inputs: RunInputs) -> metrics.CapacityFn | None:
    """The forward link's mean capacity over an interval (bit/s): the delivery opportunities of the trace it played,
    else the scenario's schedule."""
    if inputs.forward_trace is not None:
        return inputs.forward_trace.mean_capacity_bps
    return inputs.scenario.forward.mean_capacity_bps if inputs.scenario else None


def _join(inputs: RunInputs, progress: Progress) -> packets.PacketTable | None:
    """The per-packet table: each departure joined with its arrival (packets.py); None without a readable capture."""
    caps, run, scen = inputs.captures, inputs.run, inputs.scenario
    if caps["a"] is None and caps["b"] is None:
        return None
    with _step(progress, "joining packets", inputs.timings):
        # A chain of bottlenecks has a propagation delay per call (its path's): hops.fill_queuing_delay.
        prop = (None, None) if scen is None or scen.hops else \
            (packets.propagation_of(scen.forward, inputs.t0_ns), packets.propagation_of(scen.reverse, inputs.t0_ns))
        table = packets.build(caps["a"] or rundir.empty_capture(run.file("capture-a.pcap")),
                              caps["b"] or rundir.empty_capture(run.file("capture-b.pcap")),
                              rundir.ip_to_int(run.addr_a), rundir.ip_to_int(run.addr_b), prop)
        # A call with a delay of its own (calls[].delay_ms): its packets' queuing delay from that delay.
        call_delay.rebase_queuing_delay(table, multiflow.calls(run), call_delay.delays_ms(run))
        if scen is not None and scen.hops:
            hops.fill_queuing_delay(run, table, scen, inputs.t0_ns)
        return table


def _phases(inputs: RunInputs, table: packets.PacketTable | None) -> tuple[list[phases.ItemTiming], list[phases.Phase]]:
    """The phases follow when each cross-traffic item actually sent data (phases.py), the schedule where unknown."""
    run = inputs.run
    timing, timing_gaps = phases.cross_traffic_timing(table, inputs.scenario, inputs.t0_ns,
                                                      rundir.ip_to_int(run.addr_a), rundir.ip_to_int(run.addr_b),
                                                      {s: c is not None for s, c in inputs.captures.items()},
                                                      run.cross_traffic_ports)
    inputs.gaps += timing_gaps
    return timing, phases.phases(inputs.scenario, inputs.duration_s, timing)


def _flows_and_fairness(inputs: RunInputs, table: packets.PacketTable | None, phase_list: list[phases.Phase],
                        ssrc_kinds: dict[int, str], pt_kinds: dict[int, str], clocks: dict[int, float],
                        progress: Progress) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per flow its metrics over the run and per phase (metrics.py); per phase the forward bottleneck's fairness
    among the competitors the scenario runs (fairness.py)."""
    flows: list[dict[str, Any]] = []
    fair: dict[str, Any] = {}
    if table is None:
        return flows, fair
    t0_ns, scen, capacity = inputs.t0_ns, inputs.scenario, _capacity(inputs)
    lowest, highest = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)  # "all": every packet, unfiltered
    bounds = [(p.name, (lowest if p.name == "all" else t0_ns + int(p.start_s * 1e9)),
               (highest if p.name == "all" else t0_ns + int(p.end_s * 1e9))) for p in phase_list]
    with _step(progress, "computing metrics", inputs.timings):
        flows = metrics.flows(table, bounds, ssrc_kinds, pt_kinds, clocks, t0_ns, capacity)
        for p in phase_list:
            lo = t0_ns + int(p.start_s * 1e9)
            hi = t0_ns + int(p.end_s * 1e9)
            cap_bps = capacity(p.start_s, p.end_s) if capacity else None
            # The items running in a phase are the ones its schedule names (the measured phase is where they ran).
            tcp_flows = fairness.expected_tcp_flows(scen, p.scheduled_start_s, p.scheduled_end_s)
            fair[p.name] = dict(
                fairness.connections(table, lo, hi, cap_bps, tcp_flows,
                                     forward_arrivals_seen=inputs.captures["b"] is not None,
                                     calls=multiflow.calls_active(inputs.run, p.start_s, p.end_s, inputs.duration_s)),
                capacity_bps=cap_bps, start_s=p.start_s, end_s=p.end_s)
    return flows, fair


def _calls_and_tracks(inputs: RunInputs, table: packets.PacketTable | None, flows: list[dict[str, Any]],
                      ssrc_kinds: dict[int, str], progress: Progress) -> dict[str, Any] | None:
    """Per call and track (multiflow.py); names each forward flow's call and track. None without a call or a
    packet table."""
    if table is None or not inputs.run.has_calls:
        return None
    capacity, duration_s = _capacity(inputs), inputs.duration_s
    with _step(progress, "calls and tracks", inputs.timings):
        multi = multiflow.analyse(inputs.run, table, inputs.t0_ns, duration_s, ssrc_kinds,
                                  capacity(0.0, duration_s) if capacity and duration_s else None)
        owner = multi.pop("owner")
        for f in flows:
            call_track = owner.get(str(f.get("ssrc"))) if f["direction"] == "forward" else None
            f["call"], f["track"] = call_track if call_track else (None, None)
    return multi


def _rfc8867(inputs: RunInputs, table: packets.PacketTable | None) -> dict[str, Any] | None:
    """RFC 8867's metrics per media flow (rfcmetrics.py), each call's connection named by its id."""
    if table is None or not inputs.run.has_calls:
        return None
    scen, duration_s = inputs.scenario, inputs.duration_s
    calls = multiflow.calls(inputs.run)
    names = {(f"{rundir.int_to_ip(c.five_tuple[0])}:{c.five_tuple[1]}",
              f"{rundir.int_to_ip(c.five_tuple[2])}:{c.five_tuple[3]}"): c.id
             for c in calls if c.five_tuple is not None}
    trace = inputs.forward_trace.mean_capacity_bps if inputs.forward_trace else None
    return rfcmetrics.from_run(table, inputs.t0_ns, duration_s, scen,
                               capacity_steps(scen.forward, duration_s) if scen and duration_s else None, names, trace,
                               {c.id: c.pauses for c in calls if c.pauses})


def _validity(inputs: RunInputs, table: packets.PacketTable | None) -> dict[str, Any]:
    """The manifest's validity (harness/validity.js) with the analyzer's own checks added: those judged from what the
    run recorded (validity.py: the bottleneck's release lateness, the CPU per window) and, when the scenario asks for a
    DSCP, the DSCP on the wire (multiflow.dscp_marked)."""
    run = inputs.run
    rec = validity.RecordedRun(run, inputs.t0, inputs.duration_s, table.cols if table is not None else None,
                               validity.load_bounds())
    own = validity.analyzer_checks(rec)
    marked = multiflow.dscp_marked(run, inputs.captures["a"], inputs.t0_ns)
    delayed = call_delay.check(table, multiflow.calls(run), call_delay.delays_ms(run), inputs.t0_ns)
    return validity.combine(run.manifest.get("validity"), own + [c for c in (marked, delayed) if c is not None])


def _crosschecks(inputs: RunInputs, table: packets.PacketTable | None, flows: list[dict[str, Any]],
                 clocks: dict[int, float], run_tshark: bool,
                 progress: Progress) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The metrics against getStats, tshark's RTP analysis and the ground-truth log (crosscheck.py); returns the
    checks and the ground-truth summary."""
    gs, run = inputs.getstats_summary, inputs.run
    checks: list[dict[str, Any]] = []
    with _step(progress, "cross-checks", inputs.timings):
        if gs is None:
            checks.append(crosscheck.skipped("getstats_and_rtp", "no call in this run: the cross-checks against "
                                             "getStats (loss) and tshark's RTP analysis (jitter) do not apply"))
        else:
            checks += crosscheck.getstats_loss(flows, gs)
        if run_tshark and table is not None and gs is not None:
            pt_names = {}
            for side_stats in inputs.sides.values():
                for codec in (side_stats.codecs.values() if side_stats else []):
                    pt_names[codec["payloadType"]] = str(codec.get("mimeType", "/")).split("/")[-1]
            checks += crosscheck.tshark_jitter(run, flows, table, clocks, pt_names)
        gt_checks, gt_summary = crosscheck.gtlog_owd(run, table)
        checks += gt_checks
    return checks, gt_summary


def _cpu(inputs: RunInputs) -> dict[str, Any] | None:
    """Where the machine's CPU went during the call (the harness's cpu.jsonl; null for runs from before it)."""
    run = inputs.run
    host_cpus = (run.manifest.get("host") or {}).get("cpus")
    cpu_use = cpu.analyse(rundir.read_cpu(run), inputs.t0, inputs.duration_s,
                          host_cpus if isinstance(host_cpus, int) else None)
    if cpu_use is not None and not cpu_use["window"]["samples"]:
        inputs.gaps.append("cpu.jsonl holds no sample within the call: the CPU per process group is unknown")
    return cpu_use


def _frames(inputs: RunInputs, table: packets.PacketTable | None, progress: Progress) -> dict[str, Any] | None:
    """What the viewer saw (frames.py) and the sampled pictures' quality (quality.py), the metrics a poor record cannot
    carry withheld (frame_gate.py); None without a call or without a recorded page."""
    run, path, timings = inputs.run, inputs.path, inputs.timings
    if not run.has_calls:
        return None
    with _step(progress, "frames", timings):
        recorded = {s: ff for s in ("a", "b") if (ff := rundir.read_frames(run, s)) is not None}
        # Each media stream's RTX stream: the tracks the harness recorded (media, then RTX), getStats' word first.
        calls = multiflow.calls(run)
        rtx = {tr.ssrcs[0]: tr.ssrcs[1] for call in calls for tr in call.tracks if len(tr.ssrcs) > 1}
        # The sending cameras' frame rates: events name the call only when the run has several.
        cameras = every_frame.camera_rates(run.events, calls[0].id if len(calls) > 1 else None)
        frame_join = frames.analyse(recorded, table, inputs.t0_ns, inputs.duration_s, path, run.problems,
                                    {s: v.inbound for s, v in inputs.sides.items() if v is not None},
                                    rtx | getstats.rtx_ssrcs(inputs.sides), cameras)
    if frame_join is not None:
        with _step(progress, "picture quality", timings):
            for s, ff in recorded.items():
                try:
                    q = quality.analyse(path, s, ff, inputs.t0_ns, inputs.duration_s)
                except quality.QualityError as e:
                    q = {"error": str(e)}
                    run.problems.append(f"picture quality at {s}: {e}")
                if q is not None and s in frame_join:
                    frame_join[s]["quality"] = q
        # A record too poor for a metric withholds it (null, with the reason): frame_gate.py.
        frame_join = {s: frame_gate.apply(side) for s, side in frame_join.items()}
    return frame_join


def _congestion_controller(inputs: RunInputs, table: packets.PacketTable | None, phase_list: list[phases.Phase],
                           progress: Progress) -> dict[str, Any] | None:
    """GCC from the browsers' RTC event logs, joined with the captures (eventlog/analysis.py); None without a call or
    an event log. The phases give the limiter's shares and place the counterfactual replay's counts."""
    run = inputs.run
    if not run.has_calls:
        return None
    with _step(progress, "event logs", inputs.timings):
        return eventlog_analysis.analyse(inputs.path, table, run.call_start_s, run.call_end_s, run.problems,
                                         [(p.name, p.start_s, p.end_s) for p in phase_list])


def _document(inputs: RunInputs, table: packets.PacketTable | None, *, validity: dict[str, Any],
              phase_list: list[phases.Phase], timing: list[phases.ItemTiming], flows: list[dict[str, Any]],
              fair: dict[str, Any], rfc: dict[str, Any] | None, multi: dict[str, Any] | None,
              hop_doc: dict[str, Any] | None, frame_join: dict[str, Any] | None, ecn_by_chrome: dict[str, Any] | None,
              iperf3: list[dict[str, Any]], short_flows: list[dict[str, Any]] | None,
              bottleneck: dict[str, Any] | None, gt_summary: dict[str, Any] | None, controller: dict[str, Any] | None,
              cpu_use: dict[str, Any] | None, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """metrics.json's document, its sections in their order (metrics.schema.json). `problems`, `gaps` and
    `timings_s` are the lists the steps fill, not copies."""
    run, path, caps, gs = inputs.run, inputs.path, inputs.captures, inputs.getstats_summary
    scen, duration_s, capacity = inputs.scenario, inputs.duration_s, _capacity(inputs)
    backend = run.manifest.get("backend") or {}
    result: dict[str, Any] = {
        "schema_version": METRICS_SCHEMA_VERSION,
        "rtclab_version": __version__,
        "run": {
            "id": run.manifest.get("id") or path.name, "path": str(path), "status": run.manifest.get("status"),
            "error": run.manifest.get("error"), "scenario": run.scenario_doc.get("name"),
            "backend": backend.get("used"),
            # The uml backend's guest kernel, whose qdiscs the run went through (null for the other backends).
            "backend_kernel": backend.get("kernel"),
            # CONFIG_HZ of the kernel whose qdiscs ran (kernel, uml): Linux's PIE updates on its ticks.
            "backend_kernel_hz": backend.get("kernel_hz"),
            "call_start": inputs.t0, "duration_s": duration_s,
            "calls": len(multiflow.calls(run)),
        },
        "validity": validity,
        "inputs": {
            f"capture_{s}": ({"packets": c.packets, "records": c.records, "error": c.error,
                              "not_joined": (table.not_joined if table is not None else {}).get(f"capture_{s}")}
                             if c is not None else None)
            for s, c in caps.items()
        } | {"getstats": gs["available"] if gs is not None else None,
             "ground_truth_log": run.file("bottleneck-forward.gtlog").exists(),
             "qdisc_stats": run.file("qdisc-stats.jsonl").exists(),
             "cpu_accounting": run.file("cpu.jsonl").exists()},
        "problems": run.problems,
        "gaps": inputs.gaps,
        # As the scenario says it: the analysis itself uses each step where it was applied (rundir.load).
        "scenario": scenario.to_json(run.configured_scenario or scen) if scen else None,
        "phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s, "cross_traffic": p.cross_traffic,
                    "scheduled_start_s": p.scheduled_start_s, "scheduled_end_s": p.scheduled_end_s}
                   for p in phase_list],
        "cross_traffic_timing": [t.to_json() for t in timing],
        "capacity_bps": capacity(0.0, duration_s) if capacity and duration_s else None,
        "capacity_steps": capacity_steps(scen.forward, duration_s) if scen and duration_s else None,
        "capacity_trace": inputs.forward_trace.to_json(duration_s) if inputs.forward_trace and duration_s else None,
        "flows": flows,
        "fairness": fair,
        **({"rfc8867": rfc} if run.has_calls else {}),  # absent in a run without a call, as the call sections
        "multiflow": multi,
        **({"hops": hop_doc} if hop_doc is not None else {}),  # absent without a chain
        "getstats": gs,
        "frames": frame_join,
        "chrome_ecn": ecn_by_chrome,
        "cross_traffic": iperf3,
        "short_tcp": short_flows,
        "bottleneck_queue": bottleneck,
        "ground_truth": gt_summary,
        "congestion_controller": controller,
        "cpu": cpu_use,
        "crosschecks": checks,
        "warnings": [c["detail"] for c in checks if c["ok"] is False],
        "timings_s": inputs.timings,
    }
    if not run.has_calls:  # absent, not empty: nothing of a call was measured
        for key in CALL_SECTIONS:
            del result[key]
    if isinstance(run.manifest.get("imported"), dict):  # a field call's getStats dump (imports/getstats_dump.py)
        result["imported"] = run.manifest["imported"]
    return result


# --- present: the files -----------------------------------------------------------------------------------------------


def write_outputs(path: Path, result: dict[str, Any], table: packets.PacketTable | None, problems: list[str],
                  progress: Progress = None, timings: dict[str, float] | None = None) -> None:
    """metrics.json (first checked against metrics.schema.json when RTCLAB_CHECK_METRICS=1: MetricsSchemaError,
    and nothing written, when it does not follow it) and packets.parquet; a parquet that cannot be written is named
    in `problems`. The report and the dashboard are the command's (cli.py)."""
    with _step(progress, "writing outputs", {} if timings is None else timings):
        text = json.dumps(result, indent=1, default=_json_default)
        if metrics_schema.check_enabled():
            metrics_schema.validate(json.loads(text))
        (path / "metrics.json").write_text(text)
        if table is not None:
            try:
                write_parquet(table, path / "packets.parquet")
            except OSError as e:
                problems.append(f"packets.parquet not written: {e}")


def analyze(path: Path, *, run_tshark: bool = True, write: bool = True,
            progress: Progress = None) -> tuple[dict[str, Any], packets.PacketTable | None]:
    """Reads the run, computes its metrics and (write) writes metrics.json and packets.parquet; returns metrics.json's
    document and the per-packet table (None without a readable capture)."""
    inputs = read_run(path, progress)
    result, table = compute_metrics(inputs, run_tshark=run_tshark, progress=progress)
    if write:
        write_outputs(path, result, table, inputs.run.problems, progress, inputs.timings)
    return result, table


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(type(o))


def write_parquet(table: packets.PacketTable, path: Path) -> None:
    """The per-packet table for notebooks: times in ns (null where not observed), delays in ns, names as strings
    through dictionary-encoded columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    c = table.cols
    def opt(name: str) -> pa.Array:
        v = c[name]
        return pa.array(v, mask=v < 0)
    arrays = {
        "direction": pa.DictionaryArray.from_arrays(pa.array(c["direction"].astype(np.int8)), ["forward", "reverse"]),
        "flow": pa.array(c["flow"]),
        "status": pa.DictionaryArray.from_arrays(pa.array(c["status"].astype(np.int8)),
                                                 [packets.STATUS_NAMES[i] for i in range(5)]),
        "t_send_ns": opt("t_send_ns"), "t_recv_ns": opt("t_recv_ns"),
        "owd_ns": opt("owd_ns"), "queuing_delay_ns": opt("queuing_delay_ns"),
        "queuing_delay_vs_min_owd_ns": opt("queuing_delay_vs_min_owd_ns"),
        "class": pa.DictionaryArray.from_arrays(pa.array(c["cls"].astype(np.int8)),
                                                [packets.CLS_NAMES[i] for i in range(8)]),
    }
    for name in ("ip_src", "ip_dst", "sport", "dport", "proto", "ip_len", "ip_id", "dscp", "ecn_send", "ecn_recv",
                 "ssrc", "rtp_seq", "rtp_ts", "rtp_pt", "rtp_marker", "twcc_seq", "rtp_payload_len", "tcp_seq", "key",
                 "frame_send", "frame_recv"):
        arrays[name] = pa.array(c[name])
    if "chrome_send_ns" in c:  # from the RTC event logs (rtclab/eventlog/analysis.py)
        arrays["chrome_send_ns"] = opt("chrome_send_ns")
    # Uncompressed, no statistics, dictionaries only for the three categorical columns: a third of the time of
    # pyarrow's defaults (which dominated the whole analysis on large captures), files about 35 bytes a packet.
    pq.write_table(pa.table(arrays), path, compression="none", write_statistics=False,
                   use_dictionary=["direction", "status", "class"])
