"""The run dashboard's panels read from a run's metrics.json beyond the packets: the congestion controller's state and
what limits its target, the meters, the machine's CPU and the frames each page presented (docs/analyzer.md, "The run
dashboard")."""

from __future__ import annotations

from typing import Any

from .dashboard_traces import capacity_traces, sampled_trace, step_trace

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


def controller_panels(m: dict[str, Any]) -> list[tuple[str, str, list[dict]]]:
    """GCC at a from its RTC event log: the estimates and probes; the replayed trend m(t) against +-gamma(t) over
    the detector state Chrome logged (docs/eventlog.md)."""
    a = ((m.get("congestion_controller") or {}).get("sides") or {}).get("a") or {}
    ser = a.get("series")
    if not ser:
        return []
    rates = [step_trace("target (lower of the two)", ser["target_bps"], 1e-6, line={"color": "black"}),
             step_trace("delay-based estimate", ser["delay_based_bps"], 1e-6, line={"color": "#d62728"}),
             step_trace("loss-based estimate", ser["loss_based_bps"], 1e-6, line={"color": "#2ca02c", "dash": "dot"})]
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
        # Both hold from one detector update to the next: steps.
        traces += [step_trace("m(t), replayed trend", m_pts, line={"color": "#444"}),
                   step_trace("+gamma(t)", g_pts, line={"color": "#d62728", "dash": "dash"}),
                   step_trace("-gamma(t)", [[p[0], -p[1]] for p in g_pts], line={"color": "#1f77b4", "dash": "dash"})]
        rep = a.get("replay") or {}
        agree = rep.get("update_agreement")
        title = "Over-use detector at a: replayed m(t) and gamma(t); bands: the state Chrome logged"
        if agree is not None:
            title += f" (agreement {agree * 100:.1f}% of {rep.get('updates')} logged updates)"
        out.append((title, "ms", traces))
    return out


def meter_panels(m: dict[str, Any]) -> list[tuple[str, str, list[dict]]]:
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


def cpu_panel(m: dict[str, Any]) -> tuple[str, str, list[dict]] | None:
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


def frame_panels(m: dict[str, Any]) -> tuple[list[tuple[str, str, list[dict]]], list[dict[str, Any]], list[str]]:
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
            traces.append(sampled_trace(name, ser["t_s"], ser[key], line={"color": colour, "width": width}))
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
