"""`rtclab analyze`: reads a run directory, joins the captures, computes every metric, runs the cross-checks and
writes metrics.json, report.txt and packets.parquet. Whatever cannot be read is named in `gaps`; the rest is still
computed. Raises NothingToAnalyse only when neither capture nor getStats could be read. A run without a call
(scenario `calls: []`) has no call sections: `getstats`, `multiflow`, `chrome_ecn` and `congestion_controller` are
absent from metrics.json and `run.calls` is 0; the cross-checks against getStats and tshark's RTP analysis are
skipped with that reason."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import (
    __version__,
    chrome_ecn,
    cpu,
    crosscheck,
    fairness,
    frames,
    getstats,
    metrics,
    multiflow,
    packets,
    phases,
    quality,
    queue,
    rfcmetrics,
    rundir,
    scenario,
)
from .eventlog import analysis as eventlog_analysis

# 2: queuing_delay_ms and getStats' tq_ms are measured from the configured propagation delay (their earlier
# baselines are queuing_delay_vs_min_owd_ms and tq_vs_min_rtt_ms); throughput spans arrivals; fairness counts the
# scenario's competitors; inputs name the packets left out of the join.
METRICS_SCHEMA_VERSION = 2


class NothingToAnalyse(Exception):
    pass


@contextmanager
def _step(progress: Callable[[str], None] | None, what: str, timings: dict[str, float]) -> Iterator[None]:
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


def analyze(path: Path, *, run_tshark: bool = True, write: bool = True,
            progress: Callable[[str], None] | None = None) -> tuple[dict[str, Any], packets.PacketTable | None]:
    timings: dict[str, float] = {}
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

    first_ts = [int(c.cols["ts_ns"][0]) for c in caps.values() if c is not None and c.packets]
    last_ts = [int(c.cols["ts_ns"][-1]) for c in caps.values() if c is not None and c.packets]
    t0 = run.call_start_s or (min(first_ts) / 1e9 if first_ts else None)

    gs: dict[str, Any] | None = None
    sides: dict[str, getstats.SideStats | None] = {}
    if run.has_calls:
        with _step(progress, "reading getStats", timings):
            gs = getstats.analyse(run, t0 or 0.0)
        sides = gs.pop("_sides")
        if not any(gs["available"].values()):
            gaps.append("no getStats: the browsers' view (bitrates, RTT, Tq, fps, freezes) is missing")
    if t0 is None:
        if gs is None or not any(gs["available"].values()):
            raise NothingToAnalyse(f"{path}: no readable capture and no getStats sample; problems: "
                                   + "; ".join(run.problems))
        t0 = 0.0

    duration_s = float(run.scenario.duration_s) if run.scenario else None
    recorded_s = ((max(last_ts) / 1e9) - t0) if last_ts else None
    if run.call_end_s and run.call_start_s:
        duration_s = run.call_end_s - run.call_start_s
    elif recorded_s is not None and (duration_s is None or recorded_s < duration_s):
        # The call never ended (interrupted, crashed): phases, rates and utilisation cover what was recorded.
        duration_s = recorded_s
    if duration_s is None:
        duration_s = 0.0
    t0_ns = int(round(t0 * 1e9))
    ssrc_kinds, pt_kinds, clocks = getstats.kinds(sides)
    ssrc_kinds = multiflow.recorded_kinds(run) | ssrc_kinds  # every call's streams, getStats' word first
    table = None
    flows: list[dict[str, Any]] = []
    fair: dict[str, Any] = {}
    scen = run.scenario
    capacity = scen.forward.mean_capacity_bps if scen else None
    if caps["a"] is not None or caps["b"] is not None:
        with _step(progress, "joining packets", timings):
            prop = (None, None) if scen is None else \
                (packets.propagation_of(scen.forward, t0_ns), packets.propagation_of(scen.reverse, t0_ns))
            table = packets.build(caps["a"] or rundir.empty_capture(run.file("capture-a.pcap")),
                                  caps["b"] or rundir.empty_capture(run.file("capture-b.pcap")),
                                  rundir.ip_to_int(run.addr_a), rundir.ip_to_int(run.addr_b), prop)
    # The phases follow when each cross-traffic item actually sent data (phases.py), the schedule where unknown.
    timing, timing_gaps = phases.cross_traffic_timing(table, scen, t0_ns, rundir.ip_to_int(run.addr_a),
                                                      rundir.ip_to_int(run.addr_b),
                                                      {s: c is not None for s, c in caps.items()},
                                                      run.cross_traffic_ports)
    gaps += timing_gaps
    phase_list = phases.phases(scen, duration_s, timing)
    lowest, highest = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)  # "all": every packet, unfiltered
    bounds = [(p.name, (lowest if p.name == "all" else t0_ns + int(p.start_s * 1e9)),
               (highest if p.name == "all" else t0_ns + int(p.end_s * 1e9))) for p in phase_list]
    if gs is not None:
        getstats.per_phase(gs, [(p.name, p.start_s, p.end_s) for p in phase_list if p.name != "all"])
    if table is not None:
        with _step(progress, "computing metrics", timings):
            flows = metrics.flows(table, bounds, ssrc_kinds, pt_kinds, clocks, t0_ns, capacity)
            for p in phase_list:
                lo = t0_ns + int(p.start_s * 1e9)
                hi = t0_ns + int(p.end_s * 1e9)
                cap_bps = capacity(p.start_s, p.end_s) if capacity else None
                # The items running in a phase are the ones its schedule names (the measured phase is where they ran).
                tcp_flows = fairness.expected_tcp_flows(scen, p.scheduled_start_s, p.scheduled_end_s)
                fair[p.name] = dict(
                    fairness.connections(table, lo, hi, cap_bps, tcp_flows,
                                         forward_arrivals_seen=caps["b"] is not None,
                                         calls=multiflow.calls_active(run, p.start_s, p.end_s, duration_s)),
                    capacity_bps=cap_bps, start_s=p.start_s, end_s=p.end_s)

    multi: dict[str, Any] | None = None
    validity = run.manifest.get("validity") or {"valid": None, "checks": [], "note": "no validity in the manifest"}
    if table is not None and run.has_calls:
        with _step(progress, "calls and tracks", timings):
            multi = multiflow.analyse(run, table, t0_ns, duration_s, ssrc_kinds,
                                      capacity(0.0, duration_s) if capacity and duration_s else None)
            owner = multi.pop("owner")
            for f in flows:
                call_track = owner.get(str(f.get("ssrc"))) if f["direction"] == "forward" else None
                f["call"], f["track"] = call_track if call_track else (None, None)
    # RFC 8867's metrics per media flow (rfcmetrics.py), each call's connection named by its id.
    rfc = None
    if table is not None and run.has_calls:
        names = {(f"{rundir.int_to_ip(c.five_tuple[0])}:{c.five_tuple[1]}",
                  f"{rundir.int_to_ip(c.five_tuple[2])}:{c.five_tuple[3]}"): c.id
                 for c in multiflow.calls(run) if c.five_tuple is not None}
        rfc = rfcmetrics.from_run(table, t0_ns, duration_s, scen,
                                  capacity_steps(scen.forward, duration_s) if scen and duration_s else None, names)
    # The analyzer's own validity check: the DSCP the scenario asked for, on the wire.
    marked = multiflow.dscp_marked(run, caps["a"], t0_ns)
    if marked is not None:
        checks_v = [c for c in validity.get("checks", []) if c.get("name") != "dscp_marked"] + [marked]
        # A check whose ok is null was not measured (harness/validity.js): it does not make the run invalid.
        validity = dict(validity, checks=checks_v,
                        valid=bool(validity.get("valid", True) is not False
                                   and all(c.get("ok") is not False for c in checks_v)))

    checks: list[dict[str, Any]] = []
    with _step(progress, "cross-checks", timings):
        if gs is None:
            checks.append(crosscheck.skipped("getstats_and_rtp", "no call in this run: the cross-checks against "
                                             "getStats (loss) and tshark's RTP analysis (jitter) do not apply"))
        else:
            checks += crosscheck.getstats_loss(flows, gs)
        if run_tshark and table is not None and gs is not None:
            pt_names = {}
            for side_stats in sides.values():
                for codec in (side_stats.codecs.values() if side_stats else []):
                    pt_names[codec["payloadType"]] = str(codec.get("mimeType", "/")).split("/")[-1]
            checks += crosscheck.tshark_jitter(run, flows, table, clocks, pt_names)
        gt_checks, gt_summary = crosscheck.gtlog_owd(run, table)
        checks += gt_checks
    # Where the machine's CPU went during the call (the harness's cpu.jsonl; null for runs from before it).
    host_cpus = (run.manifest.get("host") or {}).get("cpus")
    cpu_use = cpu.analyse(rundir.read_cpu(run), t0, duration_s, host_cpus if isinstance(host_cpus, int) else None)
    if cpu_use is not None and not cpu_use["window"]["samples"]:
        gaps.append("cpu.jsonl holds no sample within the call: the CPU per process group is unknown")
    frame_join = None
    if run.has_calls:
        with _step(progress, "frames", timings):
            recorded = {s: ff for s in ("a", "b") if (ff := rundir.read_frames(run, s)) is not None}
            frame_join = frames.analyse(recorded, table, t0_ns, duration_s, path, run.problems,
                                        {s: v.inbound for s, v in sides.items() if v is not None})
        if frame_join is not None:
            with _step(progress, "picture quality", timings):
                for s, ff in recorded.items():
                    try:
                        q = quality.analyse(path, s, ff, t0_ns, duration_s)
                    except quality.QualityError as e:
                        q = {"error": str(e)}
                        run.problems.append(f"picture quality at {s}: {e}")
                    if q is not None and s in frame_join:
                        frame_join[s]["quality"] = q
    controller = None
    if run.has_calls:
        with _step(progress, "event logs", timings):
            controller = eventlog_analysis.analyse(path, table, run.call_start_s, run.call_end_s, run.problems)

    result: dict[str, Any] = {
        "schema_version": METRICS_SCHEMA_VERSION,
        "rtclab_version": __version__,
        "run": {
            "id": run.manifest.get("id") or path.name, "path": str(path), "status": run.manifest.get("status"),
            "error": run.manifest.get("error"), "scenario": run.scenario_doc.get("name"),
            "backend": (run.manifest.get("backend") or {}).get("used"),
            # The uml backend's guest kernel, whose qdiscs the run went through (null for the other backends).
            "backend_kernel": (run.manifest.get("backend") or {}).get("kernel"),
            # CONFIG_HZ of the kernel whose qdiscs ran (kernel, uml): Linux's PIE updates on its ticks.
            "backend_kernel_hz": (run.manifest.get("backend") or {}).get("kernel_hz"),
            "call_start": t0, "duration_s": duration_s,
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
        "gaps": gaps,
        "scenario": scenario.to_json(scen) if scen else None,
        "phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s, "cross_traffic": p.cross_traffic,
                    "scheduled_start_s": p.scheduled_start_s, "scheduled_end_s": p.scheduled_end_s}
                   for p in phase_list],
        "cross_traffic_timing": [t.to_json() for t in timing],
        "capacity_bps": capacity(0.0, duration_s) if capacity and duration_s else None,
        "capacity_steps": capacity_steps(scen.forward, duration_s) if scen and duration_s else None,
        "flows": flows,
        "fairness": fair,
        **({"rfc8867": rfc} if run.has_calls else {}),  # absent in a run without a call, as the call sections
        "multiflow": multi,
        "getstats": gs,
        "frames": frame_join,
        "chrome_ecn": chrome_ecn.analyse(run, table, t0) if run.has_calls else None,
        "cross_traffic": rundir.iperf3_summaries(run),
        "bottleneck_queue": queue.analyse(run, t0),
        "ground_truth": gt_summary,
        "congestion_controller": controller,
        "cpu": cpu_use,
        "crosschecks": checks,
        "warnings": [c["detail"] for c in checks if c["ok"] is False],
        "timings_s": timings,
    }
    if not run.has_calls:  # absent, not empty: nothing of a call was measured
        for key in ("multiflow", "getstats", "frames", "chrome_ecn", "congestion_controller"):
            del result[key]
    if write:
        with _step(progress, "writing outputs", timings):
            (path / "metrics.json").write_text(json.dumps(result, indent=1, default=_json_default))
            if table is not None:
                try:
                    write_parquet(table, path / "packets.parquet")
                except OSError as e:
                    run.problems.append(f"packets.parquet not written: {e}")
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
                 "ssrc", "rtp_seq", "rtp_ts", "rtp_pt", "rtp_marker", "twcc_seq", "tcp_seq", "key",
                 "frame_send", "frame_recv"):
        arrays[name] = pa.array(c[name])
    if "chrome_send_ns" in c:  # from the RTC event logs (rtclab/eventlog/analysis.py)
        arrays["chrome_send_ns"] = opt("chrome_send_ns")
    # Uncompressed, no statistics, dictionaries only for the three categorical columns: a third of the time of
    # pyarrow's defaults (which dominated the whole analysis on large captures), files about 35 bytes a packet.
    pq.write_table(pa.table(arrays), path, compression="none", write_statistics=False,
                   use_dictionary=["direction", "status", "class"])
