"""What a study's points vary, for the dashboard's labels and groups: the flow its charts follow, each point's
settings that differ between points, the numeric ones for sweeps, and how the points group into traces and x
positions."""

from __future__ import annotations

import json
from typing import Any

VIDEO = "forward:video"
# A study without a call (its base has `calls: []`) has no video flow: its charts follow the busiest forward TCP flow.
TCP = "forward:tcp"


def main_flow(doc: dict[str, Any]) -> tuple[str, str]:
    """(label, words) of the flow the charts follow: the video flow, or in a study without one (no call) the busiest
    forward TCP flow."""
    if any(VIDEO in (p.get("flows") or {}) for p in doc["points"]) or \
            not any(TCP in (p.get("flows") or {}) for p in doc["points"]):
        return VIDEO, "the video flow"
    return TCP, "the busiest forward TCP flow"


def value_label(v: Any, detail: bool = False) -> str:
    """A short label of a setting's value: a number or string as it is, a mapping by its kind (with its other fields
    when `detail`), a list item by item."""
    if isinstance(v, dict):
        if "kind" in v:
            n = v.get("flows")
            text = f"{v['kind']}" + (f" x{n}" if isinstance(n, int) else "")
            if detail:
                text += "".join(f" {k}={v[k]}" for k in sorted(v) if k not in ("kind", "flows"))
            return text
        return json.dumps(v, sort_keys=True)
    if isinstance(v, list):
        return "+".join(value_label(x, detail) for x in v) or "none"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(str(x))
    except ValueError:
        return None


def _short_names(paths: list[str]) -> dict[str, str]:
    """A field path's last name (network.forward.rate.kbit -> kbit) where that is unambiguous, else the path."""
    last = {p: p.split(".")[-1].split("[")[0] for p in paths}
    return {p: (n if list(last.values()).count(n) == 1 else p) for p, n in last.items()}


def _settings_by_path(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{field path: {point: value}} of every field a point sets (axes' and named points' settings)."""
    out: dict[str, dict[str, Any]] = {}
    for p in doc["points"]:
        for st in p.get("settings") or []:
            out.setdefault(st["path"], {})[p["name"]] = st["value"]
    return out


def varied(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What tells the points apart: {parameter: {point: label}}: the axes by name (their labels), else the fields the
    named points set, by short name (a mapping by its kind, its other fields too where the kinds alone would not
    tell two points apart); only parameters with more than one value."""
    points = doc["points"]
    names = [p["name"] for p in points]
    axes = list(dict.fromkeys(a for p in points for a in p.get("labels") or {}))
    if axes:  # a named point beside the axes has no label on them: "-"
        out = {a: {p["name"]: str((p.get("labels") or {}).get(a, "-")) for p in points} for a in axes}
    else:
        by_path = _settings_by_path(doc)
        short = _short_names(list(by_path))

        def labels(detail: bool) -> dict[str, dict[str, str]]:
            return {short[path]: {n: value_label(vals[n], detail) if n in vals else "base" for n in names}
                    for path, vals in by_path.items()}
        out = labels(False)
        if len({tuple(v[n] for v in out.values()) for n in names}) < len(names):
            out = labels(True)
    return {k: v for k, v in out.items() if len(set(v.values())) > 1}


def numeric_parameters(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The varied parameters with a number for every point, {parameter: {point: value}}: the varied parameters whose
    labels are numbers, and the fields every point sets to a number (e.g. a zip axis' capacity)."""
    candidates = {name: {pt: _number(lab) for pt, lab in labels.items()} for name, labels in varied(doc).items()}
    by_path = _settings_by_path(doc)
    short = _short_names(list(by_path))
    for path, vals in by_path.items():
        if len(vals) == len(doc["points"]):
            candidates.setdefault(short[path], {pt: None if isinstance(v, str) else _number(v)
                                                for pt, v in vals.items()})
    out: dict[str, dict[str, float]] = {}
    seen: set[tuple[float, ...]] = set()
    for name, nums in candidates.items():
        values = [v for v in nums.values() if v is not None]
        if len(values) < len(nums) or len(set(values)) < 2 or tuple(values) in seen:
            continue
        seen.add(tuple(values))
        out[name] = {pt: float(v) for pt, v in nums.items() if v is not None}
    return out


def same_partition(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two parameters split the points the same way (a zip axis' label and one of its fields)."""
    pairs = {(a[k], b[k]) for k in a if k in b}
    return len(pairs) == len(set(a.values())) == len(set(b.values()))


def groups(doc: dict[str, Any]) -> tuple[str, list[str], dict[str, tuple[str, str]]]:
    """How the bar charts group the points: (x axis title, x categories in order, {point: (x, trace)}): x is the first
    axis (the discipline in the reference studies; for named points the first varied field that is not a number),
    one trace per combination of the others."""
    v = varied(doc)
    names = [p["name"] for p in doc["points"]]
    if not v:
        return "point", names, {n: (n, "") for n in names}
    order = list(v)
    if not any(p.get("labels") for p in doc["points"]):
        order.sort(key=lambda k: all(_number(x) is not None for x in v[k].values()))
    first, *rest = order
    where = {n: (v[first][n], ", ".join(f"{r}={v[r][n]}" for r in rest)) for n in names}
    xs = list(dict.fromkeys(where[n][0] for n in names))
    return first, xs, where
