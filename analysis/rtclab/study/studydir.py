"""What a study directory holds: every attempt of every repetition, classified from its run directory's manifest
(the run directory is the truth) and from the study's own attempt log (`attempts.jsonl`: when the study started and
ended each attempt, and whether it interrupted it).

This is the analyzer's reading of a study directory, as rundir.py is of a run directory: aggregate.py uses it, and so
does the orchestrator that writes the directory (the package rtclab_study: its runner decides from `scan` what to run
next and classifies each attempt it ends with `classify`; it alone writes attempts.jsonl). Nothing here runs anything.

Layout (docs/studies.md):
    OUT/plan.json, OUT/points/<point>/scenario.json
    OUT/runs/<point>/<rep>-<attempt>/          an ordinary run directory
    OUT/runs/<point>/<rep>-<attempt>.log       what the harness printed
    OUT/attempts.jsonl                         {"event": "start"|"end", "point", "rep", "attempt", ...} a line

An attempt is `valid` (manifest status complete, validity.valid true), `invalid` (complete, a validity check
failed: the harness's in the manifest, or once the run is analysed the analyzer's own too, in metrics.json),
`incomplete` (stopped early, failed, or no manifest) or `interrupted` (incomplete because the study was stopped: a
signal the study forwarded, or the study process died before recording its end). A repetition is done with its first
valid attempt; otherwise every attempt but the interrupted ones counts towards max_attempts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rundir import RunDirError, manifest_format_version

ATTEMPT_DIR = re.compile(r"^([0-9]+)-([0-9]+)$")
VALID, INVALID, INCOMPLETE, INTERRUPTED = "valid", "invalid", "incomplete", "interrupted"
# harness/exit-status.js: a complete run the analyzer could not judge (it failed, or wrote no validity).
NOT_ANALYSED_EXIT = 4


@dataclass
class Attempt:
    point: str
    rep: int
    attempt: int
    path: Path
    status: str  # VALID, INVALID, INCOMPLETE, INTERRUPTED
    run_status: str | None  # manifest.json status
    error: str | None
    failed_checks: list[str] = field(default_factory=list)
    failed_names: list[str] = field(default_factory=list)  # the names of failed_checks' checks
    exit_code: int | None = None
    wall_s: float | None = None

    @property
    def counts(self) -> bool:
        """Whether it uses up one of max_attempts."""
        return self.status != INTERRUPTED and self.status != VALID

    def to_json(self, root: Path) -> dict[str, Any]:
        return {"point": self.point, "rep": self.rep, "attempt": self.attempt, "dir": _rel(self.path, root),
                "status": self.status, "run_status": self.run_status, "error": self.error,
                "failed_checks": self.failed_checks, "exit_code": self.exit_code, "wall_s": self.wall_s}


@dataclass
class Repetition:
    point: str
    rep: int
    attempts: list[Attempt]

    @property
    def valid(self) -> Attempt | None:
        return next((a for a in self.attempts if a.status == VALID), None)

    def counted(self) -> int:
        return sum(a.counts for a in self.attempts)

    def next_attempt(self) -> int:
        return max((a.attempt for a in self.attempts), default=0) + 1

    def state(self, max_attempts: int) -> str:
        if self.valid is not None:
            return "done"
        if self.counted() >= max_attempts:
            return "exhausted"
        return "pending"


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def attempt_dir(out: Path, point: str, rep: int, attempt: int) -> Path:
    return out / "runs" / point / f"{rep}-{attempt}"


@dataclass
class AttemptLog:
    """attempts.jsonl read: (point, rep, attempt) -> {"start": record, "end": record or absent}, and the line numbers
    (from 1) of the lines that could not be read (a write cut short): an attempt whose record was on one is classified
    without it (e.g. INCOMPLETE rather than INTERRUPTED), so every output that reads the log names them."""
    records: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    damaged_lines: list[int] = field(default_factory=list)


def read_log(out: Path) -> AttemptLog:
    """The study's attempt log; a damaged line is skipped and its number kept (AttemptLog.damaged_lines)."""
    log = AttemptLog()
    path = out / "attempts.jsonl"
    if not path.exists():
        return log
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        try:
            rec = json.loads(line)
            key = (str(rec["point"]), int(rec["rep"]), int(rec["attempt"]))
        except (ValueError, KeyError, TypeError):
            log.damaged_lines.append(number)
            continue
        log.records.setdefault(key, {})[str(rec.get("event"))] = rec
    return log


def classify(path: Path, point: str, rep: int, attempt: int, log: dict[str, Any] | None) -> Attempt:
    manifest: dict[str, Any] = {}
    mpath = path / "manifest.json"
    error: str | None = None
    try:
        doc = json.loads(mpath.read_text())
        manifest = doc if isinstance(doc, dict) else {}
        manifest_format_version(manifest, mpath)
    except FileNotFoundError:
        error = "no manifest.json"
    except (ValueError, UnicodeDecodeError) as e:
        error = f"manifest.json unreadable: {e}"
    except RunDirError as e:
        error = str(e)
        manifest = {}
    run_status = manifest.get("status") if manifest else None
    validity = manifest.get("validity") or {}
    harness_checks = [c for c in validity.get("checks") or [] if isinstance(c, dict)]
    own = analyzer_checks(path, {str(c.get("name")) for c in harness_checks})
    if any(c.get("ok") is False for c in own):
        validity = dict(validity, valid=False)
    failed_c = [c for c in harness_checks + own if c.get("ok") is False]
    failed = [f"{c.get('name')}: {c.get('detail')}" for c in failed_c]
    end = (log or {}).get("end")
    started_by_study = log is not None and "start" in log
    exit_code = (end or {}).get("exit_code")
    if run_status == "complete" and exit_code == NOT_ANALYSED_EXIT:
        # The run completed but nothing judged it whole: the analyzer failed or wrote no validity.
        status = INCOMPLETE
        error = error or (f"the analyzer failed or wrote no validity into metrics.json (harness exit status "
                          f"{NOT_ANALYSED_EXIT}; its log says why)")
    elif run_status == "complete" and validity.get("valid") is True:
        status = VALID
    elif run_status == "complete":
        status = INVALID
        error = error or "validity check failed"
    else:
        error = error or manifest.get("error") or f"run status {run_status!r}"
        # Interrupted: the study said it stopped this run, or the study started it and never saw it end.
        interrupted = (end is not None and end.get("interrupted")) or (started_by_study and end is None)
        status = INTERRUPTED if interrupted else INCOMPLETE
    return Attempt(point=point, rep=rep, attempt=attempt, path=path, status=status, run_status=run_status,
                   error=None if status == VALID else error, failed_checks=failed,
                   failed_names=[str(c.get("name")) for c in failed_c],
                   exit_code=(end or {}).get("exit_code"), wall_s=(end or {}).get("wall_s"))


def analyzer_checks(path: Path, harness_names: set[str]) -> list[dict[str, Any]]:
    """The analyzer's own validity checks (dscp_marked) from the run's metrics.json: the checks there that the
    manifest does not hold (metrics.json copies the manifest's at analysis time; the manifest's stay the harness's
    word). Empty before the run is analysed, or when its metrics.json cannot be read."""
    try:
        doc = json.loads((path / "metrics.json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    checks = ((doc.get("validity") or {}).get("checks") or []) if isinstance(doc, dict) else []
    return [c for c in checks if isinstance(c, dict) and str(c.get("name")) not in harness_names]


def planned_repetitions(plan: dict[str, Any]) -> dict[str, int]:
    """Each point's repetitions in a plan.json: `repetitions_per_point` when the study ran a repetitions plan
    (`run --repetitions-from`), else the study file's `repetitions` at every point."""
    per_point = plan.get("repetitions_per_point") or {}
    return {p["name"]: int(per_point.get(p["name"], plan["repetitions"])) for p in plan["points"]}


def scan(out: Path, points: list[str], repetitions: int | Mapping[str, int],
         log: AttemptLog | None = None) -> dict[tuple[str, int], Repetition]:
    """Every planned repetition (`repetitions`: one count for every point, or each point's) with the attempts its
    directory holds (attempts of repetitions outside the plan, e.g. after lowering `repetitions`, are left alone and
    not listed). `log`: the attempt log when the caller has read it (to report its damaged lines), else read here."""
    records = (log if log is not None else read_log(out)).records
    counts = dict(repetitions) if isinstance(repetitions, Mapping) else {p: repetitions for p in points}
    reps = {(p, r): Repetition(point=p, rep=r, attempts=[]) for p in points for r in range(1, counts[p] + 1)}
    for p in points:
        d = out / "runs" / p
        if not d.is_dir():
            continue
        for child in d.iterdir():
            m = ATTEMPT_DIR.match(child.name)
            if not m or not child.is_dir():
                continue
            rep, attempt = int(m.group(1)), int(m.group(2))
            if (p, rep) not in reps:
                continue
            reps[(p, rep)].attempts.append(classify(child, p, rep, attempt, records.get((p, rep, attempt))))
    for r in reps.values():
        r.attempts.sort(key=lambda a: a.attempt)
    return reps
