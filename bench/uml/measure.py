"""The numbers of one run of bench/uml/cell.mjs, per traffic pattern, from its run directory: what the captures saw
(throughput at b, loss between a and b, CE marks, queuing delay, per-flow shares and Jain's index), what the
discipline says it dropped and marked (the userspace bottleneck's ground-truth log; the guest's `tc -s` counters),
the CPU of namespace r, and the guest's timer lateness when its probe left `uml-timer.jsonl`.

Two windows per pattern: counts (drops, marks, loss) over the whole pattern, from the counters read before it to
those read after its drain gap, so that they match the qdisc counters read at those moments; rates, delays and shares
over its steady part, [start + warmup, start + seconds], without slow start and iperf3's start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rtclab import packets, rundir
from rtclab.fairness import jain_index
from rtclab.stats import percentiles

# Qdiscs that hold other qdiscs: their counters include their children's, so only the leaves are summed.
PARENT_KINDS = {"tbf", "prio", "htb", "ingress", "mq", "clsact"}
# Devices of the forward path in the guest: the egress of the bottleneck and the IFB that holds the delay.
FORWARD_DEVS = {"r-eth1", "ifb-fwd"}
GT_DROPS = (2, 3, 4, 5, 6, 7)  # dropped_tail, _aqm, _loss, _shutdown, _outage, _gemodel
GT_CE = 1


def _qdisc_counts(before: list[dict[str, Any]] | None, after: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """Drops and CE marks of the forward path's leaf qdiscs between two `tc -s -j qdisc show` (the guest's)."""
    if before is None or after is None:
        return None
    def leaves(qs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        return {(q["dev"], q["handle"]): q for q in qs
                if q.get("dev") in FORWARD_DEVS and q["kind"] not in PARENT_KINDS}
    b, a = leaves(before), leaves(after)
    drops = sum(q.get("drops", 0) - b.get(k, {}).get("drops", 0) for k, q in a.items())
    marks = sum(q.get("ecn_mark", 0) - b.get(k, {}).get("ecn_mark", 0) for k, q in a.items())
    sent = sum(q.get("packets", 0) - b.get(k, {}).get("packets", 0) for k, q in a.items() if k[0] == "r-eth1")
    return {"drops": int(drops), "ce": int(marks), "sent": int(sent),
            "kinds": sorted({f"{k[0]}:{q['kind']}" for k, q in a.items()})}


def _gtlog_counts(log: rundir.GroundTruthLog | None, lo_ns: int, hi_ns: int) -> dict[str, Any] | None:
    """Drops and CE marks in the userspace bottleneck's log, by arrival time."""
    if log is None:
        return None
    r = log.records
    w = (r["arrival_ns"] >= lo_ns) & (r["arrival_ns"] < hi_ns)
    ev = r["event"][w]
    return {"drops": int(np.isin(ev, GT_DROPS).sum()), "ce": int((ev == GT_CE).sum()),
            "sent": int(np.isin(ev, rundir.GTLOG_FORWARDED).sum())}


def _link_drops(before: list[dict[str, Any]] | None, after: list[dict[str, Any]] | None) -> dict[str, int] | None:
    """Per device, rx and tx drops between two `ip -s -j link show`: where packets die outside the qdisc."""
    if before is None or after is None:
        return None
    def drops(links: list[dict[str, Any]]) -> dict[str, int]:
        out = {}
        for link in links:
            s = link.get("stats64") or link.get("stats") or {}
            out[link["ifname"]] = sum(int(s.get(d, {}).get(k, 0)) for d in ("rx", "tx") for k in ("dropped", "errors"))
        return out
    b, a = drops(before), drops(after)
    return {dev: a[dev] - b.get(dev, 0) for dev in a if a[dev] - b.get(dev, 0)}


def _socket_drops(before: list[dict[str, Any]] | None, after: list[dict[str, Any]] | None) -> dict[str, int] | None:
    """Per device, drops of the guest's receiving raw sockets on the host (protocol `*`; its `[2048]` sockets only
    send, and what the host queues to them is never read, so their drops mean nothing)."""
    if not before or not after:
        return None
    def drops(socks: list[dict[str, Any]]) -> dict[str, int]:
        return {s["dev"]: int(s["drops"]) for s in socks if s["proto"] == "*"}
    b, a = drops(before), drops(after)
    return {dev: a[dev] - b.get(dev, 0) for dev in a}


def _tcp_ports(path: Path) -> set[int]:
    """Local ports of iperf3's data streams (its control connection goes to the same server port)."""
    if not path.exists():
        return set()
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError:
        return set()
    return {int(c["local_port"]) for c in doc.get("start", {}).get("connected", [])}


def timer_lateness(run_dir: Path, lo: float, hi: float) -> dict[str, Any] | None:
    """The guest timer probe's seconds in [lo, hi] (epoch s), if the probe ran: `uml-timer.jsonl` (netem/uml's
    timer probe: per second `{t, samples, late_1ms, late_10ms, late_100ms, max_ms}` of 10 ms sleeps), summed.
    `p99_bound_ms`: an upper bound of the lateness's p99 from those counts (1, 10 or 100 ms, or the maximum if
    smaller)."""
    path = run_dir / "uml-timer.jsonl"
    if not path.exists():
        return None
    tot = {"samples": 0, "late_1ms": 0, "late_10ms": 0, "late_100ms": 0}
    worst = 0.0
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(r.get("t"), (int, float)) or not lo <= r["t"] <= hi + 1:
            continue
        for k in tot:
            tot[k] += int(r.get(k) or 0)
        worst = max(worst, float(r.get("max_ms") or 0))
    n = tot["samples"]
    bound = next((min(ms, worst) for ms, k in ((1.0, "late_1ms"), (10.0, "late_10ms"), (100.0, "late_100ms"))
                  if n and tot[k] <= 0.01 * n), worst)
    return {**tot, "max_ms": worst, "p99_bound_ms": bound if n else None}


def measure_pattern(table: packets.PacketTable, gtlog: rundir.GroundTruthLog | None, pat: dict[str, Any],
                    run_dir: Path, warmup_s: float, capacity_kbit: float | None) -> dict[str, Any]:
    c = table.cols
    lo_ns, hi_ns = int(pat["before"]["t"] * 1e9), int(pat["after"]["t"] * 1e9)
    ws_ns, we_ns = int((pat["t_start"] + warmup_s) * 1e9), int((pat["t_start"] + pat["seconds"]) * 1e9)
    fwd = c["direction"] == packets.FORWARD
    whole = fwd & (c["t_send_ns"] >= lo_ns) & (c["t_send_ns"] < hi_ns)
    delivered = c["status"] == packets.DELIVERED
    # Data flows: the UDP flow, and TCP from the data streams' ports (not iperf3's control connections).
    tcp_ports = _tcp_ports(run_dir / f"iperf3-{pat['name']}-tcp.json")
    is_udp = (c["proto"] == 17) & whole
    is_tcp = (c["proto"] == 6) & whole & np.isin(c["sport"], list(tcp_ports))
    data = is_udp | is_tcp
    ect = (c["ecn_send"] == 1) | (c["ecn_send"] == 2)
    out: dict[str, Any] = {
        "name": pat["name"], "seconds": pat["seconds"], "window_s": (we_ns - ws_ns) / 1e9,
        "sent": int(whole.sum()), "lost": int((whole & np.isin(c["status"], (packets.LOST, packets.UNKNOWN))).sum()),
        "unknown": int((whole & (c["status"] == packets.UNKNOWN)).sum()),
        "ce_captured": int((whole & delivered & ect & (c["ecn_recv"] == 3)).sum()),
        "ect_sent": int((data & ect).sum()),
        "cpu_cores": pat["cpu_s"] / max(1e-9, pat["t_end"] - pat["t_start"]),
        "client_exit": pat.get("client_exit"),
    }
    out["qdisc"] = _qdisc_counts(pat["before"].get("qdiscs"), pat["after"].get("qdiscs")) or \
        _gtlog_counts(gtlog, lo_ns, hi_ns)
    out["link_drops_guest"] = _link_drops(pat["before"].get("links"), pat["after"].get("links"))
    out["link_drops_host_r"] = _link_drops(pat["before"].get("host_links"), pat["after"].get("host_links"))
    out["socket_drops_host"] = _socket_drops(pat["before"].get("sockets"), pat["after"].get("sockets"))
    # Queuing delay: one-way delay minus the pattern's smallest (propagation + one transmission + forwarding).
    owd = c["owd_ns"]
    got = data & delivered
    base = int(owd[got].min()) if got.any() else 0
    steady = got & (c["t_send_ns"] >= ws_ns) & (c["t_send_ns"] < we_ns)
    q = percentiles((owd[steady] - base) / 1e6, [50, 95, 99])
    out["owd_min_ms"] = base / 1e6 if got.any() else None
    out["qdelay_ms"] = dict(zip(("p50", "p95", "p99"), q)) if q else None
    # Throughput: link-layer bytes (IP length + 14, what TBF and the userspace token bucket count) arriving at b in the
    # steady window, per flow.
    arrived = got & (c["t_recv_ns"] >= ws_ns) & (c["t_recv_ns"] < we_ns)
    span = (we_ns - ws_ns) / 1e9
    flows: dict[str, float] = {}
    keys = np.where(c["proto"] == 17, -1, c["sport"].astype(np.int64))
    for k in np.unique(keys[arrived]):
        sel = arrived & (keys == k)
        bits = float((c["ip_len"][sel].astype(np.int64) + 14).sum()) * 8
        flows["udp" if k == -1 else f"tcp{int(k)}"] = bits / span / 1e3
    total = sum(flows.values())
    out["kbit"] = total
    out["utilisation"] = total / capacity_kbit if capacity_kbit else None
    out["udp_share"] = flows.get("udp", 0.0) / total if total and "udp" in flows else None
    out["flows_kbit"] = flows
    expected = (1 if pat.get("udp") else 0) + (pat["tcp"]["flows"] if pat.get("tcp") else 0)
    rates = list(flows.values()) + [0.0] * max(0, expected - len(flows))  # a starved flow counts as 0
    out["jain"] = jain_index(rates) if expected > 1 else None
    out["timer"] = timer_lateness(run_dir, pat["t_start"], pat["t_end"])
    return out


def measure_run(run_dir: Path, warmup_s: float) -> dict[str, Any]:
    cell = json.loads((run_dir / "cell.json").read_text())
    cap_a = rundir.read_capture(run_dir / "capture-a.pcap")
    cap_b = rundir.read_capture(run_dir / "capture-b.pcap")
    table = packets.build(cap_a, cap_b, rundir.ip_to_int(rundir.DEFAULT_A), rundir.ip_to_int(rundir.DEFAULT_B))
    gt_path = run_dir / "bottleneck-forward.gtlog"
    gtlog = rundir.read_gtlog(gt_path) if gt_path.exists() else None
    rate = cell["scenario"]["network"]["forward"].get("rate")
    capacity = rate.get("kbit") if isinstance(rate, dict) else None
    return {"backend": cell["backend"], "error": cell.get("error"), "captures": cell.get("captures"),
            "capture_errors": [e for e in (cap_a.error, cap_b.error) if e],
            "patterns": [measure_pattern(table, gtlog, p, run_dir, warmup_s, capacity)
                         for p in cell["patterns"] if "after" in p]}
