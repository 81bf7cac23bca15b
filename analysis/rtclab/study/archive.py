"""`rtclab study archive DIR [--into results-archive]`: the compact copy of an aggregated study directory that is
committed to the repository, so that a fresh clone regenerates docs/findings.md (`rtclab findings --check`) and every
`rtclab study report`. It has the study directory's own layout, holding only what those two read: plan.json,
study.json, attempts.jsonl, each point's scenario.json, every attempt's manifest.json (its verdict, versions, host and
commit) and the used runs' metrics.json without its time series (compact_metrics); never the captures,
packets.parquet, per-frame records, gtlogs or getStats dumps (docs/studies.md, "The results archive"). Absolute paths
of the machine (the repository's root, the study directory's) are written relative, as the repository holds no path
of a developer's machine."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .report import StudyReportError, load

REPO = Path(__file__).resolve().parents[3]
DEFAULT_ARCHIVE = REPO / "results-archive"
TOP_FILES = ("plan.json", "study.json", "attempts.jsonl")


@dataclass
class Archived:
    dest: Path
    files: int
    bytes: int
    runs_used: int


def checkout_of(study_dir: Path) -> Path | None:
    """The git checkout (a clone or a worktree: `.git` a directory or a file) holding the study directory: the tree
    its runs came from, which need not be the one archiving it (a study run from a worktree, archived from main)."""
    for d in study_dir.resolve().parents:
        if (d / ".git").exists():
            return d
    return None


def portable(text: str, study_dir: Path) -> str:
    """The text with absolute paths made relative: the study directory's files relative to it, then those of the
    checkout the study ran from and of this repository relative to their root (a study directory is usually inside
    the checkout, so it goes first). A root is replaced only where a path continues with "/" or ends (a JSON string's
    quote): /x/study is not the start of /x/study.yaml."""
    checkout = checkout_of(study_dir)
    roots = [str(study_dir.resolve()), *([str(checkout)] if checkout and checkout != REPO else []), str(REPO)]
    for root in roots:
        text = re.sub(re.escape(root) + "/", "", text)
        text = re.sub(re.escape(root) + '(?=")', ".", text)
    return text


def without_series(doc: Any) -> Any:
    """The document without its time series: every object's `series` (getStats', the congestion controller's, the
    frames' per-frame series, the queue's), which findings and report never read (their summaries stay)."""
    if isinstance(doc, dict):
        return {k: without_series(v) for k, v in doc.items() if k != "series"}
    if isinstance(doc, list):
        return [without_series(v) for v in doc]
    return doc


def compact_metrics(text: str, path: Path) -> str:
    """A run's metrics.json as archived: without its time series, on one line (a 22 s call's 286 KB become 47 KB)."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise StudyReportError(f"{path} unreadable: {e}") from None
    return json.dumps(without_series(doc), separators=(",", ":"), allow_nan=True) + "\n"


def files_of(study_dir: Path) -> list[Path]:
    """What the archive holds, relative to the study directory, from its study.json (StudyReportError when it is not
    an aggregated study directory)."""
    doc = load(study_dir)
    out = [Path(f) for f in TOP_FILES if (study_dir / f).exists()]
    out += sorted(p.relative_to(study_dir) for p in (study_dir / "points").glob("*/scenario.json"))
    for r in doc.get("runs") or []:
        run = Path(r["dir"])
        if (study_dir / run / "manifest.json").exists():
            out.append(run / "manifest.json")
        if r.get("used") and (study_dir / run / "metrics.json").exists():
            out.append(run / "metrics.json")
    return out


def archive_name(study_dir: Path) -> str:
    """The study's default directory's name, results/studies/<name>[-quick<F>] (rtclab_study.runner.default_out),
    whatever --out it ran into: a quick run and the full one are archived apart; and <name>-planned[-quick<F>] for a
    study whose repetitions were planned from a pilot of its own name (its first runs, archived as <name>), which
    the archive keeps beside it (the plan's command names it) rather than replace."""
    doc = load(study_dir)
    name = str(doc.get("study") or "")
    if not name or "/" in name or name.startswith("."):
        raise StudyReportError(f"{study_dir / 'study.json'}: study name {name!r} cannot name an archive directory")
    try:
        plan = json.loads((study_dir / "plan.json").read_text())
        quick = float(plan.get("quick_factor") or 1.0)
    except (OSError, ValueError, AttributeError) as e:
        raise StudyReportError(f"{study_dir / 'plan.json'} unreadable: {e}") from None
    return dir_name(name, quick, plan.get("repetitions_from"))


def dir_name(name: str, quick_factor: float, repetitions_from: dict[str, Any] | None) -> str:
    """<name>[-planned][-quick<F>]: -planned when the repetitions plan's pilots include a study of this name."""
    pilots = (repetitions_from or {}).get("pilots") or []
    planned = "-planned" if any(p.get("study") == name for p in pilots) else ""
    return name + planned + ("" if quick_factor == 1.0 else f"-quick{quick_factor:g}")


def archive(study_dir: Path, into: Path = DEFAULT_ARCHIVE) -> Archived:
    """Writes INTO/<archive_name>/ afresh (an earlier archive of the study is replaced whole) and says what it
    holds."""
    doc = load(study_dir)
    name = archive_name(study_dir)
    files = files_of(study_dir)
    dest = into / name
    tmp = into / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    size = 0
    for rel in files:
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (study_dir / rel).read_text()
        if rel.name == "metrics.json":
            text = compact_metrics(text, study_dir / rel)
        text = portable(text, study_dir)
        target.write_text(text)
        size += len(text.encode())
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    used = sum(1 for r in doc.get("runs") or [] if r.get("used"))
    return Archived(dest=dest, files=len(files), bytes=size, runs_used=used)


def study_dirs(into: Path = DEFAULT_ARCHIVE) -> list[Path]:
    """Every archived study (a directory holding plan.json), in name order."""
    if not into.is_dir():
        return []
    return sorted(d for d in into.iterdir() if d.is_dir() and not d.name.startswith(".") and
                  (d / "plan.json").exists())


def describe(a: Archived) -> str:
    per_run = f", {a.bytes / a.runs_used / 1024:.1f} KiB per run used" if a.runs_used else ""
    return f"archived {a.files} files, {a.bytes / 1024:.1f} KiB{per_run} into {a.dest}"
