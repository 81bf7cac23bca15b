"""The serial executor: runs a plan's pending repetitions one after the other, each as an ordinary run
(`node harness/cli.js --scenario OUT/points/<point>/scenario.json --out OUT/runs/<point>/<rep>-<attempt>`), and
keeps the study directory resumable at every moment:

- what is done is read from the run directories (state.scan), never from memory: running the same command again
  keeps valid runs, re-runs the rest; an attempt directory is never reused, so no run is overwritten or duplicated;
- SIGINT/SIGTERM/SIGHUP are forwarded to the harness (started in its own session, so a terminal's Ctrl-C reaches it
  only through the study), which tears the run down and writes its run directory; the attempt is logged as
  interrupted (it does not count towards max_attempts) and the study stops;
- one study process per directory: OUT/.lock is held (flock) by the study and inherited by the harness, so a run that
  outlives a killed study still holds it.

An invalid attempt's retry comes after the remaining first attempts, in plan order: a passing disturbance (another
load on the host) is less likely to hit every attempt of a repetition."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from . import plan as planmod
from . import state
from .spec import REPO_ROOT

HARNESS = REPO_ROOT / "harness" / "cli.js"
DEFAULT_OVERHEAD_S = 25.0  # set-up, teardown and analysis of one run, before any was measured (bench/call)
EXIT_OK, EXIT_FAILED, EXIT_BAD_STUDY, EXIT_SOME_MISSING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class StudyDirError(Exception):
    """A study directory that cannot be used (another study's, or busy)."""


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
    import json
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


@dataclass
class Progress:
    plan: planmod.Plan
    stream: IO[str]
    started: float = field(default_factory=time.monotonic)
    overheads: list[float] = field(default_factory=list)

    def prefix(self) -> str:
        return f"rtclab study {self.plan.study.name}" + (f" [QUICK x{self.plan.quick_factor:g}]"
                                                          if self.plan.quick else "")

    def say(self, text: str) -> None:
        self.stream.write(f"{self.prefix()}: {text}\n")
        self.stream.flush()

    def eta_s(self, reps: dict[tuple[str, int], state.Repetition]) -> float:
        over = sum(self.overheads) / len(self.overheads) if self.overheads else DEFAULT_OVERHEAD_S
        return sum(self.plan.duration_s(p) + over for (p, _), r in reps.items()
                   if r.state(self.plan.study.max_attempts) == "pending")

    def line(self, reps: dict[tuple[str, int], state.Repetition], now_doing: str) -> None:
        total = len(reps)
        done = sum(1 for r in reps.values() if r.state(self.plan.study.max_attempts) != "pending")
        attempts = [a for r in reps.values() for a in r.attempts]
        invalid = sum(a.status == state.INVALID for a in attempts)
        incomplete = sum(a.status == state.INCOMPLETE for a in attempts)
        exhausted = sum(r.state(self.plan.study.max_attempts) == "exhausted" for r in reps.values())
        self.say(f"{done}/{total} runs done ({invalid} invalid attempt(s), {incomplete} incomplete, {exhausted} "
                 f"without a valid run) | {now_doing} | elapsed {fmt_duration(time.monotonic() - self.started)}, "
                 f"ETA {fmt_duration(self.eta_s(reps))}")


class SerialExecutor:
    """Runs attempts one at a time; `stop_signal` is set by a signal and forwarded to the running harness."""

    def __init__(self, plan: planmod.Plan, out: Path, stream: IO[str] = sys.stderr, node: str | None = None,
                 harness: Path = HARNESS, extra_args: list[str] | None = None):
        self.plan = plan
        self.out = out
        self.stream = stream
        self.node = node or shutil.which("node") or "node"
        self.harness = harness
        self.extra_args = extra_args or []
        self.child: subprocess.Popen[bytes] | None = None
        self.stop_signal: int | None = None
        self.progress = Progress(plan, stream)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        first = self.stop_signal is None
        self.stop_signal = signum
        if first:
            self.progress.say(f"{signal.Signals(signum).name}: stopping after the current run's teardown; run the "
                              f"same command again to resume")
        child = self.child
        if child is not None and child.poll() is None:
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass

    def run_attempt(self, point: str, rep: int, attempt: int, lock_fd: int) -> dict[str, Any]:
        run_dir = state.attempt_dir(self.out, point, rep, attempt)
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        if run_dir.exists():  # never reuse an attempt's directory
            raise StudyDirError(f"{run_dir} exists already; the study directory was changed by hand")
        scenario = self.out / "points" / point / "scenario.json"
        log_path = run_dir.parent / f"{rep}-{attempt}.log"
        cmd = [self.node, str(self.harness), "--scenario", str(scenario), "--out", str(run_dir), *self.extra_args]
        state.append_log(self.out, {"event": "start", "point": point, "rep": rep, "attempt": attempt,
                                    "dir": str(run_dir.relative_to(self.out)), "t": time.time(), "command": cmd})
        t0 = time.monotonic()
        with log_path.open("ab") as log:
            try:
                self.child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              cwd=REPO_ROOT, start_new_session=True, pass_fds=(lock_fd,))
            except OSError as e:
                state.append_log(self.out, {"event": "end", "point": point, "rep": rep, "attempt": attempt,
                                            "t": time.time(), "exit_code": None, "wall_s": 0.0,
                                            "interrupted": True, "error": str(e)})
                raise StudyDirError(f"the harness could not start ({' '.join(cmd[:2])}): {e}") from None
            if self.stop_signal is not None:  # a signal came while it was starting
                os.kill(self.child.pid, self.stop_signal)
            code = self.child.wait()
            self.child = None
        wall = time.monotonic() - t0
        end = {"event": "end", "point": point, "rep": rep, "attempt": attempt, "t": time.time(), "exit_code": code,
               "wall_s": round(wall, 3), "interrupted": self.stop_signal is not None}
        state.append_log(self.out, end)
        if self.stop_signal is None and code in (0, 3):
            self.progress.overheads.append(max(0.0, wall - self.plan.duration_s(point)))
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
            for s, h in old.items():
                signal.signal(s, h)
            os.close(lock_fd)

    def _loop(self, lock_fd: int) -> int:
        plan, out = self.plan, self.out
        check_out(plan, out)
        planmod.write(plan, out)
        max_attempts = plan.study.max_attempts
        names = [p.name for p in plan.study.points]
        reps = state.scan(out, names, plan.study.repetitions)
        already = sum(1 for r in reps.values() if r.state(max_attempts) != "pending")
        note = plan.quick_note()
        if note:
            self.progress.say(note)
        self.progress.say(f"{len(plan.order)} runs planned ({len(names)} points x {plan.study.repetitions} "
                          f"repetitions, {'shuffled with seed ' + str(plan.study.seed) if plan.study.shuffle else 'in order'}"
                          f"), {already} already done in {out}")
        while True:
            # Fewest attempts first, then plan order: a retry waits for the first attempts still to make.
            todo = sorted((r for r in plan.order if reps[(r.point, r.rep)].state(max_attempts) == "pending"),
                          key=lambda r: reps[(r.point, r.rep)].counted())
            if not todo:
                break
            for pr in todo:
                rep = reps[(pr.point, pr.rep)]
                if rep.state(max_attempts) != "pending":
                    continue
                if self.stop_signal is not None:  # a signal between two runs: start no other
                    self.progress.say(f"interrupted: {out} is resumable; run the same command again")
                    return EXIT_INTERRUPTED
                attempt = rep.next_attempt()
                self.progress.line(reps, f"now {pr.point} rep {pr.rep} attempt {attempt}/{max_attempts} "
                                         f"({plan.duration_s(pr.point):g} s call)")
                end = self.run_attempt(pr.point, pr.rep, attempt, lock_fd)
                a = state.classify(state.attempt_dir(out, pr.point, pr.rep, attempt), pr.point, pr.rep, attempt,
                                   {"start": {}, "end": end})
                rep.attempts.append(a)
                detail = a.status + (f" ({'; '.join(a.failed_checks) or a.error})" if a.status != state.VALID else "")
                self.progress.say(f"{pr.point} rep {pr.rep} attempt {attempt}: {detail} "
                                  f"[{fmt_duration(end['wall_s'])}, exit {end['exit_code']}, "
                                  f"{a.path.relative_to(out)}]")
                if self.stop_signal is not None:
                    self.progress.line(reps, "interrupted")
                    self.progress.say(f"interrupted: {out} is resumable; run the same command again")
                    return EXIT_INTERRUPTED
        self.progress.line(reps, "all runs done")
        return EXIT_OK if all(r.valid is not None for r in reps.values()) else EXIT_SOME_MISSING
