"""The state of the git tree a study runs from: its commit and the files that differ from it. A study's results are
evidence only when the code that made them can be found again, so `rtclab study run` refuses a dirty tree unless told
--allow-dirty (docs/studies.md, "Provenance"). Dirty means what `git status` lists: tracked files changed (staged or
not) and untracked files that are not ignored; the harness's manifest git_commit uses the same rule."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


class TreeError(Exception):
    """The tree's state cannot be read (no git, not a repository)."""


@dataclass(frozen=True)
class TreeState:
    commit: str  # HEAD, 40 hex digits
    dirty_files: list[str]  # `git status --porcelain` lines' paths, relative to the repository root

    @property
    def dirty(self) -> bool:
        return bool(self.dirty_files)

    @property
    def label(self) -> str:
        """The commit as a manifest's git_commit writes it: "-dirty" appended when the tree differs from it."""
        return self.commit + ("-dirty" if self.dirty else "")


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TreeError(f"git {' '.join(args)} in {repo} could not run: {e}") from None
    if proc.returncode != 0:
        raise TreeError(f"git {' '.join(args)} in {repo} failed: {proc.stderr.strip()}")
    return proc.stdout


def state(repo: Path) -> TreeState:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    # -z: paths as they are (no quoting); "XY path", and a rename's original path as the next field
    fields = _git(repo, "status", "--porcelain", "-z", "--untracked-files=normal").split("\0")
    files: list[str] = []
    skip = False
    for f in fields:
        if skip or not f:
            skip = False
            continue
        files.append(f[3:])
        skip = f[0] in "RC"  # the next field is the rename's or copy's source
    return TreeState(commit=commit, dirty_files=sorted(files))


def refusal(s: TreeState, limit: int = 20) -> str:
    """Why a study does not run from this tree, naming the dirty files."""
    shown = s.dirty_files[:limit]
    more = len(s.dirty_files) - len(shown)
    return (f"the git tree differs from its commit {s.commit[:12]} ({len(s.dirty_files)} file(s): "
            + ", ".join(shown) + (f", and {more} more" if more > 0 else "")
            + "): commit (or stash) them so that the study's results name the code that made them, or run with "
              "--allow-dirty (every run is then marked dirty, and so is the findings page's line of the study)")
