"""Plotly traces the run dashboard's figures share: a flow's name, a sampled series (a line broken at its gaps, or
markers when sparse), a held value as steps, the bottleneck's capacity (docs/analyzer.md, "The run dashboard")."""

from __future__ import annotations

from statistics import median
from typing import Any

# Two samples further apart than this many times the series' median interval have at least one sample missing
# between them: the line stops there instead of drawing a straight line over the gap.
GAP_FACTOR = 2.0
# A series sampled less often than this (its median interval) is drawn as markers alone: a line between samples
# seconds apart would show values nobody measured (the RTCP RTT of audio: one report every ~5 s).
SPARSE_INTERVAL_S = 2.0
ALONE_MARKER_SIZE = 4  # a sample with no neighbour to draw a line to is shown as a dot


def flow_label(f: dict[str, Any]) -> str:
    ssrc = f" {f['ssrc']:08x}" if f.get("ssrc") is not None else ""
    owner = f"{f['call']}/{f['track']} " if f.get("call") else ""  # several calls or tracks (docs/multiflow.md)
    return f"{owner}{f['kind']}{ssrc} {f['src']}→{f['dst']}"


def median_interval(x: list[float]) -> float | None:
    """The median time between consecutive samples; None for fewer than two."""
    return median(b - a for a, b in zip(x, x[1:])) if len(x) > 1 else None


def break_at_gaps(x: list[float], y: list[Any], limit: float) -> tuple[list[Any], list[Any], list[bool]]:
    """x and y with a None between two samples more than `limit` apart (plotly draws no line over a None), and for
    each entry whether it is a sample that no line reaches (its neighbours are gaps or missing values)."""
    def linked(i: int, j: int) -> bool:
        return y[i] is not None and y[j] is not None and x[j] - x[i] <= limit

    out_x: list[Any] = []
    out_y: list[Any] = []
    alone: list[bool] = []
    for i in range(len(x)):
        if i > 0 and x[i] - x[i - 1] > limit:
            out_x.append(None)
            out_y.append(None)
            alone.append(False)
        out_x.append(x[i])
        out_y.append(y[i])
        reached = (i > 0 and linked(i - 1, i)) or (i + 1 < len(x) and linked(i, i + 1))
        alone.append(y[i] is not None and not reached)
    return out_x, out_y, alone


def sampled_trace(name: str, x: list[float], y: list[Any], **style: Any) -> dict[str, Any]:
    """A series sampled at a regular interval (getStats polls, the queue's sampler, the frames shown): a line that
    stops where samples are missing (more than GAP_FACTOR intervals apart), its lone samples as dots; markers alone
    when the series is sparse (median interval over SPARSE_INTERVAL_S) or has one sample."""
    interval = median_interval(x)
    if interval is None or interval > SPARSE_INTERVAL_S:
        return {"type": "scatter", "mode": "markers", "name": name, "x": x, "y": y, **style,
                "marker": {"size": 6, **style.get("marker", {})}}
    gx, gy, alone = break_at_gaps(x, y, GAP_FACTOR * interval)
    trace: dict[str, Any] = {"type": "scatter", "mode": "lines", "name": name, "x": gx, "y": gy, "connectgaps": False,
                             **style}
    if any(alone):
        trace["mode"] = "lines+markers"
        trace["marker"] = {**style.get("marker", {}), "size": [ALONE_MARKER_SIZE if a else 0 for a in alone]}
    return trace


def line_trace(name: str, pts: list, scale: float = 1.0, **style: Any) -> dict[str, Any]:
    """A sampled series of [t, value] points (sampled_trace)."""
    return sampled_trace(name, [round(p[0], 3) for p in pts], [p[1] * scale for p in pts], **style)


def step_trace(name: str, pts: list, scale: float = 1.0, **style: Any) -> dict[str, Any]:
    """A value that holds until its next change (an estimate, a threshold): steps, never broken, however far apart
    the changes are."""
    line = {**style.pop("line", {}), "shape": "hv"}
    return {"type": "scatter", "mode": "lines", "name": name, "x": [round(p[0], 3) for p in pts],
            "y": [p[1] * scale for p in pts], "line": line, **style}


def capacity_traces(m: dict[str, Any], duration_s: float, scale: float = 1e-6) -> list[dict[str, Any]]:
    """The forward capacity as a step line over the call (its schedule, metrics.json capacity_steps; a trace link's
    delivery opportunities per 100 ms and per second, capacity_trace), or the mean capacity flat for a run analysed
    before the steps existed; `scale` from bit/s to the panel's unit."""
    trace = m.get("capacity_trace")
    if trace:
        return [_trace_capacity_line(trace["per_100ms"], duration_s, scale, "trace capacity per 100 ms",
                                     {"color": "#999", "width": 1}),
                _trace_capacity_line(trace["per_1s"], duration_s, scale, "trace capacity per 1 s",
                                     {"color": "black", "dash": "dot"})]
    steps = m.get("capacity_steps")
    if steps:
        return [{"type": "scatter", "mode": "lines", "name": "capacity", "x": [t for t, _ in steps],
                 "y": [bps * scale for _, bps in steps], "line": {"color": "black", "dash": "dot", "shape": "hv"}}]
    cap = m.get("capacity_bps")
    if not cap:
        return []
    return [{"type": "scatter", "mode": "lines", "name": "capacity", "x": [0, duration_s], "y": [cap * scale] * 2,
             "line": {"color": "black", "dash": "dot"}}]


def _trace_capacity_line(bins: list[list[float]], duration_s: float, scale: float, name: str,
                         line: dict[str, Any]) -> dict[str, Any]:
    """Bins [start s, bit/s] as steps (step_trace), the last bin closed at the call's end."""
    return step_trace(name, [*bins, [duration_s, bins[-1][1]]] if bins else [], scale, line=line)
