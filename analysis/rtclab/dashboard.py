"""dashboard.html: one self-contained page per run (plotly.js embedded, no network), built from metrics.json and the
packet table. Figures are plain plotly JSON; a page script switches WebGL traces to SVG where WebGL is missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from . import page
from .dashboard_panels import controller_panels, cpu_panel, frame_panels, meter_panels
from .dashboard_tables import cards, flow_table, imported_note, multiflow_table, notes
from .dashboard_traces import capacity_traces, flow_label, line_trace
from .packets import DELIVERED, LOST, PacketTable, from_parquet
from .stats import percentiles

MAX_SCATTER_POINTS = 150_000  # per-packet delay points drawn; above it every k-th packet is drawn (stated on the chart)
MAX_SERIES_POINTS = 2_000
KIND_COLOURS = {"video": "#1f77b4", "audio": "#2ca02c", "tcp": "#d62728", "rtcp": "#9467bd", "rtx": "#17becf",
                "fec": "#bcbd22", "stun": "#7f7f7f", "dtls": "#8c564b", "udp": "#e377c2"}


# One colour per call/track when several media flows share the bottleneck, so their rates overlay legibly.
FLOW_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def _flow_colour(m: dict[str, Any], f: dict[str, Any]) -> str | None:
    owners = sorted({(x["call"], x["track"]) for x in m["flows"] if x.get("call")})
    if len(owners) < 2 or not f.get("call"):
        return KIND_COLOURS.get(f["kind"])
    return FLOW_PALETTE[owners.index((f["call"], f["track"])) % len(FLOW_PALETTE)]


def _join_leave_shapes(m: dict[str, Any]) -> list[dict[str, Any]]:
    """Vertical lines where a call joins (green) or leaves (red) during the run."""
    shapes = []
    duration_s = m["run"].get("duration_s") or 0.0
    for c in (m.get("multiflow") or {}).get("calls") or []:
        for x, colour in ((c["start_s"], "#2ca02c"), (c["stop_s"], "#d62728")):
            if x is not None and 0 < x < duration_s - 1e-3:
                shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                               "line": {"dash": "dot", "color": colour, "width": 1.5}})
    return shapes


def _cross_shapes(m: dict[str, Any]) -> list[dict[str, Any]]:
    """Vertical lines where cross traffic starts and stops."""
    shapes = []
    for p in m.get("phases", []):
        if p["name"] == "all" or p["start_s"] <= 0:
            continue
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": p["start_s"], "x1": p["start_s"],
                       "y0": 0, "y1": 1, "line": {"dash": "dash", "color": "#555", "width": 1}})
    return shapes + _join_leave_shapes(m)


# The stack's geometry, in px: a panel is at least PANEL_PX high, and higher when its legend (beside it, one entry a
# LEGEND_ENTRY_PX line) needs it; PANEL_GAP_PX between panels holds the next panel's title.
PANEL_PX = 230
LEGEND_ENTRY_PX = 19
LEGEND_PAD_PX = 20  # the legend's own padding, above and below its entries
PANEL_GAP_PX = 32
STACK_MARGIN = {"l": 60, "r": 20, "t": 30, "b": 45}


def legend_beside(y_top: float, height_px: float) -> dict[str, Any]:
    """A legend to the right of the plot area, its top at `y_top` (paper), scrolling past `height_px` rather than
    running into what is below (plotly pushes the right margin out to fit the widest legend)."""
    return {"x": 1.01, "xanchor": "left", "y": y_top, "yanchor": "top", "orientation": "v", "maxheight": height_px,
            "font": {"size": 11}, "tracegroupgap": 0}


def _layout(m: dict[str, Any], title: str, ytitle: str, entries: int,
            xtitle: str = "time since call start (s)") -> dict:
    """A figure of one panel, with `entries` traces in its legend beside it."""
    margin = {"l": 60, "r": 20, "t": 40, "b": 45}
    plot_px = max(PANEL_PX + 25, LEGEND_ENTRY_PX * entries + LEGEND_PAD_PX)
    return {"title": {"text": title}, "xaxis": {"title": {"text": xtitle}}, "yaxis": {"title": {"text": ytitle}},
            "margin": margin, "height": plot_px + margin["t"] + margin["b"], "showlegend": True,
            "legend": legend_beside(1, plot_px),
            "shapes": _cross_shapes(m) if xtitle.startswith("time") else []}


def _window_s(duration_s: float) -> float:
    return max(0.5, duration_s / MAX_SERIES_POINTS)


def _rate_traces(m: dict[str, Any], t: PacketTable, t0_ns: int, duration_s: float) -> list[dict[str, Any]]:
    c = t.cols
    w = _window_s(duration_s)
    traces = []
    n_bins = max(1, int(np.ceil(duration_s / w)))
    for f in m["flows"]:
        if f["direction"] != "forward" or f["packets_received"] + f.get("unmatched_arrivals", 0) < 20:
            continue
        rows = t.rows_of(f["id"])
        rows = rows[(c["status"][rows] == DELIVERED) | (c["status"][rows] == 3)]
        tr = (c["t_recv_ns"][rows] - t0_ns) / 1e9
        keep = (tr >= 0) & (tr < n_bins * w)
        rate = np.bincount((tr[keep] // w).astype(np.int64), weights=c["ip_len"][rows][keep] + 14.0,
                           minlength=n_bins)[:n_bins] * 8 / w / 1e6
        traces.append({"type": "scatter", "mode": "lines", "name": f"received {flow_label(f)}",
                       "x": (np.arange(n_bins) * w + w / 2).round(3).tolist(), "y": rate.round(4).tolist(),
                       "line": {"color": _flow_colour(m, f), "width": 1.5}})
    # Everything a sent towards b, by departure time at a: the offered load the capacity line is compared with.
    fwd = np.flatnonzero((c["direction"] == 0) & (c["t_send_ns"] >= 0))
    ts = (c["t_send_ns"][fwd] - t0_ns) / 1e9
    keep = (ts >= 0) & (ts < n_bins * w)
    sent = np.bincount((ts[keep] // w).astype(np.int64), weights=c["ip_len"][fwd][keep] + 14.0,
                       minlength=n_bins)[:n_bins] * 8 / w / 1e6
    traces.append({"type": "scatter", "mode": "lines", "name": "sent by a, all forward traffic",
                   "x": (np.arange(n_bins) * w + w / 2).round(3).tolist(), "y": sent.round(4).tolist(),
                   "line": {"color": "#999", "width": 1, "dash": "dash"}})
    traces += capacity_traces(m, duration_s)
    return traces


def _gs_series(m: dict[str, Any], direction: str, prefix: str) -> list[tuple[str, list]]:
    series = ((m.get("getstats") or {}).get("directions") or {}).get(direction, {}).get("series") or {}
    return [(k, v) for k, v in series.items() if k.split(":")[0] == prefix and v]


Panel = tuple[str, str, list[dict]]  # (title, y-axis title, traces) of one panel of the stack


def _stack(m: dict[str, Any], panels: list[tuple[str, str, list[dict]]], duration_s: float,
           shapes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One figure, one row per panel, all sharing the time axis: one plot call instead of six (each plot call costs
    a fixed 100-200 ms in Chromium here), and zooming one panel zooms all. Each panel has its own legend (plotly's
    legend, legend2, ...) beside it. `shapes`: more shapes on the shared time axis (the freezes' spans)."""
    n = len(panels)
    heights = [max(PANEL_PX, LEGEND_ENTRY_PX * sum(tr.get("showlegend", True) for tr in traces) + LEGEND_PAD_PX)
               for _, _, traces in panels]
    plot_px = sum(heights) + PANEL_GAP_PX * (n - 1)
    data: list[dict] = []
    layout: dict[str, Any] = {"height": plot_px + STACK_MARGIN["t"] + STACK_MARGIN["b"], "margin": dict(STACK_MARGIN),
                              "shapes": (shapes or []) + _cross_shapes(m),
                              "xaxis": {"title": {"text": "time since call start (s)"}, "range": [0, duration_s],
                                        "anchor": f"y{n}" if n > 1 else "y"},
                              "annotations": [], "hovermode": "x", "showlegend": True}
    above_px = 0  # from the plot area's top to this panel's
    for i, (title, ytitle, traces) in enumerate(panels):
        suffix = "" if i == 0 else str(i + 1)
        top = 1 - above_px / plot_px
        layout[f"yaxis{suffix}"] = {"domain": [top - heights[i] / plot_px, top], "anchor": "x",
                                    "title": {"text": ytitle}}
        layout[f"legend{suffix}"] = legend_beside(top, heights[i])
        layout["annotations"].append({"text": f"<b>{title}</b>", "xref": "paper", "yref": "paper", "x": 0,
                                      "y": top, "xanchor": "left", "yanchor": "bottom", "showarrow": False})
        for tr in traces:
            data.append(dict(tr, xaxis="x", yaxis=f"y{suffix}", legend=f"legend{suffix}"))
        above_px += heights[i] + PANEL_GAP_PX
    return {"data": data, "layout": layout}


def _call_panels(m: dict[str, Any], duration_s: float, no_call: bool) -> tuple[list[Panel], list[str]]:
    """The panels from the call's getStats and the bottleneck's queue, in the stack's order (the sender's rates
    against the capacity, RTT and Tq, the queue), and a sentence for each left out and why."""
    panels: list[Panel] = []
    omitted: list[str] = []
    cc = [line_trace(f"sent (getStats) {k.split(':')[1]}", v, 1e-6)
          for k, v in _gs_series(m, "forward", "sent_bitrate_bps")]
    cc += [line_trace(f"target {k.split(':')[1]}", v, 1e-6) for k, v in _gs_series(m, "forward", "target_bitrate_bps")]
    cc += [line_trace("available outgoing bitrate (GCC estimate)", v, 1e-6)
           for _, v in _gs_series(m, "forward", "available_outgoing_bitrate_bps")]
    if cc:
        cc += capacity_traces(m, duration_s)
        panels.append(("Congestion controller at a: sent, target, available outgoing bitrate", "Mbit/s", cc))
    elif not no_call:
        omitted.append("congestion controller: no getStats from a")
    rtt = [line_trace(f"RTT {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "rtt_ms")]
    rttm = (m.get("getstats") or {}).get("rttm_ms")
    rtt += [line_trace(f"Tq = RTT - RTTm ({rttm:g} ms configured) {k.split(':')[1]}", v)
            for k, v in _gs_series(m, "forward", "tq_ms")]
    rtt += [line_trace(f"RTT - smallest RTT {k.split(':')[1]}", v, line={"dash": "dot"})
            for k, v in _gs_series(m, "forward", "tq_vs_min_rtt_ms")]
    if rtt:
        panels.append(("RTCP round-trip time and queuing delay Tq", "ms", rtt))
    elif not no_call:
        omitted.append("RTT and Tq: no remote-inbound-rtp RTT samples in getStats")
    q = ((m.get("bottleneck_queue") or {}).get("series") or {}).get("queue_delay_ms")
    if q:
        panels.append((f"Forward bottleneck queue, in ms at the link rate ({m['bottleneck_queue']['source']})", "ms",
                       [line_trace("queue (emulator counters)", q, line={"color": "#444"})]))
    return panels, omitted


def _received_video_panels(m: dict[str, Any], no_call: bool) -> tuple[list[Panel], list[str]]:
    """The received video's frame rate and resolution at b (getStats), and a sentence when neither is there."""
    panels: list[Panel] = []
    omitted: list[str] = []
    fps = [line_trace(f"fps {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "received_fps")]
    height = [line_trace(f"frame height {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "frame_height")]
    if fps:
        panels.append(("Received frames per second at b", "frames/s", fps))
    if height:
        panels.append(("Received resolution at b", "frame height (px)", height))
    if not fps and not height and not no_call:
        omitted.append("fps and resolution: no inbound video in getStats from b")
    return panels, omitted


def figures(m: dict[str, Any], t: PacketTable | None) -> tuple[list[tuple[str, dict]], list[str]]:
    """(id, {data, layout}) for each chart with data, and a sentence for each panel left out and why."""
    figs: list[tuple[str, dict]] = []
    omitted: list[str] = []
    panels: list[tuple[str, str, list[dict]]] = []
    duration_s = m["run"].get("duration_s") or 0.0
    call_start = m["run"].get("call_start")
    # Packet times are epoch ns: without the call's start (t = 0) they belong nowhere on the charts' axis.
    t0_ns = int(round(call_start * 1e9)) if isinstance(call_start, (int, float)) else None
    have_packets = t is not None and len(t) > 0 and t0_ns is not None
    no_call = m["run"].get("calls") == 0  # its call panels are left out with one note, not one per panel
    if no_call:
        omitted.append("the call's panels (getStats, congestion controller, RTT and Tq, fps): no call in this run")
    if t is not None and have_packets and t0_ns is not None:
        rates = _rate_traces(m, t, t0_ns, duration_s)
        if rates:
            panels.append(("Receive rate per flow at b, send rate at a (captures), capacity", "Mbit/s", rates))
    elif t is not None and len(t) > 0:
        omitted.append("rates, loss events and per-packet delay: metrics.json has no run.call_start (t = 0)")
    else:
        omitted.append("rates, loss events and per-packet delay: no capture could be read")
    call_panels, call_notes = _call_panels(m, duration_s, no_call)
    panels += call_panels
    omitted += call_notes
    # Right under the queue, on the same time axis: what the viewer at b saw, frame by frame; its freezes shade
    # every panel of the stack (the queue's too).
    frames, freeze_shapes, frame_notes = frame_panels(m)
    panels += frames
    omitted += frame_notes
    panels += meter_panels(m)
    controller = controller_panels(m)
    if controller:
        panels += controller
    elif m.get("congestion_controller") is None and not no_call:
        omitted.append("GCC's state from the RTC event log: the run has no eventlog-a.log (call.event_log off, or a "
                       "run from before it was recorded)")
    if t is not None and have_packets and t0_ns is not None:
        loss = _loss_traces(m, t, t0_ns, duration_s)
        if loss:
            panels.append(loss)
        else:
            omitted.append("loss events: no forward packet was lost")
    video_panels, video_notes = _received_video_panels(m, no_call)
    panels += video_panels
    omitted += video_notes
    cpu = cpu_panel(m)
    if cpu:
        panels.append(cpu)
    else:
        omitted.append("CPU per component: the run has no cpu.jsonl (a run from before it was recorded) "
                       "or no sample in it")
    if panels:
        figs.append(("timeseries", _stack(m, panels, duration_s, freeze_shapes)))
    if t is not None and have_packets and t0_ns is not None:
        owd = _owd_scatter(m, t, t0_ns)
        if owd:
            figs.append(owd)
        cdf = _cdf(m, t)
        if cdf:
            figs.append(cdf)
    return figs, omitted


def _owd_scatter(m: dict[str, Any], t: PacketTable, t0_ns: int) -> tuple[str, dict] | None:
    c = t.cols
    traces = []
    total = sum(f["packets_received"] for f in m["flows"] if f["direction"] == "forward")
    step = max(1, int(np.ceil(total / MAX_SCATTER_POINTS)))
    for f in m["flows"]:
        if f["direction"] != "forward" or f["packets_received"] < 20:
            continue
        rows = t.rows_of(f["id"])
        rows = rows[c["status"][rows] == DELIVERED][::step]
        traces.append({"type": "scattergl", "mode": "markers", "name": flow_label(f),
                       "x": ((c["t_send_ns"][rows] - t0_ns) / 1e9).round(4).tolist(),
                       "y": (c["owd_ns"][rows] / 1e6).round(3).tolist(),
                       "marker": {"size": 3, "color": KIND_COLOURS.get(f["kind"])}})
    if not traces:
        return None
    title = "Per-packet one-way delay a → b" + (f" (every {step}th packet)" if step > 1 else "")
    return ("owd", {"data": traces,
                    "layout": _layout(m, title, "one-way delay (ms)", len(traces),
                                      xtitle="time since call start (s), at departure")})


def _loss_traces(m: dict[str, Any], t: PacketTable, t0_ns: int,
                 duration_s: float) -> tuple[str, str, list[dict]] | None:
    c = t.cols
    w = max(1.0, _window_s(duration_s))
    traces = []
    for f in m["flows"]:
        if f["direction"] != "forward" or not f["packets_lost"]:
            continue
        rows = t.rows_of(f["id"])
        rows = rows[c["status"][rows] == LOST]
        ts = (c["t_send_ns"][rows] - t0_ns) / 1e9
        n_bins = max(1, int(np.ceil(duration_s / w)))
        keep = (ts >= 0) & (ts < n_bins * w)
        counts = np.bincount((ts[keep] // w).astype(np.int64), minlength=n_bins)[:n_bins]
        nz = np.flatnonzero(counts)
        # Stems from zero to the count (a bar chart drawn with scatter lines: the small bundle has no bar trace).
        xs = np.repeat(nz * w + w / 2, 3).astype(float).round(3)
        ys = np.column_stack([np.zeros(nz.size), counts[nz], np.full(nz.size, np.nan)]).ravel()
        traces.append({"type": "scatter", "mode": "lines", "name": flow_label(f), "x": xs.tolist(),
                       "y": [None if np.isnan(v) else float(v) for v in ys],
                       "line": {"color": KIND_COLOURS.get(f["kind"]), "width": 3}})
    if not traces:
        return None
    return (f"Lost packets a → b per {w:g} s (by departure time)", "packets", traces)


def _cdf(m: dict[str, Any], t: PacketTable) -> tuple[str, dict] | None:
    c = t.cols
    traces = []
    for f in m["flows"]:
        if f["direction"] != "forward" or f["packets_received"] < 20:
            continue
        rows = t.rows_of(f["id"])
        rows = rows[c["status"][rows] == DELIVERED]
        for col, label, dash in (("owd_ns", "one-way", "solid"),
                                 ("queuing_delay_ns", "queuing (OWD - propagation)", "dot"),
                                 ("queuing_delay_vs_min_owd_ns", "OWD - min OWD", "dashdot")):
            v = np.sort(c[col][rows]) / 1e6
            v = v[v >= 0]  # -1: unknown (no configured propagation delay)
            if not v.size:
                continue
            q = np.linspace(0, 1, min(200, v.size))
            traces.append({"type": "scatter", "mode": "lines", "name": f"{label} {flow_label(f)}",
                           "x": [round(x, 3) for x in percentiles(v, q * 100) or []], "y": q.round(4).tolist(),
                           "line": {"dash": dash, "color": KIND_COLOURS.get(f["kind"])}})
    if not traces:
        return None
    return ("cdf", {"data": traces,
                    "layout": _layout(m, "CDF of one-way and queuing delay a → b", "fraction of packets",
                                      len(traces), xtitle="delay (ms)")})


# The run dashboard's own style (page.py has the shared one).
STYLE = """.cards{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ccc;border-radius:6px;padding:8px 12px;min-width:130px}
.card .k{font-size:12px;color:#666} .card .v{font-size:17px;font-weight:600} .chart{min-height:340px}
table.flows{margin-top:16px} table.flows td,table.flows th{text-align:right}"""


def render(m: dict[str, Any], t: PacketTable | None) -> str:
    figs, omitted = figures(m, t)
    title = f"rtclab run {m['run']['id']} — {m['run'].get('scenario') or ''}"
    body = (f'{imported_note(m)}<div class="cards">{cards(m)}</div>\n{notes(m, omitted)}\n{page.chart_divs(figs)}\n'
            "<h2>Flows</h2>\n"
            f"{multiflow_table(m)}{flow_table(m)}")
    return page.render(title, body, figs, style=STYLE, full_plotly=False)


def write(run_dir: Path, m: dict[str, Any], t: PacketTable | None) -> Path:
    path = run_dir / "dashboard.html"
    path.write_text(render(m, t), encoding="utf-8")
    return path


class DashboardError(Exception):
    pass


def rebuild(run_dir: Path) -> Path:
    """dashboard.html again from what `rtclab analyze` wrote (metrics.json, packets.parquet), without re-analysing:
    the captures are not read. Without packets.parquet the per-packet charts are left out (and said so)."""
    mpath = run_dir / "metrics.json"
    try:
        m = json.loads(mpath.read_text())
    except FileNotFoundError:
        raise DashboardError(f"{mpath} missing: run `rtclab analyze {run_dir}` first") from None
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        raise DashboardError(f"{mpath} unreadable: {e}") from None
    ppath = run_dir / "packets.parquet"
    table = None
    if ppath.exists():
        try:
            table = from_parquet(ppath)
        except Exception as e:  # pyarrow raises several kinds for a damaged file; the dashboard stands without it
            raise DashboardError(f"{ppath} unreadable: {type(e).__name__}: {e}") from None
    return write(run_dir, m, table)


