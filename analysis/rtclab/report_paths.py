"""The report's lines on the paths the calls took: each call's propagation delay (the links', a call's own
calls[].delay_ms, or its path's in a chain of bottlenecks) and, in a chain, where each call's queuing delay and loss
were, hop by hop (docs/metrics.md, "Delay per call", "Hops")."""

from __future__ import annotations

from typing import Any

from .report_format import _f, _table


def propagation_line(sc: dict[str, Any], calls: list[dict[str, Any]]) -> str:
    """The links' configured delays, each call's own (calls[].delay_ms) and RTTm: the first call's (docs/metrics.md,
    "Delay per call"); in a chain of bottlenecks, each call's path delay instead (chain_propagation_line)."""
    if sc.get("hops"):
        return chain_propagation_line(sc)
    own = [f"{c['id']} {c['delay_ms']:g} ms" for c in calls if c.get("delay_ms") is not None]
    first = sc.get("first_call_delay_ms")
    rttm = 2 * first if first is not None else sc["forward"]["delay_ms"] + sc["reverse"]["delay_ms"]
    return (f"propagation delay (scenario): forward {sc['forward']['delay_ms']:g} ms, reverse "
            f"{sc['reverse']['delay_ms']:g} ms" + (f"; calls' own, each way: {', '.join(own)}" if own else "") +
            f"; RTTm {rttm:g} ms" + (" (the first call's)" if first is not None else ""))


def chain_propagation_line(sc: dict[str, Any]) -> str:
    """A chain's hop delays and each call's path delay, each way: the sum of its hops' delay_ms (its way back crosses
    the same hops, each at its delay_ms); RTTm is the first call's, both ways, as the getStats view uses it. Metrics
    written before the scenario held call_paths name the hops only."""
    hops = sc["hops"]
    each_hop = ", ".join(f"hop {i} {h['delay_ms']:g} ms" for i, h in enumerate(hops))
    paths = sc.get("call_paths") or []
    if not paths:
        return f"propagation delay (scenario): a chain of {len(hops)} hops ({each_hop}); the calls' paths unknown"
    delay = [sum(hops[h]["delay_ms"] for h in c["path"]) for c in paths]
    span = lambda p: f"hop {p[0]}" if len(p) == 1 else f"hops {p[0]}-{p[-1]}"
    own = ", ".join(f"{c['id']} {d:g} ms ({span(c['path'])})" for c, d in zip(paths, delay))
    return (f"propagation delay (scenario): a chain of {len(hops)} hops ({each_hop}); each call's path, each way: "
            f"{own}; RTTm {2 * delay[0]:g} ms (the first call's)")


def hop_lines(h: dict[str, Any] | None) -> list[str]:
    """Per call and hop of a chain of bottlenecks (docs/metrics.md, "Hops"): where its queuing delay and loss were."""
    if not h:
        return []
    rows = []
    for c in h["calls"]:
        for x in c["hops"]:
            if x["log"] is None:
                rows.append([c["id"], str(x["hop"]), *["-"] * 8])
                continue
            q = x["queuing_delay_ms"]
            share = lambda v: _f(None if v is None else 100 * v, ".0f", "%")
            loss = None if x["loss_ratio"] is None else 100 * x["loss_ratio"]
            rows.append([c["id"], str(x["hop"]), str(x["arrived"]), str(x["dropped"]), _f(loss, ".2f", "%"),
                         share(x["loss_share"]), _f(q["mean"]), _f(q["p95"]), share(x["queuing_delay_share"]),
                         str(x["not_logged"])])
    out = ["", f"hops (a chain of {h['hops']} bottlenecks, forward; each call's queuing delay and loss by hop):"]
    out += _table(["call", "hop", "arrived", "dropped", "loss", "of drops", "queue mean", "p95", "of queue",
                   "not logged"], rows)
    for c in h["calls"]:
        if c["lost_not_dropped_by_a_hop"]:
            out.append(f"  {c['id']}: {c['lost_not_dropped_by_a_hop']} of {c['lost_in_captures']} packets lost in the "
                       f"captures were dropped by no hop")
    return out
