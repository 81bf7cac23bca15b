"""The plan: what a study will run, computed apart from the runner (as Flent's and TEACUP's batch modes do). Points x
repetitions, in an order shuffled by the study's seed (or kept), each point's normalised scenario (scaled by the
quick factor when asked). A pure function of the study file and the quick factor: printing it is the dry run."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import spec

PLAN_FORMAT_VERSION = 1


@dataclass(frozen=True)
class PlannedRun:
    point: str
    rep: int  # 1-based


@dataclass
class Plan:
    study: spec.Study
    quick_factor: float  # 1.0: the study as written
    order: list[PlannedRun]

    @property
    def quick(self) -> bool:
        return self.quick_factor != 1.0

    def point(self, name: str) -> spec.Point:
        for p in self.study.points:
            if p.name == name:
                return p
        raise KeyError(name)

    def duration_s(self, point: str) -> float:
        sc = self.point(point).scenario
        return spec.scenario_duration_s(sc) if sc is not None else 0.0

    @property
    def total_call_s(self) -> float:
        return sum(self.duration_s(r.point) for r in self.order)

    @property
    def time_factor(self) -> float:
        """The study's times against the full study's: the file's own factor (quick_of) times --quick."""
        return (self.study.quick_of[1] if self.study.quick_of else 1.0) * self.quick_factor

    def quick_note(self) -> str | None:
        if not self.quick:
            return None
        return (f"QUICK variant x{self.quick_factor:g}: call durations, call and cross-traffic start/stop times, "
                f"pauses and rate schedules are scaled by {self.quick_factor:g}; not the study as written")

    def fingerprint(self) -> str:
        """What must not change for a study directory to be resumed: each point's scenario and the quick factor."""
        body = json.dumps({"quick_factor": self.quick_factor,
                           "points": {p.name: p.scenario for p in self.study.points}}, sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        s = self.study
        return {
            "plan_format_version": PLAN_FORMAT_VERSION,
            "study": s.name, "description": s.description, "study_file": repo_relative(s.file),
            "quick_factor": self.quick_factor, "quick_note": self.quick_note(),
            "quick_of": None if s.quick_of is None else {"file": repo_relative(s.quick_of[0]),
                                                         "time_factor": s.quick_of[1]},
            "time_factor": self.time_factor,
            "repetitions": s.repetitions,
            **({"repetitions_per_point": s.repetitions_per_point, "repetitions_from": s.repetitions_from}
               if s.repetitions_per_point is not None else {}),
            "seed": s.seed, "shuffle": s.shuffle, "max_attempts": s.max_attempts,
            "metrics": s.metrics, "flows": s.flows, "fingerprint": self.fingerprint(),
            "axes": [{"name": a.name, "paths": a.paths, "labels": a.labels, "values": a.values} for a in s.axes],
            "points": [{"name": p.name, "base": p.base_label, "params": p.params, "labels": p.labels,
                        "settings": [{"source": x.source, "path": x.path, "value": x.value} for x in p.settings],
                        "scenario_file": f"points/{p.name}/scenario.json",
                        "duration_s": self.duration_s(p.name)} for p in s.points],
            "order": [[r.point, r.rep] for r in self.order],
            "total_call_s": self.total_call_s,
        }


def repo_relative(path: Path) -> str:
    """A path inside the repository relative to its root (what a command run from the root on any machine names), any
    other absolute."""
    p = path.resolve()
    try:
        return str(p.relative_to(spec.REPO_ROOT))
    except ValueError:
        return str(p)


def run_order(points: list[str], repetitions: int | dict[str, int], seed: int, shuffle: bool) -> list[PlannedRun]:
    """Every point x repetition (`repetitions`: one count, or each point's): repetition-major (all points once, then
    again; a point with fewer repetitions drops out) and shuffled with `seed` unless `shuffle` is false."""
    counts = repetitions if isinstance(repetitions, dict) else {p: repetitions for p in points}
    order = [PlannedRun(point=p, rep=r) for r in range(1, max(counts.values(), default=0) + 1) for p in points
             if r <= counts[p]]
    if shuffle:
        random.Random(seed).shuffle(order)
    return order


def make(study: spec.Study, quick_factor: float = 1.0, node: str = "node") -> Plan:
    """Applies the quick factor, checks every point through the scenario model (StudyError otherwise) and orders the
    runs."""
    if not quick_factor > 0:
        raise ValueError(f"--quick must be a positive factor (got {quick_factor})")
    if quick_factor != 1.0:
        for p in study.points:
            p.doc = spec.scale_doc(p.doc, quick_factor)
    spec.check_points(study, node=node)
    return Plan(study=study, quick_factor=quick_factor,
                order=run_order([p.name for p in study.points], study.repetitions_of(), study.seed, study.shuffle))


def write(plan: Plan, out: Path) -> None:
    """plan.json and points/<point>/scenario.json (the normalised scenario each run of the point is given)."""
    out.mkdir(parents=True, exist_ok=True)
    for p in plan.study.points:
        d = out / "points" / p.name
        d.mkdir(parents=True, exist_ok=True)
        _write_json(d / "scenario.json", p.scenario)
    _write_json(out / "plan.json", plan.to_json())


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
