"""How the run dashboard draws a series (docs/analyzer.md, "The run dashboard"), on series known by construction: a
sampled series is a line that stops at its gaps (a None between two samples more than twice its median interval
apart), a lone sample a dot; a sparse series (median interval over 2 s) markers only; a held value steps, never
broken; and the stack gives every panel its own legend beside it, the panel as high as its legend needs. The same
page in a real browser: test_dashboard_layout.py."""

from __future__ import annotations

from typing import Any

import pytest

from rtclab import dashboard
from rtclab.dashboard_traces import line_trace, sampled_trace, step_trace


def test_a_sampled_series_stops_at_its_gaps_and_nowhere_else() -> None:
    # Every 1 s but for three gaps: 3 -> 6 (two polls missing), 8 -> 10.5 (over twice the 1 s median), and
    # 10.5 -> 12.4 (under it: jitter, one line).
    pts = [[0, 1], [1, 2], [2, 3], [3, 4], [6, 5], [7, 6], [8, 7], [10.5, 8], [12.4, 9], [13.4, 10]]
    tr = line_trace("x", pts, 10.0, line={"color": "red"})
    assert tr["mode"] == "lines" and tr["connectgaps"] is False and tr["line"] == {"color": "red"}
    assert tr["x"] == [0, 1, 2, 3, None, 6, 7, 8, None, 10.5, 12.4, 13.4]
    assert tr["y"] == [10, 20, 30, 40, None, 50, 60, 70, None, 80, 90, 100]


def test_a_sample_no_line_reaches_is_a_dot() -> None:
    # 5 s alone between two gaps; 9 s beside a missing value; the others on lines.
    x = [0.0, 1.0, 2.0, 5.0, 8.0, 9.0, 10.0, 11.0]
    y: list[Any] = [1, 1, 1, 7, 1, 3, None, 1]
    tr = sampled_trace("x", x, y)
    assert tr["x"] == [0.0, 1.0, 2.0, None, 5.0, None, 8.0, 9.0, 10.0, 11.0]
    assert tr["mode"] == "lines+markers"
    # The dots: 5 s (gaps both sides) and 11 s (its only neighbour has no value); 8 s and 9 s are one line.
    dots = [xi for xi, s in zip(tr["x"], tr["marker"]["size"]) if s]
    assert dots == [5.0, 11.0]


def test_a_sparse_series_is_markers_and_one_sample_a_marker() -> None:
    audio = [[5.2, 50.0], [10.1, 52.0], [15.9, 49.0], [20.3, 51.0]]  # RTCP every ~5 s
    tr = line_trace("RTT audio", audio, line={"dash": "dot"})
    assert tr["mode"] == "markers" and tr["x"] == [5.2, 10.1, 15.9, 20.3] and tr["y"] == [50.0, 52.0, 49.0, 51.0]
    # Every 2 s is not sparse (over 2 s is), and a single sample has no interval: a marker.
    assert line_trace("x", [[0, 1], [2, 1], [4, 1]])["mode"] == "lines"
    assert line_trace("x", [[0, 1], [2.1, 1], [4.2, 1]])["mode"] == "markers"
    assert line_trace("x", [[3, 1]])["mode"] == "markers"


def test_a_held_value_steps_over_any_interval() -> None:
    tr = step_trace("target", [[0, 1e6], [0.1, 2e6], [9.0, 1.5e6]], 1e-6, line={"color": "black"})
    assert tr["mode"] == "lines" and tr["line"] == {"color": "black", "shape": "hv"}
    assert tr["x"] == [0, 0.1, 9.0] and tr["y"] == pytest.approx([1.0, 2.0, 1.5])


def test_each_panel_has_its_own_legend_beside_it_and_room_for_it() -> None:
    m: dict[str, Any] = {"run": {"duration_s": 10.0}, "phases": []}
    few = [line_trace(f"a{i}", [[0, 1], [1, 2]]) for i in range(2)]
    many = [line_trace(f"b{i}", [[0, 1], [1, 2]]) for i in range(20)]
    hidden = dict(line_trace("hidden", [[0, 1], [1, 2]]), showlegend=False)
    fig = dashboard._stack(m, [("A", "u", few), ("B", "u", [*many, hidden]), ("C", "u", few)], 10.0)
    lay = fig["layout"]
    assert [(t["name"], t["yaxis"], t["legend"]) for t in fig["data"]] == (
        [(t["name"], "y", "legend") for t in few] + [(t["name"], "y2", "legend2") for t in [*many, hidden]]
        + [(t["name"], "y3", "legend3") for t in few])
    plot_px = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
    heights = []
    for suffix in ("", "2", "3"):
        lo, hi = lay[f"yaxis{suffix}"]["domain"]
        legend = lay[f"legend{suffix}"]
        # Right of the plot area, its top at the panel's, no higher than the panel.
        assert legend["x"] > 1 and legend["xanchor"] == "left" and legend["yanchor"] == "top"
        assert legend["y"] == pytest.approx(hi) and legend["maxheight"] == pytest.approx((hi - lo) * plot_px)
        heights.append((hi - lo) * plot_px)
    # Two entries fit the least height; twenty visible entries (the hidden trace takes no line) need more.
    assert heights[0] == pytest.approx(dashboard.PANEL_PX) and heights[2] == pytest.approx(dashboard.PANEL_PX)
    assert heights[1] == pytest.approx(20 * dashboard.LEGEND_ENTRY_PX + dashboard.LEGEND_PAD_PX)
    # Top to bottom without overlap, a title's gap between panels.
    domains = [lay[f"yaxis{s}"]["domain"] for s in ("", "2", "3")]
    assert domains[0][1] == pytest.approx(1) and domains[2][0] == pytest.approx(0)
    for upper, lower in zip(domains, domains[1:]):
        assert (upper[0] - lower[1]) * plot_px == pytest.approx(dashboard.PANEL_GAP_PX)
