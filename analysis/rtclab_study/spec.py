"""The study file (studies/schema.json): read, validate against its schema, expand into points, and check every
point's scenario through the Node scenario model (scenarios/check-points.js, one process for all points) before
anything runs. Everything here is pure except `check_points` (one `node` process) and reading files.

A point is the base scenario with some fields set: a grid point sets one value of each axis (a zip group sets one
value of each of its members, the i-th of each together); a named point sets the fields of its `set` on its own base.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from rtclab import yamlload

REPO_ROOT = Path(__file__).resolve().parents[2]
STUDY_SCHEMA_PATH = REPO_ROOT / "studies" / "schema.json"
SCENARIO_SCHEMA_PATH = REPO_ROOT / "scenarios" / "schema.json"
CHECK_POINTS_JS = REPO_ROOT / "scenarios" / "check-points.js"

_SEGMENT = re.compile(r"^([a-z_][a-z0-9_]*)(?:\[([0-9]+)\])?$")
_UNSAFE = re.compile(r"[^A-Za-z0-9.+=-]+")


class StudyError(Exception):
    """A study that must not run: the message names the file, the axis or point, the value and the field."""

    def __init__(self, file: str, problems: list[str]):
        super().__init__(f"study {file} is not valid:\n  - " + "\n  - ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Setting:
    """One field a point sets: which axis (or named point) set it, to what, with its label in the point's name."""
    source: str  # "axis qdisc" / "zip cap (member kbit)" / "point fifo"
    path: str
    value: Any
    label: str


@dataclass
class Point:
    name: str
    base_label: str  # the base file (or "inline")
    base_dir: Path  # where the base's relative trace files and clips are found
    base_doc: dict[str, Any]
    settings: list[Setting]
    params: dict[str, Any]  # axis name -> value (grid points); {} for named points
    labels: dict[str, str]  # axis name -> label
    doc: dict[str, Any] = field(default_factory=dict)  # the base with the settings applied (quick scaling too)
    scenario: dict[str, Any] | None = None  # normalised by the scenario model


@dataclass
class Axis:
    name: str
    paths: list[str]  # one for a plain axis, several for a zip group
    values: list[list[Any]]  # per position: the value of each path
    labels: list[str]
    source: str


@dataclass
class Study:
    file: Path
    doc: dict[str, Any]
    name: str
    description: str
    axes: list[Axis]
    points: list[Point]
    repetitions: int
    seed: int
    shuffle: bool
    max_attempts: int
    metrics: list[str]
    flows: list[str]
    quick_of: tuple[Path, float] | None = None  # the full study this file shortens by hand, and its time factor
    # A repetitions plan (`run --repetitions-from PLAN.json`, rtclab.study.plan): each point's count, and where it came
    # from (plan.json records both); None: `repetitions` at every point.
    repetitions_per_point: dict[str, int] | None = None
    repetitions_from: dict[str, Any] | None = None

    def repetitions_of(self) -> dict[str, int]:
        """Each point's repetitions."""
        per = self.repetitions_per_point or {}
        return {p.name: per.get(p.name, self.repetitions) for p in self.points}

    def wants_flow(self, label: str) -> bool:
        return any(fnmatch.fnmatchcase(label, pat) for pat in self.flows)


@lru_cache(maxsize=2)
def _schema(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def study_schema() -> dict[str, Any]:
    return _schema(STUDY_SCHEMA_PATH)


def scenario_schema() -> dict[str, Any]:
    return _schema(SCENARIO_SCHEMA_PATH)


def study_default(key: str) -> Any:
    """The study schema's default of a top-level field (the only source of the study's defaults)."""
    return copy.deepcopy(study_schema()["properties"][key].get("default"))


def metric_catalogue_names() -> list[str]:
    names: list[str] = study_schema()["properties"]["metrics"]["items"]["enum"]
    return list(names)


# ---- field paths -------------------------------------------------------------------------------------------------

def parse_path(path: str) -> list[str | int]:
    """'cross_traffic[0].flows' -> ['cross_traffic', 0, 'flows']."""
    out: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if not m:
            raise ValueError(f"{path!r} is not a field path (names joined by dots, [i] for an array item)")
        out.append(m.group(1))
        if m.group(2) is not None:
            out.append(int(m.group(2)))
    return out


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """A schema node and every subschema that can add properties to the same instance ($ref, allOf, anyOf, oneOf,
    if/then/else), flattened."""
    out: list[dict[str, Any]] = []
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if not isinstance(n, dict) or id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        ref = n.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target[part]
            stack.append(target)
        for key in ("allOf", "anyOf", "oneOf"):
            stack.extend(n.get(key) or [])
        for key in ("then", "else"):
            if key in n:
                stack.append(n[key])
    return out


def check_path(path: str, schema: dict[str, Any] | None = None) -> str | None:
    """None when `path` can name a field of a scenario, else a sentence naming the first unknown part and the fields
    there are at that place (read from scenarios/schema.json: every discipline's parameters count)."""
    root = schema or scenario_schema()
    try:
        parts = parse_path(path)
    except ValueError as e:
        return str(e)
    nodes = _resolve(root, root)
    where = "the scenario"
    for part in parts:
        if isinstance(part, int):
            items = [n["items"] for n in nodes if isinstance(n.get("items"), dict)]
            if not items:
                return f"{where} is not a list: [{part}] names nothing"
            nodes = [x for i in items for x in _resolve(i, root)]
            where = f"{where}[{part}]"
            continue
        props: dict[str, list[Any]] = {}
        open_object = False
        for n in nodes:
            for k, v in (n.get("properties") or {}).items():
                props.setdefault(k, []).append(v)
            if n.get("type") == "object" and "properties" not in n and n.get("additionalProperties") is not False:
                open_object = True
        if part not in props:
            if open_object and not props:
                return None  # a free-form mapping: anything goes below it
            known = ", ".join(sorted(props)) or "none"
            return f"{where} has no field {part!r} (its fields: {known})"
        nodes = [x for v in props[part] for x in _resolve(v, root)]
        where = part if where == "the scenario" else f"{where}.{part}"
    return None


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Sets a field of a scenario document, making the mappings on the way; an array item must exist, or be the next
    one (appended)."""
    parts = parse_path(path)
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        nxt = None if last else parts[i + 1]
        if isinstance(part, int):
            if not isinstance(node, list):
                raise ValueError(f"{path}: the base has no list here")
            if part > len(node):
                raise ValueError(f"{path}: the base's list has {len(node)} item(s); item [{part}] cannot be made")
            if part == len(node):
                node.append({} if not isinstance(nxt, int) else [])
            if last:
                node[part] = copy.deepcopy(value)
            else:
                if node[part] is None:
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{path}: the base holds a {type(node).__name__} where a mapping is needed")
            if last:
                node[part] = copy.deepcopy(value)
            else:
                if node.get(part) is None:
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]


# ---- labels and names --------------------------------------------------------------------------------------------

def value_label(value: Any) -> str | None:
    """The label of a value in a point's name: a number or string as written, a mapping by its kind; None when there
    is no obvious one."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return _UNSAFE.sub("_", value).strip("_") or None
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        return _UNSAFE.sub("_", value["kind"])
    return None


def _axis_labels(values: list[Any], given: list[str] | None, where: str, problems: list[str]) -> list[str]:
    if given is not None:
        if len(given) != len(values):
            problems.append(f"{where}: {len(given)} labels for {len(values)} values")
            return [str(i + 1) for i in range(len(values))]
        labels = list(given)
    else:
        auto = [value_label(v) for v in values]
        labels = [a if a is not None else f"v{i + 1}" for i, a in enumerate(auto)]
        if len(set(labels)) != len(labels):  # e.g. two codel mappings with different targets
            labels = [f"v{i + 1}" for i in range(len(values))]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        problems.append(f"{where}: labels repeat ({', '.join(dup)}); each value needs its own")
    return labels


# ---- loading -----------------------------------------------------------------------------------------------------

def _read_doc(path: Path, what: str) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise StudyError(str(path), [f"{what}: cannot read {path}: {e.strerror}"]) from None
    try:
        return json.loads(text) if path.suffix == ".json" else yamlload.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise StudyError(str(path), [f"{what}: {path} is not valid YAML/JSON: {e}"]) from None


def _schema_field(path: Any, doc: dict[str, Any]) -> str:
    """'axes.0.values' -> 'axes[0] (qdisc: network.forward.qdisc).values': an error names the axis it is in."""
    parts = list(path)
    out = ""
    i = 0
    while i < len(parts):
        p = parts[i]
        if isinstance(p, int):
            out += f"[{p}]"
            if len(parts) >= 2 and i == 1 and parts[0] in ("axes", "points"):
                item = (doc.get(parts[0]) or [None] * (p + 1))[p] if isinstance(doc.get(parts[0]), list) else None
                if isinstance(item, dict):
                    desc = item.get("name") or item.get("path") or ""
                    if parts[0] == "axes" and item.get("path") and item.get("name"):
                        desc = f"{item['name']}: {item['path']}"
                    if desc:
                        out += f" ({desc})"
        else:
            out += ("." if out else "") + str(p)
        i += 1
    return out or "(the study itself)"


def validate_study_doc(doc: Any, file: str) -> None:
    if not isinstance(doc, dict):
        raise StudyError(file, ["the file must hold a YAML mapping (key: value lines)"])
    validator = jsonschema.Draft7Validator(study_schema())
    problems = []
    for e in sorted(validator.iter_errors(doc), key=lambda e: [str(x) for x in e.absolute_path]):
        if e.validator in ("if",):
            continue
        shown = json.dumps(e.instance) if not isinstance(e.instance, (dict, list)) or len(json.dumps(e.instance)) < 60 \
            else type(e.instance).__name__
        msg = e.message
        if e.validator == "minItems" and e.instance == []:
            msg = "is empty: give at least one value" if e.absolute_path and e.absolute_path[-1] == "values" \
                else "is empty"
        elif e.validator == "additionalProperties":
            allowed = ", ".join((e.schema.get("properties") or {}).keys())
            msg = f"{e.message} (allowed: {allowed})"
        elif e.validator == "pattern":
            msg = f"{shown} does not match {e.validator_value}"
        problems.append(f"{_schema_field(e.absolute_path, doc)}: {msg}")
    if problems:
        raise StudyError(file, list(dict.fromkeys(problems)))


def _load_base(base: Any, study_dir: Path, what: str, file: str) -> tuple[dict[str, Any], str, Path]:
    if isinstance(base, str):
        p = Path(base)
        p = p if p.is_absolute() else (study_dir / p)
        doc = _read_doc(p, what)
        if not isinstance(doc, dict):
            raise StudyError(file, [f"{what}: {p} does not hold a scenario mapping"])
        return doc, str(p), p.parent
    return copy.deepcopy(base), "inline", study_dir


def _axes(doc: dict[str, Any], problems: list[str]) -> list[Axis]:
    """The study file's axes (a zip group as one axis), each name and field path checked; what is wrong is added to
    problems."""
    axes: list[Axis] = []
    for i, a in enumerate(doc.get("axes", study_default("axes"))):
        if "zip" in a:
            members = a["zip"]
            names = [m.get("name") or parse_path(m["path"])[-1] for m in members]
            name = a.get("name") or "+".join(str(n) for n in names)
            where = f"axes[{i}] (zip {name})"
            lengths = {len(m["values"]) for m in members}
            if len(lengths) != 1:
                problems.append(f"{where}: its members have different numbers of values "
                                f"({', '.join(str(m['path']) + ': ' + str(len(m['values'])) for m in members)}); "
                                "a zip group "
                                f"varies them together, the i-th value of each")
                continue
            n = lengths.pop()
            member_labels = [_axis_labels(m["values"], m.get("labels"), f"{where} member {m['path']}", problems)
                             for m in members]
            given = a.get("labels")
            labels = _axis_labels(list(range(n)), given, where, problems) if given is not None else \
                ["+".join(ml[j] for ml in member_labels) for j in range(n)]
            axes.append(Axis(name=str(name), paths=[m["path"] for m in members],
                             values=[[m["values"][j] for m in members] for j in range(n)], labels=labels,
                             source=f"zip {name}"))
        else:
            name = a.get("name") or str(parse_path(a["path"])[-1])
            where = f"axes[{i}] ({name}: {a['path']})"
            labels = _axis_labels(a["values"], a.get("labels"), where, problems)
            axes.append(Axis(name=name, paths=[a["path"]], values=[[v] for v in a["values"]], labels=labels,
                             source=f"axis {name}"))
    seen_names: dict[str, str] = {}
    for ax in axes:
        if ax.name in seen_names:
            problems.append(f"{ax.source}: axis name {ax.name!r} is used twice (give each axis its own name)")
        seen_names[ax.name] = ax.source
        for p in ax.paths:
            err = check_path(p)
            if err:
                problems.append(f"{ax.source}: unknown field path {p}: {err}")
    seen_paths: dict[str, str] = {}
    for ax in axes:
        for p in ax.paths:
            if p in seen_paths:
                problems.append(f"{ax.source}: field {p} is already varied by {seen_paths[p]}")
            seen_paths[p] = ax.source
    return axes


def _points(doc: dict[str, Any], axes: list[Axis], base: tuple[dict[str, Any], str, Path], study_dir: Path,
            label: str, problems: list[str]) -> list[Point]:
    """The points: every combination of the axes' values, then the named points, or the base alone when there is
    neither; base is the study's (doc, label, directory). A duplicate name or an unknown field path is added to
    problems."""
    base_doc, base_label, base_dir = base
    points: list[Point] = []
    if axes:
        for combo in itertools.product(*[range(len(ax.values)) for ax in axes]):
            settings = []
            params: dict[str, Any] = {}
            labels_of: dict[str, str] = {}
            for ax, j in zip(axes, combo):
                for p, v in zip(ax.paths, ax.values[j]):
                    settings.append(Setting(source=ax.source, path=p, value=v, label=ax.labels[j]))
                params[ax.name] = ax.values[j][0] if len(ax.paths) == 1 else dict(zip(ax.paths, ax.values[j]))
                labels_of[ax.name] = ax.labels[j]
            name = "_".join(f"{ax.name}-{labels_of[ax.name]}" for ax in axes)
            points.append(Point(name=name, base_label=base_label, base_dir=base_dir, base_doc=base_doc,
                                settings=settings, params=params, labels=labels_of))
    for i, pt in enumerate(doc.get("points", study_default("points"))):
        where = f"points[{i}] ({pt['name']})"
        if "base" in pt:
            pdoc, plabel, pdir = _load_base(pt["base"], study_dir, f"{where}.base", label)
        else:
            pdoc, plabel, pdir = base_doc, base_label, base_dir
        settings = []
        for path, value in (pt.get("set") or {}).items():
            err = check_path(path)
            if err:
                problems.append(f"point {pt['name']}: unknown field path {path}: {err}")
            settings.append(Setting(source=f"point {pt['name']}", path=path, value=value,
                                    label=value_label(value) or "v"))
        points.append(Point(name=pt["name"], base_label=plabel, base_dir=pdir, base_doc=pdoc, settings=settings,
                            params={}, labels={}))
    if not points:  # no axes, no named points: the base alone
        points.append(Point(name="base", base_label=base_label, base_dir=base_dir, base_doc=base_doc, settings=[],
                            params={}, labels={}))
    counts: dict[str, int] = {}
    for pt in points:
        counts[pt.name] = counts.get(pt.name, 0) + 1
    for name, n in counts.items():
        if n > 1:
            problems.append(f"duplicate point name {name!r} ({n} points): point names must be unique")
    return points


def load(file: Path | str) -> Study:
    """Reads and validates a study file and expands its points (their scenarios are checked by `check_points`)."""
    file = Path(file)
    label = str(file)
    doc = _read_doc(file, "study")
    validate_study_doc(doc, label)
    study_dir = file.resolve().parent
    problems: list[str] = []
    base_doc, base_label, base_dir = _load_base(doc["base"], study_dir, "base", label)

    axes = _axes(doc, problems)
    points = _points(doc, axes, (base_doc, base_label, base_dir), study_dir, label, problems)
    if problems:
        raise StudyError(label, problems)

    for pt in points:
        pt.doc = copy.deepcopy(pt.base_doc)
        for s in pt.settings:
            try:
                set_path(pt.doc, s.path, s.value)
            except ValueError as e:
                problems.append(f"point {pt.name}, {s.source} = {json.dumps(s.value)}: {e}")
    if problems:
        raise StudyError(label, problems)

    quick_of = None
    if doc.get("quick_of"):
        full = (file.parent / doc["quick_of"]["file"]).resolve()
        if not full.is_file():
            raise StudyError(label, [f"quick_of.file {doc['quick_of']['file']!r}: no such study file ({full})"])
        quick_of = (full, float(doc["quick_of"]["time_factor"]))
    metrics = doc.get("metrics") or metric_catalogue_names()
    return Study(file=file, doc=doc, name=doc["name"], description=doc.get("description", study_default("description")),
                 axes=axes, points=points,
                 repetitions=doc.get("repetitions", study_default("repetitions")),
                 seed=doc.get("seed", study_default("seed")), shuffle=doc.get("shuffle", study_default("shuffle")),
                 max_attempts=doc.get("max_attempts", study_default("max_attempts")),
                 metrics=list(metrics), flows=list(doc.get("flows") or study_default("flows")), quick_of=quick_of)


# ---- quick variant -----------------------------------------------------------------------------------------------

def scale_doc(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """A copy of a scenario document with its durations and schedules scaled by `factor`: duration_s (the schema's
    default when absent), each cross-traffic item's and each call's start_s and stop_s, each call's pauses (at_s,
    resume_s), and every rate schedule's at_s. A rate trace is not scaled (its times are the trace file's)."""
    out = copy.deepcopy(doc)
    props = scenario_schema()["properties"]
    out["duration_s"] = float(out.get("duration_s", props["duration_s"]["default"])) * factor

    def scale(item: Any, *keys: str) -> None:
        for key in keys:
            if isinstance(item, dict) and isinstance(item.get(key), (int, float)) and not isinstance(item[key], bool):
                item[key] = item[key] * factor
    calls: list[Any] = out["calls"] if isinstance(out.get("calls"), list) else []
    cross: list[Any] = out["cross_traffic"] if isinstance(out.get("cross_traffic"), list) else []
    for item in [*cross, out.get("call"), *calls]:
        scale(item, "start_s", "stop_s")
        pauses = item.get("pauses") if isinstance(item, dict) else None
        for pause in pauses if isinstance(pauses, list) else []:
            scale(pause, "at_s", "resume_s")
    for direction in ("forward", "reverse"):
        link = ((out.get("network") or {}).get(direction)) or {}
        rate = link.get("rate") if isinstance(link, dict) else None
        if isinstance(rate, dict) and isinstance(rate.get("schedule"), list):
            for step in rate["schedule"]:
                if isinstance(step, dict) and isinstance(step.get("at_s"), (int, float)):
                    step["at_s"] = step["at_s"] * factor
    return out


def has_trace(doc: dict[str, Any]) -> bool:
    net = doc.get("network") or {}
    return any(isinstance((net.get(d) or {}).get("rate"), dict) and "trace" in (net.get(d) or {})["rate"]
               for d in ("forward", "reverse"))


# ---- the scenario model's verdict --------------------------------------------------------------------------------

def _blame(point: Point, problem: str) -> list[Setting]:
    """The settings a problem is about: those whose path is the problem's field, inside it, or around it."""
    field_name = problem.split(":", 1)[0].strip()
    out = []
    for s in point.settings:
        p = s.path
        if field_name == p or field_name.startswith(p + ".") or field_name.startswith(p + "[") \
                or p.startswith(field_name + ".") or p.startswith(field_name + "["):
            out.append(s)
    return out


def check_points(study: Study, node: str = "node", timeout_s: float = 120) -> None:
    """Runs every point's scenario document through the scenario model in one `node` process and stores the
    normalised scenario in each point; StudyError naming the point, the axis, the value and the field otherwise."""
    error = check_points_of([study], node, timeout_s)[0]
    if error is not None:
        raise error


def check_points_of(studies: list[Study], node: str = "node",
                    timeout_s: float = 120) -> list[StudyError | None]:
    """check_points for several studies in one `node` process (the shipped studies' test): per study, in order, None
    when the model accepted every point (each then holds its normalised scenario), else the StudyError
    check_points would raise."""
    items = [{"scenario": pt.doc, "label": pt.name, "base_dir": str(pt.base_dir)} for st in studies for pt in st.points]
    try:
        verdicts = scenario_model_verdicts(items, node, timeout_s)
    except ScenarioModelError as e:
        return [StudyError(str(st.file), [str(e)]) for st in studies]
    results = iter(verdicts)
    return [_apply_checked(st, [next(results) for _ in st.points]) for st in studies]


class ScenarioModelError(Exception):
    """The scenario model gave no verdicts: it could not start, took too long or failed."""


def scenario_model_verdicts(items: list[dict[str, Any]], node: str = "node",
                            timeout_s: float = 120) -> list[dict[str, Any]]:
    """Each item's verdict from `node scenarios/check-points.js` (one process), in order: {"ok": true, "scenario":
    the normalised scenario} or {"ok": false, "problems": [...]}; ScenarioModelError saying why there are none."""
    try:
        proc = subprocess.run([node, str(CHECK_POINTS_JS)], input=json.dumps(items), capture_output=True, text=True,
                              timeout=timeout_s, cwd=REPO_ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ScenarioModelError(f"the scenario model could not run ({node} {CHECK_POINTS_JS}): {e}") from e
    if proc.returncode not in (0, 1):
        raise ScenarioModelError(f"the scenario model failed (exit {proc.returncode}): {proc.stderr.strip()}")
    verdicts: list[dict[str, Any]] = json.loads(proc.stdout)
    return verdicts


def _apply_checked(study: Study, results: list[dict[str, Any]]) -> StudyError | None:
    """Stores each accepted point's normalised scenario; the StudyError naming each refused point's problems."""
    problems = []
    for pt, r in zip(study.points, results):
        if r.get("ok"):
            pt.scenario = r["scenario"]
            continue
        for prob in r.get("problems") or []:
            blamed = _blame(pt, prob)
            if blamed:
                who = "; ".join(f"{s.source} = {json.dumps(s.value)} at {s.path}" for s in blamed)
            elif pt.settings:
                who = "the base " + pt.base_label + " with " + \
                      "; ".join(f"{s.source} = {json.dumps(s.value)} at {s.path}" for s in pt.settings)
            else:
                who = "the base " + pt.base_label
            problems.append(f"point {pt.name} ({who}): the scenario model refuses {prob}")
    return StudyError(str(study.file), problems) if problems else None


def scenario_duration_s(scenario: dict[str, Any]) -> float:
    d = scenario.get("duration_s")
    return float(d) if isinstance(d, (int, float)) and math.isfinite(d) else 0.0
