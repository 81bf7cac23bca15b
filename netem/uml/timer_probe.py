"""The uml guest's own health, measured inside it (netem/uml/init.sh starts it; docs/netem.md, "uml").

usage: python3 -S -I timer_probe.py TIMER_JSONL LINKS_JSONL

Timer lateness: a 10 ms sleep loop on CLOCK_MONOTONIC; each wake-up's overshoot past its due time is what a netem
or TBF timer in the same guest suffers too (one vCPU, one host process: when the host does not run the guest, every
timer in it fires late). Once a second it appends to TIMER_JSONL the second's summary:
  {"t": <epoch s>, "samples": n, "late_1ms": n, "late_10ms": n, "late_100ms": n, "max_ms": x}
(the wake-ups of the second before t; sum lines for a longer window).

Drops outside the qdiscs: once a second (and at once) it appends to LINKS_JSONL the guest's device counters, the
ones `ip -s link` prints (/sys/class/net/DEV/statistics), and the packets the guest's input backlog dropped
(/proc/net/softnet_stat, 2nd column):
  {"t": <epoch s>, "devices": {"r-eth0": {"rx_packets": n, "rx_dropped": n, ...}, ...}, "softnet_dropped": n}
(counts since the guest booted).

Standard library only, no site packages (-S -I): the guest runs the host's python3 through hostfs, where each
import costs file system calls.
"""

import json
import os
import sys
import time

PERIOD_NS = 10_000_000
REPORT_NS = 1_000_000_000
COUNTERS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_missed_errors",
            "rx_over_errors", "rx_fifo_errors", "tx_fifo_errors", "tx_aborted_errors", "tx_carrier_errors")


def read_int(path: str) -> int:
    try:
        with open(path) as f:
            return int(f.read().strip() or 0, 0)
    except (OSError, ValueError):
        return 0


def link_counters() -> dict[str, object]:
    devices: dict[str, dict[str, int]] = {}
    for dev in sorted(os.listdir("/sys/class/net")):
        if dev == "lo":
            continue
        devices[dev] = {c: read_int(f"/sys/class/net/{dev}/statistics/{c}") for c in COUNTERS}
    dropped = 0
    try:
        with open("/proc/net/softnet_stat") as f:
            dropped = sum(int(line.split()[1], 16) for line in f if line.strip())
    except OSError:
        pass
    return {"t": round(time.time(), 3), "devices": devices, "softnet_dropped": dropped}


def main() -> None:
    timer_path, links_path = sys.argv[1:3]
    timer = open(timer_path, "a", buffering=1)
    links = open(links_path, "a", buffering=1)
    links.write(json.dumps(link_counters()) + "\n")
    samples = late_1 = late_10 = late_100 = 0
    worst = 0
    due = time.monotonic_ns() + PERIOD_NS
    report = due - PERIOD_NS + REPORT_NS
    while True:
        wait = due - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        now = time.monotonic_ns()
        late = now - due
        samples += 1
        late_1 += late > 1_000_000
        late_10 += late > 10_000_000
        late_100 += late > 100_000_000
        worst = max(worst, late)
        # After a stall the next wake-up is due one period from now: a stall is one late sample, not a burst of them.
        due = max(due + PERIOD_NS, now + PERIOD_NS // 2)
        if now >= report:
            timer.write(json.dumps({"t": round(time.time(), 3), "samples": samples, "late_1ms": late_1,
                                    "late_10ms": late_10, "late_100ms": late_100, "max_ms": round(worst / 1e6, 3)})
                        + "\n")
            links.write(json.dumps(link_counters()) + "\n")
            samples = late_1 = late_10 = late_100 = worst = 0
            report = max(report + REPORT_NS, now + REPORT_NS // 2)


if __name__ == "__main__":
    main()
