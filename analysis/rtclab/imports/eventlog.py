"""`rtclab import eventlog FILE`: a real call's RTC event log (Chrome's `--webrtc-event-logging`, or webrtc-internals'
"create diagnostic event log") made into a run directory marked imported: the log as the sender's `eventlog-a.log`,
`imported.json` (what was imported, and the congestion controller's section exactly as `rtclab analyze` writes it
into metrics.json), `report.txt` and `dashboard.html` (the run dashboard's controller panels). There are no captures
and no network ground truth, so every section built from them is absent and the report says so; the controller's
section (n_dd, the detector's state, the estimate over time, the trendline replay) is the analyzer's own,
eventlog/analysis.analyse over the call window.

The call window: by default the log's own span (its first to its last sign of life: an outgoing RTP packet or an
estimate), since a field call's log holds that call only; `--call-start` and `--call-end` (Unix seconds) narrow it,
e.g. to a lab run's call window (metrics.json run.call_start and duration_s) to compare with that run."""

from __future__ import annotations

import datetime as _dt
import html
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__ as RTCLAB_VERSION
from .. import page
from ..dashboard_panels import controller_panels
from ..eventlog import analysis as eventlog_analysis
from ..eventlog import gcc, parser
from ..report import _controller_lines
from .output import prepare_out, sha256

IMPORTED_FILE = "imported.json"
# What a lab run's report shows from its captures, its bottleneck's logs and its pages, none of which an imported log
# has (docs/metrics.md names each).
CAPTURE_SECTIONS = {
    "flows": "per-flow delay, loss, jitter and rates (the two captures)",
    "fairness": "fairness at the bottleneck (capture-b)",
    "rfc8867": "RFC 8867's metrics (capture-b)",
    "multiflow": "per-call shares (the captures)",
    "bottleneck_queue": "the bottleneck's queue (its statistics log)",
    "ground_truth": "the bottleneck's ground-truth log",
    "getstats": "getStats (the pages' records)",
    "frames": "what the viewer saw (the receiving page's per-frame record)",
    "chrome_ecn": "ECN as Chrome reported it (the captures)",
    "cpu": "where the machine's CPU went (cpu.jsonl)",
    "crosschecks": "the cross-checks against getStats, tshark and the ground truth",
}
ESTIMATE_STEP_S = 5.0  # the report's table of the estimate over time: one row per this many seconds


class EventLogImportError(Exception):
    """A log that cannot be imported, or a target directory that is in the way: the message names which."""


@dataclass
class CallWindow:
    start_s: float | None  # Unix seconds; None when the log cannot be placed on Unix time (no begin event)
    end_s: float | None
    source: str


def _log_start_ms(log: parser.EventLog) -> float | None:
    d, lo = log.delay_based, log.loss_based
    firsts = [float(x[0]) for x in (log.outgoing_rtp["time_ms"], d["time_ms"], lo["time_ms"]) if len(x)]
    return min(firsts) if firsts else None


def call_window(log: parser.EventLog, start_s: float | None, end_s: float | None) -> CallWindow:
    """The window the counts are over: the given bounds, else the log's span (on Unix time by its begin event)."""
    if start_s is not None and end_s is not None and end_s <= start_s:
        raise EventLogImportError(f"--call-end {end_s} is not after --call-start {start_s}")
    if start_s is not None or end_s is not None:
        if log.utc_offset_ms is None:
            raise EventLogImportError("--call-start/--call-end need the log's Unix time, and this log has no "
                                      "begin event with it (a v1 log)")
        first = _log_start_ms(log)
        own_start = (first + log.utc_offset_ms) / 1000 if first is not None else None
        return CallWindow(start_s if start_s is not None else own_start,
                          end_s if end_s is not None else (gcc.log_end_ms(log) + log.utc_offset_ms) / 1000,
                          "given (--call-start/--call-end)")
    first = _log_start_ms(log)
    if log.utc_offset_ms is None or first is None:
        return CallWindow(None, None, "the whole log (it cannot be placed on Unix time: no begin event)")
    return CallWindow((first + log.utc_offset_ms) / 1000, (gcc.log_end_ms(log) + log.utc_offset_ms) / 1000,
                      "the log's span (its first to its last outgoing RTP packet or estimate)")


def import_eventlog(source: Path, out: Path, start_s: float | None = None,
                    end_s: float | None = None) -> dict[str, Any]:
    """Makes OUT from the log; returns imported.json's content."""
    if not source.is_file():
        raise EventLogImportError(f"{source}: no such file")
    try:
        log = parser.read(source)
    except parser.EventLogError as e:
        raise EventLogImportError(f"{source}: {e}") from None
    if _log_start_ms(log) is None:
        raise EventLogImportError(f"{source}: the log holds no outgoing RTP packet and no bandwidth estimate, so no "
                                  "sender's congestion controller (is it the receiving browser's log, or cut short: "
                                  f"{log.truncated_bytes} bytes after its last complete event?)")
    window = call_window(log, start_s, end_s)
    prepare_out(out, EventLogImportError)
    shutil.copyfile(source, out / "eventlog-a.log")
    problems: list[str] = []
    length_s = (window.end_s - window.start_s) if window.start_s is not None and window.end_s is not None else None
    phases_s = [("all", 0.0, length_s)] if length_s is not None else None
    section = eventlog_analysis.analyse(out, None, window.start_s, window.end_s, problems, phases_s)
    doc = {
        "imported": {"kind": "rtc_event_log", "source": source.name, "sha256": sha256(source),
                     "bytes": source.stat().st_size, "imported_by": f"rtclab {RTCLAB_VERSION}",
                     "imported_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     "captures": None, "network_ground_truth": None,
                     "call_window": {"start_unix_s": window.start_s, "end_unix_s": window.end_s,
                                     "length_s": length_s, "source": window.source}},
        "no_captures": {k: f"{v}: none, this run is imported and has no captures" for k, v in CAPTURE_SECTIONS.items()},
        "problems": problems,
        "congestion_controller": section,
    }
    (out / IMPORTED_FILE).write_text(json.dumps(doc, indent=1, default=_json_default) + "\n")
    (out / "report.txt").write_text(render(doc))
    (out / "dashboard.html").write_text(dashboard(doc), encoding="utf-8")
    return doc


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def estimate_rows(series: dict[str, Any], length_s: float, step_s: float = ESTIMATE_STEP_S) -> list[list[Any]]:
    """[t_s, target, delay-based, loss-based] at every step_s from the call's start: each estimate's latest logged
    value at or before t (None before its first)."""
    def at(points: list[list[float]], t: float) -> float | None:
        earlier = [p[1] for p in points if p[0] <= t]
        return earlier[-1] if earlier else None
    rows = []
    for t in np.arange(0.0, length_s + 1e-9, step_s):
        rows.append([float(t), at(series.get("target_bps") or [], t), at(series.get("delay_based_bps") or [], t),
                     at(series.get("loss_based_bps") or [], t)])
    return rows


def _kbit(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e3:.0f}"


def render(doc: dict[str, Any]) -> str:
    imp, cc = doc["imported"], doc["congestion_controller"]
    w = imp["call_window"]
    out = [f"imported RTC event log {imp['source']} ({imp['bytes']} bytes, sha256 {imp['sha256'][:12]}), by "
           f"{imp['imported_by']}",
           "IMPORTED: a real call's log, not a lab run: no captures, no network ground truth, no getStats",
           f"call window: {w['source']}" + (f", {w['length_s']:.1f} s" if w["length_s"] is not None else ""), ""]
    a = ((cc or {}).get("sides") or {}).get("a")
    if not a:
        out.append("congestion controller: the log could not be read: " + "; ".join(doc["problems"]))
    else:
        out += _controller_lines(cc)
        series = a.get("series")
        if series and w["length_s"] is not None:
            out.append(f"  estimate over time (kbit/s, latest logged value at each {ESTIMATE_STEP_S:g} s):")
            out.append("    t (s)   target  delay-based  loss-based")
            out += [f"    {t:5.0f}  {_kbit(g):>7}  {_kbit(d):>11}  {_kbit(lo):>10}"
                    for t, g, d, lo in estimate_rows(series, w["length_s"])]
    out.append("")
    out.append("sections that need captures or the lab's logs (none in an imported run):")
    out += [f"  {v}" for v in doc["no_captures"].values()]
    return "\n".join(out) + "\n"


def dashboard(doc: dict[str, Any]) -> str:
    """The run dashboard's congestion-controller panels (dashboard_panels.controller_panels: the estimates and probes,
    the replayed trend against the detector's logged state), on the call window's time axis, under a note that the
    run is imported and which sections it has not."""
    w = doc["imported"]["call_window"]
    m = {"congestion_controller": doc["congestion_controller"], "run": {"duration_s": w["length_s"]}}
    figures = []
    for i, (title, ytitle, traces) in enumerate(controller_panels(m)):
        figures.append((f"controller-{i}", {"data": traces, "layout": {
            "title": {"text": title, "font": {"size": 13}}, "height": 380,
            "margin": {"l": 60, "r": 20, "t": 40, "b": 45},
            "xaxis": {"title": {"text": "time since the call window's start (s)"}},
            "yaxis": {"title": {"text": ytitle}},
            "legend": {"orientation": "h", "y": -0.25}}}))
    missing = "".join(f"<li>{html.escape(v)}</li>" for v in doc["no_captures"].values())
    body = (f'<p class="notes">IMPORTED: {html.escape(doc["imported"]["source"])}, a real call\'s RTC event log, not a '
            f"lab run. Call window: {html.escape(w['source'])}.</p>\n"
            + (page.chart_divs(figures) if figures else '<p class="notes">The log cannot be placed on Unix time (no '
               "begin event): no series to draw; the report has the counts.</p>")
            + f"\n<h2>Sections without captures</h2><ul>{missing}</ul>")
    return page.render(f"rtclab: imported event log {doc['imported']['source']}", body, figures)
