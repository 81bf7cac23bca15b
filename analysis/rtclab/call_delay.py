"""A call's own propagation delay (scenario `calls[].delay_ms`, RFC 8867 5.5; docs/netem.md "Delay per call"): the
queuing delay of the call's packets measured from its delay rather than the link's, and the validity check
`call_delay_applied`: each such call's packets, both ways, took its delay on the wire (docs/metrics.md, "Delay per
call")."""

from __future__ import annotations

from typing import Any

import numpy as np

from .multiflow import Call
from .packets import DELIVERED, FORWARD, REVERSE, PacketTable
from .rundir import RunDir

# call_delay_applied: the smallest one-way delay of a call's packets after t = 0 must lie in
# [delay - MIN_OWD_BELOW_MS, delay + MIN_OWD_ABOVE_MS].
# Below: the host's timestamps (both captures on one clock) never put a packet before its delay by more than this.
# Above: the smallest packet's transmission and the hops through the namespaces; far below the 15 ms between the RFC's
# closest delays (10 and 25 ms), so a call left on the link's delay (or another call's) cannot pass.
MIN_OWD_BELOW_MS = 1.0
MIN_OWD_ABOVE_MS = 5.0


def delays_ms(run: RunDir) -> dict[str, float]:
    """Each call's own delay by call id (calls with none are left out)."""
    listed = run.scenario_doc.get("calls")
    out: dict[str, float] = {}
    for i, sc in enumerate(listed if isinstance(listed, list) else []):
        if isinstance(sc, dict) and sc.get("delay_ms") is not None:
            out[sc.get("id") or f"c{i + 1}"] = float(sc["delay_ms"])
    return out


def rows_by_direction(t: PacketTable, call: Call) -> dict[int, np.ndarray]:
    """The call's rows of its 5-tuple, forward and reverse (every class: RTP, RTCP, STUN, DTLS)."""
    if call.five_tuple is None:
        return {FORWARD: np.zeros(0, np.int64), REVERSE: np.zeros(0, np.int64)}
    c = t.cols
    src, sport, dst, dport = call.five_tuple
    fwd = (c["direction"] == FORWARD) & (c["ip_src"] == src) & (c["sport"] == sport) & (c["ip_dst"] == dst) & \
        (c["dport"] == dport)
    rev = (c["direction"] == REVERSE) & (c["ip_src"] == dst) & (c["sport"] == dport) & (c["ip_dst"] == src) & \
        (c["dport"] == sport)
    return {FORWARD: np.flatnonzero(fwd), REVERSE: np.flatnonzero(rev)}


def rebase_queuing_delay(t: PacketTable, calls: list[Call], delays: dict[str, float]) -> None:
    """Queuing delay of each delayed call's delivered packets = OWD - the call's own delay (in place)."""
    c = t.cols
    for call in calls:
        if call.id not in delays:
            continue
        for rows in rows_by_direction(t, call).values():
            ok = rows[c["status"][rows] == DELIVERED]
            c["queuing_delay_ns"][ok] = c["owd_ns"][ok] - int(round(delays[call.id] * 1e6))


def check(t: PacketTable | None, calls: list[Call], delays: dict[str, float], t0_ns: int) -> dict[str, Any] | None:
    """The validity check `call_delay_applied`, or None when no call has a delay of its own."""
    if not delays:
        return None
    if t is None:
        return {"name": "call_delay_applied", "ok": False,
                "detail": "no packet table (captures unreadable): whether the calls took their own delays is unknown"}
    c = t.cols
    parts: list[str] = []
    ok = True
    for call in calls:
        if call.id not in delays:
            continue
        want = delays[call.id]
        seen: list[str] = []
        for direction, rows in rows_by_direction(t, call).items():
            rows = rows[(c["status"][rows] == DELIVERED) & (c["t_send_ns"][rows] >= t0_ns)]
            name = "forward" if direction == FORWARD else "reverse"
            if rows.size == 0:
                ok = False
                seen.append(f"{name}: no packet delivered after t = 0")
                continue
            low = float(c["owd_ns"][rows].min()) / 1e6
            ok = ok and want - MIN_OWD_BELOW_MS <= low <= want + MIN_OWD_ABOVE_MS
            seen.append(f"{name} min OWD {low:.1f} ms")
        parts.append(f"{call.id} (its delay {want:g} ms): " + ", ".join(seen))
    return {"name": "call_delay_applied", "ok": ok,
            "detail": "; ".join(parts) + f" (each must lie in [delay - {MIN_OWD_BELOW_MS:g}, delay + "
                      f"{MIN_OWD_ABOVE_MS:g}] ms)"}
