#!/usr/bin/env python3
"""Where late releases come from: the ground-truth log against a kernel trace of the same seconds (trace.sh).

Reads `perf script` output of `perf record -a -k mono -e sched:sched_switch -e timer:hrtimer_start
-e timer:hrtimer_expire_entry -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e exceptions:page_fault_user`
(fields comm,tid,cpu,time,event,trace), the bottleneck's main thread id, the offset CLOCK_REALTIME - CLOCK_MONOTONIC
in ns (the log is in real time, the trace in monotonic time) and the log. Prints one JSON object:
- `loop_syscalls`: each system call the bottleneck's loop made, with count and duration p50/p99/max (us), its page
  faults and how it left the CPU (S: it slept; R: something preempted it);
- `late`: every release later than --late-us, by what the loop was doing at the due time:
  `asleep_timer_late` (asleep in epoll_wait with its timer armed at or before the due time: the timer's expiry
  handler ran late, i.e. the CPU took the timer interrupt late), `asleep_no_timer` (asleep without a timer armed for
  that time: the bottleneck's own fault), `in_<syscall>` (inside that call at the due time), `running` (busy in its
  own code); with the expiry delay (handler run - timer expiry) of the `asleep_timer_late` ones;
- `hrtimers`: how late every timer of the machine ran (expiry handler - expiry time), by function: the machine's
  own timer delivery in the same seconds.
    trace.py PERF_SCRIPT.txt --tid TID --offset-ns NS --log bottleneck-forward.gtlog [--late-us 150]
"""
import argparse
import bisect
import json
import re
import site
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

try:
    import rtclab  # noqa: F401 (only whether it imports)
except ImportError:  # run by the system python3: use the repository's environment
    for packages in sorted((Path(__file__).resolve().parents[2] / ".venv" / "lib").glob("python3*/site-packages")):
        site.addsitedir(str(packages))
import numpy as np

from rtclab import rundir
from rtclab.stats import percentile

SYSCALLS = {0: "read", 1: "write", 7: "poll", 9: "mmap", 11: "munmap", 12: "brk", 24: "sched_yield", 28: "madvise",
            45: "recvfrom", 46: "sendmsg", 202: "futex", 232: "epoll_wait", 286: "timerfd_settime"}
LINE = re.compile(r"^\s*(\S.*?)\s+(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s*(.*)$")


def pct(values):
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"n": 0}
    return {"n": int(v.size), "p50": round(percentile(v, 50), 1), "p99": round(percentile(v, 99), 1),
            "p99_9": round(percentile(v, 99.9), 1), "max": round(float(v.max()), 1)}


@dataclass
class Trace:
    loop: list  # (t_ns, "enter"|"exit", nr) of the loop's system calls
    arms: list  # (t_ns, expiry in monotonic ns) of the loop's timerfd
    expiries: list  # t_ns when the timerfd's expiry handler ran
    durations: dict  # system call -> its durations (us)
    faults: int
    switch_out: Counter  # how the loop's thread left the CPU, by prev_state
    timer_late: dict  # timer function -> its expiry delays (us)


def read_trace(perf_script, thread, offset_ns):
    """The bottleneck loop's system calls, timer arms and expiries, page faults and CPU switches, and every timer's
    delay, from `perf script` output (thread: the loop's thread id)."""
    loop = []  # (t_ns, "enter"|"exit", nr) of the loop's system calls
    arms = []  # (t_ns, expiry in monotonic ns) of the loop's timerfd
    expiries = []  # t_ns when the timerfd's expiry handler ran
    durations, faults, switch_out = defaultdict(list), 0, Counter()
    starts, timer_late = {}, defaultdict(list)
    enter = None
    for line in open(perf_script, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        _comm, tid, _cpu, s, ns, event, rest = m.groups()
        t = int(s) * 1_000_000_000 + int(ns.ljust(9, "0")[:9])
        if event == "timer:hrtimer_start":
            h, fn, exp = re.search(r"hrtimer=(\S+) function=(\S+) expires=(\d+)", rest).groups()
            if fn == "timerfd_tmrproc":
                if tid != thread:
                    continue  # another program's timerfd, on a clock base not known here
                fn = "bottleneck_timerfd"  # ours runs on CLOCK_REALTIME
                arms.append((t, int(exp) - offset_ns))
            starts[h] = (fn, arms[-1][1] if fn == "bottleneck_timerfd" else int(exp))
        elif event == "timer:hrtimer_expire_entry":
            h = re.search(r"hrtimer=(\S+)", rest).group(1)
            if h in starts:
                fn, exp = starts.pop(h)
                timer_late[fn].append((t - exp) / 1e3)
                if fn == "bottleneck_timerfd":
                    expiries.append(t)
        elif tid != thread:
            continue
        elif event == "raw_syscalls:sys_enter":
            nr = int(re.search(r"NR (\d+)", rest).group(1))
            enter = (nr, t)
            loop.append((t, "enter", nr))
        elif event == "raw_syscalls:sys_exit":
            nr = int(re.search(r"NR (\d+)", rest).group(1))
            if enter and enter[0] == nr:
                durations[SYSCALLS.get(nr, str(nr))].append((t - enter[1]) / 1e3)
            enter = None
            loop.append((t, "exit", nr))
        elif event == "exceptions:page_fault_user":
            faults += 1
        elif event == "sched:sched_switch" and f"prev_pid={thread} " in rest:
            switch_out[re.search(r"prev_state=(\S+)", rest).group(1)] += 1
    return Trace(loop, arms, expiries, durations, faults, switch_out, timer_late)


def late_causes(tr, due, rel, late):
    """What the loop was doing at each late release's due time (due, rel: due and release times in monotonic ns;
    late: which releases count), and the timer expiry delays of the ones asleep with their timer armed."""
    loop, arms, expiries = tr.loop, tr.arms, tr.expiries
    times = [x[0] for x in loop]
    arm_times = [x[0] for x in arms]
    kinds, expiry_delay = Counter(), []
    for i in np.flatnonzero(late):
        d = int(due[i])
        k = bisect.bisect_right(times, d) - 1
        if k < 0 or rel[i] > times[-1]:
            continue  # outside the traced seconds
        _, what, nr = loop[k]
        if what == "enter" and nr == 232:
            j = bisect.bisect_right(arm_times, d) - 1
            armed = j >= 0 and arms[j][1] <= d
            kinds["asleep_timer_late" if armed else "asleep_no_timer"] += 1
            if armed:
                e = bisect.bisect_left(expiries, arms[j][1])
                if e < len(expiries) and expiries[e] <= rel[i]:  # (perf may lose an event)
                    expiry_delay.append((expiries[e] - arms[j][1]) / 1e3)
        elif what == "enter":
            kinds["in_" + SYSCALLS.get(nr, str(nr))] += 1
        else:
            kinds["running"] += 1
    return kinds, expiry_delay


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("perf_script")
    ap.add_argument("--tid", required=True)
    ap.add_argument("--offset-ns", type=int, required=True, help="CLOCK_REALTIME - CLOCK_MONOTONIC, ns")
    ap.add_argument("--log", required=True)
    ap.add_argument("--late-us", type=float, default=150.0)
    a = ap.parse_args()

    tr = read_trace(a.perf_script, a.tid, a.offset_ns)
    if not tr.loop:
        raise SystemExit(f"no system calls of thread {a.tid} in {a.perf_script}")

    log = rundir.read_gtlog(Path(a.log)).records
    fwd = log[np.isin(log["event"], list(rundir.GTLOG_FORWARDED))]
    due = fwd["due_ns"].astype(np.int64) - a.offset_ns
    rel = fwd["release_ns"].astype(np.int64) - a.offset_ns
    late_us = (rel - due) / 1e3
    kinds, expiry_delay = late_causes(tr, due, rel, late_us > a.late_us)
    print(json.dumps({
        "loop_syscalls_us": {k: pct(v) for k, v in sorted(tr.durations.items())},
        "loop_page_faults": tr.faults, "loop_left_cpu_by_state": dict(tr.switch_out),
        "late": {"threshold_us": a.late_us, "releases": int(fwd.size), "by_cause": dict(kinds),
                 "timer_expiry_delay_us_of_asleep_timer_late": pct(expiry_delay)},
        # (the tick's timer is moved rather than expired when a CPU goes idle: its numbers would mean nothing)
        "hrtimers_expiry_delay_us": {fn: pct(v) for fn, v in sorted(tr.timer_late.items())
                                     if len(v) >= 100 and fn != "tick_nohz_handler"},
    }, indent=1))


if __name__ == "__main__":
    main()
