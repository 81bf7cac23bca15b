"""OUT/dashboard.html: one offline page per study (plotly.js embedded), from study.json and the runs' own files
(metrics.json, packets.parquet) only. The reference studies' figure kinds: bars with 95% CI error bars per point, boxes
of queuing delay (p25/p50/p75, whiskers p5/p95), metrics against a swept numeric parameter, time series of chosen
runs overlaid, and the points' runs linked. Every figure has a phase selector and says its phase (docs/studies.md)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import multiflow
from .. import page as pages
from .aggregate import summarise
from .catalogue import CPU_FLOW, FRAMES_FLOW
from .dashboard_tables import excluded_table, frames_table, points_table
from .metric_rows import flow_labels
from .points import VIDEO, groups, main_flow, numeric_parameters, same_partition, varied
from .report import CPU_METRICS, HEADERS, fmt_stat, phase_names, phase_title, report_phases, scale, stat

# (flow, metric, title) of the bar charts; the fair-share chart adds the TCP competitors' mean share.
BARS = [(VIDEO, "utilisation", "Channel utilisation U of the video flow"),
        (VIDEO, "loss_ratio_bytes", "Loss ratio (bytes) of the video flow"),
        (VIDEO, "queuing_delay_ms_mean", "Queuing delay of the video flow (captures: OWD - propagation)"),
        (VIDEO, "tq_ms_mean", "Tq = RTCP RTT - RTTm of the video flow (getStats)"),
        ("bottleneck", "call_share_of_fair_share", "Throughput against the fair share (capacity / competitors)")]
BOXES = [("queuing_delay_ms", "Queuing delay of the video flow, per packet (captures)", "queuing delay (ms)"),
         ("tq_ms", "Tq = RTCP RTT - RTTm of the video flow, per RTCP sample (getStats)", "Tq (ms)")]
# What the viewer at b saw (study.json's frames:b pseudo-flow), whole call only.
FRAME_BARS = [(FRAMES_FLOW, "glass_to_glass_ms_p50", "Glass-to-glass delay at b, each run's median over its frames"),
              (FRAMES_FLOW, "glass_to_glass_ms_p95", "Glass-to-glass delay at b, each run's 95th percentile"),
              (FRAMES_FLOW, "freeze_time_ratio", "Freeze time at b (Chrome's rule) / the time shown"),
              (FRAMES_FLOW, "never_shown_ratio", "Frames sent and never shown at b / frames sent"),
              (FRAMES_FLOW, "psnr_db_mean", "Picture quality at b: mean PSNR (dB) of the sampled frames"),
              (FRAMES_FLOW, "ssim_mean", "Picture quality at b: mean SSIM of the sampled frames")]
METRIC_TITLES = {m: t for _, m, t in BARS + FRAME_BARS}
SWEEP_METRICS = [(VIDEO, "queuing_delay_ms_mean"), (VIDEO, "tq_ms_mean"), (VIDEO, "utilisation"),
                 (VIDEO, "loss_ratio_bytes")]
CALL_ONLY_METRICS = ("tq_ms_mean", "tq_ms")  # from getStats: none without a call
MAX_SERIES_RUNS = 40  # time series drawn at most (the first valid run of each point, in plan order)
SERIES_WINDOW_S = 1.0
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]

Figure = dict[str, Any]


# ---- figures ---------------------------------------------------------------------------------------------------------

def _title(doc: dict[str, Any], title: str, phase: str, note: str = "") -> dict[str, Any]:
    sub = f"phase: {phase_title(doc, phase)}" + (f"; {note}" if note else "")
    return {"text": f"{title}<br><sub>{sub}</sub>", "x": 0.01, "xanchor": "left"}


def _phase_menu(doc: dict[str, Any], phases: list[str], trace_phase: list[str], title: str,
                note: str = "") -> dict[str, Any]:
    """A dropdown (above the plot's top right corner) that shows one phase's traces and retitles the figure."""
    buttons = [{"label": phase_title(doc, ph), "method": "update",
                "args": [{"visible": [tp == ph for tp in trace_phase]}, {"title": _title(doc, title, ph, note)}]}
               for ph in phases]
    return {"buttons": buttons, "direction": "down", "x": 1, "xanchor": "right", "y": 1.01, "yanchor": "bottom",
            "active": 0, "showactive": True}


def _layout(doc: dict[str, Any], title: str, phases: list[str], trace_phase: list[str], xtitle: str, ytitle: str,
            note: str = "", **extra: Any) -> dict[str, Any]:
    """The layout of a figure with a phase selector; the first phase shown."""
    lay = {"title": _title(doc, title, phases[0], note), "height": 430,
           "xaxis": {"title": {"text": xtitle}}, "yaxis": {"title": {"text": ytitle}},
           "margin": {"l": 70, "r": 20, "t": 105, "b": 60}, "legend": {"orientation": "h", "y": -0.22},
           "updatemenus": [_phase_menu(doc, phases, trace_phase, title, note)]}
    lay.update(extra)
    return lay


def _hover(metric: str, s: dict[str, Any] | None, point: str) -> str:
    return f"{point}: {fmt_stat(metric, s, with_n=True)} (click: its runs)"


def bar_figure(doc: dict[str, Any], phases: list[str], flow: str, metric: str, title: str) -> Figure | None:
    xtitle, xs, where = groups(doc)
    series = [(flow, metric, "")]
    if metric == "call_share_of_fair_share":
        series.append(("bottleneck", "tcp_share_of_fair_share", "TCP competitors (mean) "))
    data, trace_phase = [], []
    traces = list(dict.fromkeys(t for _, t in where.values()))
    for ph in phases:
        for f, m, prefix in series:
            for tr in traces:
                pts = [p for p in doc["points"] if where[p["name"]][1] == tr]
                stats = [stat(p, f, ph, m) for p in pts]
                if all(s is None for s in stats):
                    continue
                data.append({"type": "bar", "name": (prefix or ("call " if len(series) > 1 else "")) + (tr or m),
                             "x": [where[p["name"]][0] for p in pts],
                             "y": [None if s is None else s["mean"] * scale(m) for s in stats],
                             "error_y": {"type": "data", "visible": True,
                                         "array": [None if s is None or s["ci95_half_width"] is None
                                                   else s["ci95_half_width"] * scale(m) for s in stats]},
                             "customdata": [p["name"] for p in pts],
                             "hovertext": [_hover(m, s, p["name"]) for s, p in zip(stats, pts)],
                             "hoverinfo": "text", "visible": ph == phases[0], "meta": ph})
                trace_phase.append(ph)
    if not data:
        return None
    lay = _layout(doc, title, phases, trace_phase, xtitle, HEADERS.get(metric, metric), barmode="group",
                  xaxis={"title": {"text": xtitle}, "categoryorder": "array", "categoryarray": xs})
    if metric == "call_share_of_fair_share":
        lay["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                          "line": {"dash": "dot", "color": "black"}}]
    return {"data": data, "layout": lay}


def box_figure(doc: dict[str, Any], phases: list[str], dist: str, title: str, ytitle: str,
               flow: str = VIDEO) -> Figure | None:
    data, trace_phase = [], []
    for ph in phases:
        pts, boxes = [], []
        for p in doc["points"]:
            b = (((p.get("distributions") or {}).get(flow) or {}).get(ph) or {}).get(dist)
            if b and b.get("n_samples"):
                pts.append(p["name"])
                boxes.append(b)
        if not pts:
            continue
        data.append({"type": "box", "name": ph, "x": pts, "q1": [b["p25"] for b in boxes],
                     "median": [b["p50"] for b in boxes], "q3": [b["p75"] for b in boxes],
                     "lowerfence": [b["p5"] for b in boxes], "upperfence": [b["p95"] for b in boxes],
                     "mean": [b["mean"] for b in boxes], "boxmean": True, "customdata": pts, "boxpoints": False,
                     "hovertext": [f"{n}: {b['n_samples']} samples from {b['n_runs']} of {b['runs']} runs"
                                   + (f"; {len(b['left_out'])} left out: " + "; ".join(
                                       f"{x['run']}: {x['reason']}" for x in b["left_out"])
                                      if b.get("left_out") else "")
                                   for n, b in zip(pts, boxes)],
                     "visible": ph == phases[0], "meta": ph, "showlegend": False})
        trace_phase.append(ph)
    if not data:
        return None
    lay = _layout(doc, title, phases, trace_phase, "point", ytitle,
                  note="box p25/p50/p75, whiskers p5/p95, the samples of the point's runs pooled")
    return {"data": data, "layout": lay}


def sweep_figure(doc: dict[str, Any], phases: list[str], param: str, values: dict[str, float], flow: str,
                 metric: str) -> Figure | None:
    v = varied(doc)
    others = [k for k in v if k != param and not same_partition(v[k], values)]
    line_of = {p: ", ".join(f"{o}={v[o][p]}" for o in others) for p in values}
    data, trace_phase = [], []
    for ph in phases:
        for i, line in enumerate(dict.fromkeys(line_of.values())):
            pts = sorted((p for p in doc["points"] if p["name"] in values and line_of[p["name"]] == line),
                         key=lambda p: values[p["name"]])
            stats = [stat(p, flow, ph, metric) for p in pts]
            if all(s is None for s in stats):
                continue
            data.append({"type": "scatter", "mode": "lines+markers", "name": line or metric,
                         "x": [values[p["name"]] for p in pts],
                         "y": [None if s is None else s["mean"] * scale(metric) for s in stats],
                         "error_y": {"type": "data", "visible": True,
                                     "array": [None if s is None or s["ci95_half_width"] is None
                                               else s["ci95_half_width"] * scale(metric) for s in stats]},
                         "customdata": [p["name"] for p in pts],
                         "hovertext": [_hover(metric, s, p["name"]) for s, p in zip(stats, pts)],
                         "hoverinfo": "text", "line": {"color": COLOURS[i % len(COLOURS)]},
                         "visible": ph == phases[0], "meta": ph})
            trace_phase.append(ph)
    if not data:
        return None
    title = f"{METRIC_TITLES.get(metric, metric)} against {param}"
    lay = _layout(doc, title, phases, trace_phase, param, HEADERS.get(metric, metric),
                  note="mean ±95% CI over the point's runs")
    return {"data": data, "layout": lay}


Series = tuple[list[float], list[float], list[float], list[float], str, list[tuple[float, float]],
               list[list[float]] | None]


def _run_series(run_dir: Path, main: str = VIDEO) -> Series:
    """The video flow of one run: (t, received kbit/s), (t, queuing delay ms), the source, the cross-traffic spans.
    From packets.parquet (windows of SERIES_WINDOW_S: link-layer bytes received, mean queuing delay by departure);
    without it from getStats (received bitrate at b, Tq)."""
    m = json.loads((run_dir / "metrics.json").read_text())
    flows = m.get("flows") or []
    video = next((f for lab, f in zip(flow_labels(flows), flows) if lab == main), None)
    spans = [(float(p["start_s"]), float(p["end_s"])) for p in m.get("phases") or [] if p.get("cross_traffic")]
    call_start = (m.get("run") or {}).get("call_start")
    steps = m.get("capacity_steps")  # the forward capacity's schedule, [[t_s, bit/s], ...]
    ppath = run_dir / "packets.parquet"
    if video is not None and ppath.exists():
        if not isinstance(call_start, (int, float)) or isinstance(call_start, bool):
            # packet times are epoch ns: without the call's start they belong nowhere on the call's time axis
            raise ValueError("metrics.json has no run.call_start: its packets cannot be placed in time")
        t0_ns = int(round(float(call_start) * 1e9))
        import pyarrow.parquet as pq
        t = pq.read_table(ppath, columns=["flow", "status", "t_send_ns", "t_recv_ns", "queuing_delay_ns", "ip_len"])
        flow = t["flow"].to_numpy()
        status = t["status"].cast("string").to_numpy(zero_copy_only=False)
        rows = np.flatnonzero((flow == int(video["id"])) & (status == "delivered"))
        tr = (t["t_recv_ns"].to_numpy()[rows] - t0_ns) / 1e9
        ts = (t["t_send_ns"].to_numpy()[rows] - t0_ns) / 1e9
        qd = t["queuing_delay_ns"].to_numpy()[rows] / 1e6
        nbytes = t["ip_len"].to_numpy()[rows].astype(float) + 14.0
        end = float((m.get("run") or {}).get("duration_s") or (tr.max() if tr.size else 0.0))
        n = max(1, int(np.ceil(end / SERIES_WINDOW_S)))
        keep = (tr >= 0) & (tr < n * SERIES_WINDOW_S)
        rate = np.bincount((tr[keep] // SERIES_WINDOW_S).astype(np.int64), weights=nbytes[keep], minlength=n)[:n]
        rate_kbps = rate * 8 / SERIES_WINDOW_S / 1e3
        good = (ts >= 0) & (ts < n * SERIES_WINDOW_S) & (qd >= 0)
        idx = (ts[good] // SERIES_WINDOW_S).astype(np.int64)
        qsum = np.bincount(idx, weights=qd[good], minlength=n)[:n]
        qcnt = np.bincount(idx, minlength=n)[:n]
        mid = (np.arange(n) + 0.5) * SERIES_WINDOW_S
        has = qcnt > 0
        return (mid.round(3).tolist(), rate_kbps.round(2).tolist(), mid[has].round(3).tolist(),
                (qsum[has] / qcnt[has]).round(3).tolist(), "captures", spans, steps)
    series = (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {}).get("series") or {}
    ssrc = None if video is None else video.get("ssrc")
    if ssrc is None:  # no capture: the video stream getStats saw
        ssrc = next((k.rsplit(":", 1)[-1] for k in series if k.startswith("received_bitrate_bps:video:")), None)
    def named(prefix: str) -> list[list[float]]:
        return next((v for k, v in series.items() if k.startswith(prefix) and k.endswith(f":{ssrc}")), [])
    recv, tq = named("received_bitrate_bps:"), named("tq_ms:")
    return ([p[0] for p in recv], [p[1] / 1e3 for p in recv], [p[0] for p in tq], [p[1] for p in tq], "getStats", spans,
            steps)


def series_figures(doc: dict[str, Any], out: Path, runs: list[tuple[str, str]],
                   main: tuple[str, str] = (VIDEO, "the video flow")) -> tuple[list[tuple[str, Figure]], list[str]]:
    """Received rate and queuing delay of the video flow over time, the chosen runs (point, dir) overlaid, the
    cross-traffic intervals shaded."""
    rate, delay, notes = [], [], []
    spans: set[tuple[float, float]] = set()
    capacities: set[tuple[tuple[float, ...], ...]] = set()
    sources = set()
    for i, (point, d) in enumerate(runs):
        try:
            t1, kbps, t2, q, source, sp, steps = _run_series(out / d, main[0])
        except Exception as e:  # a run whose files cannot be read: the others are drawn, this one named
            notes.append(f"time series of {d} left out: {type(e).__name__}: {e}")
            continue
        sources.add(source)
        spans.update(sp)
        name = f"{point} ({Path(d).name})"
        style = {"line": {"color": COLOURS[i % len(COLOURS)], "width": 1.3}}
        if t1:
            rate.append({"type": "scatter", "mode": "lines", "name": name, "x": t1, "y": kbps, **style,
                         "legendgroup": name})
        # The run's forward capacity over time, drawn once per distinct schedule (RFC 8867's figures: rate against
        # the capacity), in the run's colour when the points' schedules differ.
        if steps and len(steps) > 2 and tuple(map(tuple, steps)) not in capacities:
            capacities.add(tuple(map(tuple, steps)))
            rate.append({"type": "scatter", "mode": "lines", "name": f"capacity ({point})", "x": [t for t, _ in steps],
                         "y": [bps / 1e3 for _, bps in steps],
                         "line": {"color": COLOURS[i % len(COLOURS)], "dash": "dot", "shape": "hv", "width": 1.5}})
        if t2:
            delay.append({"type": "scatter", "mode": "lines", "name": name, "x": t2, "y": q, **style,
                          "legendgroup": name, "showlegend": False})
    shade = [{"type": "rect", "xref": "x", "yref": "paper", "x0": lo, "x1": hi, "y0": 0, "y1": 1,
              "fillcolor": "#d62728", "opacity": 0.08, "line": {"width": 0}, "layer": "below"}
             for lo, hi in sorted(spans)]
    src = " / ".join(sorted(sources))
    what = "captures: link-layer bits received per 1 s" if src == "captures" else src
    figs = []
    sub = "<br><sub>the first valid run of each point; cross traffic shaded</sub>"
    if rate:
        figs.append(("series-rate", {"data": rate, "layout": {
            "title": {"text": f"Received rate of {main[1]} over time ({what}){sub}", "x": 0.01, "xanchor": "left"},
            "height": 400,
            "xaxis": {"title": {"text": "time since call start (s)"}}, "yaxis": {"title": {"text": "kbit/s"}},
            "shapes": shade, "margin": {"l": 70, "r": 20, "t": 70, "b": 60},
            "legend": {"orientation": "h", "y": -0.2}}}))
    if delay:
        dwhat = "captures: mean per 1 s by departure, OWD - propagation" if src == "captures" else \
            "Tq = RTT - RTTm per getStats sample"
        figs.append(("series-delay", {"data": delay, "layout": {
            "title": {"text": f"Queuing delay of {main[1]} over time ({dwhat}){sub}", "x": 0.01, "xanchor": "left"},
            "height": 400,
            "xaxis": {"title": {"text": "time since call start (s)"}}, "yaxis": {"title": {"text": "ms"}},
            "shapes": shade, "margin": {"l": 70, "r": 20, "t": 70, "b": 60}, "showlegend": False}}))
    return figs, notes


def rfc_figure(point: str, run_dir: Path, label: str) -> Figure | None:
    """RFC 8867's figure of one run: each media flow's rate per window (metrics.json rfc8867.flows[].rate_bps) against
    the forward capacity's schedule (capacity_steps, the run dashboards' step line) and, where it differs, each flow's
    target (its fair share); the run's RFC numbers under the title. None for a run without media flows, or with one
    flow and a constant capacity (nothing the RFC's shape would show)."""
    m = json.loads((run_dir / "metrics.json").read_text())
    rfc = m.get("rfc8867") or {}
    flows = rfc.get("flows") or []
    steps = m.get("capacity_steps") or []
    if not flows or (len(flows) < 2 and len(steps) <= 2 and not any(rfc.get("tcp_competitors") or [])):
        return None
    w = float(rfc.get("window_s") or 1.0)
    data: list[dict[str, Any]] = []
    if steps:
        data.append({"type": "scatter", "mode": "lines", "name": "capacity", "x": [t for t, _ in steps],
                     "y": [bps / 1e3 for _, bps in steps], "line": {"color": "#222", "dash": "dot", "shape": "hv",
                                                                    "width": 1.6}})
    for i, f in enumerate(flows):
        x = [round((k + 0.5) * w, 3) for k in range(len(f.get("rate_bps") or []))]
        colour = COLOURS[i % len(COLOURS)]
        data.append({"type": "scatter", "mode": "lines", "name": f"{f['name']} rate", "x": x,
                     "y": [r / 1e3 for r in f["rate_bps"]], "line": {"color": colour, "width": 1.4}})
        tg = f.get("target_bps") or []
        if len(flows) > 1 or any(rfc.get("tcp_competitors") or []):
            data.append({"type": "scatter", "mode": "lines", "name": f"{f['name']} fair share", "x": x,
                         "y": [None if t is None else t / 1e3 for t in tg],
                         "line": {"color": colour, "dash": "dash", "shape": "hvh", "width": 1}})
    sm = rfc.get("summary") or {}

    def num(k: str, unit: str = "") -> str:
        v = sm.get(k)
        return "-" if v is None else f"{v:.3g}{unit}"
    # Only where the scenario paused a call (RFC 8867 5.8).
    regain = f", regain after a pause {num('regain_fair_share_s', ' s')}" if rfc.get("scheduled_pauses") else ""
    sub = (f"rate / target {num('rate_to_target_ratio')}, converged {num('converged_fraction')} of segments after "
           f"{num('convergence_time_s', ' s')}, reaction down {num('reaction_time_down_s', ' s')} / up "
           f"{num('reaction_time_up_s', ' s')}, ramp-up {num('ramp_up_s', ' s')}{regain}, Jain (media) "
           f"{num('media_jain_index')}; band ±{float(rfc.get('band') or 0) * 100:g} %, {w:g} s windows "
           "(docs/metrics.md, RFC 8867 metrics)")
    return {"data": data, "layout": {
        "title": {"text": f"RFC 8867: each media flow's rate against the capacity, {html.escape(point)} "
                          f"({html.escape(label)})<br><sub>{html.escape(sub)}</sub>", "x": 0.01, "xanchor": "left"},
        "height": 400, "xaxis": {"title": {"text": "time since call start (s)"}},
        "yaxis": {"title": {"text": "kbit/s (link-layer bits received per window)"}},
        "margin": {"l": 70, "r": 20, "t": 80, "b": 60}, "legend": {"orientation": "h", "y": -0.2}}}


def figures(doc: dict[str, Any], out: Path) -> tuple[list[tuple[str, Figure]], list[str]]:
    """(id, figure) of every chart with data, and a sentence for each one left out and why."""
    phases = report_phases(doc)
    phases += [ph for ph in phase_names(doc) if ph not in phases]
    figs: list[tuple[str, Figure]] = []
    notes: list[str] = []
    main, words = main_flow(doc)
    if main != VIDEO:
        notes.append(f"no call in this study: the charts follow {words} ({main}); Tq (getStats) has no value")
    for flow, metric, title in BARS:
        if main != VIDEO and metric in CALL_ONLY_METRICS:
            continue
        flow, title = (main, title.replace("the video flow", words)) if flow == VIDEO else (flow, title)
        f = bar_figure(doc, phases, flow, metric, title)
        if f:
            figs.append((f"bars-{metric}", f))
        else:
            notes.append(f"bars of {metric} ({flow}): no point has a value")
    for dist, title, ytitle in BOXES:
        if main != VIDEO and dist in CALL_ONLY_METRICS:
            continue
        f = box_figure(doc, phases, dist, title.replace("the video flow", words), ytitle, main)
        if f:
            figs.append((f"box-{dist}", f))
        else:
            why = "the runs have no packets.parquet" if dist == "queuing_delay_ms" else "no Tq sample in getStats"
            notes.append(f"box of {dist}: no samples in study.json ({why}, or study.json is older than the boxes: "
                         "run `rtclab study aggregate` again)")
    if any(FRAMES_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        for flow, metric, title in FRAME_BARS:
            f = bar_figure(doc, ["all"], flow, metric, title)
            if f:
                figs.append((f"bars-{metric}", f))
    elif main == VIDEO:
        notes.append("frames (glass-to-glass, freezes, frames never shown): no run used has frames-b.jsonl, or "
                     "study.json is older than them (run `rtclab analyze` on the runs and `rtclab study aggregate` "
                     "again)")
    params = numeric_parameters(doc)
    if not params:
        notes.append("metric against a parameter: no varied parameter is numeric")
    for param, values in params.items():
        for flow, metric in SWEEP_METRICS:
            if main != VIDEO and metric in CALL_ONLY_METRICS:
                continue
            f = sweep_figure(doc, phases, param, values, main if flow == VIDEO else flow, metric)
            if f:
                figs.append((f"sweep-{param}-{metric}", f))
    chosen = [(p["name"], p["runs_used"][0]) for p in doc["points"] if p.get("runs_used")][:MAX_SERIES_RUNS]
    if len([p for p in doc["points"] if p.get("runs_used")]) > MAX_SERIES_RUNS:
        notes.append(f"time series: the first {MAX_SERIES_RUNS} points' runs only")
    shares = shares_figure(doc, out)
    if shares:
        figs.append(("shares", shares))
    cpu = cpu_figure(doc)
    if cpu:
        figs.append(("cpu", cpu))
    else:
        notes.append("CPU per component: no run used has cpu.jsonl (runs from before it was recorded)")
    for i, (point, d) in enumerate(chosen):  # RFC 8867's shape, one figure per point (its first valid run)
        try:
            rf = rfc_figure(point, out / d, Path(d).name)
        except (OSError, ValueError, KeyError, TypeError) as e:
            notes.append(f"RFC 8867 figure of {d} left out: {type(e).__name__}: {e}")
            continue
        if rf:
            figs.append((f"rfc-{i}", rf))
    sfigs, snotes = series_figures(doc, out, chosen, (main, words))
    figs += sfigs
    notes += snotes
    if not sfigs:
        notes.append("time series: no run to draw")
    return figs, notes


def cpu_figure(doc: dict[str, Any]) -> Figure | None:
    """Where the machine's CPU went over the call, per point: the host's busy cores, each component of the run and
    what the run does not account for, as bars with their 95% CI over the point's runs (the `cpu` pseudo-flow of
    study.json, whole call only)."""
    pts = [p for p in doc["points"] if CPU_FLOW in (p.get("flows") or {})]
    if not pts:
        return None
    data = []
    for m in CPU_METRICS:
        stats = [stat(p, CPU_FLOW, "all", m) for p in pts]
        if all(s is None for s in stats):
            continue
        data.append({"type": "bar", "name": HEADERS[m], "x": [p["name"] for p in pts],
                     "y": [None if s is None else s["mean"] for s in stats],
                     "error_y": {"type": "data", "visible": True,
                                 "array": [None if s is None else s["ci95_half_width"] for s in stats]},
                     "customdata": [p["name"] for p in pts],
                     "hovertext": [f"{HEADERS[m]}: {_hover(m, s, p['name'])}" for s, p in zip(stats, pts)],
                     "hoverinfo": "text"})
    return {"data": data, "layout": {
        "title": _title(doc, "CPU over the call: host busy, each component of the run, outside the run (cpu.jsonl)",
                        "all", "mean cores ±95% CI over the point's runs"),
        "barmode": "group", "height": 430, "xaxis": {"title": {"text": "point"}},
        "yaxis": {"title": {"text": "cores (CPU-seconds per second)"}},
        "margin": {"l": 70, "r": 20, "t": 105, "b": 60}, "legend": {"orientation": "h", "y": -0.22}}}


def shares_figure(doc: dict[str, Any], out: Path) -> Figure | None:
    """Several video flows (calls or tracks, docs/multiflow.md): per point and flow, the share of the flows' summed
    rate that the priorities ask for against the share achieved (metrics.json multiflow.shares, over the period every
    flow is active), mean and 95% CI over the point's valid runs used. None when no point has two flows."""
    x: list[str] = []
    asked: list[float | None] = []
    achieved: list[float | None] = []
    half: list[float | None] = []
    hover: list[str] = []
    for p in doc["points"]:
        used = p.get("runs_used") or []
        runs = [multiflow.run_shares(out / run_dir / "metrics.json") for run_dir in used]
        per_flow = multiflow.pooled_shares([r[1] for r in runs if not isinstance(r, str)])
        if len(per_flow) < 2:
            continue
        left = [f"{d}: {why}" for d, why in zip(used, runs) if isinstance(why, str)]
        left_text = f"; {len(left)} run(s) left out: {'; '.join(left)}" if left else ""
        for flow, e in per_flow.items():
            st = summarise(e["achieved"])
            x.append(f"{p['name']} {flow}")
            asked.append(e["asked_share"])
            achieved.append(st["mean"])
            half.append(st["ci95_half_width"])
            hover.append(f"{p['name']} {flow} (priority {e['priority']}): asked {e['asked_share']:.3f}, achieved "
                         + ("-" if st["mean"] is None else f"{st['mean']:.3f}") + f" over n={st['n']} run(s)"
                         + left_text)
    if not x:
        return None
    return {"data": [{"type": "bar", "name": "asked (priority)", "x": x, "y": asked, "hovertext": hover,
                      "hoverinfo": "text"},
                     {"type": "bar", "name": "achieved", "x": x, "y": achieved, "hovertext": hover,
                      "hoverinfo": "text", "error_y": {"type": "data", "visible": True, "array": half}}],
            "layout": {"barmode": "group", "height": 460, "margin": {"b": 160},
                       "title": {"text": "Priority shares of the video flows: asked against achieved<br><sub>share of "
                                         "the flows' summed rate while all are active (metrics.json multiflow.shares);"
                                         " achieved: mean and 95% CI over the point's valid runs</sub>"},
                       "yaxis": {"title": {"text": "share of the flows' rate"}}}}


# The study dashboard's own style (page.py has the shared one); a click on a point's bar or box goes to its row.
STYLE = """.quick{background:#fff3cd;border:1px solid #e0c060;padding:8px;border-radius:6px;font-weight:600}
.chart{min-height:400px;margin-top:14px} tr:target{background:#fff3cd}"""
ON_PLOT = """gd.on('plotly_click', function (ev) {
      var p = ev.points && ev.points[0];
      var name = p && (p.customdata !== undefined ? p.customdata : p.x);
      if (name !== undefined && document.getElementById('point-' + name)) location.hash = 'point-' + name;
    });"""


def render(doc: dict[str, Any], out: Path, page: Path) -> str:
    figs, notes = figures(doc, out)
    title = f"rtclab study {doc['study']}"
    quick = f'<div class="quick">{html.escape(doc["quick_note"])} (quick factor {doc["quick_factor"]:g})</div>' \
        if doc.get("quick_note") else ""
    if doc.get("invalid_note"):
        quick += f'<div class="quick">{html.escape(doc["invalid_note"])}</div>'
    s = doc["summary"]
    used_invalid = (f" ({s['runs_used_invalid']} of them INVALID, above)" if s.get("runs_used_invalid")
                    else ", all valid")
    description = html.escape((doc.get("description") or "").rstrip("."))
    summary = (f"{description}. {len(doc['points'])} point(s); {s['runs_used']} run(s) used{used_invalid}; "
               f"{s['repetitions_without']} repetition(s) without a valid run"
               + (f"; {s['runs_left_out']} chosen run(s) left out, each point's n short of them (why: below)"
                  if s.get("runs_left_out") else "") + ". Every figure has a phase "
               "selector (top right): the cross-traffic phase first when the study has one, then the whole call. "
               "Error bars: 95% confidence interval of the mean over the point's runs (Student t; none when n &lt; "
               "2). Definitions: docs/studies.md.")
    note_html = "<ul class=notes>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>" if notes else ""
    body = (f"{quick}\n<p>{summary}</p>\n{note_html}\n{pages.chart_divs(figs)}\n<h2>Points and their runs</h2>\n"
            f"{points_table(doc, out, page, report_phases(doc)[0])}\n{frames_table(doc)}\n"
            f"{excluded_table(doc, out, page)}")
    return pages.render(title, body, figs, style=STYLE, on_plot=ON_PLOT)


def write(out: Path, doc: dict[str, Any], page: Path | None = None) -> Path:
    """Writes the dashboard (default OUT/dashboard.html) and returns its path."""
    page = (page or out / "dashboard.html").resolve()
    out = out.resolve()
    text = render(doc, out, page)
    tmp = page.with_name(page.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)
    return page
