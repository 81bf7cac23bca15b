"""Where and how many attempts run at once. The study runner (runner.py) decides which attempt comes next and keeps
the study directory's books; an executor only starts attempts, reports those that ended, and forwards a signal:

- LocalExecutor: `node harness/cli.js --scenario ... --out ...` on this machine, one at a time (serial, the default),
  or N at once with `--parallel N`, each under `taskset -c CPUS` on its own group of CPUs (the browsers, the
  bottleneck and the captures inherit the set; the harness records it and judges the run by those CPUs' busy
  share: the `cpu_set_not_saturated` validity check);
- PackedExecutor (packed.py, `--parallel auto`): as many CPUs per run as its point's measured cost needs;
- RayExecutor (ray_executor.py): the same command on the nodes of a Ray cluster.

Every executor is handed a Job whose run directory the runner has already made (empty): an attempt's directory is
never reused, whatever happens to the attempt."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from .spec import REPO_ROOT

HARNESS = REPO_ROOT / "harness" / "cli.js"


class ExecutorError(Exception):
    """An executor that cannot run here (bad --parallel, no Ray cluster, a node set up differently): nothing ran."""


@dataclass(frozen=True)
class Job:
    """One attempt: the point's scenario file, the (empty) run directory, the file for what the harness prints."""
    point: str
    rep: int
    attempt: int
    scenario: Path
    run_dir: Path
    log_path: Path


class Executor(Protocol):
    slots: int  # attempts at once
    name: str  # said in the progress lines and attempts.jsonl

    def has_room(self, point: str) -> bool:
        """Whether an attempt of this point can start now (the runner asks before each start)."""
        ...

    def start(self, job: Job, lock_fd: int) -> dict[str, Any]:
        """Starts the attempt; returns what the start record of attempts.jsonl should say about it."""
        ...

    def wait(self, timeout_s: float) -> list[tuple[Job, dict[str, Any]]]:
        """The attempts that ended within timeout_s, each with its end record's fields: exit_code (None when it did
        not run to an exit), wall_s, and `lost: True` when the attempt was lost with its machine (it is then logged
        as interrupted and made again under a new attempt number)."""
        ...

    def forward(self, signum: int) -> None:
        """Passes a stop signal on to every running attempt (each tears its run down and keeps what it recorded)."""
        ...

    def close(self) -> None:
        ...


def split_cpus(cpus: list[int], n: int) -> list[list[int]]:
    """N groups of consecutive CPUs (sizes differ by one at most), or an error when there are fewer CPUs than N."""
    if n < 1:
        raise ExecutorError(f"--parallel must be at least 1 (got {n})")
    if n > len(cpus):
        raise ExecutorError(f"--parallel {n}: this process may use {len(cpus)} CPU(s) ({fmt_cpus(cpus)}); each run "
                            f"needs at least one of its own, so at most --parallel {len(cpus)}")
    cpus = sorted(cpus)
    size, extra = divmod(len(cpus), n)
    groups, i = [], 0
    for g in range(n):
        k = size + (1 if g < extra else 0)
        groups.append(cpus[i:i + k])
        i += k
    return groups


def fmt_cpus(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's and taskset's list format)."""
    parts: list[str] = []
    for c in sorted(cpus):
        if parts and c == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{c}"
        else:
            parts.append(str(c))
    return ",".join(parts)


@dataclass
class _Running:
    job: Job
    child: subprocess.Popen[bytes]
    log: IO[bytes]
    started: float
    cpus: list[int] | None


class LocalExecutor:
    """Attempts as harness processes on this machine: `parallel` None runs one at a time on every CPU; N runs N at
    once, each pinned to its own group of CPUs."""

    def __init__(self, parallel: int | None = None, node: str | None = None, harness: Path = HARNESS,
                 extra_args: list[str] | None = None):
        self.node = node or shutil.which("node") or "node"
        self.harness = harness
        self.extra_args = extra_args or []
        self.groups: list[list[int]] | None = None
        if parallel is not None:
            if shutil.which("taskset") is None:
                raise ExecutorError("--parallel needs taskset (util-linux) to pin each run to its CPUs")
            self.groups = split_cpus(sorted(os.sched_getaffinity(0)), parallel)
        self.slots = len(self.groups) if self.groups else 1
        self.name = (f"parallel x{self.slots} on CPUs " + " | ".join(fmt_cpus(g) for g in self.groups)
                     if self.groups else "serial")
        self.running: list[_Running] = []

    def has_room(self, point: str) -> bool:
        return len(self.running) < self.slots

    def _free_cpus_for(self, job: Job) -> list[int] | None:
        """The CPUs to pin the job to (None: not pinned)."""
        if self.groups is None:
            return None
        used = [r.cpus for r in self.running]
        return next(g for g in self.groups if g not in used)

    def start(self, job: Job, lock_fd: int) -> dict[str, Any]:
        cpus = self._free_cpus_for(job)
        pin = ["taskset", "-c", fmt_cpus(cpus)] if cpus is not None else []
        cmd = [*pin, self.node, str(self.harness), "--scenario", str(job.scenario), "--out", str(job.run_dir),
               *self.extra_args]
        log = job.log_path.open("ab")
        try:
            # Its own session: a terminal's Ctrl-C reaches the harness only through the study, once.
            child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=REPO_ROOT, start_new_session=True, pass_fds=(lock_fd,))
        except OSError as e:
            log.close()
            raise ExecutorError(f"the harness could not start ({' '.join(cmd[:len(pin) + 2])}): {e}") from None
        self.running.append(_Running(job, child, log, time.monotonic(), cpus))
        return {"command": cmd, "cpus": cpus}

    def wait(self, timeout_s: float) -> list[tuple[Job, dict[str, Any]]]:
        deadline = time.monotonic() + timeout_s
        while True:
            done = [r for r in self.running if r.child.poll() is not None]
            if done or time.monotonic() >= deadline or not self.running:
                break
            time.sleep(0.1)
        ended = []
        for r in done:
            self.running.remove(r)
            r.log.close()
            ended.append((r.job, {"exit_code": r.child.returncode, "wall_s": round(time.monotonic() - r.started, 3)}))
        return ended

    def forward(self, signum: int) -> None:
        for r in self.running:
            if r.child.poll() is None:
                try:
                    os.kill(r.child.pid, signum)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        """Waits for what still runs (after a forwarded signal: its teardown)."""
        for r in list(self.running):
            r.child.wait()
            r.log.close()
        self.running.clear()


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name
