"""A chain of bottlenecks (scenario `network.hops`, docs/netem.md "A chain of bottlenecks"): each call's queuing
delay and loss attributed to the hops of its path. Each hop writes its own ground-truth log
(bottleneck-hop<i>-forward.gtlog); the call's forward departures at a are joined to each log as the single
bottleneck's are (crosscheck.gtlog_owd: the packet join key on the log's FNV-1a key, occurrence order), and followed
along the path: a hop is expected to see what the hop before it forwarded. Definitions: docs/metrics.md, "Hops"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import packets
from .multiflow import Call, calls
from .packets import DELIVERED, FORWARD, LOST, REVERSE, PacketTable, propagation_of
from .rundir import GTLOG_FORWARDED, RunDir, join_keys, read_gtlog
from .scenario import Scenario
from .stats import percentile

# The hop's own drops: tail, AQM, random loss, outage, Gilbert-Elliott. 5 (shutdown) is the network going down after
# the call, not the hop.
DROPPED_EVENTS = (2, 3, 4, 6, 7)


def log_name(hop: int) -> str:
    return f"bottleneck-hop{hop}-forward.gtlog"


def hop_count(run: RunDir) -> int:
    hops = (run.scenario_doc.get("network") or {}).get("hops")
    return len(hops) if isinstance(hops, list) else 0


def call_paths(run: RunDir, n: int) -> list[list[int]]:
    """Each call's path as the normalised scenario holds it (every one of the n hops where it holds none)."""
    listed = run.scenario_doc.get("calls")
    items: list[Any] = listed if isinstance(listed, list) else [run.scenario_doc.get("call") or {}]
    return [[int(h) for h in c["path"]] if isinstance(c, dict) and isinstance(c.get("path"), list) else list(range(n))
            for c in items]


def at_hop(records: np.ndarray, match: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    """One call at one hop. `match`: for each departure expected at the hop, its record's index in the hop's log or
    -1. Returns the hop's numbers and, per expected departure, whether the hop forwarded it."""
    logged = match >= 0
    rec = records[match[logged]]
    event = rec["event"]
    dropped = np.isin(event, DROPPED_EVENTS)
    forwarded_rec = np.isin(event, GTLOG_FORWARDED)
    forwarded = np.zeros(match.size, dtype=bool)
    forwarded[np.flatnonzero(logged)[forwarded_rec]] = True
    fwd = rec[forwarded_rec]
    arrival = fwd["arrival_ns"].astype(np.int64)
    queuing_ms = (fwd["tx_end_ns"].astype(np.int64) - arrival) / 1e6
    sojourn_ms = (fwd["dequeue_ns"].astype(np.int64) - arrival) / 1e6
    arrived = int(logged.sum())
    out = {
        "expected": int(match.size), "arrived": arrived, "not_logged": int(match.size - arrived),
        "forwarded": int(forwarded_rec.sum()), "dropped": int(dropped.sum()),
        "dropped_shutdown": int((event == 5).sum()),
        "loss_ratio": float(dropped.sum() / arrived) if arrived else None,
        "queuing_delay_ms": _summary(queuing_ms), "sojourn_ms": _summary(sojourn_ms),
    }
    return out, forwarded


def _summary(ms: np.ndarray) -> dict[str, float | None]:
    if not ms.size:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    return {"mean": float(ms.mean()), "p50": percentile(ms, 50), "p95": percentile(ms, 95), "max": float(ms.max())}


def _shares(values: Sequence[float | None]) -> list[float | None]:
    """Each hop's part of the sum over the path (None where the hop has no value, all None when the sum is 0)."""
    total = sum(v for v in values if v is not None)
    return [None if v is None or total <= 0 else v / total for v in values]


def call_rows(table: PacketTable, call: Call, lo_ns: int, hi_ns: int) -> np.ndarray:
    """The call's forward departures at a (its 5-tuple, every class) sent in [lo_ns, hi_ns)."""
    if call.five_tuple is None:
        return np.zeros(0, np.int64)
    c = table.cols
    src, sport, dst, dport = call.five_tuple
    sent = c["t_send_ns"]
    return np.flatnonzero((c["direction"] == FORWARD) & (c["ip_src"] == src) & (c["sport"] == sport)
                          & (c["ip_dst"] == dst) & (c["dport"] == dport) & (sent >= lo_ns) & (sent < hi_ns))


def attribute_call(table: PacketTable, rows: np.ndarray, path: list[int],
                   logs: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """One call along its path. `logs`: per hop its records and, per table row, the row's record index or -1."""
    hops_out: list[dict[str, Any]] = []
    expected = rows
    dropped_somewhere = np.zeros(len(table), dtype=bool)
    for hop in path:
        if hop not in logs:
            hops_out.append({"hop": hop, "log": None})
            expected = np.zeros(0, np.int64)  # nothing further along is attributable without this hop's log
            continue
        records, row_match = logs[hop]
        m = row_match[expected]
        numbers, forwarded = at_hop(records, m)
        logged_rows = expected[m >= 0]
        dropped_somewhere[logged_rows[np.isin(records["event"][m[m >= 0]], DROPPED_EVENTS)]] = True
        hops_out.append({"hop": hop, "log": log_name(hop), **numbers})
        expected = expected[forwarded]
    with_log = [h for h in hops_out if h["log"] is not None]
    loss_share = _shares([float(h["dropped"]) for h in with_log])
    delay_share = _shares([h["queuing_delay_ms"]["mean"] for h in with_log])
    for h, ls, ds in zip(with_log, loss_share, delay_share):
        h["loss_share"], h["queuing_delay_share"] = ls, ds
    lost = rows[table.cols["status"][rows] == LOST]
    return {"path": path, "departures": int(rows.size), "lost_in_captures": int(lost.size),
            "lost_not_dropped_by_a_hop": int((~dropped_somewhere[lost]).sum()), "hops": hops_out}


def analyse(run: RunDir, table: PacketTable | None, t0_ns: int, duration_s: float) -> dict[str, Any] | None:
    """The hops section of metrics.json; None without a chain."""
    n = hop_count(run)
    if n == 0 or table is None:
        return None
    c = table.cols
    dep = np.flatnonzero((c["direction"] == FORWARD) & (c["t_send_ns"] >= 0))
    logs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for hop in range(n):
        log_path = run.file(log_name(hop))
        if not log_path.exists():
            run.problems.append(f"{log_path.name} is missing: losses and delays at hop {hop} are not attributed")
            continue
        try:
            rec = read_gtlog(log_path).records
        except (ValueError, OSError) as e:
            run.problems.append(f"{log_path.name} unreadable ({e}): losses and delays at hop {hop} are not attributed")
            continue
        row_match = np.full(len(table), -1, dtype=np.int64)
        if dep.size and rec.size:
            row_match[dep], _ = packets.match(packets.join_key(c, dep, "key"), join_keys(rec["key"], rec["ip_id"]))
        logs[hop] = (rec, row_match)
    paths = call_paths(run, n)
    out_calls = []
    for i, call in enumerate(calls(run)):
        path = paths[i] if i < len(paths) else list(range(n))
        hi_s = duration_s if call.stop_s is None else min(float(call.stop_s), duration_s)
        rows = call_rows(table, call, t0_ns + int(call.start_s * 1e9), t0_ns + int(hi_s * 1e9))
        out_calls.append({"id": call.id, "five_tuple_found": call.five_tuple is not None,
                          **attribute_call(table, rows, path, logs)})
    return {"hops": n, "logs": [log_name(h) if h in logs else None for h in range(n)], "calls": out_calls}


def fill_queuing_delay(run: RunDir, table: PacketTable, scen: Scenario, t0_ns: int) -> None:
    """A chain gives each call its own propagation delay: the sum of its path's hop delays a -> b (each hop's
    delay_schedule by send time), and of their delay_ms b -> a (the way back has no schedule). Sets the calls' rows'
    queuing_delay_ns to one-way delay minus that; every other row stays unknown (-1): it crossed no known path."""
    c = table.cols
    delivered = c["status"] == DELIVERED
    paths = call_paths(run, len(scen.hops))
    for i, call in enumerate(calls(run)):
        if call.five_tuple is None:
            continue
        path = paths[i] if i < len(paths) else list(range(len(scen.hops)))
        src, sport, dst, dport = call.five_tuple
        for direction, (s_ip, s_port, d_ip, d_port) in ((FORWARD, (src, sport, dst, dport)),
                                                        (REVERSE, (dst, dport, src, sport))):
            rows = np.flatnonzero(delivered & (c["direction"] == direction) & (c["ip_src"] == s_ip)
                                  & (c["sport"] == s_port) & (c["ip_dst"] == d_ip) & (c["dport"] == d_port))
            if direction == FORWARD:
                sent = c["t_send_ns"][rows]
                prop = sum((propagation_of(scen.hops[h], t0_ns).at(sent) for h in path), np.zeros(rows.size, np.int64))
            else:
                prop = np.full(rows.size, int(round(sum(scen.hops[h].delay_ms for h in path) * 1e6)), np.int64)
            c["queuing_delay_ns"][rows] = c["owd_ns"][rows] - prop
