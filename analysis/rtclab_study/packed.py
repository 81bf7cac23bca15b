"""`--parallel auto`: runs packed onto this machine's CPUs by what each point's runs measured. A point's cost is the
95th percentile of its runs' own CPU use over their calls (metrics.json `cpu.run.p95_cores`: the harness's per-second
samples of the run's processes, docs/metrics.md), the highest seen so far; a run of the point gets
ceil(cost / CPU_SET_TARGET) CPUs of its own (at least one), pinned as `--parallel N` pins (executors.py), and waits in
plan order until that many are free. A point no run has measured yet, or one that needs every CPU, runs alone and
unpinned (judged by the host's CPUs, as a serial run): its first run is its own pilot. A pilot study (the one a
repetitions plan was computed from, or `--costs-from DIR`) may measure the points first: its runs' costs count as
the study's own do. So cheap points share the machine and costly ones keep it to themselves, without a count chosen
by hand."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

from .executors import ExecutorError, Job, LocalExecutor, fmt_cpus

# A run's CPU set may be busy up to this share in its busiest seconds (p95 of 1 s samples): the validity checks fail
# a run whose set is over 0.9 busy in any 5 s window of its call (cpu_windows_not_saturated) or over its whole call
# (cpu_set_not_saturated), and the same point's runs differ from one another; the margin keeps a packed run valid.
CPU_SET_TARGET = 0.8


def cpus_needed(cost_cores: float | None, n_cpus: int) -> int:
    """The CPUs a run of a point with this measured cost gets: n_cpus (alone) when its cost is not known yet."""
    if cost_cores is None:
        return n_cpus
    return min(n_cpus, max(1, math.ceil(cost_cores / CPU_SET_TARGET)))


def run_cost(run_dir: Path) -> float | None:
    """A finished run's measured cost in cores (metrics.json cpu.run.p95_cores), or None when it has none (not
    analysed, no cpu.jsonl)."""
    try:
        value = json.loads((run_dir / "metrics.json").read_text())["cpu"]["run"]["p95_cores"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def measured_costs(*study_dirs: Path) -> dict[str, float]:
    """Each point's highest measured cost among the runs already in these study directories (the study's own, when
    resumed, and its pilots'), by point name."""
    costs: dict[str, float] = {}
    for metrics in sorted(m for d in study_dirs for m in d.glob("runs/*/*/metrics.json")):
        cost = run_cost(metrics.parent)
        point = metrics.parent.parent.name
        if cost is not None:
            costs[point] = max(cost, costs.get(point, 0.0))
    return costs


class PackedExecutor(LocalExecutor):
    """LocalExecutor whose runs get as many CPUs as their point's measured cost needs (see the module's text)."""

    def __init__(self, out: Path, extra_args: list[str] | None = None, cpus: list[int] | None = None,
                 costs_from: list[Path] | None = None):
        super().__init__(extra_args=extra_args)
        self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
        if len(self.cpus) > 1 and shutil.which("taskset") is None:
            raise ExecutorError("--parallel auto needs taskset (util-linux) to pin each run to its CPUs")
        for d in costs_from or []:
            if not (d / "plan.json").is_file():
                raise ExecutorError(f"cannot read points' costs from {d}: not a study directory (no plan.json)")
        self.costs = measured_costs(out, *(costs_from or []))
        self.slots = len(self.cpus)  # at most one run per CPU (the ETA's divisor: an upper bound)
        seeded = f", the costs measured in {', '.join(str(d) for d in costs_from)} too" if costs_from else ""
        self.name = f"packed on CPUs {fmt_cpus(self.cpus)} by each point's measured cost (--parallel auto{seeded})"

    def placement(self, point: str) -> list[int] | None:
        """The CPUs a run of this point would get now: [] to run alone and unpinned, None when it must wait."""
        need = cpus_needed(self.costs.get(point), len(self.cpus))
        if need >= len(self.cpus):
            return [] if not self.running else None
        if any(r.cpus is None for r in self.running):  # a run alone holds every CPU
            return None
        used = {c for r in self.running for c in r.cpus or []}
        free = [c for c in self.cpus if c not in used]
        return free[:need] if len(free) >= need else None

    def has_room(self, point: str) -> bool:
        return self.placement(point) is not None

    def _free_cpus_for(self, job: Job) -> list[int] | None:
        cpus = self.placement(job.point)
        if cpus is None:
            raise ExecutorError(f"no room for {job.point} now (the runner asks has_room first)")
        return cpus or None

    def start(self, job: Job, lock_fd: int) -> dict[str, Any]:
        info = super().start(job, lock_fd)
        return {**info, "cost_cores": self.costs.get(job.point)}

    def wait(self, timeout_s: float) -> list[tuple[Job, dict[str, Any]]]:
        ended = super().wait(timeout_s)
        for job, _ in ended:  # what the run measured raises its point's cost for the runs still to start
            cost = run_cost(job.run_dir)
            if cost is not None:
                self.costs[job.point] = max(cost, self.costs.get(job.point, 0.0))
        return ended
