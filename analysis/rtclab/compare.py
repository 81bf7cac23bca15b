"""`rtclab compare RUN...`: the runs side by side: their getStats series on shared panels, one line per run
(compare_timeseries.py; an imported field call beside a lab run), and as the reference papers plot them: box plots of
the video flow's queuing delay per run, bars with error bars (mean +- sd of 1 s throughput windows), loss bars."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Callable

from .fairness import headline_fairness


class CompareError(Exception):
    pass


def _metrics(run: Path, progress: Callable[[str], None] | None) -> dict[str, Any]:
    path = run / "metrics.json"
    if path.exists():
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            pass
    from .analyze import NothingToAnalyse, analyze
    try:
        return analyze(run, run_tshark=False, progress=progress)[0]
    except NothingToAnalyse as e:
        raise CompareError(f"{run}: {e}") from None


def _video(m: dict[str, Any]) -> dict[str, Any] | None:
    vids = [f for f in m.get("flows", []) if f["direction"] == "forward" and f["kind"] == "video"]
    return max(vids, key=lambda f: f["packets_sent"]) if vids else None


def _label(run: Path, m: dict[str, Any]) -> str:
    return f"{m['run'].get('scenario') or ''} {run.name}".strip()


def load(runs: list[Path], progress: Callable[[str], None] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Each run's metrics.json (the run analysed first when it has none)."""
    out = []
    for r in runs:
        if not r.is_dir():
            raise CompareError(f"{r} is not a run directory")
        out.append((r, _metrics(r, progress)))
    return out


def rows(runs: list[Path], progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    return _rows(load(runs, progress))


def _rows(loaded: list[tuple[Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for r, m in loaded:
        v = _video(m) or {}
        thr = v.get("throughput_bps") or {}
        w1 = (thr.get("windows") or {}).get("1s") or {}
        out.append({
            "run": r.name, "label": _label(r, m), "valid": (m.get("validity") or {}).get("valid"),
            "capacity_bps": m.get("capacity_bps"),
            "video_rate_bps": thr.get("mean"), "video_rate_sd_bps": w1.get("sd"),
            "utilisation": v.get("utilisation"), "loss_ratio_bytes": v.get("loss_ratio_bytes"),
            "queuing_delay_ms": v.get("queuing_delay_ms") or {}, "owd_ms": v.get("owd_ms") or {},
            "queuing_delay_vs_min_owd_ms": v.get("queuing_delay_vs_min_owd_ms") or {},
            "jitter_ms": (v.get("jitter_ms") or {}).get("mean"),
            "jain_index": headline_fairness(m)[1].get("jain_index"),
        })
    return out


def text(table: list[dict[str, Any]]) -> str:
    head = ["run", "valid", "video Mb/s", "sd", "U %", "loss % bytes", "queue mean", "p95", "q-minOWD", "owd p50",
            "jitter", "Jain"]
    fmt = lambda x, s=1.0, d=2: "-" if x is None else f"{x * s:.{d}f}"
    body = [[r["label"], str(r["valid"]), fmt(r["video_rate_bps"], 1e-6), fmt(r["video_rate_sd_bps"], 1e-6),
             fmt(r["utilisation"], 100, 0), fmt(r["loss_ratio_bytes"], 100),
             fmt(r["queuing_delay_ms"].get("mean"), 1, 1),
             fmt(r["queuing_delay_ms"].get("p95"), 1, 1), fmt(r["queuing_delay_vs_min_owd_ms"].get("mean"), 1, 1),
             fmt(r["owd_ms"].get("p50"), 1, 1), fmt(r["jitter_ms"]),
             fmt(r["jain_index"], 1, 3)] for r in table]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda c: "  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(c, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(b) for b in body)]) + "\n"


def figures(table: list[dict[str, Any]]) -> list[tuple[str, dict]]:
    labels = [r["label"] for r in table]
    # Box plots from the stored percentiles (p5 / p25 / p50 / p75 / p95 as whiskers and box), as Carlucci et al. do.
    box = {"type": "box", "name": "queuing delay", "x": labels,
           "lowerfence": [r["queuing_delay_ms"].get("p5") for r in table],
           "q1": [r["queuing_delay_ms"].get("p25") for r in table],
           "median": [r["queuing_delay_ms"].get("p50") for r in table],
           "q3": [r["queuing_delay_ms"].get("p75") for r in table],
           "upperfence": [r["queuing_delay_ms"].get("p95") for r in table],
           "mean": [r["queuing_delay_ms"].get("mean") for r in table]}
    rate = {"type": "bar", "name": "video rate", "x": labels,
            "y": [None if r["video_rate_bps"] is None else r["video_rate_bps"] / 1e6 for r in table],
            "error_y": {"type": "data",
                        "array": [None if r["video_rate_sd_bps"] is None else r["video_rate_sd_bps"] / 1e6
                                                  for r in table]}}
    loss = {"type": "bar", "name": "loss", "x": labels,
            "y": [None if r["loss_ratio_bytes"] is None else 100 * r["loss_ratio_bytes"] for r in table]}
    lay = lambda t, y: {"title": {"text": t}, "yaxis": {"title": {"text": y}}, "height": 360,
                        "margin": {"l": 60, "r": 20, "t": 40, "b": 90}}
    return [("queuing_box", {"data": [box],
                             "layout": lay("Video queuing delay, OWD - configured propagation (box p25-p75, "
                                                         "whiskers p5-p95)", "ms")}),
            ("rate_bars", {"data": [rate], "layout": lay("Video received rate (mean ± sd of 1 s windows)", "Mbit/s")}),
            ("loss_bars", {"data": [loss], "layout": lay("Video loss ratio l = bytes lost / bytes sent", "%")})]


def write(runs: list[Path], out: Path | None, progress: Callable[[str], None] | None = None) -> tuple[Path, str]:
    """compare.html: the runs' getStats series side by side (compare_timeseries.py), then the capture metrics' box
    plots and bars; returns it and the text of both tables (the captures', then getStats')."""
    from . import compare_timeseries, page
    loaded = load(runs, progress)
    table = _rows(loaded)
    labelled = [(row["label"], m) for row, (_, m) in zip(table, loaded)]
    gs_figs, gs_notes = compare_timeseries.figures(labelled)
    figs = gs_figs + figures(table)
    out = out or Path("compare.html")
    imported = [row["label"] for row, (_, m) in zip(table, loaded) if m.get("imported")]
    notes = ([f"imported (a field call's getStats, no captures: its capture metrics are missing, shown as -): "
              f"{', '.join(imported)}"] if imported else []) + gs_notes
    gs_text = compare_timeseries.table(labelled)
    body = ("".join(f'<p class="notes">{html.escape(n)}</p>' for n in notes)
            + f"\n{page.chart_divs(figs)}\n<h2>getStats, forward video</h2>\n<pre>{html.escape(gs_text)}</pre>"
            + f"\n<h2>Runs (captures)</h2>\n<pre>{html.escape(text(table))}</pre>")
    out.write_text(page.render("rtclab comparison of " + ", ".join(r["run"] for r in table), body, figs),
                   encoding="utf-8")
    return out, text(table) + "\n" + gs_text
