"""The study report in the terminal: per phase, per point x flow, the key metrics as mean ± 95% CI half-width and n,
straight from study.json (docs/studies.md, "Report"). Also what the dashboard and `compare` share: loading a study
directory, choosing the phases (the cross-traffic phase when the study has one, then the whole call), and formatting
a metric's value in its unit."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .aggregate import left_out_lines
from .catalogue import (
    CATALOGUE,
    CONTROLLER_FLOW,
    CPU_FLOW,
    FRAMES_FLOW,
    FRAMES_METRICS,
    LIMITS_CATALOGUE,
    LIMITS_FLOW,
    METRICS,
    RFC_FLOW,
)

# The key metrics: of each packet flow shown, and of the forward bottleneck (the call against its competitors).
FLOW_METRICS = ["throughput_bps", "utilisation", "loss_ratio_bytes", "queuing_delay_ms_mean", "tq_ms_mean"]
BOTTLENECK_METRICS = ["call_share_of_fair_share", "tcp_share_of_fair_share", "jain_index"]
FLOWS_SHOWN = ["forward:video", "forward:tcp"]  # the call's video and the busiest competing TCP flow

HEADERS = {"throughput_bps": "rate kbit/s", "send_rate_bps": "sent kbit/s", "received_bps": "received kbit/s",
           "call_throughput_bps": "call kbit/s", "utilisation": "U", "loss_ratio_bytes": "loss (bytes)",
           "loss_ratio_packets": "loss (packets)", "queuing_delay_ms_mean": "queue ms", "queuing_delay_ms_p50":
           "queue p50 ms", "queuing_delay_ms_p95": "queue p95 ms", "owd_ms_mean": "OWD ms", "jitter_ms": "jitter ms",
           "tq_ms_mean": "Tq ms", "tq_ms_p95": "Tq p95 ms", "jain_index": "Jain", "bottleneck_utilisation":
           "U (all traffic)", "call_share_of_fair_share": "call / fair share",
           "tcp_share_of_fair_share": "TCP / fair share", "n_dd": "n_dd", "overuse_events": "over-use events",
           "overusing_fraction": "overusing share", "replay_update_agreement": "replay agrees",
           "cpu_host_busy_cores": "host busy", "cpu_host_busy_fraction": "host busy share", "cpu_run_cores": "the run",
           "cpu_outside_run_cores": "outside the run", "cpu_kernel_cores": "kernel (irq+softirq)",
           "cpu_steal_cores": "steal", "cpu_steal_max_cores": "steal, worst interval",
           "cpu_chromium_cores": "all browsers", "cpu_chromium_a_cores": "chromium-a",
           "cpu_chromium_b_cores": "chromium-b", "cpu_bottleneck_cores": "bottleneck", "cpu_capture_cores": "capture",
           "cpu_iperf3_cores": "iperf3", "cpu_harness_cores": "harness", "rate_to_target_ratio": "rate / target",
           "convergence_time_s": "convergence s", "converged_fraction": "converged share",
           "reaction_time_down_s": "reaction down s", "reaction_time_up_s": "reaction up s", "ramp_up_s": "ramp-up s",
           "regain_fair_share_s": "regain s",
           "media_jain_index": "Jain (media)", "glass_to_glass_ms_p50": "g2g p50 ms",
           "glass_to_glass_ms_p95": "g2g p95 ms", "sender_ms_p50": "sender p50 ms", "sender_ms_p95": "sender p95 ms",
           "network_ms_p50": "network p50 ms", "network_ms_p95": "network p95 ms",
           "receiver_ms_p50": "receiver p50 ms", "receiver_ms_p95": "receiver p95 ms",
           "every_frame_delay_ms_p50": "every frame p50 ms", "every_frame_delay_ms_p95": "every frame p95 ms",
           "every_frame_delay_ms_p99": "every frame p99 ms", "freeze_time_ratio": "freeze time share",
           "never_shown_ratio": "never shown share", "psnr_db_mean": "PSNR dB", "ssim_mean": "SSIM",
           "ssim_db_mean": "SSIM dB",
           "limited_by_delay_based": "delay-based", "limited_by_probe": "probe", "limited_by_loss_based": "loss-based",
           "limited_by_receiver_limit": "receiver (REMB)", "limited_by_undetermined": "undetermined"}
# The CPU table (whole call): the host, then each component of the run, then what the run does not account for.
CPU_METRICS = ["cpu_host_busy_cores", "cpu_chromium_a_cores", "cpu_chromium_b_cores", "cpu_bottleneck_cores",
               "cpu_capture_cores", "cpu_iperf3_cores", "cpu_harness_cores", "cpu_outside_run_cores"]


class StudyReportError(Exception):
    """A directory that is no aggregated study (the CLI exits 2 with this message)."""


def load(out: Path) -> dict[str, Any]:
    """study.json of a study directory, or StudyReportError saying what is wrong."""
    if not out.is_dir():
        raise StudyReportError(f"{out} is not a directory")
    if not (out / "plan.json").exists():
        raise StudyReportError(f"{out} holds no plan.json: not a study directory")
    path = out / "study.json"
    if not path.exists():
        raise StudyReportError(f"{out} holds no study.json: run `rtclab study aggregate {out}` first")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise StudyReportError(f"{path} unreadable: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise StudyReportError(f"{path} is not a study.json (no points)")
    return doc


def check_metrics(names: list[str] | None) -> list[str] | None:
    """The metrics asked for, or StudyReportError naming an unknown one."""
    if not names:
        return None
    unknown = [n for n in names if n not in CATALOGUE]
    if unknown:
        raise StudyReportError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(CATALOGUE)}")
    return names


def phase_names(doc: dict[str, Any]) -> list[str]:
    """Every phase of the study's points, in the order they come."""
    seen: dict[str, None] = {}
    for p in doc["points"]:
        for ph in p.get("phases") or []:
            seen.setdefault(ph["name"], None)
    return list(seen) or ["all"]


def cross_traffic_phase(doc: dict[str, Any]) -> str | None:
    """The phase where the flows compete: the cross-traffic phase most points have (None without cross traffic)."""
    counts = Counter(ph["name"] for p in doc["points"] for ph in p.get("phases") or [] if ph.get("cross_traffic"))
    return counts.most_common(1)[0][0] if counts else None


def report_phases(doc: dict[str, Any], phase: str | None = None) -> list[str]:
    """The phase asked for; else the cross-traffic phase (when there is one), then the whole call."""
    if phase:
        if phase not in phase_names(doc):
            raise StudyReportError(f"no phase {phase!r} in this study; its phases: {', '.join(phase_names(doc))}")
        return [phase]
    cross = cross_traffic_phase(doc)
    return ([cross] if cross else []) + ["all"]


def phase_title(doc: dict[str, Any], phase: str) -> str:
    """'cross_traffic (25-75 s of the call)', 'all (the whole call)'; intervals that differ between points say so."""
    if phase == "all":
        return "all (the whole call)"
    spans = {(ph.get("start_s"), ph.get("end_s")) for p in doc["points"] for ph in p.get("phases") or []
             if ph["name"] == phase}
    if len(spans) == 1:
        lo, hi = next(iter(spans))
        return f"{phase} ({lo:g}-{hi:g} s of the call)"
    return f"{phase} (its interval differs between points)"


def stat(point: dict[str, Any], flow: str, phase: str, metric: str) -> dict[str, Any] | None:
    s = (((point.get("flows") or {}).get(flow) or {}).get(phase) or {}).get(metric)
    return s if isinstance(s, dict) and s.get("mean") is not None else None


def scale(metric: str) -> float:
    """Display scale of a metric: bit/s are shown in kbit/s."""
    return 1e-3 if METRICS[metric].unit == "bit/s" else 1.0


def fmt(metric: str, x: float | None) -> str:
    """A value of `metric` in its display unit (HEADERS): kbit/s and ms with one decimal, cores with two, ratios with
    4 digits."""
    if x is None:
        return "-"
    unit = METRICS[metric].unit
    if unit in ("bit/s", "ms"):
        return f"{x * scale(metric):.1f}"
    if unit == "cores":
        return f"{x:.2f}"
    return f"{x:.4g}"


def fmt_stat(metric: str, s: dict[str, Any] | None, with_n: bool = False) -> str:
    """'mean ±half-width' (no ± with n < 2), and ' n=k' when asked."""
    if s is None:
        return "-"
    text = fmt(metric, s["mean"])
    if s.get("ci95_half_width") is not None:
        text += " ±" + fmt(metric, s["ci95_half_width"])
    return text + (f" n={s['n']}" if with_n else "")


@dataclass
class Table:
    title: str
    head: list[str]
    rows: list[list[str]]
    note: str = ""

    def render(self) -> str:
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) if self.rows else len(h)
                  for i, h in enumerate(self.head)]
        lines = [self.title, "  ".join(h.ljust(w) for h, w in zip(self.head, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in self.rows]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines) + "\n"


def shown_flows(doc: dict[str, Any]) -> list[str]:
    """The packet flows the report shows, those the study has."""
    present = {f for p in doc["points"] for f in p.get("flows") or {}}
    return [f for f in FLOWS_SHOWN if f in present]


def point_labels(doc: dict[str, Any]) -> dict[str, str]:
    """Each point's name, with the count of INVALID runs it uses (aggregate --accept-invalid) when there are any."""
    invalid = Counter(r["point"] for r in doc.get("runs") or [] if r.get("used") and r.get("accepted_invalid"))
    return {p["name"]: f"{p['name']} [{invalid[p['name']]} INVALID]" if invalid[p["name"]] else str(p["name"])
            for p in doc["points"]}


def _point_rows(doc: dict[str, Any], label: dict[str, str], flow: str, phase: str,
                metrics: list[str]) -> list[list[str]]:
    """One row per point: its label, n (the largest of its cells'), and each metric's cell."""
    rows = []
    for p in doc["points"]:
        cells = [stat(p, flow, phase, m) for m in metrics]
        ns = {c["n"] for c in cells if c is not None}
        rows.append([label[p["name"]], str(max(ns)) if ns else "0"] + [fmt_stat(m, c, with_n=len(ns) > 1)
                                                                for m, c in zip(metrics, cells)])
    return rows


def tables(doc: dict[str, Any], phase: str, metrics: list[str] | None = None) -> list[Table]:
    """The report's tables for one phase: the packet flows (point x flow) and the bottleneck (per point)."""
    title = f"phase {phase_title(doc, phase)}"
    label = point_labels(doc)
    flow_metrics = [m for m in (metrics or FLOW_METRICS) if CATALOGUE[m].family == "flow"]
    neck_metrics = [m for m in (metrics or BOTTLENECK_METRICS) if CATALOGUE[m].family == "bottleneck"]
    out = []
    if flow_metrics and shown_flows(doc):
        rows = []
        for p in doc["points"]:
            for flow in shown_flows(doc):
                cells = [stat(p, flow, phase, m) for m in flow_metrics]
                if all(c is None for c in cells) and flow != "forward:video":
                    continue
                ns = {c["n"] for c in cells if c is not None}
                n = str(max(ns)) if ns else "0"
                rows.append([label[p["name"]], flow, n] + [fmt_stat(m, c, with_n=len(ns) > 1)
                                                    for m, c in zip(flow_metrics, cells)])
        out.append(Table(f"{title}: flows", ["point", "flow", "n"] + [HEADERS.get(m, m) for m in flow_metrics], rows))
    if neck_metrics:
        rows = _point_rows(doc, label, "bottleneck", phase, neck_metrics)
        out.append(Table(f"{title}: forward bottleneck", ["point", "n"] + [HEADERS.get(m, m) for m in neck_metrics],
                         rows))
    # The forward sender's congestion controller (RTC event log) is counted over the whole call only.
    ctrl_metrics = [m for m in (metrics or list(CATALOGUE)) if CATALOGUE[m].family == "controller"]
    if phase == "all" and ctrl_metrics and any(CONTROLLER_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        rows = _point_rows(doc, label, CONTROLLER_FLOW, phase, ctrl_metrics)
        out.append(Table(f"{title}: the forward sender's congestion controller (RTC event log)",
                         ["point", "n"] + [HEADERS.get(m, m) for m in ctrl_metrics], rows))
    # Which estimate set the forward sender's target (eventlog/limits.py), in every phase; not with --metric.
    if not metrics and any(phase in ((p.get("flows") or {}).get(LIMITS_FLOW) or {}) for p in doc["points"]):
        rows = _point_rows(doc, label, LIMITS_FLOW, phase, list(LIMITS_CATALOGUE))
        out.append(Table(f"{title}: which estimate set the forward sender's target (RTC event log), share of the "
                         f"phase", ["point", "n"] + [HEADERS[m] for m in LIMITS_CATALOGUE], rows,
                         note="docs/metrics.md, \"Which estimate limits the target\"; the acknowledged-rate bound "
                              "is not determinable from the log"))
    # RFC 8867's metrics of the media flows (metrics.json rfc8867), over the whole call only.
    rfc_metrics = [m for m in (metrics or list(CATALOGUE)) if CATALOGUE[m].family == "rfc8867"]
    if phase == "all" and rfc_metrics and any(RFC_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        rows = _point_rows(doc, label, RFC_FLOW, phase, rfc_metrics)
        out.append(Table(f"{title}: RFC 8867, the media flows' metrics", ["point", "n"] +
                         [HEADERS.get(m, m) for m in rfc_metrics], rows,
                         note="target = the capacity, or the flow's fair share of it; band and windows in "
                              "docs/metrics.md, \"RFC 8867 metrics\""))
    # What the viewer at b saw (metrics.json frames.b), over the whole call only.
    frame_metrics = [m for m in (metrics or FRAMES_METRICS) if CATALOGUE[m].family == "frames"]
    if phase == "all" and frame_metrics and any(FRAMES_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        rows = _point_rows(doc, label, FRAMES_FLOW, phase, frame_metrics)
        out.append(Table(f"{title}: frames shown at b (the forward video, per-frame record)",
                         ["point", "n"] + [HEADERS.get(m, m) for m in frame_metrics], rows,
                         note="each run's own p50/p95 over its frames, in ms: g2g = glass-to-glass (display - "
                              "capture), per frame = sender + network + receiver; freeze time share = freezes "
                              "(Chrome's rule) / the span shown; never shown share = frames sent and never shown / "
                              "sent; PSNR, SSIM = the mean over the sampled frames against the source "
                              "(docs/metrics.md, \"Frames\", \"quality\")"))
    # Where the machine's CPU went (cpu.jsonl), over the whole call only; not with --metric (catalogue metrics only).
    if phase == "all" and not metrics and any(CPU_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        rows = _point_rows(doc, label, CPU_FLOW, phase, CPU_METRICS)
        out.append(Table(f"{title}: CPU, mean cores (cpu.jsonl)", ["point", "n"] + [HEADERS[m] for m in CPU_METRICS],
                         rows, note="cores = CPU-seconds per second; outside the run = host busy - the run's "
                                    "processes (docs/metrics.md, \"CPU\")"))
    return out


def render(doc: dict[str, Any], phase: str | None = None, metrics: list[str] | None = None) -> str:
    """The whole terminal report."""
    used, invalid = doc["summary"]["runs_used"], doc["summary"].get("runs_used_invalid") or 0
    lines = [f"study {doc['study']}: {len(doc['points'])} point(s), "
             + (f"{used} run(s) used, {invalid} of them INVALID" if invalid else f"{used} valid run(s) used")]
    if doc.get("invalid_note"):
        lines.insert(0, f"[{doc['invalid_note']}]")
    if doc.get("quick_note"):
        lines.insert(0, f"[{doc['quick_note']}]")
    text = "\n".join(lines) + "\n"
    for ph in report_phases(doc, phase):
        for t in tables(doc, ph, metrics):
            text += "\n" + t.render()
    over = "runs used ([k INVALID]: k of them invalid, above)" if invalid else "valid runs"
    text += (f"\nmean ±95% CI half-width (Student t) over each point's {over}; n = runs with a value (n=k in a cell "
             "where it differs); no ± when n < 2. rate = goodput, link-layer bits received; U = rate / capacity; loss "
             "= bytes lost / sent; queue = one-way delay - propagation delay (captures); Tq = RTCP RTT - RTTm "
             "(getStats); fair share = capacity / competitors (docs/studies.md)\n")
    s = doc["summary"]
    text += (f"repetitions with a valid run: {s['repetitions_with_valid_run']}, without: {s['repetitions_without']}; "
             f"attempts: {', '.join(f'{k} {v}' for k, v in sorted(s['attempts'].items())) or 'none'}\n")
    return text + "".join(line + "\n" for line in left_out_lines(doc))


@dataclass
class ChromiumVersions:
    """The Chromium versions of a study's runs used, and the runs whose version is unknown, each with why."""
    found: list[str]
    left_out: list[dict[str, str]]  # {"dir": the run's directory in the study, "reason": why its version is unknown}

    def text(self) -> str:
        """'Chromium 144.0.7559.59', with the runs left out named under their reason: 'version unknown for 2
        run(s): no manifest.json (runs/p/2-1, runs/p/3-1)'."""
        head = f"Chromium {', '.join(self.found)}" if self.found else "Chromium version not recorded"
        if not self.left_out:
            return head
        by_reason: dict[str, list[str]] = {}
        for x in self.left_out:
            by_reason.setdefault(x["reason"], []).append(x["dir"])
        return (f"{head}; version unknown for {len(self.left_out)} run(s): "
                + "; ".join(f"{why} ({', '.join(dirs)})" for why, dirs in by_reason.items()))


def chromium_versions(out: Path, doc: dict[str, Any]) -> ChromiumVersions:
    """The Chromium versions of the runs used (manifest.json `versions.chromium`, the version number only); a run
    whose manifest cannot be read or records no version is left out and named, not skipped."""
    found: dict[str, None] = {}
    left_out: list[dict[str, str]] = []
    for r in doc.get("runs") or []:
        if not r.get("used"):
            continue
        path = out / r["dir"] / "manifest.json"
        try:
            manifest = json.loads(path.read_text())
        except FileNotFoundError:
            left_out.append({"dir": r["dir"], "reason": "no manifest.json"})
            continue
        except (OSError, ValueError) as e:
            left_out.append({"dir": r["dir"], "reason": f"manifest.json unreadable: {type(e).__name__}: {e}"})
            continue
        v = (manifest.get("versions") if isinstance(manifest, dict) else None) or {}
        text = str(v.get("chromium") or "") if isinstance(v, dict) else ""
        if not text:
            left_out.append({"dir": r["dir"], "reason": "manifest.json records no versions.chromium"})
            continue
        m = re.search(r"\d+(\.\d+){2,3}", text)
        found.setdefault(m.group(0) if m else text, None)
    return ChromiumVersions(list(found), left_out)
