"""The study runner: runs a plan's pending repetitions through an executor (executors.py: one after the other by
default, N at once pinned to their CPUs, or on a Ray cluster), each as an ordinary run (`node harness/cli.js
--scenario OUT/points/<point>/scenario.json --out OUT/runs/<point>/<rep>-<attempt>`), and keeps the study directory
resumable at every moment:

- what is done is read from the run directories (rtclab.study.studydir.scan, the analyzer's reading of a study
  directory), never from memory: running the same command again keeps valid runs, re-runs the rest; an attempt
  directory is never reused, so no run is overwritten or duplicated;
- SIGINT/SIGTERM/SIGHUP are forwarded to every running harness (started in its own session, so a terminal's Ctrl-C
  reaches it only through the study), which tears the run down and writes its run directory; the attempts are
  logged as interrupted (they do not count towards max_attempts), no other starts, and the study stops;
- an attempt lost with its machine (a Ray node) is logged as interrupted too, and made again as a new attempt;
- one study process per directory: OUT/.lock is held (flock) by the study and inherited by the harness, so a run that
  outlives a killed study still holds it.

An invalid attempt's retry comes after the remaining first attempts, in plan order: a passing disturbance (another
load on the host) is less likely to hit every attempt of a repetition."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from rtclab.study import studydir

from . import executors, spec, tree
from . import plan as planmod
from .spec import REPO_ROOT

DEFAULT_OVERHEAD_S = 25.0  # set-up, teardown and analysis of one run, before any was measured (bench/call)
EXIT_OK, EXIT_FAILED, EXIT_BAD_STUDY, EXIT_SOME_MISSING, EXIT_PAUSED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


class StudyDirError(Exception):
    """A study directory that cannot be used (another study's, or busy)."""


def append_log(out: Path, record: dict[str, Any]) -> None:
    """One record of OUT/attempts.jsonl (the study's attempt log; its reader and format: rtclab.study.studydir)."""
    with (out / "attempts.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def default_out(name: str, quick_factor: float) -> Path:
    suffix = "" if quick_factor == 1.0 else f"-quick{quick_factor:g}"
    return REPO_ROOT / "results" / "studies" / f"{name}{suffix}"


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(round(s))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def check_out(plan: planmod.Plan, out: Path) -> None:
    """Refuses a directory that holds another study, or this study with other scenarios or another quick factor."""
    existing = out / "plan.json"
    if not existing.exists():
        if out.exists() and any(x.name != ".lock" for x in out.iterdir()):
            raise StudyDirError(f"{out} exists, is not empty and holds no plan.json: choose another --out")
        return
    old = json.loads(existing.read_text())
    if old.get("study") != plan.study.name:
        raise StudyDirError(f"{out} holds study {old.get('study')!r}, not {plan.study.name!r}: choose another --out")
    if float(old.get("quick_factor", 1.0)) != plan.quick_factor:
        raise StudyDirError(f"{out} holds this study with quick factor {old.get('quick_factor')}, not "
                            f"{plan.quick_factor:g}: quick and full runs are not mixed; choose another --out")
    if old.get("fingerprint") != plan.fingerprint():
        changed = [p.name for p in plan.study.points
                   if not (out / "points" / p.name / "scenario.json").exists()
                   or json.loads((out / "points" / p.name / "scenario.json").read_text()) != p.scenario]
        raise StudyDirError(f"{out} holds this study with other scenarios (points changed or added: "
                            f"{', '.join(changed) or 'points removed'}): resuming would mix them; choose another --out")
    # A repetitions plan's runs are a sample of their own: resumed into runs made with the study file's count (a
    # pilot's runs, wherever they are), or the other way round, the two samples would be pooled.
    old_plan, new_plan = old.get("repetitions_from") or {}, plan.study.repetitions_from or {}
    if bool(old_plan) != bool(new_plan):
        held = f"the repetitions plan {old_plan.get('file')}" if old_plan else "the study file's count"
        asked = f"the repetitions plan {new_plan.get('file')}" if new_plan else "the study file's count"
        raise StudyDirError(f"{out} holds this study's runs made with {held}, not {asked}: resuming would pool the "
                            "two samples; choose another --out")


def repetitions_text(study: spec.Study) -> str:
    """`3 repetitions`, or for a repetitions plan the counts and the plan's file."""
    if study.repetitions_per_point is None:
        return f"{study.repetitions} repetition(s)"
    counts = sorted(set(study.repetitions_of().values()))
    src = (study.repetitions_from or {}).get("file", "a repetitions plan")
    return (f"{counts[0]}-{counts[-1]} repetition(s) per point from {src}" if len(counts) > 1 else
            f"{counts[0]} repetition(s) from {src}")


def pilot_dirs(study: spec.Study) -> list[Path]:
    """The pilot study directories of the repetitions plan the study runs (repository-relative in PLAN.json)."""
    dirs = []
    for p in (study.repetitions_from or {}).get("pilots") or []:
        d = Path(str(p.get("dir")))
        dirs.append((d if d.is_absolute() else REPO_ROOT / d).resolve())
    return dirs


def check_not_pilot(study: spec.Study, out: Path) -> None:
    """A repetitions plan's study runs into a directory of its own: its pilot only estimated the SD, and the study's
    runs alone make the intervals (docs/studies.md, "Planning repetitions from a pilot")."""
    for d in pilot_dirs(study):
        if d == out.resolve():
            raise StudyDirError(f"{out} is the pilot's directory of this repetitions plan: its runs would count in "
                                "the study's intervals; run the planned study into a directory of its own (--out)")


def short_commit(c: str) -> str:
    return c[:12] + ("-dirty" if c.endswith("-dirty") else "")


def earlier_commits(reps: dict[tuple[str, int], studydir.Repetition]) -> set[str]:
    """The manifests' git_commit of every attempt made so far (those without one left out)."""
    found = set()
    for r in reps.values():
        for a in r.attempts:
            try:
                c = json.loads((a.path / "manifest.json").read_text()).get("git_commit")
            except (OSError, ValueError):
                continue
            if isinstance(c, str) and c:
                found.add(c)
    return found


@dataclass
class Progress:
    plan: planmod.Plan
    stream: IO[str]
    slots: int = 1  # attempts at once: the ETA divides the remaining time by it
    started: float = field(default_factory=time.monotonic)
    overheads: list[float] = field(default_factory=list)

    def prefix(self) -> str:
        return f"rtclab study {self.plan.study.name}" + (f" [QUICK x{self.plan.quick_factor:g}]"
                                                          if self.plan.quick else "")

    def say(self, text: str) -> None:
        self.stream.write(f"{self.prefix()}: {text}\n")
        self.stream.flush()

    def eta_s(self, reps: dict[tuple[str, int], studydir.Repetition]) -> float:
        over = sum(self.overheads) / len(self.overheads) if self.overheads else DEFAULT_OVERHEAD_S
        return sum(self.plan.duration_s(p) + over for (p, _), r in reps.items()
                   if r.state(self.plan.study.max_attempts) == "pending") / self.slots

    def line(self, reps: dict[tuple[str, int], studydir.Repetition], now_doing: str) -> None:
        total = len(reps)
        done = sum(1 for r in reps.values() if r.state(self.plan.study.max_attempts) != "pending")
        attempts = [a for r in reps.values() for a in r.attempts]
        invalid = sum(a.status == studydir.INVALID for a in attempts)
        incomplete = sum(a.status == studydir.INCOMPLETE for a in attempts)
        exhausted = sum(r.state(self.plan.study.max_attempts) == "exhausted" for r in reps.values())
        self.say(f"{done}/{total} runs done ({invalid} invalid attempt(s), {incomplete} incomplete, {exhausted} "
                 f"without a valid run) | {now_doing} | elapsed {fmt_duration(time.monotonic() - self.started)}, "
                 f"ETA {fmt_duration(self.eta_s(reps))}")


class StudyRunner:
    """Runs a plan's pending attempts through an executor (serial by default; executors.py) and keeps the books:
    the attempt log, the classification of every ended attempt, retries, max_attempts, and signals. `stop_signal` is
    set by a signal and forwarded to the running attempts."""

    def __init__(self, plan: planmod.Plan, out: Path, executor: executors.Executor | None = None,
                 stream: IO[str] = sys.stderr, tree_state: tree.TreeState | None = None,
                 stop_after_s: float | None = None):
        self.plan = plan
        self.stop_after_s = stop_after_s  # --stop-after: no attempt starts later than this after the start
        self.tree_state = tree_state  # the code the attempts run (None: not read, e.g. a test's runner)
        self.out = out
        self.stream = stream
        self.executor: executors.Executor = executor or executors.LocalExecutor()
        self.stop_signal: int | None = None
        self.progress = Progress(plan, stream, slots=self.executor.slots)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        first = self.stop_signal is None
        self.stop_signal = signum
        if first:
            self.progress.say(f"{signal.Signals(signum).name}: stopping after the current run's teardown; run the "
                              f"same command again to resume")
        self.executor.forward(signum)

    def start_attempt(self, point: str, rep: int, attempt: int, lock_fd: int) -> executors.Job:
        run_dir = studydir.attempt_dir(self.out, point, rep, attempt)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        try:  # made here, empty, so that the attempt's number is taken whatever happens to it
            run_dir.mkdir()
        except FileExistsError:
            raise StudyDirError(f"{run_dir} exists already; the study directory was changed by hand") from None
        job = executors.Job(point=point, rep=rep, attempt=attempt,
                            scenario=self.out / "points" / point / "scenario.json",
                            run_dir=run_dir, log_path=run_dir.parent / f"{rep}-{attempt}.log")
        record: dict[str, Any] = {"event": "start", "point": point, "rep": rep, "attempt": attempt,
                                  "dir": str(run_dir.relative_to(self.out)), "t": time.time(),
                                  "executor": self.executor.name}
        if self.tree_state is not None:
            record["git_commit"] = self.tree_state.label
        append_log(self.out, record)
        try:
            info = self.executor.start(job, lock_fd)
        except executors.ExecutorError as e:
            self.end_attempt(job, {"exit_code": None, "wall_s": 0.0, "lost": True, "error": str(e)})
            raise StudyDirError(str(e)) from None
        if info:  # what the executor did (the command, the CPUs), in a record of its own
            append_log(self.out, {"event": "started", "point": point, "rep": rep, "attempt": attempt, **info})
        if self.stop_signal is not None:  # a signal came while it was starting
            self.executor.forward(self.stop_signal)
        return job

    def end_attempt(self, job: executors.Job, result: dict[str, Any]) -> dict[str, Any]:
        lost = bool(result.pop("lost", False))
        end = {"event": "end", "point": job.point, "rep": job.rep, "attempt": job.attempt, "t": time.time(),
               **result, "interrupted": self.stop_signal is not None or lost}
        append_log(self.out, end)
        if self.stop_signal is None and end.get("exit_code") in (0, 3) and end.get("wall_s") is not None:
            self.progress.overheads.append(max(0.0, float(end["wall_s"]) - self.plan.duration_s(job.point)))
        return end

    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        lock_path = self.out / ".lock"
        lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise StudyDirError(f"{self.out} is in use by another study process (or a run it started is still "
                                f"tearing down): wait for it, or choose another --out") from None
        os.set_inheritable(lock_fd, False)  # passed to the harness explicitly (pass_fds)
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            return self._loop(lock_fd)
        finally:
            try:
                self.executor.close()
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
                os.close(lock_fd)

    def _say_code(self, reps: dict[tuple[str, int], studydir.Repetition]) -> None:
        """Which code this session runs, and when the directory's earlier attempts came from other code, which."""
        if self.tree_state is None:
            return
        here = self.tree_state.label
        if self.tree_state.dirty:
            self.progress.say(f"DIRTY tree (--allow-dirty): {len(self.tree_state.dirty_files)} file(s) differ from "
                              f"{self.tree_state.commit[:12]}; every run of this session is marked {here[:12]}-dirty")
        earlier = sorted(earlier_commits(reps) - {here})
        if earlier:
            self.progress.say(f"resuming a study whose earlier attempts came from other code: "
                              f"{', '.join(short_commit(c) for c in earlier)} (this session: {short_commit(here)}); "
                              f"the findings page lists every commit")

    def _next(self, reps: dict[tuple[str, int], studydir.Repetition],
              busy: set[tuple[str, int]]) -> planmod.PlannedRun | None:
        """Fewest counted attempts first, then plan order: a retry waits for the first attempts still to make."""
        max_attempts = self.plan.study.max_attempts
        todo = [r for r in self.plan.order
                if (r.point, r.rep) not in busy and reps[(r.point, r.rep)].state(max_attempts) == "pending"]
        return min(todo, key=lambda r: reps[(r.point, r.rep)].counted(), default=None)

    def _budget_spent(self) -> bool:
        return self.stop_after_s is not None and time.monotonic() - self.progress.started >= self.stop_after_s

    def _loop(self, lock_fd: int) -> int:
        plan, out = self.plan, self.out
        check_out(plan, out)
        check_not_pilot(plan.study, out)
        planmod.write(plan, out)
        max_attempts = plan.study.max_attempts
        names = [p.name for p in plan.study.points]
        reps = studydir.scan(out, names, plan.study.repetitions_of())
        already = sum(1 for r in reps.values() if r.state(max_attempts) != "pending")
        note = plan.quick_note()
        if note:
            self.progress.say(note)
        self._say_code(reps)
        self.progress.say(f"{len(plan.order)} runs planned ({len(names)} points x {repetitions_text(plan.study)}, "
                          f"{'shuffled with seed ' + str(plan.study.seed) if plan.study.shuffle else 'in order'}"
                          f"), {already} already done in {out}; executor: {self.executor.name}")
        running: dict[tuple[str, int], executors.Job] = {}
        paused = False
        while True:
            while self.stop_signal is None:
                pr = self._next(reps, set(running))
                if pr is not None and self._budget_spent():
                    paused = True
                    break
                if pr is None or not self.executor.has_room(pr.point):  # in plan order: the next waits for room
                    break
                attempt = reps[(pr.point, pr.rep)].next_attempt()
                self.progress.line(reps, f"now {pr.point} rep {pr.rep} attempt {attempt}/{max_attempts} "
                                         f"({plan.duration_s(pr.point):g} s call)")
                running[(pr.point, pr.rep)] = self.start_attempt(pr.point, pr.rep, attempt, lock_fd)
            if not running:
                break
            for job, result in self.executor.wait(1.0):
                del running[(job.point, job.rep)]
                end = self.end_attempt(job, result)
                a = studydir.classify(job.run_dir, job.point, job.rep, job.attempt, {"start": {}, "end": end})
                reps[(job.point, job.rep)].attempts.append(a)
                detail = a.status + (f" ({'; '.join(a.failed_checks) or a.error})"
                                     if a.status != studydir.VALID else "")
                self.progress.say(f"{job.point} rep {job.rep} attempt {job.attempt}: {detail} "
                                  f"[{fmt_duration(end.get('wall_s'))}, exit {end.get('exit_code')}, "
                                  f"{a.path.relative_to(out)}]")
        if paused:
            left = sum(1 for r in reps.values() if r.state(max_attempts) == "pending")
            self.progress.line(reps, "stopped by --stop-after")
            self.progress.say(f"--stop-after {fmt_duration(self.stop_after_s)} spent: {left} run(s) still to run, "
                              f"nothing aggregated; run the same command again to go on")
            return EXIT_PAUSED
        if self.stop_signal is not None:
            self.progress.line(reps, "interrupted")
            self.progress.say(f"interrupted: {out} is resumable; run the same command again")
            return EXIT_INTERRUPTED
        self.progress.line(reps, "all runs done")
        return EXIT_OK if all(r.valid is not None for r in reps.values()) else EXIT_SOME_MISSING
