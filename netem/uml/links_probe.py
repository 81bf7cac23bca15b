"""The uml guest's drops outside its qdiscs, read inside it (netem/uml/init.sh starts it; docs/netem.md, "uml").

usage: python3 -S -I links_probe.py LINKS_JSONL

At once and then once a second it appends to LINKS_JSONL the guest's device counters, the ones `ip -s link` prints
(/sys/class/net/DEV/statistics), and the packets the guest's input backlog dropped (/proc/net/softnet_stat, 2nd
column):
  {"t": <epoch s>, "devices": {"r-eth0": {"rx_packets": n, "rx_dropped": n, ...}, ...}, "softnet_dropped": n}
(counts since the guest booted; null for a counter that could not be read: not measured, never 0).

One process that sleeps a second between reads of the guest's sysfs and procfs: no process is started per sample
(an exec over hostfs costs the guest far more). Standard library only, no site packages (-S -I): the guest runs the
host's python3 through hostfs, where each import costs file system calls. The guest's timer lateness is measured from
the host (netem/uml/lateness.js): a sleep loop here would also wait for UML's switches to this process.
"""

import json
import os
import sys
import time

COUNTERS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_missed_errors",
            "rx_over_errors", "rx_fifo_errors", "tx_fifo_errors", "tx_aborted_errors", "tx_carrier_errors")


def read_int(path: str) -> int | None:
    """A counter's value; None when it cannot be read (not 0: an unreadable counter is not measured)."""
    try:
        with open(path) as f:
            return int(f.read().strip(), 0)
    except (OSError, ValueError):
        return None


def link_counters() -> dict[str, object]:
    devices: dict[str, dict[str, int | None]] = {}
    for dev in sorted(os.listdir("/sys/class/net")):
        if dev == "lo":
            continue
        devices[dev] = {c: read_int(f"/sys/class/net/{dev}/statistics/{c}") for c in COUNTERS}
    dropped: int | None = None
    try:
        with open("/proc/net/softnet_stat") as f:
            dropped = sum(int(line.split()[1], 16) for line in f if line.strip())
    except (OSError, ValueError, IndexError):
        pass
    return {"t": round(time.time(), 3), "devices": devices, "softnet_dropped": dropped}


def main() -> None:
    links = open(sys.argv[1], "a", buffering=1)
    due = time.monotonic()
    while True:
        links.write(json.dumps(link_counters()) + "\n")
        due = max(due + 1, time.monotonic() + 0.5)
        time.sleep(max(0.0, due - time.monotonic()))


if __name__ == "__main__":
    main()
