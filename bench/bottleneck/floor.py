#!/usr/bin/env python3
"""The machine's own floor for release lateness: what a perfect userspace scheduler would have seen.

At the bottleneck's priority (SCHED_FIFO 10), for half of --seconds each:
- spinning: a loop reads the clock as fast as it can and records every gap between two reads longer than
  --min-gap-us, time in which no task could have run (interrupts, softirqs, the hypervisor). A packet train of --pps
  laid over the loop's timeline gives the lateness of a scheduler that never sleeps: a packet due inside a gap is
  released at the gap's end at the earliest. The loop spins in bursts of --burst-s with --pause-s between them (the
  kernel throttles real-time tasks that use more than 95% of a second; the pauses are left out of the timeline).
- sleeping: the same train, sleeping until each due time (clock_nanosleep to an absolute deadline): the lateness of
  a scheduler that waits for its timer, wake-up latency included (on a kernel without full preemption a woken task
  also waits for the kernel work of whatever runs on its CPU).
The bottleneck arms its timer and spins the last stretch within a CPU budget: it sits between the two.
Percentiles follow the analyzer's one rule (rtclab.stats: linear interpolation between closest ranks); run it with the
repository's .venv/bin/python (a plain python3 falls back to that environment's packages).
    floor.py --seconds 6 --pps 10000 > floor.json
"""
import argparse
import json
import math
import os
import site
import time
from pathlib import Path

try:
    import rtclab  # noqa: F401 (only whether it imports)
except ImportError:  # run by the system python3 (bench/bottleneck/run.sh): use the repository's environment
    for packages in sorted((Path(__file__).resolve().parents[2] / ".venv" / "lib").glob("python3*/site-packages")):
        site.addsitedir(str(packages))
import numpy as np

from rtclab.stats import percentile as percentile_of


def spin(seconds: float, min_gap_ns: int) -> list[tuple[int, int]]:
    """Spins for `seconds`; returns the gaps (start_ns, length_ns) longer than min_gap_ns."""
    gaps = []
    now = time.monotonic_ns
    prev = start = now()
    end = start + int(seconds * 1e9)
    while prev < end:
        t = now()
        if t - prev > min_gap_ns:
            gaps.append((prev, t - prev))
        prev = t
    return gaps


def sleep_until_due(seconds: float, pps: int) -> list[float]:
    """Sleeps until each due time of a packet train (absolute, k * period on the clock), as a scheduler that waits
    for its timer would; returns each wake-up's lateness (us)."""
    period = 1e9 / pps
    now = time.monotonic_ns
    k = math.ceil(now() / period) + 1
    end = now() + int(seconds * 1e9)
    late = []
    while k * period < end:
        due = k * period
        wait = due - now()
        if wait > 0:
            time.sleep(wait / 1e9)  # clock_nanosleep to an absolute deadline on CLOCK_MONOTONIC
        late.append(max(0.0, now() - due) / 1e3)
        k += 1
    return late


def train_lateness(gaps: list[tuple[int, int]], pps: int) -> list[float]:
    """Lateness (us) of every packet of a train with period 1/pps that falls inside a gap; the rest are on time."""
    period = 1e9 / pps
    late = []
    for g0, length in gaps:
        # Packets are due at k * period on the clock, so a short gap holds a packet only as often as it would.
        k = math.ceil(g0 / period)
        while k * period < g0 + length:
            late.append((g0 + length - k * period) / 1e3)
            k += 1
    return late


def percentile(sorted_nonzero: list[float], total: int, q: float) -> float:
    """q-th percentile of `total` values of which all but `sorted_nonzero` are zero (the packets on time)."""
    if total == 0:
        return 0.0
    values = np.zeros(max(total, len(sorted_nonzero)))
    values[values.size - len(sorted_nonzero):] = sorted_nonzero
    return percentile_of(values, q) or 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=6.0,
                    help="measuring time in total: half spinning, half sleeping (default 6)")
    ap.add_argument("--pps", type=int, default=10000, help="rate of the virtual packet train (default 10000)")
    ap.add_argument("--burst-s", type=float, default=0.7)
    ap.add_argument("--pause-s", type=float, default=0.3)
    ap.add_argument("--min-gap-us", type=float, default=5.0, help="gaps up to this are the loop's own resolution")
    ap.add_argument("--only", choices=("spinning", "sleeping"),
                    help="measure one of the two, for all of --seconds (e.g. the sleeping floor beside the bottleneck)")
    a = ap.parse_args()
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        policy = "SCHED_FIFO 10"
    except OSError as e:
        policy = f"SCHED_OTHER (SCHED_FIFO refused: {e.strerror})"
    # As the bottleneck does: keep the CPUs out of deep idle states while we run (held while the file is open).
    try:
        dma_latency = open("/dev/cpu_dma_latency", "wb", buffering=0)
        dma_latency.write((0).to_bytes(4, "little"))
    except OSError:
        dma_latency = None
    spin_s = {None: a.seconds / 2, "spinning": a.seconds, "sleeping": 0.0}[a.only]
    sleep_s = a.seconds - spin_s
    gaps: list[tuple[int, int]] = []
    spun = 0.0
    while spun < spin_s:
        burst = min(a.burst_s, spin_s - spun)
        gaps += spin(burst, int(a.min_gap_us * 1e3))
        spun += burst
        time.sleep(a.pause_s)
    packets = int(spun * a.pps)
    late = sorted(train_lateness(gaps, a.pps))
    slept = sorted(sleep_until_due(sleep_s, a.pps)) if sleep_s > 0 else []

    def summary(values: list[float], total: int) -> dict:
        pct = {f"p{q:g}_us".replace(".", "_"): percentile(values, total, q) for q in (50, 99, 99.9)}
        return {**pct, "max_us": values[-1] if values else 0.0, "packets": total}

    print(json.dumps({
        "policy": policy, "pps": a.pps, "cpu_dma_latency_held": dma_latency is not None,
        "spinning": {"seconds": spun, "gaps_over_500us": sum(1 for _, n in gaps if n > 500_000),
                     "max_gap_us": max((n for _, n in gaps), default=0) / 1e3, "lateness": summary(late, packets)},
        "sleeping": {"seconds": sleep_s, "lateness": summary(slept, len(slept))},
    }))


if __name__ == "__main__":
    main()
