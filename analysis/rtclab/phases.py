"""The run's phases (before, during and after the cross traffic) from when each cross-traffic item actually sent data,
not only from when the scenario scheduled it (docs/metrics.md, "Phases"). iperf3 (netem/cross.js) connects the streams
of an item one after the other, a round trip each, and only then starts its `-t` clock: with 99 flows at 50 ms RTT
its data starts about 5 s after the schedule and stops as late. So each item's first and last data packet is
measured on the sending side's capture, and the phase bounds follow them; where nothing was measured (no capture, no
packet) they follow the schedule and `gaps` says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .packets import FORWARD, REVERSE, PacketTable
from .scenario import Scenario

# Item n's iperf3 server port: the manifest's topology.cross_traffic[n].port (netem/cross.js); runs recorded before
# the manifest held it used 5201 + n.
IPERF3_BASE_PORT = 5201
IPERF3_COOKIE_BYTES = 37  # every iperf3 connection first sends its 37-byte cookie, long before the test's data
OFF_SCHEDULE_S = 0.5  # the report names an item whose data started or stopped further than this from its schedule


@dataclass
class Phase:
    name: str
    start_s: float  # seconds since t0 (timings.call_start): measured where known, else scheduled
    end_s: float
    cross_traffic: bool = False  # cross traffic runs through it (the phases fairness headlines)
    scheduled_start_s: float = 0.0  # the same bound from the scenario's schedule
    scheduled_end_s: float = 0.0


@dataclass
class ItemTiming:
    """When one cross-traffic item sent data, in seconds since t0; first/last None when not measured."""
    item: int
    scheduled_start_s: float
    scheduled_stop_s: float  # the call's scheduled end for an item without stop_s
    first_data_s: float | None
    last_data_s: float | None

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "scheduled_start_s": self.scheduled_start_s,
                "scheduled_stop_s": self.scheduled_stop_s, "first_data_s": self.first_data_s,
                "last_data_s": self.last_data_s,
                "start_delay_s": None if self.first_data_s is None else self.first_data_s - self.scheduled_start_s,
                "stop_delay_s": None if self.last_data_s is None else self.last_data_s - self.scheduled_stop_s}


def cross_traffic_timing(table: PacketTable | None, scenario: Scenario | None, t0_ns: int, addr_a: int, addr_b: int,
                         captures_read: dict[str, bool],
                         ports: list[int] | None = None) -> tuple[list[ItemTiming], list[str]]:
    """Each item's first and last TCP packet carrying data from its iperf3 client to its server, on the sending
    side's capture (capture-a for `direction: forward`, capture-b for reverse). Data: payload beyond the 37-byte
    cookie, on the item's data connections: when the capture holds more connections than the item's flows, the
    first one opened is iperf3's control connection (parameters before the streams connect, results after the test)
    and is left out. ports: each item's server port as the manifest records it. Returns the timings and the gaps
    (items whose bounds stay scheduled, and why)."""
    out: list[ItemTiming] = []
    gaps: list[str] = []
    for n, c in enumerate(scenario.cross_traffic if scenario else []):
        assert scenario is not None
        timing = ItemTiming(n, float(c.start_s), float(c.stop_s if c.stop_s is not None else scenario.duration_s),
                            None, None)
        out.append(timing)
        forward = c.direction == "forward"
        side = "a" if forward else "b"
        port = ports[n] if ports is not None and n < len(ports) else IPERF3_BASE_PORT + n
        if table is None or not captures_read.get(side):
            gaps.append(f"capture-{side}.pcap unreadable: cross_traffic[{n}]'s phase bounds follow its schedule")
            continue
        col = table.cols
        if c.kind == "tcp_short":
            # Downloads (netem/short_tcp.py): the server in the sending namespace sends the data from its port.
            sender, receiver = (addr_a, addr_b) if forward else (addr_b, addr_a)
            data = np.flatnonzero((col["direction"] == (FORWARD if forward else REVERSE)) & (col["proto"] == 6) &
                                  (col["ip_src"] == sender) & (col["ip_dst"] == receiver) & (col["sport"] == port) &
                                  (col["t_send_ns"] >= 0) & (col["payload_len"] > 0))
            if data.size == 0:
                gaps.append(f"cross_traffic[{n}]: no TCP data from its server's port {port} in capture-{side}.pcap: "
                            f"its phase bounds follow its schedule")
                continue
            timing.first_data_s = (int(col["t_send_ns"][data].min()) - t0_ns) / 1e9
            timing.last_data_s = (int(col["t_send_ns"][data].max()) - t0_ns) / 1e9
            continue
        client, server = (addr_a, addr_b) if forward else (addr_b, addr_a)
        rows = np.flatnonzero((col["direction"] == (FORWARD if forward else REVERSE)) & (col["proto"] == 6) &
                              (col["ip_src"] == client) & (col["ip_dst"] == server) & (col["dport"] == port) &
                              (col["t_send_ns"] >= 0))
        sports, first_row = np.unique(col["sport"][rows], return_index=True)
        data = rows[col["payload_len"][rows] > IPERF3_COOKIE_BYTES]
        if len(sports) > c.flows:
            t_open = col["t_send_ns"][rows][first_row]
            control = sports[int(np.argmin(t_open))]
            data = data[col["sport"][data] != control]
        if data.size == 0:
            gaps.append(f"cross_traffic[{n}]: no TCP data from its client to port {port} in capture-{side}.pcap: "
                        f"its phase bounds follow its schedule")
            continue
        t_ns = col["t_send_ns"][data]
        timing.first_data_s = (int(t_ns.min()) - t0_ns) / 1e9
        timing.last_data_s = (int(t_ns.max()) - t0_ns) / 1e9
    return out, gaps


def phases(scenario: Scenario | None, duration_s: float, measured: list[ItemTiming] | None = None) -> list[Phase]:
    """'all', then the intervals between cross-traffic starts and stops (before / during / after). Names and the
    number of phases come from the schedule (so that runs of a study compare phase by phase); each scheduled bound
    then moves to when the traffic changed, where `measured` knows it: a start to the first data of the items
    scheduled to start there, a stop to the last data of those scheduled to stop there (a bound where both happen
    follows the starts). The run's own bounds (0 and its end) never move."""
    out = [Phase("all", 0.0, duration_s, scheduled_start_s=0.0, scheduled_end_s=duration_s)]
    cross = scenario.cross_traffic if scenario else []
    if not cross:
        return out
    bounds = {0.0, duration_s}
    for c in cross:
        bounds.add(min(float(c.start_s), duration_s))
        bounds.add(min(float(c.stop_s), duration_s) if c.stop_s is not None else duration_s)
    edges = sorted(b for b in bounds if 0.0 <= b <= duration_s)
    first_start = min(float(c.start_s) for c in cross)
    named: list[Phase] = []
    for lo, hi in zip(edges, edges[1:]):
        if hi - lo < 1e-9:
            continue
        active = any(c.active(lo, hi) for c in cross)
        name = "cross_traffic" if active else ("before_cross_traffic" if hi <= first_start else "after_cross_traffic")
        named.append(Phase(name, lo, hi, cross_traffic=active, scheduled_start_s=lo, scheduled_end_s=hi))
    # A name that repeats (several cross-traffic periods) gets its scheduled interval appended, on every one of its
    # phases (the schedule's, so that the name is the same in every run of the scenario).
    repeated = {p.name for p in named if sum(q.name == p.name for q in named) > 1}
    for p in named:
        if p.name in repeated:
            p.name = f"{p.name}_{p.start_s:g}-{p.end_s:g}s"
    moved = _measured_edges(cross, duration_s, edges, measured or [])
    for p in named:
        p.start_s, p.end_s = moved[p.scheduled_start_s], moved[p.scheduled_end_s]
    out.extend(named)
    return out


def _measured_edges(cross: list[Any], duration_s: float, edges: list[float],
                    measured: list[ItemTiming]) -> dict[float, float]:
    """Each scheduled edge's measured time, kept in [0, duration_s] and in the schedule's order."""
    by_item = {m.item: m for m in measured}
    out: dict[float, float] = {}
    previous = 0.0
    for e in edges:
        t = e
        if 0.0 < e < duration_s:
            starts = [m.first_data_s for n, c in enumerate(cross) if float(c.start_s) == e
                      and (m := by_item.get(n)) is not None and m.first_data_s is not None]
            stops = [m.last_data_s for n, c in enumerate(cross)
                     if (float(c.stop_s) if c.stop_s is not None else duration_s) == e
                     and (m := by_item.get(n)) is not None and m.last_data_s is not None]
            t = min(starts) if starts else (max(stops) if stops else e)
        t = min(max(t, previous), duration_s) if 0.0 < e < duration_s else e
        out[e] = previous = t
    return out


def off_schedule(timing: list[dict[str, Any]], threshold_s: float = OFF_SCHEDULE_S) -> list[dict[str, Any]]:
    """The items of metrics.json's `cross_traffic_timing` whose data started or stopped more than threshold_s away
    from their schedule."""
    return [t for t in timing if any(d is not None and abs(d) > threshold_s
                                     for d in (t.get("start_delay_s"), t.get("stop_delay_s")))]
