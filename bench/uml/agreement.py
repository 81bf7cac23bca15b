"""When the userspace bottleneck and Linux's qdiscs in the guest agree on one cell (a discipline under one traffic
pattern): the tolerances of bench/uml/README.md ("Tolerances"), derived there from the link, not fitted to results.

Every rule compares the two backends' numbers for one metric and returns None (within tolerance) or a short reason.
"""

from __future__ import annotations

import math
from typing import Any

FRAME_BITS = 1514 * 8  # a full-size Ethernet frame as TBF counts it
TIMER_ALLOWANCE_MS = 1.0  # the host VM's timer tail at p99 (bench/bottleneck/RESULTS.md), when not measured in the run
TIMER_TAIL_MS = 5.0  # and its p99.9 over a window, which a high percentile of a few thousand packets can touch


def tx_ms(capacity_kbit: float) -> float:
    """One full-size frame's transmission time at the link rate."""
    return FRAME_BITS / capacity_kbit


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-9)


def throughput(us: dict[str, Any], uml: dict[str, Any], pat: dict[str, Any], capacity: float) -> str | None:
    """Below capacity both deliver what the same sender offered (1 %); at capacity the two links are the same token
    bucket, but Linux's TBF loses link time when its timer fires later than its bucket lasts (3028 B = 2.4 ms at
    10 Mbit/s), which the userspace model, computing in virtual time, does not: 2 % of capacity. With TCP the link can
    idle when CUBIC backs off, at moments that differ between runs (1-3 CUBIC cycles in the window): 5 %."""
    offered = pat["udp"]["kbit"] if pat.get("udp") and not pat.get("tcp") else None
    if offered is not None and offered < 0.97 * capacity:
        d = _rel(us["kbit"], uml["kbit"])
        return None if d <= 0.01 else f"throughput {us['kbit']:.0f}/{uml['kbit']:.0f} kbit/s ({d:.1%} > 1%)"
    limit = 0.05 if pat.get("tcp") else 0.02
    d = abs(us["kbit"] - uml["kbit"]) / capacity
    return None if d <= limit else f"throughput {us['kbit']:.0f}/{uml['kbit']:.0f} kbit/s ({d:.1%} of C > {limit:.0%})"


def count_tolerance(n_us: int, n_uml: int, pat: dict[str, Any], sent: int, random: bool) -> float:
    """Drops and CE marks. UDP alone: the count follows from the throughput (offered - carried), so it may differ by
    the throughput tolerance in packets (2 % of those sent) and 3 packets at the pattern's edges; PIE's random drops
    add three standard deviations of a Poisson count (3 sqrt(N)) to that, since what PIE drops of the same excess
    is chance too. With TCP the count is a sum of chance events: 3 + 3 sqrt(N), and half the count, since each
    congestion event drops a burst whose size depends on where in its cycle CUBIC was (1-3 events per flow in the
    window)."""
    n = max(n_us, n_uml)
    if pat.get("tcp"):
        return 3 + 3 * math.sqrt(n) + 0.5 * n
    return 3 + 0.02 * sent + (3 * math.sqrt(n) if random else 0)


def counts(us: dict[str, Any], uml: dict[str, Any], pat: dict[str, Any], random: bool) -> list[str]:
    out = []
    for key, name in (("drops", "drops"), ("ce", "CE")):
        a, b = us["qdisc"][key], uml["qdisc"][key]
        tol = count_tolerance(a, b, pat, max(us["sent"], uml["sent"]), random)
        if abs(a - b) > tol:
            out.append(f"{name} {a}/{b} (|d| {abs(a - b)} > {tol:.0f})")
    return out


def lossless(m: dict[str, Any]) -> int:
    """Packets lost between the captures beyond what the discipline says it dropped: lost outside the qdisc."""
    return m["lost"] - m["qdisc"]["drops"]


def delay(us: dict[str, Any], uml: dict[str, Any], pat: dict[str, Any], capacity: float, random: bool,
          timer: dict[str, Any] | None) -> list[str]:
    """Queuing-delay percentiles. Absolute part: two frames' transmission time (TBF's bucket of two frames lets a
    packet leave up to one frame early or late, and the packet it queues behind may be anywhere in its own
    transmission) plus the guest's timer lateness as its probe measured it in the same run: at p50 the bound of its
    p99 (1 or 10 ms, or its maximum), at p95 and p99 its maximum, because a stall of S ms at load r leaves a backlog
    that takes S r / (1 - r) to drain (19 S at 0.95), so a few stalls a second hold the queue up for more than 5 % of
    the time. Without the probe: the VM's 1 ms, and at p95 and p99 its 5 ms tail. Relative part: 5 % for UDP alone
    (the queue is set by rate and limit alone), 25 % with TCP or PIE (the queue at a given percentile depends on the
    phase of CUBIC's cycle, or on random drops, within 8 s)."""
    if not us["qdelay_ms"] or not uml["qdelay_ms"]:
        return ["no queuing delay (no packet delivered)"]
    measured = timer is not None and timer.get("p99_bound_ms") is not None
    rel = 0.25 if pat.get("tcp") or random else 0.05
    out = []
    for p in ("p50", "p95", "p99"):
        if measured:
            late = (timer or {})["p99_bound_ms"] if p == "p50" else (timer or {})["max_ms"]
        else:
            late = TIMER_ALLOWANCE_MS + (TIMER_TAIL_MS if p != "p50" else 0)
        a, b = us["qdelay_ms"][p], uml["qdelay_ms"][p]
        tol = 2 * tx_ms(capacity) + late + rel * max(a, b)
        if abs(a - b) > tol:
            out.append(f"qdelay {p} {a:.1f}/{b:.1f} ms (|d| > {tol:.1f})")
    return out


def shares(us: dict[str, Any], uml: dict[str, Any], fair_queueing: bool) -> list[str]:
    """The UDP flow's share of the link: 0.05 (its rate is constant; what it keeps depends on the discipline alone).
    Jain's index over the flows: 0.05 under fair queueing (round robin divides the link the same way each time),
    0.15 under a shared queue (which flows lose in each congestion event is chance)."""
    out = []
    if us["udp_share"] is not None and uml["udp_share"] is not None and abs(us["udp_share"] - uml["udp_share"]) > 0.05:
        out.append(f"UDP share {us['udp_share']:.2f}/{uml['udp_share']:.2f} (> 0.05)")
    tol = 0.05 if fair_queueing else 0.15
    if us["jain"] is not None and uml["jain"] is not None and abs(us["jain"] - uml["jain"]) > tol:
        out.append(f"Jain {us['jain']:.2f}/{uml['jain']:.2f} (> {tol})")
    return out


def guest_invalid(uml: dict[str, Any]) -> str | None:
    """The project's own limit for a bottleneck that releases late (docs/harness.md, `bottleneck_on_time`: invalid
    when over 1 % of the packets were over 10 ms late), applied to the guest's timer probe: a row whose guest was
    that late compares the machine's load, not the disciplines."""
    t = uml.get("timer") or {}
    if t.get("samples") and t["late_10ms"] > 0.01 * t["samples"]:
        return f"guest timers: {t['late_10ms'] / t['samples']:.1%} of wake-ups > 10 ms late, max {t['max_ms']:.0f} ms"
    return None


def verdict(us: dict[str, Any], uml: dict[str, Any], pat: dict[str, Any], capacity: float, kind: str) -> list[str]:
    """Every reason the cell disagrees ([] = agrees), and packets lost outside the qdisc on either side."""
    random = kind == "pie"
    fq = kind in ("sfq", "fq_codel")
    out = [r for r in [throughput(us, uml, pat, capacity)] if r]
    out += counts(us, uml, pat, random)
    out += delay(us, uml, pat, capacity, random, uml.get("timer"))
    out += shares(us, uml, fq)
    for name, m in (("userspace", us), ("uml", uml)):
        # 2: a packet at each edge of the counters' window (they are read through a channel, not atomically).
        if abs(lossless(m)) > 2:
            out.append(f"{name}: {lossless(m)} packets lost outside the qdisc")
    return out
