"""The study dashboard's tables: the points with their runs linked, the frames the viewer saw, the runs left out and why
(docs/studies.md)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from .catalogue import FRAMES_FLOW, FRAMES_METRICS
from .points import main_flow, varied
from .report import HEADERS, fmt_stat, phase_title, stat


def _link(out: Path, page: Path, run_dir: str) -> str:
    """A link (relative to the page) to a run's dashboard, else its report, else its directory."""
    for name in ("dashboard.html", "report.txt", ""):
        target = out / run_dir / name
        if target.exists():
            rel = os.path.relpath(target, page.parent)
            return f'<a href="{html.escape(rel)}">{html.escape(Path(run_dir).name)}</a>'
    return html.escape(Path(run_dir).name) + " (gone)"


def points_table(doc: dict[str, Any], out: Path, page: Path, phase: str) -> str:
    v = varied(doc)
    main, words = main_flow(doc)
    head = ["point", *v, "runs used", "queue ms", "Tq ms", "U", "loss (bytes)"]
    rows = []
    for p in doc["points"]:
        cells = [html.escape(p["name"]), *(html.escape(v[k][p["name"]]) for k in v),
                 " ".join(_link(out, page, d) for d in p.get("runs_used") or []) or "none"]
        cells[-1] += "".join(f"; left out {_link(out, page, x['dir'])}: {html.escape(x['reason'])}"
                             for x in p.get("runs_left_out") or [])
        cells += [html.escape(fmt_stat(m, stat(p, main, phase, m), with_n=True)) for m in
                  ("queuing_delay_ms_mean", "tq_ms_mean", "utilisation", "loss_ratio_bytes")]
        rows.append(f'<tr id="point-{html.escape(p["name"])}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return (f"<p>{html.escape(words[0].upper() + words[1:])}'s means in phase {html.escape(phase_title(doc, phase))}, "
            "±95% CI half-width, n runs. "
            f"Click a bar, box or point of a chart to come here.</p><table><thead><tr>{th}</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def frames_table(doc: dict[str, Any]) -> str:
    """Per point, what the viewer at b saw over the whole call (study.json frames:b): each frames metric's mean ±95%
    CI half-width, n runs; empty when no point has it."""
    if not any(FRAMES_FLOW in (p.get("flows") or {}) for p in doc["points"]):
        return ""
    head = ["point"] + [HEADERS.get(m, m) for m in FRAMES_METRICS]
    rows = []
    for p in doc["points"]:
        cells = [html.escape(p["name"])] + [html.escape(fmt_stat(m, stat(p, FRAMES_FLOW, "all", m), with_n=True))
                                            for m in FRAMES_METRICS]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return ("<h2>Frames shown at b (whole call)</h2><p>Each run's own p50 and p95 over its shown frames of glass-to-"
            "glass delay (display - capture) and its sender, network and receiver parts; the freeze time share "
            "(freezes by Chrome's rule / the span shown) and the share of frames sent but never shown; mean ±95% CI "
            "half-width over the point's runs, n runs (docs/metrics.md, \"Frames\"; docs/studies.md).</p>"
            f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(rows)}</tbody></table>")



def excluded_table(doc: dict[str, Any], out: Path, page: Path) -> str:
    parts = []
    ex = doc.get("excluded") or []
    if ex:
        rows = "".join(f"<tr><td>{html.escape(e['point'])}</td><td>{e['rep']}</td><td>{e['attempt']}</td>"
                       f"<td>{_link(out, page, e['dir'])}</td><td>{html.escape(str(e.get('status')))}</td>"
                       f"<td>{html.escape(str(e.get('excluded_because') or ''))}</td></tr>" for e in ex)
        parts.append("<h3>Excluded runs</h3><table><thead><tr><th>point</th><th>rep</th><th>attempt</th><th>run</th>"
                     f"<th>status</th><th>why (failed checks)</th></tr></thead><tbody>{rows}</tbody></table>")
    miss = doc.get("missing") or []
    if miss:
        rows = "".join(f"<tr><td>{html.escape(m['point'])}</td><td>{m['rep']}</td><td>{html.escape(m['state'])}</td>"
                       f"<td>{m['attempts']}</td></tr>" for m in miss)
        parts.append("<h3>Repetitions without a valid run</h3><table><thead><tr><th>point</th><th>rep</th>"
                     f"<th>state</th><th>attempts</th></tr></thead><tbody>{rows}</tbody></table>")
    return "".join(parts) or "<p>No run was excluded; every repetition has a valid run.</p>"
