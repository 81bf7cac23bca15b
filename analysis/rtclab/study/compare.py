"""`rtclab study compare A B`: two aggregated studies side by side (e.g. the same study file under two Chrome
versions). For each point both hold (same point name), each key metric in each phase: A's and B's mean with their 95%
confidence intervals, the difference B - A and its Welch 95% confidence interval; the points only one holds are
listed. A terminal table and one offline HTML page (docs/studies.md, "Compare")."""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import page as pages
from .catalogue import CATALOGUE, FRAMES_FLOW, FRAMES_METRICS
from .report import (
    BOTTLENECK_METRICS,
    FLOW_METRICS,
    HEADERS,
    StudyReportError,
    Table,
    chromium_versions,
    cross_traffic_phase,
    fmt,
    fmt_stat,
    load,
    phase_names,
    phase_title,
    scale,
    stat,
)
from .tdist import t_quantile

VIDEO = "forward:video"
# The flow (or pseudo-flow) each family's metrics are compared on: frames metrics on the forward stream's frames
# (whole call only: they have no value in the other phases, so those rows are left out).
FAMILY_FLOW = {"bottleneck": "bottleneck", "frames": FRAMES_FLOW}


def flow_of(metric: str) -> str:
    return FAMILY_FLOW.get(CATALOGUE[metric].family, VIDEO)


def welch(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float | None]:
    """B - A and the Welch 95% confidence interval of the difference of the means (unequal variances,
    Welch-Satterthwaite degrees of freedom); the interval is null when either side has n < 2."""
    diff = b["mean"] - a["mean"]
    if a.get("sd") is None or b.get("sd") is None or a["n"] < 2 or b["n"] < 2:
        return {"diff": diff, "ci95_half_width": None, "df": None}
    va, vb = a["sd"] ** 2 / a["n"], b["sd"] ** 2 / b["n"]
    se = math.sqrt(va + vb)
    if se == 0:
        return {"diff": diff, "ci95_half_width": 0.0, "df": None}
    df = (va + vb) ** 2 / (va ** 2 / (a["n"] - 1) + vb ** 2 / (b["n"] - 1))
    return {"diff": diff, "ci95_half_width": t_quantile(0.975, df) * se, "df": df}


@dataclass
class Row:
    point: str
    flow: str
    metric: str
    phase: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    diff: dict[str, float | None] | None


@dataclass
class Comparison:
    a_dir: Path
    b_dir: Path
    a: dict[str, Any]
    b: dict[str, Any]
    a_name: str
    b_name: str
    shared: list[str]
    only_a: list[str]
    only_b: list[str]
    phases: list[str]
    rows: list[Row]


def study_name(out: Path, doc: dict[str, Any]) -> str:
    chrome = chromium_versions(out, doc).text()
    quick = f", quick x{doc['quick_factor']:g}" if doc.get("quick_note") else ""
    if doc.get("invalid_note"):
        quick += f", {doc['summary'].get('runs_used_invalid')} INVALID run(s) included"
    return f"{doc['study']} ({chrome}{quick}; {out})"


def compare(a_dir: Path, b_dir: Path, phase: str | None = None, metrics: list[str] | None = None) -> Comparison:
    a, b = load(a_dir), load(b_dir)
    names_b = {p["name"] for p in b["points"]}
    names_a = {p["name"] for p in a["points"]}
    shared = [p["name"] for p in a["points"] if p["name"] in names_b]
    if phase:
        if phase not in phase_names(a) and phase not in phase_names(b):
            raise StudyReportError(f"no phase {phase!r} in either study; phases: "
                                   f"{', '.join(dict.fromkeys(phase_names(a) + phase_names(b)))}")
        phases = [phase]
    else:
        cross = cross_traffic_phase(a) or cross_traffic_phase(b)
        phases = ([cross] if cross else []) + ["all"]
    wanted = metrics or FLOW_METRICS + BOTTLENECK_METRICS + FRAMES_METRICS
    pa = {p["name"]: p for p in a["points"]}
    pb = {p["name"]: p for p in b["points"]}
    rows = []
    for ph in phases:
        for name in shared:
            for m in wanted:
                flow = flow_of(m)
                sa, sb = stat(pa[name], flow, ph, m), stat(pb[name], flow, ph, m)
                if sa is None and sb is None:
                    continue
                rows.append(Row(name, flow, m, ph, sa, sb, welch(sa, sb) if sa and sb else None))
    return Comparison(a_dir, b_dir, a, b, study_name(a_dir, a), study_name(b_dir, b), shared,
                      [p["name"] for p in a["points"] if p["name"] not in names_b],
                      [p["name"] for p in b["points"] if p["name"] not in names_a], phases, rows)


def _diff_text(r: Row) -> tuple[str, str]:
    if r.diff is None:
        return "-", "-"
    diff, half = r.diff["diff"], r.diff["ci95_half_width"]
    if diff is None:
        return "-", "-"
    ci = "-" if half is None else f"{fmt(r.metric, diff - half)} .. {fmt(r.metric, diff + half)}"
    return fmt(r.metric, diff), ci


def tables(c: Comparison) -> list[Table]:
    out = []
    for ph in c.phases:
        rows = []
        for r in (r for r in c.rows if r.phase == ph):
            diff, ci = _diff_text(r)
            rows.append([r.point, r.flow, HEADERS.get(r.metric, r.metric), fmt_stat(r.metric, r.a, True),
                         fmt_stat(r.metric, r.b, True), diff, ci])
        out.append(Table(f"phase {phase_title(c.a, ph)}", ["point", "flow", "metric", "A", "B", "B - A",
                                                           "95% CI of B - A (Welch)"], rows))
    return out


def render_text(c: Comparison) -> str:
    text = f"A: {c.a_name}\nB: {c.b_name}\n"
    text += f"points in both: {len(c.shared)}"
    text += f"; only in A: {', '.join(c.only_a)}" if c.only_a else "; none only in A"
    text += f"; only in B: {', '.join(c.only_b)}" if c.only_b else "; none only in B"
    text += "\n"
    for t in tables(c):
        text += "\n" + t.render()
    text += ("\nmean ±95% CI half-width (Student t) over each study's valid runs of the point, n runs; B - A with the "
             "Welch 95% CI of the difference (none when either n < 2); units as in `rtclab study report`\n")
    return text


def _figure(c: Comparison, metric: str, flow: str) -> dict[str, Any] | None:
    data, trace_phase = [], []
    # The phases the metric has rows in (a whole-call metric, e.g. the frames', has none in the others).
    phases = [ph for ph in c.phases if any(r.phase == ph and r.metric == metric for r in c.rows)]
    for ph in phases:
        for side, label, colour in (("a", "A", "#1f77b4"), ("b", "B", "#ff7f0e")):
            rows = [r for r in c.rows if r.phase == ph and r.metric == metric and getattr(r, side) is not None]
            if not rows:
                continue
            stats = [getattr(r, side) for r in rows]
            data.append({"type": "bar", "name": f"{label}: {c.a['study'] if side == 'a' else c.b['study']}",
                         "x": [r.point for r in rows], "y": [s["mean"] * scale(metric) for s in stats],
                         "error_y": {"type": "data", "visible": True,
                                     "array": [None if s["ci95_half_width"] is None else s["ci95_half_width"] *
                                               scale(metric) for s in stats]},
                         "marker": {"color": colour}, "visible": ph == phases[0]})
            trace_phase.append(ph)
    if not data:
        return None
    title = f"{HEADERS.get(metric, metric)} ({flow}), A and B"
    buttons = [{"label": phase_title(c.a, ph), "method": "update",
                "args": [{"visible": [tp == ph for tp in trace_phase]},
                         {"title": {"text": f"{title}<br><sub>phase: {phase_title(c.a, ph)}</sub>"}}]}
               for ph in phases]
    return {"data": data, "layout": {
        "title": {"text": f"{title}<br><sub>phase: {phase_title(c.a, phases[0])}</sub>"}, "barmode": "group",
        "height": 380, "yaxis": {"title": {"text": HEADERS.get(metric, metric)}},
        "margin": {"l": 70, "r": 20, "t": 90, "b": 60}, "legend": {"orientation": "h", "y": -0.2},
        "updatemenus": [{"buttons": buttons, "x": 1, "xanchor": "right", "y": 1.25, "yanchor": "top"}]}}


def render_html(c: Comparison, page: Path) -> str:
    figs = []
    for m in dict.fromkeys(r.metric for r in c.rows):
        f = _figure(c, m, flow_of(m))
        if f:
            figs.append((f"compare-{m}", f))

    def link(out: Path) -> str:
        target = out / "dashboard.html"
        return f'<a href="{html.escape(os.path.relpath(target, page.parent))}">study dashboard</a>' \
            if target.exists() else ""

    parts = [f"<p><b>A</b>: {html.escape(c.a_name)} {link(c.a_dir)}<br><b>B</b>: {html.escape(c.b_name)} "
             f"{link(c.b_dir)}</p>",
             f"<p>Points in both: {len(c.shared)}. Only in A: {html.escape(', '.join(c.only_a) or 'none')}. "
             f"Only in B: {html.escape(', '.join(c.only_b) or 'none')}.</p>"]
    for t in tables(c):
        th = "".join(f"<th>{html.escape(h)}</th>" for h in t.head)
        tr = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in t.rows)
        parts.append(f"<h2>{html.escape(t.title)}</h2><table><thead><tr>{th}</tr></thead><tbody>{tr}</tbody></table>")
    parts.append("<p>mean ±95% CI half-width (Student t) over the point's valid runs in each study, n runs; B - A with "
                 "the Welch 95% confidence interval of the difference (none when either n &lt; 2). Definitions: "
                 "docs/studies.md.</p>")
    title = f"rtclab study compare: {c.a['study']} and {c.b['study']}"
    body = f"{''.join(parts[:2])}{pages.chart_divs(figs)}{''.join(parts[2:])}"
    return pages.render(title, body, figs)


def default_page(a_dir: Path, b_dir: Path) -> Path:
    return a_dir / f"compare-with-{b_dir.resolve().name}.html"


def write(a_dir: Path, b_dir: Path, page: Path | None = None, phase: str | None = None,
          metrics: list[str] | None = None) -> tuple[Path, str]:
    """Compares, writes the HTML page, returns (its path, the terminal text)."""
    c = compare(a_dir, b_dir, phase, metrics)
    page = (page or default_page(a_dir, b_dir)).resolve()
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_html(c, page), encoding="utf-8")
    return page, render_text(c)
