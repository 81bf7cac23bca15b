"""Fairness at the forward bottleneck, per phase: who competes is defined by the scenario, not by who happened to be
seen. The competitors are the call's forward media (each forward 5-tuple carrying RTP) and the forward cross-traffic
TCP connections the scenario runs during the phase (its items with direction "forward", `flows` each); a reverse
item's data goes b -> a and only its ACKs cross the forward link, so it does not compete there. Each competitor's
received link-layer rate over the phase, its share of the fair share, and Jain's index over them; a competitor the
scenario runs that delivered nothing in the phase counts with rate 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .packets import CLS_RTP, DELIVERED, FORWARD, UNMATCHED, PacketTable
from .rundir import int_to_ip
from .scenario import Scenario

ETHERNET_HEADER_BYTES = 14
PROTOCOL_NAMES = {6: "tcp", 17: "udp", 1: "icmp"}


def jain_index(rates: list[float]) -> float | None:
    """(sum x)^2 / (n * sum x^2); 1 when all flows get the same rate, 1/n when one takes everything."""
    x = np.asarray(rates, dtype=float)
    if x.size == 0 or not (x > 0).any():
        return None
    return float(x.sum() ** 2 / (x.size * (x * x).sum()))


def expected_tcp_flows(scenario: Scenario | None, lo_s: float, hi_s: float) -> int | None:
    """Forward long-lived TCP connections the scenario runs during any part of [lo_s, hi_s); None without a scenario.
    Short flows (kind tcp_short) are not counted: each download is a connection of its own, mostly idle in between,
    with no fair share of its own to be measured against."""
    if scenario is None:
        return None
    return sum(c.flows for c in scenario.cross_traffic
               if c.kind == "tcp" and c.direction == "forward" and c.active(lo_s, hi_s))


def connections(t: PacketTable, lo_ns: int, hi_ns: int, capacity_bps: float | None, tcp_flows: int | None,
                forward_arrivals_seen: bool, calls: int = 1) -> dict[str, Any]:
    """Fairness over [lo, hi). `tcp_flows`: forward TCP competitors the scenario runs (None: every forward TCP
    connection carrying data). `forward_arrivals_seen`: whether capture-b could be read (else every rate is
    unknown, not zero). `calls`: the calls the scenario runs during the phase (each call's forward media is one
    competitor, its 5-tuple)."""
    dur_s = (hi_ns - lo_ns) / 1e9
    unknown: dict[str, Any] = {"connections": [], "jain_index": None, "utilisation": None, "received_bps": None,
               "competitors_expected": None}
    if not forward_arrivals_seen or dur_s <= 0:
        return unknown
    c = t.cols
    # Forward arrivals at b (first copies, matched or not) inside the phase.
    fwd = np.flatnonzero((c["direction"] == FORWARD) & ((c["status"] == DELIVERED) | (c["status"] == UNMATCHED)) &
                         (c["t_recv_ns"] >= lo_ns) & (c["t_recv_ns"] < hi_ns))
    u = np.uint64
    h = (c["ip_src"][fwd].astype(u) << u(32)) ^ c["ip_dst"][fwd].astype(u) ^ (c["sport"][fwd].astype(u) << u(48)) \
        ^ (c["dport"][fwd].astype(u) << u(16)) ^ c["proto"][fwd].astype(u)
    ids, first = _core.group_ids(h) if fwd.size else (np.zeros(0, np.uint32), np.zeros(0, np.int64))
    n_groups = len(first)
    nbytes = np.bincount(ids, weights=c["ip_len"][fwd].astype(np.int64) + ETHERNET_HEADER_BYTES, minlength=n_groups)
    rates = nbytes * 8 / dur_s
    carries_rtp = np.bincount(ids, weights=c["cls"][fwd] == CLS_RTP, minlength=n_groups) > 0
    # A TCP data connection: most of its packets carry payload (an ACK stream of reverse traffic carries none).
    with_payload = np.bincount(ids, weights=c["payload_len"][fwd] > 0, minlength=n_groups)
    packets = np.bincount(ids, minlength=n_groups)
    is_tcp = c["proto"][fwd[first]] == 6 if n_groups else np.zeros(0, bool)
    tcp_data = is_tcp & (with_payload > packets / 2)
    call = [int(i) for i in np.flatnonzero(carries_rtp)]
    tcp = sorted((int(i) for i in np.flatnonzero(tcp_data)), key=lambda i: -rates[i])
    if tcp_flows is not None:
        tcp = tcp[:tcp_flows]
    conns: list[dict[str, Any]] = []
    for role, group in (("call", call), ("tcp", tcp)):
        for i in group:
            r = int(fwd[first[i]])
            conns.append({"role": role, "src": f"{int_to_ip(c['ip_src'][r])}:{int(c['sport'][r])}",
                          "dst": f"{int_to_ip(c['ip_dst'][r])}:{int(c['dport'][r])}",
                          "protocol": PROTOCOL_NAMES.get(int(c["proto"][r]), str(int(c["proto"][r]))),
                          "throughput_bps": float(rates[i])})
    # Competitors the scenario runs but the capture never saw deliver in this phase: starved to zero.
    missing = [] if tcp_flows is None else [("call", calls - len(call)), ("tcp", tcp_flows - len(tcp))]
    for role, n_missing in missing:
        conns += [{"role": role, "src": None, "dst": None, "protocol": None, "throughput_bps": 0.0,
                   "not_seen": True} for _ in range(max(0, n_missing))]
    n = len(conns)
    for x in conns:
        x["share_of_fair_share"] = (x["throughput_bps"] / (capacity_bps / n)) if capacity_bps and n else None
    total = float(rates.sum())
    return {"connections": conns, "jain_index": jain_index([x["throughput_bps"] for x in conns]),
            "competitors_expected": None if tcp_flows is None else calls + tcp_flows,
            "received_bps": total, "utilisation": (total / capacity_bps) if capacity_bps else None}


def headline_fairness(metrics_json: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The fairness to show first (dashboard card, report, compare): while the flows compete, i.e. the longest phase
    with cross traffic (there are several when the scenario has several cross-traffic periods), else the whole run.
    Returns (phase name, its fairness entry)."""
    fairness = metrics_json.get("fairness") or {}
    cross = [p for p in metrics_json.get("phases") or []
             if (p.get("cross_traffic") or str(p.get("name", "")).startswith("cross_traffic"))
             and p["name"] in fairness]
    if cross:
        best = max(cross, key=lambda p: p["end_s"] - p["start_s"])
        return best["name"], fairness[best["name"]]
    if "cross_traffic" in fairness:  # a metrics.json without phases
        return "cross_traffic", fairness["cross_traffic"]
    return "all", fairness.get("all") or {}
