"""The run dashboard's cards and tables: the headline numbers, the flows, the competing flows' shares and the notes
on what was left out (docs/analyzer.md, "The run dashboard")."""

from __future__ import annotations

import html
from typing import Any

from .dashboard_traces import flow_label
from .fairness import headline_fairness


def ms_mean_p95(d: dict[str, Any] | None) -> str:
    if not d or d.get("mean") is None:
        return "-"
    return f"{d['mean']:.1f} ms mean, {d['p95']:.1f} p95"


def cards(m: dict[str, Any]) -> str:
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
                  ("video queuing delay (OWD - propagation)", ms_mean_p95(video.get("queuing_delay_ms"))),
                  ("video OWD - min OWD", ms_mean_p95(video.get("queuing_delay_vs_min_owd_ms"))),
                  ("video loss", f"{100 * video['loss_ratio']:.2f} %" if video.get("loss_ratio") is not None else "-"),
                  ("video jitter", f"{video['jitter_ms']['mean']:.2f} ms" if video.get("jitter_ms") else "-")]
    tq = [s for s in (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {}).get("streams", [])
          if s.get("kind") == "video"]
    if tq:
        cards += [("video Tq = RTT - RTTm", ms_mean_p95(tq[0].get("tq_ms"))),
                  ("video RTT - min RTT", ms_mean_p95(tq[0].get("tq_vs_min_rtt_ms")))]
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


def flow_table(m: dict[str, Any]) -> str:
    head = ["dir", "flow", "sent", "recv", "loss %", "owd p50", "owd p95", "owd p99", "queue mean (OWD - propagation)",
            "OWD - min OWD mean", "jitter mean", "reordered", "dup", "rate Mbit/s", "U %"]
    rows = []
    for f in m["flows"]:
        if f["packets_sent"] + f["packets_received"] < 20:
            continue
        j = f.get("jitter_ms") or {}
        fmt = lambda x, d=1: "-" if x is None else f"{x:.{d}f}"
        rows.append([f["direction"], flow_label(f), f["packets_sent"], f["packets_received"],
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


def multiflow_table(m: dict[str, Any]) -> str:
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


def notes(m: dict[str, Any], omitted: list[str]) -> str:
    items = [("gap", g) for g in m.get("gaps", [])] + [("problem", p) for p in m.get("problems", [])] + \
        [("warning", w) for w in m.get("warnings", [])] + [("omitted", o) for o in omitted]
    if not items:
        return ""
    return "<ul class=notes>" + "".join(f"<li><b>{k}</b>: {html.escape(v)}</li>" for k, v in items) + "</ul>"


def imported_note(m: dict[str, Any]) -> str:
    """A run imported from a field call's getStats dump: where it came from, and the sections it has not, why."""
    imp = m.get("imported")
    if not imp:
        return ""
    missing = "".join(f"<li>{html.escape(k)}: {html.escape(why)}</li>"
                      for k, why in (imp.get("no_captures") or {}).items())
    return (f'<p class="notes">IMPORTED: a field call\'s getStats, not a lab run: {html.escape(imp["kind"])} dump '
            f'{html.escape(imp["source"])} ({html.escape(imp["layout"])}), peer connection '
            f'{html.escape(imp["peer_connection"])}, its browser as side {html.escape(imp["side"])}. No captures, no '
            f"network ground truth.</p>\n<details><summary>Sections without captures</summary><ul>{missing}</ul>"
            "</details>")

