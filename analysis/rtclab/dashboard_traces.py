"""Plotly traces the run dashboard's figures share: a flow's name, a series as a line, the bottleneck's capacity."""

from __future__ import annotations

from typing import Any


def flow_label(f: dict[str, Any]) -> str:
    ssrc = f" {f['ssrc']:08x}" if f.get("ssrc") is not None else ""
    owner = f"{f['call']}/{f['track']} " if f.get("call") else ""  # several calls or tracks (docs/multiflow.md)
    return f"{owner}{f['kind']}{ssrc} {f['src']}→{f['dst']}"


def line_trace(name: str, pts: list, scale: float = 1.0, **style: Any) -> dict[str, Any]:
    return {"type": "scatter", "mode": "lines", "name": name,
            "x": [round(p[0], 3) for p in pts], "y": [p[1] * scale for p in pts], **style}


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
