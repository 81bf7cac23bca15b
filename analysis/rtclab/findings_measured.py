"""The findings page's "Measured" sections (studies/findings.yaml, `measured:`): what today's Chrome did where no
reference made a claim to check (e.g. the field's cellular traces). Each entry names a study and the measures to show;
its section is a table with one row per point of the study and, per measure, the mean, its 95 % confidence interval
and n over the point's used runs, read through `findings.measure_point` as the claims read them. No verdict: these
are measurements, each with its study's provenance on the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .findings import MEASURES, FindingsError, Study, inconclusive_reason, measure_point
from .verdicts import clip, natural_bounds

KEYS = ("id", "title", "what", "studies", "study_file", "measures")


@dataclass
class Measured:
    entry: dict[str, Any]
    study: Study | None
    rows: list[tuple[str, list[dict[str, Any]]]]  # (point, measure_point of each of the entry's measures)


def check_entries(doc: dict[str, Any]) -> list[str]:
    """The problems of the claims file's `measured:` entries (empty: none)."""
    problems = []
    for i, e in enumerate(doc.get("measured") or []):
        eid = e.get("id", f"measured[{i}]")
        problems += [f"{eid}: no {k}" for k in KEYS if k not in e]
        measures = e.get("measures")
        if not isinstance(measures, list) or not measures:
            problems.append(f"{eid}: measures must be a list of {{label, measure}}")
            continue
        for j, m in enumerate(measures):
            if not isinstance(m, dict) or not isinstance(m.get("label"), str):
                problems.append(f"{eid}: measures[{j}] needs a label")
                continue
            if sum(1 for k in MEASURES if k in (m.get("measure") or {})) != 1:
                problems.append(f"{eid}: measures[{j}] ({m['label']}) needs exactly one of {', '.join(MEASURES)}")
    return problems


def evaluate_all(doc: dict[str, Any], studies: dict[str, Study]) -> list[Measured]:
    problems = check_entries(doc)
    if problems:
        raise FindingsError("measured: " + "; ".join(problems))
    out = []
    for e in doc.get("measured") or []:
        s = next((studies[n] for n in e["studies"] if n in studies), None)
        points = [p["name"] for p in (s.plan.get("points") or [])] if s is not None else []
        rows = [(p, [measure_point(s, p, m["measure"]) for m in e["measures"]]) for p in points] if s else []
        out.append(Measured(e, s, rows))
    return out


def cell(m: dict[str, Any], measure: dict[str, Any] | None = None) -> str:
    """mean [CI] (n), the CI clipped to the measure's natural bounds as a claim's is (a loss ratio's at 0), or why
    there is no value: a missing value is shown as missing, never as 0."""
    st = m["stat"]
    if st is None or st.get("mean") is None:
        return "- (" + (inconclusive_reason(m, None) or "no value") + ")"
    text = f"{st['mean']:.3g}"
    lo, hi = st.get("ci95_low"), st.get("ci95_high")
    if lo is not None and hi is not None:
        if measure is not None:
            lo, hi, _ = clip(lo, hi, natural_bounds(measure))
        text += f" [{lo:.3g}, {hi:.3g}]"
    text += f" (n {st['n']})"
    return text + (f", {m['invalid_used']} INVALID used" if m["invalid_used"] else "")


def markdown(measured: list[Measured], run_command: str = "rtclab study run") -> list[str]:
    """The page's "Measured" section, one subsection per entry."""
    if not measured:
        return []
    lines = ["", "## Measured", "",
             "What today's Chrome did where no reference claim is checked: per point of the study, each measure's "
             "mean over the used runs, its 95 % confidence interval (none with one run; clipped to the measure's "
             "natural bounds, as the claims' are) and n. Measure definitions: docs/metrics.md and docs/studies.md "
             "(catalogue)."]
    for x in measured:
        e = x.entry
        lines += ["", f"### {e['id']}", "", f"{e['title'].strip()}. {e['what'].strip()}"]
        if x.study is None:
            lines += ["", "Not run: no study read holds " + " or ".join(f"`{n}`" for n in e["studies"])
                      + ". To run it, then archive it and regenerate this page:", "",
                      f"    {run_command} {e['study_file']}"]
            continue
        factor = x.study.doc.get("quick_factor")
        shortened = f" (every time x{factor:g} of the study file's)" \
            if isinstance(factor, (int, float)) and factor != 1 else ""
        labels = [m["label"] + (f" ({m['unit']})" if m.get("unit") else "") for m in e["measures"]]
        lines += ["", f"Measured in `{x.study.name}`{shortened}; its provenance is under \"The studies\".", "",
                  "| point | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        lines += [f"| {point} | " + " | ".join(cell(m, spec["measure"]) for m, spec in zip(ms, e["measures"])) + " |"
                  for point, ms in x.rows]
    return lines
