"""The one builder of rtclab's HTML pages (the run dashboard, compare, the study dashboard and comparison, the
findings page, the priority shares): a self-contained file, plotly.js embedded (it opens offline), the page's own
style after a shared one, and its figures as JSON that one script draws, setting `window.rtclabReady` (ms since the
page started) when all are drawn: what the dashboards' tests and benchmarks wait for."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

VENDORED_PLOTLY = Path(__file__).parent / "vendor" / "plotly-gl2d.min.js"

BASE_STYLE = """body{font-family:system-ui,sans-serif;margin:16px;color:#222} h1{font-size:20px} h2{font-size:16px}
.chart{width:100%;min-height:360px;margin-top:12px} table{border-collapse:collapse;font-size:12px;margin-top:8px}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left} .notes{color:#a33}"""

Figure = tuple[str, dict[str, Any]]  # (the div's id, a plotly figure {data, layout})


def plotly_js(full: bool = False) -> str:
    """plotly.js's small gl2d bundle (scatter + scattergl: fast to start, see vendor/README.md), or with `full` the
    whole library from the plotly package (box plots, bars with error bars)."""
    if not full and VENDORED_PLOTLY.exists():
        return VENDORED_PLOTLY.read_text(encoding="utf-8")
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def chart_divs(figures: Sequence[Figure]) -> str:
    return "\n".join(f'<div class="chart" id="{fid}"></div>' for fid, _ in figures)


# Draws every figure; `gl` false (no WebGL, e.g. a headless browser without GPU) draws scattergl as scatter.
# ON_PLOT runs with each drawn figure's div as `gd`.
_DRAW = """<script>
(function () {
  var figs = JSON.parse(document.getElementById('figures').textContent);
  var gl = false;
  try {
    var cv = document.createElement('canvas');
    gl = !!(cv.getContext('webgl') || cv.getContext('experimental-webgl'));
  } catch (e) {}
  window.rtclabTimings = {start: performance.now()};
  Promise.all(figs.map(function (f) {
    if (!gl) f.fig.data.forEach(function (tr) { if (tr.type === 'scattergl') tr.type = 'scatter'; });
    var t = performance.now();
    var drawn = Plotly.newPlot(f.id, f.fig.data, f.fig.layout, {responsive: true, displaylogo: false});
    window.rtclabTimings[f.id] = performance.now() - t;
    return drawn.then(function (gd) { ON_PLOT });
  })).then(function () { window.rtclabReady = performance.now(); });
})();
</script>"""


def render(title: str, body: str, figures: Sequence[Figure] = (), *, style: str = "", full_plotly: bool = True,
           on_plot: str = "") -> str:
    """A whole page: `title` (text) as its title and first heading, `body` (HTML, which places the figures' divs,
    e.g. with chart_divs), the figures drawn by one script, `on_plot` (JavaScript) run for each drawn figure."""
    t = html.escape(title)
    # A figure's text cannot end the script element it travels in.
    payload = json.dumps([{"id": fid, "fig": fig} for fid, fig in figures], separators=(",", ":")).replace("</", "<\\/")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{t}</title>\n'
            f"<style>\n{BASE_STYLE}\n{style}\n</style>\n<script>{plotly_js(full_plotly)}</script></head><body>\n"
            f"<h1>{t}</h1>\n{body}\n"
            f'<script id="figures" type="application/json">{payload}</script>\n'
            f"{_DRAW.replace('ON_PLOT', on_plot)}\n</body></html>\n")
