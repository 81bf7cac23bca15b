"""`rtclab revalidate DIR...`: today's analyzer validity rules (validity.py) and frame gates (frame_gate.py) applied
again to runs analysed before them, from what each run recorded (manifest.json, metrics.json, packets.parquet, the
ground-truth logs, cpu.jsonl), without analysing the run again. Says per run what changed, and with `write` updates
its metrics.json (and re-aggregates a study). The harness's checks in manifest.json stand as the harness made them;
checks of the analyzer's that need the captures (dscp_marked) are kept as metrics.json has them. docs/analyzer.md,
"Re-judging recorded runs"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import frame_gate, metrics_schema, validity
from .packets import from_parquet
from .rundir import RunDirError, load


class RevalidateError(Exception):
    """A directory that is neither a run directory nor a study directory."""


@dataclass
class Outcome:
    """One run's verdict before (metrics.json as it was) and after (today's rules), the checks whose outcome changed,
    and the frame metrics withheld now that were not (`withheld`: side -> groups)."""
    path: Path
    before: bool | None
    after: bool | None
    failing_now: list[dict[str, Any]] = field(default_factory=list)  # checks that fail now and did not
    passing_now: list[dict[str, Any]] = field(default_factory=list)  # checks that failed and do not now
    withheld: dict[str, list[str]] = field(default_factory=dict)
    skipped: str | None = None  # why the run was not re-judged

    @property
    def flipped(self) -> bool:
        return self.skipped is None and self.before is not None and self.after is not None \
            and self.before != self.after


def run_dirs(path: Path) -> tuple[list[Path], bool]:
    """(the run directories to re-judge, whether `path` is a study directory): a run directory itself (it has a
    manifest.json), or every attempt of a study directory (study.json or plan.json, runs under runs/<point>/)."""
    if (path / "manifest.json").is_file():
        return [path], False
    if (path / "study.json").is_file() or (path / "plan.json").is_file():
        return sorted(p.parent for p in path.glob("runs/*/*/manifest.json")), True
    raise RevalidateError(f"{path}: neither a run directory (no manifest.json) nor a study directory (no study.json "
                          "or plan.json)")


def _verdict(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def revalidate_run(path: Path, bounds: validity.Bounds, write: bool) -> Outcome:
    """Re-judges one analysed run; with `write` its metrics.json gets the new validity and frames."""
    mpath = path / "metrics.json"
    try:
        metrics = json.loads(mpath.read_text())
    except FileNotFoundError:
        return Outcome(path, None, None, skipped="not analysed (no metrics.json): `rtclab analyze` judges it")
    except (OSError, ValueError) as e:
        return Outcome(path, None, None, skipped=f"metrics.json unreadable ({e})")
    if not isinstance(metrics, dict):
        return Outcome(path, None, None, skipped="metrics.json is not an object")
    try:
        run = load(path)
    except RunDirError as e:
        return Outcome(path, None, None, skipped=str(e))
    info = metrics.get("run") or {}
    t0, duration_s = info.get("call_start"), info.get("duration_s")
    if not isinstance(t0, (int, float)) or not isinstance(duration_s, (int, float)):
        return Outcome(path, None, None, skipped="metrics.json names no call start and duration (run.call_start, "
                                                 "run.duration_s)")
    ppath = path / "packets.parquet"
    packets = from_parquet(ppath, ("flow", *validity.PACKET_COLUMNS)).cols if ppath.exists() else None
    rec = validity.RecordedRun(run, float(t0), float(duration_s), packets, bounds)
    old = metrics.get("validity") or {}
    harness_names = {c.get("name") for c in (run.manifest.get("validity") or {}).get("checks") or []
                     if isinstance(c, dict)}
    # The analyzer's checks that need more than these files (dscp_marked reads capture-a): as they were.
    kept = [c for c in old.get("checks") or [] if isinstance(c, dict)
            and c.get("name") not in harness_names and c.get("name") not in validity.NAMES]
    new = validity.combine(run.manifest.get("validity"), validity.analyzer_checks(rec) + kept)
    failed_before = {c.get("name") for c in old.get("checks") or [] if isinstance(c, dict) and c.get("ok") is False}
    failed_now = {c["name"] for c in new["checks"] if c.get("ok") is False}
    before, after = _verdict(old.get("valid")), _verdict(new.get("valid"))
    out = Outcome(path, before, after,
                  failing_now=[c for c in new["checks"] if c["name"] in failed_now - failed_before],
                  passing_now=[c for c in new["checks"] if c["name"] in failed_before - failed_now])
    frames = metrics.get("frames")
    if isinstance(frames, dict):
        for side, entry in frames.items():
            if isinstance(entry, dict):
                gated = frame_gate.apply(entry)
                more = sorted(set(gated.get("withheld") or {}) - set(entry.get("withheld") or {}))
                if more:
                    out.withheld[side] = more
                frames[side] = gated
    if write:
        metrics["validity"] = new
        text = json.dumps(metrics, indent=1)
        if metrics_schema.check_enabled():
            metrics_schema.validate(json.loads(text))
        tmp = mpath.with_suffix(".json.tmp")
        tmp.write_text(text)
        tmp.replace(mpath)
    return out


def reaggregate(study: Path) -> None:
    """The study's study.json and study.parquet again, from its runs as they now are, accepting the INVALID checks
    its last aggregation accepted (study.json `accept_invalid`)."""
    from .study.aggregate import aggregate
    accept: list[str] = []
    try:
        doc = json.loads((study / "study.json").read_text())
        accept = [str(n) for n in doc.get("accept_invalid") or []] if isinstance(doc, dict) else []
    except (OSError, ValueError):
        pass  # never aggregated: aggregate with nothing accepted
    aggregate(study, analyse_missing=False, accept_invalid=frozenset(accept))


def _name(v: bool | None) -> str:
    return {True: "valid", False: "INVALID", None: "unknown"}[v]


def describe(o: Outcome, root: Path) -> str:
    """One line (and a line per check that changed) for a run."""
    try:
        name = str(o.path.relative_to(root)) or str(o.path)
    except ValueError:
        name = str(o.path)
    name = name if name != "." else str(o.path)
    if o.skipped:
        return f"{name}: skipped: {o.skipped}"
    head = f"{name}: {_name(o.before)} -> {_name(o.after)}" if o.flipped else f"{name}: {_name(o.after)} (unchanged)"
    lines = [head] + [f"  fails now: {c.get('name')}: {c.get('detail')}" for c in o.failing_now]
    lines += [f"  passes now: {c.get('name')}: {c.get('detail')}" for c in o.passing_now]
    lines += [f"  frames at {side}: withheld now: {', '.join(groups)}" for side, groups in o.withheld.items()]
    return "\n".join(lines)
