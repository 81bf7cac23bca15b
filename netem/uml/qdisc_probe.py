"""The uml guest's qdisc statistics, read inside it (netem/uml/backend.js starts it through the channel once the
network is up; docs/netem.md, "uml").

usage: python3 -S -I qdisc_probe.py QDISC_STATS_JSONL INTERVAL_S

At once and then every INTERVAL_S it appends to QDISC_STATS_JSONL what `tc -s -j qdisc show` prints in the guest,
as the kernel backend's sampler writes it on the host:
  {"t": <epoch s>, "ns": "r", "guest": "uml", "qdiscs": [...]}
One tc runs for the probe's whole life in batch mode (`tc -batch -`, one command a line, each answered with one line
of JSON): a tc started for every sample cost the guest its binary and libraries read over hostfs each time. Each line
goes out in one write, so a guest stopped between samples leaves no half line. Standard library only, no site
packages (-S -I), as links_probe.py.
"""

import json
import os
import sys
import time


def start_tc() -> tuple[int, int]:
    """tc in batch mode, on two pipes: (the fd its commands go to, the fd its answers come from)."""
    commands_r, commands_w = os.pipe()
    answers_r, answers_w = os.pipe()
    os.posix_spawnp("tc", ["tc", "-s", "-j", "-batch", "-"], dict(os.environ), file_actions=[
        (os.POSIX_SPAWN_DUP2, commands_r, 0), (os.POSIX_SPAWN_DUP2, answers_w, 1),
        (os.POSIX_SPAWN_CLOSE, commands_w), (os.POSIX_SPAWN_CLOSE, answers_r)])
    os.close(commands_r)
    os.close(answers_w)
    return commands_w, answers_r


def main() -> None:
    out = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    interval = float(sys.argv[2])
    commands, answers_fd = start_tc()
    answers = os.fdopen(answers_fd, "rb")
    due = time.monotonic()
    while True:
        os.write(commands, b"qdisc show\n")
        answer = answers.readline()
        if not answer:  # tc stops at a command that fails; its message went to the console
            sys.exit("qdisc_probe: tc ended")
        line = {"t": round(time.time(), 3), "ns": "r", "guest": "uml", "qdiscs": json.loads(answer)}
        os.write(out, (json.dumps(line) + "\n").encode())
        due = max(due + interval, time.monotonic() + interval / 2)
        time.sleep(max(0.0, due - time.monotonic()))


if __name__ == "__main__":
    main()
