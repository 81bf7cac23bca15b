"""dashboard.html: one self-contained page per run (plotly.js embedded, no network), built from metrics.json and the
packet table. Figures are plain plotly JSON; a page script switches WebGL traces to SVG where WebGL is missing."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from . import page
from .fairness import headline_fairness
from .packets import DELIVERED, LOST, PacketTable, from_parquet
from .stats import percentiles

MAX_SCATTER_POINTS = 150_000  # per-packet delay points drawn; above it every k-th packet is drawn (stated on the chart)
MAX_SERIES_POINTS = 2_000
KIND_COLOURS = {"video": "#1f77b4", "audio": "#2ca02c", "tcp": "#d62728", "rtcp": "#9467bd", "rtx": "#17becf",
                "fec": "#bcbd22", "stun": "#7f7f7f", "dtls": "#8c564b", "udp": "#e377c2"}


def _flow_label(f: dict[str, Any]) -> str:
    ssrc = f" {f['ssrc']:08x}" if f.get("ssrc") is not None else ""
    owner = f"{f['call']}/{f['track']} " if f.get("call") else ""  # several calls or tracks (docs/multiflow.md)
    return f"{owner}{f['kind']}{ssrc} {f['src']}→{f['dst']}"


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


def _layout(m: dict[str, Any], title: str, ytitle: str,
            xtitle: str = "time since call start (s)", **extra: Any) -> dict:
    lay = {"title": {"text": title}, "xaxis": {"title": {"text": xtitle}}, "yaxis": {"title": {"text": ytitle}},
           "margin": {"l": 60, "r": 20, "t": 40, "b": 45}, "height": 340, "legend": {"orientation": "h", "y": -0.25},
           "shapes": _cross_shapes(m) if xtitle.startswith("time") else []}
    lay.update(extra)
    return lay


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
        traces.append({"type": "scatter", "mode": "lines", "name": f"received {_flow_label(f)}",
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


def capacity_traces(m: dict[str, Any], duration_s: float, scale: float = 1e-6) -> list[dict[str, Any]]:
    """The forward capacity as a step line over the call (its schedule, metrics.json capacity_steps), or the mean
    capacity flat for a run analysed before the steps existed; `scale` from bit/s to the panel's unit."""
    steps = m.get("capacity_steps")
    if steps:
        return [{"type": "scatter", "mode": "lines", "name": "capacity", "x": [t for t, _ in steps],
                 "y": [bps * scale for _, bps in steps], "line": {"color": "black", "dash": "dot", "shape": "hv"}}]
    cap = m.get("capacity_bps")
    if not cap:
        return []
    return [{"type": "scatter", "mode": "lines", "name": "capacity", "x": [0, duration_s], "y": [cap * scale] * 2,
             "line": {"color": "black", "dash": "dot"}}]


def _gs_series(m: dict[str, Any], direction: str, prefix: str) -> list[tuple[str, list]]:
    series = ((m.get("getstats") or {}).get("directions") or {}).get(direction, {}).get("series") or {}
    return [(k, v) for k, v in series.items() if k.split(":")[0] == prefix and v]


def _line(name: str, pts: list, scale: float = 1.0, **style: Any) -> dict[str, Any]:
    return {"type": "scatter", "mode": "lines", "name": name,
            "x": [round(p[0], 3) for p in pts], "y": [p[1] * scale for p in pts], **style}


def _stack(m: dict[str, Any], panels: list[tuple[str, str, list[dict]]], duration_s: float,
           shapes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One figure, one row per panel, all sharing the time axis: one plot call instead of six (each plot call costs
    a fixed 100-200 ms in Chromium here). `shapes`: more shapes on the shared time axis (the freezes' spans)."""
    n = len(panels)
    gap = 0.035
    row_h = (1 - gap * (n - 1)) / n
    data: list[dict] = []
    layout: dict[str, Any] = {"height": 230 * n + 80, "margin": {"l": 60, "r": 20, "t": 30, "b": 45},
                              "legend": {"orientation": "h", "y": -0.04}, "shapes": (shapes or []) + _cross_shapes(m),
                              "xaxis": {"title": {"text": "time since call start (s)"}, "range": [0, duration_s],
                                        "anchor": f"y{n}" if n > 1 else "y"},
                              "annotations": [], "hovermode": "x"}
    for i, (title, ytitle, traces) in enumerate(panels):
        axis = "y" if i == 0 else f"y{i + 1}"
        top = 1 - i * (row_h + gap)
        layout["yaxis" if i == 0 else f"yaxis{i + 1}"] = {"domain": [top - row_h, top], "anchor": "x",
                                                           "title": {"text": ytitle}}
        layout["annotations"].append({"text": f"<b>{title}</b>", "xref": "paper", "yref": "paper", "x": 0,
                                      "y": top, "xanchor": "left", "yanchor": "bottom", "showarrow": False})
        for tr in traces:
            data.append(dict(tr, xaxis="x", yaxis=axis, legendgroup=title))
    return {"data": data, "layout": layout}


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
    cc = [_line(f"sent (getStats) {k.split(':')[1]}", v, 1e-6) for k, v in _gs_series(m, "forward", "sent_bitrate_bps")]
    cc += [_line(f"target {k.split(':')[1]}", v, 1e-6) for k, v in _gs_series(m, "forward", "target_bitrate_bps")]
    cc += [_line("available outgoing bitrate (GCC estimate)", v, 1e-6)
           for _, v in _gs_series(m, "forward", "available_outgoing_bitrate_bps")]
    if cc:
        cc += capacity_traces(m, duration_s)
        panels.append(("Congestion controller at a: sent, target, available outgoing bitrate", "Mbit/s", cc))
    elif not no_call:
        omitted.append("congestion controller: no getStats from a")
    rtt = [_line(f"RTT {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "rtt_ms")]
    rttm = (m.get("getstats") or {}).get("rttm_ms")
    rtt += [_line(f"Tq = RTT - RTTm ({rttm:g} ms configured) {k.split(':')[1]}", v)
            for k, v in _gs_series(m, "forward", "tq_ms")]
    rtt += [_line(f"RTT - smallest RTT {k.split(':')[1]}", v, line={"dash": "dot"})
            for k, v in _gs_series(m, "forward", "tq_vs_min_rtt_ms")]
    if rtt:
        panels.append(("RTCP round-trip time and queuing delay Tq", "ms", rtt))
    elif not no_call:
        omitted.append("RTT and Tq: no remote-inbound-rtp RTT samples in getStats")
    q = ((m.get("bottleneck_queue") or {}).get("series") or {}).get("queue_delay_ms")
    if q:
        panels.append((f"Forward bottleneck queue, in ms at the link rate ({m['bottleneck_queue']['source']})", "ms",
                       [_line("queue (emulator counters)", q, line={"color": "#444"})]))
    # Right under the queue, on the same time axis: what the viewer at b saw, frame by frame; its freezes shade
    # every panel of the stack (the queue's too).
    frame_panels, freeze_shapes, frame_notes = _frame_panels(m)
    panels += frame_panels
    omitted += frame_notes
    panels += _meter_panels(m)
    controller = _controller_panels(m)
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
    fps = [_line(f"fps {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "received_fps")]
    height = [_line(f"frame height {k.split(':')[1]}", v) for k, v in _gs_series(m, "forward", "frame_height")]
    if fps:
        panels.append(("Received frames per second at b", "frames/s", fps))
    if height:
        panels.append(("Received resolution at b", "frame height (px)", height))
    if not fps and not height and not no_call:
        omitted.append("fps and resolution: no inbound video in getStats from b")
    cpu = _cpu_panel(m)
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
        traces.append({"type": "scattergl", "mode": "markers", "name": _flow_label(f),
                       "x": ((c["t_send_ns"][rows] - t0_ns) / 1e9).round(4).tolist(),
                       "y": (c["owd_ns"][rows] / 1e6).round(3).tolist(),
                       "marker": {"size": 3, "color": KIND_COLOURS.get(f["kind"])}})
    if not traces:
        return None
    title = "Per-packet one-way delay a → b" + (f" (every {step}th packet)" if step > 1 else "")
    return ("owd", {"data": traces,
                    "layout": _layout(m, title, "one-way delay (ms)",
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
        traces.append({"type": "scatter", "mode": "lines", "name": _flow_label(f), "x": xs.tolist(),
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
            traces.append({"type": "scatter", "mode": "lines", "name": f"{label} {_flow_label(f)}",
                           "x": [round(x, 3) for x in percentiles(v, q * 100) or []], "y": q.round(4).tolist(),
                           "line": {"dash": dash, "color": KIND_COLOURS.get(f["kind"])}})
    if not traces:
        return None
    return ("cdf", {"data": traces,
                    "layout": _layout(m, "CDF of one-way and queuing delay a → b", "fraction of packets",
                                                      xtitle="delay (ms)")})


def _ms_mean_p95(d: dict[str, Any] | None) -> str:
    if not d or d.get("mean") is None:
        return "-"
    return f"{d['mean']:.1f} ms mean, {d['p95']:.1f} p95"


def _cards(m: dict[str, Any]) -> str:
    video = next((f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"), None)
    v = m.get("validity") or {}
    cards = [("validity", "valid" if v.get("valid") else ("INVALID" if v.get("valid") is False else "unknown")),
             ("duration", "-" if m["run"].get("duration_s") is None else f"{m['run']['duration_s']:.1f} s"),
             ("capacity", f"{m['capacity_bps'] / 1e6:.2f} Mbit/s" if m.get("capacity_bps") else "-")]
    if m["run"].get("calls") == 0:
        cards.append(("call", "no call in this run"))
    if video:
        thr = (video.get("throughput_bps") or {}).get("mean")
        cards += [("video rate", f"{thr / 1e6:.2f} Mbit/s" if thr else "-"),
                  ("video utilisation", f"{100 * video['utilisation']:.0f} %"
                   if video.get("utilisation") is not None else "-"),
                  ("video queuing delay (OWD - propagation)", _ms_mean_p95(video.get("queuing_delay_ms"))),
                  ("video OWD - min OWD", _ms_mean_p95(video.get("queuing_delay_vs_min_owd_ms"))),
                  ("video loss", f"{100 * video['loss_ratio']:.2f} %" if video.get("loss_ratio") is not None else "-"),
                  ("video jitter", f"{video['jitter_ms']['mean']:.2f} ms" if video.get("jitter_ms") else "-")]
    tq = [s for s in (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {}).get("streams", [])
          if s.get("kind") == "video"]
    if tq:
        cards += [("video Tq = RTT - RTTm", _ms_mean_p95(tq[0].get("tq_ms"))),
                  ("video RTT - min RTT", _ms_mean_p95(tq[0].get("tq_vs_min_rtt_ms")))]
    shown = ((m.get("frames") or {}).get("b") or {})
    g2g = shown.get("glass_to_glass_ms") or {}
    if g2g.get("p50") is not None:
        cards.append(("glass-to-glass at b (frames)", f"{g2g['p50']:.0f} ms p50, {g2g['p95']:.0f} p95"))
    fz = shown.get("freezes") or {}
    if fz.get("time_ratio") is not None:
        ac = fz.get("as_chrome")
        chrome = (f"; as Chrome counts {ac['count']}, {ac['total_ms'] / 1000:.1f} s" if ac else
                  "; as Chrome counts: missing")
        cards.append(("freezes at b (Chrome's rule)", f"as shown {fz['count']}, {fz['total_ms'] / 1000:.1f} s "
                                                      f"({100 * fz['time_ratio']:.1f} % of the time shown){chrome}"))
    phase, fair = headline_fairness(m)
    if fair.get("jain_index") is not None:
        cards.append((f"Jain's index ({phase.replace('_', ' ')})", f"{fair['jain_index']:.3f}"))
    warn = sum(1 for c in m.get("crosschecks", []) if c["ok"] is False)
    cards.append(("cross-checks", f"{sum(1 for c in m.get('crosschecks', []) if c['ok'])} agree, {warn} warn"))
    return "".join(f'<div class="card"><div class="k">{html.escape(k)}</div><div '
                   f'class="v">{html.escape(val)}</div></div>'
                   for k, val in cards)


def _flow_table(m: dict[str, Any]) -> str:
    head = ["dir", "flow", "sent", "recv", "loss %", "owd p50", "owd p95", "owd p99", "queue mean (OWD - propagation)",
            "OWD - min OWD mean", "jitter mean", "reordered", "dup", "rate Mbit/s", "U %"]
    rows = []
    for f in m["flows"]:
        if f["packets_sent"] + f["packets_received"] < 20:
            continue
        j = f.get("jitter_ms") or {}
        fmt = lambda x, d=1: "-" if x is None else f"{x:.{d}f}"
        rows.append([f["direction"], _flow_label(f), f["packets_sent"], f["packets_received"],
                     fmt(None if f["loss_ratio"] is None else 100 * f["loss_ratio"], 2), fmt(f["owd_ms"]["p50"]),
                     fmt(f["owd_ms"]["p95"]), fmt(f["owd_ms"]["p99"]), fmt(f["queuing_delay_ms"]["mean"]),
                     fmt((f.get("queuing_delay_vs_min_owd_ms") or {}).get("mean")),
                     fmt(j.get("mean"), 2), f["reordered"], f["duplicates"],
                     fmt(None if (f.get("throughput_bps") or {}).get("mean") is None
                         else f["throughput_bps"]["mean"] / 1e6, 3),
                     fmt(None if f.get("utilisation") is None else 100 * f["utilisation"], 0)])
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    tr = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f'<table class="flows"><thead><tr>{th}</tr></thead><tbody>{tr}</tbody></table>'


def _multiflow_table(m: dict[str, Any]) -> str:
    """Per call and track (docs/multiflow.md), then each video flow's share against the share its priority asks
    for; empty for a run with one call of one video track."""
    mf = m.get("multiflow") or {}
    tracks = [(c, t) for c in mf.get("calls") or [] for t in c["tracks"]]
    if len([t for _, t in tracks if t["kind"] == "video"]) < 2:
        return ""
    fmt = lambda x, d=1, k=1.0: "-" if x is None else f"{x * k:.{d}f}"
    head = ["call/track", "active s", "priority", "DSCP", "rate Mbit/s", "steady Mbit/s", "converged after s",
            "CV (1 s)", "loss %", "queue mean ms", "queue p95 ms", "fps", "height"]
    rows = [[f"{c['id']}/{t['id']}", f"{c['start_s']:g}-{c['stop_s']:.1f}", t["priority"], t["dscp"],
             fmt(t["rate_bps"], 3, 1e-6), fmt(t["steady_rate_bps"], 3, 1e-6), fmt(t["convergence_s"], 0),
             fmt(t["rate_cv"], 2), fmt(t["loss_ratio"], 2, 100), fmt(t["queuing_delay_ms"]["mean"]),
             fmt(t["queuing_delay_ms"]["p95"]), fmt(t.get("fps_mean")), fmt(t.get("frame_height_median"), 0)]
            for c, t in tracks]
    sh = mf.get("shares") or {}
    share_head = ["call/track", "priority", "rate Mbit/s", "asked share", "achieved share", "achieved / asked"]
    share_rows = [[f"{x['call']}/{x['track']}", x["priority"], fmt(x["rate_bps"], 3, 1e-6), fmt(x["asked_share"], 2),
                   fmt(x["achieved_share"], 2), fmt(x["achieved_over_asked"], 2)] for x in sh.get("flows") or []]

    def table(h: list[str], r: list[list[Any]]) -> str:
        th = "".join(f"<th>{html.escape(x)}</th>" for x in h)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in row) + "</tr>" for row in r)
        return f'<table class="flows"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'
    period = (f"while every video flow is active, {sh['start_s']:.1f}-{sh['end_s']:.1f} s; Jain's index "
              f"{fmt(sh.get('jain_index'), 3)}" if sh.get("flows")
              else html.escape(sh.get("note") or "no shared period"))
    return (f"<h2>Calls and tracks</h2>{table(head, rows)}<h2>Priority shares ({period})</h2>"
            f"{table(share_head, share_rows)}")


def _notes(m: dict[str, Any], omitted: list[str]) -> str:
    items = [("gap", g) for g in m.get("gaps", [])] + [("problem", p) for p in m.get("problems", [])] + \
        [("warning", w) for w in m.get("warnings", [])] + [("omitted", o) for o in omitted]
    if not items:
        return ""
    return "<ul class=notes>" + "".join(f"<li><b>{k}</b>: {html.escape(v)}</li>" for k, v in items) + "</ul>"


# The run dashboard's own style (page.py has the shared one).
STYLE = """.cards{display:flex;flex-wrap:wrap;gap:8px}
.card{border:1px solid #ccc;border-radius:6px;padding:8px 12px;min-width:130px}
.card .k{font-size:12px;color:#666} .card .v{font-size:17px;font-weight:600} .chart{min-height:340px}
table.flows{margin-top:16px} table.flows td,table.flows th{text-align:right}"""


def render(m: dict[str, Any], t: PacketTable | None) -> str:
    figs, omitted = figures(m, t)
    title = f"rtclab run {m['run']['id']} — {m['run'].get('scenario') or ''}"
    body = (f'<div class="cards">{_cards(m)}</div>\n{_notes(m, omitted)}\n{page.chart_divs(figs)}\n<h2>Flows</h2>\n'
            f"{_multiflow_table(m)}{_flow_table(m)}")
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


STATE_COLOURS = {"overusing": "rgba(214, 39, 40, 0.25)", "underusing": "rgba(31, 119, 180, 0.2)"}


# The limiter of the target (eventlog/limits.py), as a strip under the rates.
LIMITER_COLOURS = {"delay_based": "rgba(214, 39, 40, 0.6)", "probe": "rgba(255, 127, 14, 0.7)",
                   "loss_based": "rgba(44, 160, 44, 0.6)", "receiver_limit": "rgba(148, 103, 189, 0.6)",
                   "undetermined": "rgba(127, 127, 127, 0.35)"}


def _bands_trace(bands: list[list[Any]], state: str, lo: float, hi: float,
                 colours: dict[str, str] = STATE_COLOURS, label: str = "logged") -> dict[str, Any] | None:
    """Labelled intervals as shaded bands (the logged detector state, the target's limiter): one filled polygon per
    interval, in one trace per label."""
    x: list[float | None] = []
    y: list[float | None] = []
    for start, end, s in bands:
        if s == state:
            x += [start, start, end, end, start, None]
            y += [lo, hi, hi, lo, lo, None]
    if not x:
        return None
    return {"type": "scatter", "mode": "lines", "fill": "toself", "name": f"{label}: {state}", "x": x, "y": y,
            "line": {"width": 0}, "fillcolor": colours[state], "hoverinfo": "name"}


def _controller_panels(m: dict[str, Any]) -> list[tuple[str, str, list[dict]]]:
    """GCC at a from its RTC event log: the estimates and probes; the replayed trend m(t) against +-gamma(t) over
    the detector state Chrome logged (docs/eventlog.md)."""
    a = ((m.get("congestion_controller") or {}).get("sides") or {}).get("a") or {}
    ser = a.get("series")
    if not ser:
        return []
    rates = [_line("target (lower of the two)", ser["target_bps"], 1e-6, line={"shape": "hv", "color": "black"}),
             _line("delay-based estimate", ser["delay_based_bps"], 1e-6, line={"shape": "hv", "color": "#d62728"}),
             _line("loss-based estimate", ser["loss_based_bps"], 1e-6,
                   line={"shape": "hv", "color": "#2ca02c", "dash": "dot"})]
    rates = [r for r in rates if r["x"]]
    for name, key, symbol in (("probe cluster", "probe_clusters_bps", "triangle-up"),
                              ("probe result", "probe_results_bps", "circle-open")):
        pts = ser.get(key) or []
        if pts:
            rates.append({"type": "scatter", "mode": "markers", "name": name, "x": [p[0] for p in pts],
                          "y": [p[1] * 1e-6 for p in pts], "marker": {"symbol": symbol, "size": 7}})
    rates += capacity_traces(m, m["run"].get("duration_s") or 0)
    title = "GCC at a (RTC event log): target, delay-based and loss-based estimates, probes"
    limit_bands = (a.get("limits") or {}).get("bands") or []
    if limit_bands:
        # A strip below zero, 6 % of the target's range high: which estimate set the target at each moment.
        top = max([p[1] * 1e-6 for p in ser["target_bps"]] or [1.0])
        rates += [b for b in (_bands_trace(limit_bands, name, -0.06 * top, 0.0, LIMITER_COLOURS, "target limited by")
                              for name in LIMITER_COLOURS) if b]
        title += "; strip below: the estimate that set the target"
    out = [(title, "Mbit/s", rates)]
    m_pts, g_pts = ser.get("replay_m_ms") or [], ser.get("replay_gamma_ms") or []
    if m_pts:
        values = [p[1] for p in m_pts if p[1] == p[1]] + [p[1] for p in g_pts] + [-p[1] for p in g_pts]
        lo, hi = (min(values), max(values)) if values else (-1.0, 1.0)
        traces = [b for b in (_bands_trace(ser.get("detector_bands") or [], s, lo, hi) for s in STATE_COLOURS) if b]
        traces += [_line("m(t), replayed trend", m_pts, line={"color": "#444"}),
                   _line("+gamma(t)", g_pts, line={"color": "#d62728", "dash": "dash"}),
                   _line("-gamma(t)", [[p[0], -p[1]] for p in g_pts], line={"color": "#1f77b4", "dash": "dash"})]
        rep = a.get("replay") or {}
        agree = rep.get("update_agreement")
        title = "Over-use detector at a: replayed m(t) and gamma(t); bands: the state Chrome logged"
        if agree is not None:
            title += f" (agreement {agree * 100:.1f}% of {rep.get('updates')} logged updates)"
        out.append((title, "ms", traces))
    return out


def _meter_panels(m: dict[str, Any]) -> list[tuple[str, str, list[dict]]]:
    """The bottleneck's rate meters from their action logs (docs/ecn.md): each metered flow's rate per window
    against its limit; then what each meter did: the CE fraction in force (ce_fraction), or 1 while a demote or
    CE-all hold ran."""
    actions = (m.get("ground_truth") or {}).get("meter_actions") or {}
    rates: list[dict] = []
    acts: list[dict] = []
    for direction, d in actions.items():
        for s in d.get("series", []):
            name = f"{direction} meter {s['meter']} {s['flow']}"
            rates.append({"type": "scatter", "mode": "lines", "name": f"{name} rate", "x": s["t_s"],
                          "y": [r / 1e3 for r in s["rate_kbit"]], "line": {"shape": "hv"}})
            if s.get("limit_kbit") and s["t_s"]:
                rates.append({"type": "scatter", "mode": "lines", "name": f"{name} limit",
                              "x": [s["t_s"][0], s["t_s"][-1]],
                              "y": [s["limit_kbit"] / 1e3] * 2, "line": {"dash": "dot", "color": "black"}})
            if s["action"] == "ce_fraction":
                acts.append({"type": "scatter", "mode": "lines", "name": f"{name} CE fraction", "x": s["t_s"],
                             "y": s["fraction"], "line": {"shape": "hv"}})
            elif s["holds"]:
                x: list[float | None] = []
                y: list[float | None] = []
                for start, end in s["holds"]:
                    x += [start, start, end, end, None]
                    y += [0, 1, 1, 0, None]
                acts.append({"type": "scatter", "mode": "lines", "name": f"{name} {s['action']} hold", "x": x, "y": y,
                             "fill": "toself"})
    if not rates:
        return []
    return [("Rate meters at the bottleneck (action log): rate per window and limit", "Mbit/s", rates),
            ("Meter actions: CE-mark fraction in force, or 1 while a demote / CE-all hold runs", "fraction", acts)]


CPU_COLOURS = {"bottleneck": "#d62728", "capture": "#9467bd", "iperf3": "#8c564b", "harness": "#7f7f7f"}
CHROMIUM_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#17becf", "#bcbd22", "#e377c2")


def _cpu_panel(m: dict[str, Any]) -> tuple[str, str, list[dict]] | None:
    """Where the machine's CPU went (cpu.jsonl; docs/metrics.md, "CPU"): each component of the run stacked, then
    what the run does not account for, up to the host's busy cores (a line), against the machine's cores."""
    c = m.get("cpu") or {}
    ser = c.get("series") or {}
    x = ser.get("t_s") or []
    if not x:
        return None
    traces: list[dict] = []
    browsers = 0
    # The stack in the order of the call's means (largest at the bottom); components only seen outside it last.
    order = list(c.get("components") or {}) + [k for k in ser.get("components", {})
                                               if k not in (c.get("components") or {})]
    for name in order:
        y = ser["components"].get(name)
        if y is None:
            continue
        colour = CPU_COLOURS.get(name)
        if colour is None and name.startswith("chromium-"):
            colour, browsers = CHROMIUM_COLOURS[browsers % len(CHROMIUM_COLOURS)], browsers + 1
        traces.append({"type": "scatter", "mode": "lines", "stackgroup": "cpu", "name": name, "x": x, "y": y,
                       "line": {"width": 0.5, **({"color": colour} if colour else {})}})
    traces.append({"type": "scatter", "mode": "lines", "stackgroup": "cpu", "name": "outside the run", "x": x,
                   "y": ser.get("outside_run") or [], "line": {"width": 0.5, "color": "#c7c7c7"}})
    traces.append({"type": "scatter", "mode": "lines", "name": "host busy (/proc/stat)", "x": x,
                   "y": ser.get("host_busy") or [], "line": {"color": "black", "width": 1.5}})
    cpus = c.get("cpus")
    if cpus:
        traces.append({"type": "scatter", "mode": "lines", "name": f"the machine ({cpus} cores)", "x": [x[0], x[-1]],
                       "y": [cpus, cpus], "line": {"color": "black", "dash": "dot"}})
    return ("CPU per component of the run (cpu.jsonl), stacked; outside the run = host busy - the run's processes",
            "cores", traces)


# The frame panel's traces: glass-to-glass delay and its three parts (metrics.json frames.<side>.series).
FRAME_PARTS = (("glass_to_glass_ms", "glass-to-glass (capture → display)", "#222222", 1.6),
               ("sender_ms", "sender (capture → first packet leaves a)", "#ff7f0e", 1.0),
               ("network_ms", "network (first packet leaves a → last arrives at b)", "#1f77b4", 1.0),
               ("receiver_ms", "receiver (last packet arrives → display)", "#2ca02c", 1.0))
FREEZE_FILL = "#d62728"


def _frame_panels(m: dict[str, Any]) -> tuple[list[tuple[str, str, list[dict]]], list[dict[str, Any]], list[str]]:
    """What the viewer at b saw (metrics.json `frames.b`; docs/metrics.md, "Frames"), on the stack's time axis:
    (panels, shapes, notes). The panel: each shown frame's glass-to-glass delay and its sender, network and receiver
    parts at its display time (`series`, the per-frame rows the analyzer computed), and the frames sent but never
    shown as crosses at 0 at their departure from a; the shapes: each freeze (`freezes.list`, Chrome's rule) as a
    span shaded across every panel, the queue's included. A picture-quality series per sampled frame (issue 20
    item 5) goes in as one more panel here, built the same way from its own rows, under the same shading."""
    if m["run"].get("calls") == 0:
        return [], [], []
    side = (m.get("frames") or {}).get("b")
    if not side:
        return [], [], ["frames: the receiving page at b recorded none (no frames-b.jsonl: a run from before it, or "
                        "RTCLAB_FRAMES_READ_EVERY=0)"]
    if not side.get("records"):
        return [], [], ["frames: frames-b.jsonl holds no frame presented during the call"]
    ser = side.get("series")
    if not ser:
        return [], [], ["frames: metrics.json holds no per-frame series (analysed before it existed): run "
                        "`rtclab analyze` on the run again"]
    traces: list[dict] = []
    for key, name, colour, width in FRAME_PARTS:
        if any(v is not None for v in ser.get(key) or []):
            traces.append({"type": "scatter", "mode": "lines", "name": name, "x": ser["t_s"], "y": ser[key],
                           "line": {"color": colour, "width": width}})
    never = ser.get("never_shown_t_s") or []
    if never:
        traces.append({"type": "scatter", "mode": "markers", "name": f"sent, never shown ({len(never)}; at "
                       "departure from a)", "x": never, "y": [0] * len(never),
                       "marker": {"symbol": "x-thin", "size": 7, "color": FREEZE_FILL, "line": {"width": 1.5,
                                                                                          "color": FREEZE_FILL}}})
    fz = side.get("freezes") or {}
    spans = fz.get("list") or []
    shapes = [{"type": "rect", "xref": "x", "yref": "paper", "x0": f["start_s"],
               "x1": f["start_s"] + f["duration_ms"] / 1000.0, "y0": 0, "y1": 1, "fillcolor": FREEZE_FILL,
               "opacity": 0.15, "line": {"width": 0}, "layer": "below"} for f in spans]
    notes = []
    if (fz.get("count") or 0) > len(spans):
        notes.append(f"frames: {fz['count'] - len(spans)} freezes after the first {len(spans)} are not shaded "
                     "(metrics.json lists the first 100)")
    if not traces:
        return [], shapes, notes + ["frames: no shown frame was joined with its packets (no delays to draw)"]
    withheld = side.get("withheld") or {}
    notes += [f"frames: {group} withheld (the summaries are null): {why}" for group, why in withheld.items()]
    total = "-" if fz.get("total_ms") is None else f"{fz['total_ms'] / 1000:.1f} s"
    count = "-" if fz.get("count") is None else fz["count"]
    shaded = (f"freezes withheld ({withheld['freezes']})" if "freezes" in withheld else
              f"shaded in every panel: {count} freezes (Chrome's rule), {total}")
    title = f"Frames shown at b: glass-to-glass delay and its parts, per frame at its display time; {shaded}"
    return [(title, "ms", traces)], shapes, notes
