"""The findings page's "why" sections (studies/findings.yaml, `why:`): for deviating claims, a study that switches one
component at a time along one of its axes (Chrome's field trials: docs/gcc-trials.md) says which switch moved the
claim's measure, by how much, and which did not. Each switched point is set against the baseline point with the same
labels on every other axis: B - A with Welch's 95 % CI (study/compare.welch), judged by WHY_RULE.

A replay or a hypothesis is not an explanation: only a measured difference between runs is. The entries are data;
this module evaluates them and writes their section of the page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .findings import MEASURES, FindingsError, Study, inconclusive_reason, measure_point
from .study.compare import welch

RAISES, LOWERS, NO_EFFECT, UNDECIDED = "raises", "lowers", "no effect", "undecided"
WHY_RULE = ("each switched point against the baseline point with the same other settings: B - A and its Welch 95 % "
            "confidence interval; **raises** (or **lowers**) when the interval lies wholly above (below) 0, **no "
            "effect** when it lies wholly within the entry's margin around 0, **undecided** otherwise or when either "
            "point cannot be judged (the same reasons as a claim's)")
KEYS = ("id", "explains", "question", "studies", "study_file", "axis", "baseline", "components", "measure", "margin",
        "margin_why")


@dataclass
class Effect:
    component: str  # the switched label on the entry's axis
    setting: str  # the other axes' labels, e.g. "qdisc dt300"
    a: dict[str, Any]  # measure_point of the baseline point
    b: dict[str, Any]  # of the switched point
    diff: float | None
    lo: float | None
    hi: float | None
    verdict: str
    why: str  # why undecided, when a point cannot be judged


@dataclass
class Why:
    entry: dict[str, Any]
    study: Study | None
    effects: list[Effect]
    note: str = ""


def check_entries(doc: dict[str, Any], claim_ids: set[str]) -> list[str]:
    """The problems of the claims file's `why:` entries (empty: none)."""
    problems = []
    for i, w in enumerate(doc.get("why") or []):
        wid = w.get("id", f"why[{i}]")
        problems += [f"{wid}: no {k}" for k in KEYS if k not in w]
        problems += [f"{wid}: explains {c}, which is no claim's id" for c in w.get("explains") or []
                     if c not in claim_ids]
        measure = w.get("measure") or {}
        if sum(1 for k in MEASURES if k in measure) != 1:
            problems.append(f"{wid}: the measure needs exactly one of {', '.join(MEASURES)}")
        if not isinstance(w.get("margin"), (int, float)) or w["margin"] <= 0:
            problems.append(f"{wid}: margin must be a number > 0")
        if not isinstance(w.get("components"), dict) or w.get("baseline") in (w.get("components") or {}):
            problems.append(f"{wid}: components must map each switched label to what it switches (not the baseline)")
    return problems


def judge(lo: float | None, hi: float | None, margin: float) -> str:
    if lo is None or hi is None:
        return UNDECIDED
    if lo > 0:
        return RAISES
    if hi < 0:
        return LOWERS
    return NO_EFFECT if -margin <= lo and hi <= margin else UNDECIDED


def _baseline_pairs(s: Study, axis: str, baseline: str) -> list[tuple[str, str, str, str]]:
    """(baseline point, switched point, switched label, the other axes' labels) for every switched point whose
    baseline the study has."""
    points = s.plan.get("points") or []
    by_labels = {tuple(sorted((p.get("labels") or {}).items())): p["name"] for p in points}
    pairs = []
    for p in points:
        labels = dict(p.get("labels") or {})
        if axis not in labels or labels[axis] == baseline:
            continue
        base = by_labels.get(tuple(sorted({**labels, axis: baseline}.items())))
        if base is not None:
            setting = ", ".join(f"{k} {v}" for k, v in labels.items() if k != axis) or "the study's one setting"
            pairs.append((base, p["name"], str(labels[axis]), setting))
    return pairs


def evaluate(entry: dict[str, Any], studies: dict[str, Study], min_n: int) -> Why:
    s = next((studies[n] for n in entry["studies"] if n in studies), None)
    if s is None:
        return Why(entry, None, [])
    pairs = _baseline_pairs(s, entry["axis"], entry["baseline"])
    if not pairs:
        return Why(entry, s, [], note=f"the study has no point with {entry['axis']} {entry['baseline']} beside a "
                   "switched one")
    effects = []
    for base, switched, label, setting in pairs:
        a, b = measure_point(s, base, entry["measure"]), measure_point(s, switched, entry["measure"])
        why = inconclusive_reason(a, min_n) or inconclusive_reason(b, min_n) or ""
        diff = lo = hi = None
        if a["stat"] is not None and b["stat"] is not None:
            w = welch(a["stat"], b["stat"])
            diff, hw = w["diff"], w["ci95_half_width"]
            if diff is not None and hw is not None:
                lo, hi = diff - hw, diff + hw
        verdict = UNDECIDED if why else judge(lo, hi, float(entry["margin"]))
        effects.append(Effect(label, setting, a, b, diff, lo, hi, verdict, why))
    return Why(entry, s, effects)


def evaluate_all(doc: dict[str, Any], studies: dict[str, Study], min_n: int) -> list[Why]:
    problems = check_entries(doc, {c["id"] for c in doc.get("claims") or []})
    if problems:
        raise FindingsError("why: " + "; ".join(problems))
    return [evaluate(w, studies, min_n) for w in doc.get("why") or []]


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3f}" if x != 0 else "0"


def _mean(m: dict[str, Any]) -> str:
    return "-" if m["stat"] is None else f"{m['stat']['mean']:.3g}"


def _n(m: dict[str, Any]) -> str:
    return "-" if m["stat"] is None else str(m["stat"]["n"])


def _summary(w: Why) -> str:
    """The section's paragraph: per setting, which switch moved the measure (by how much) and which did not."""
    parts = []
    for setting in dict.fromkeys(e.setting for e in w.effects):
        moved, still, open_ = [], [], []
        for e in (x for x in w.effects if x.setting == setting):
            if e.verdict in (RAISES, LOWERS):
                moved.append(f"`{e.component}` {e.verdict} it by {_num(e.diff)} [{_num(e.lo)}, {_num(e.hi)}] "
                             f"({_mean(e.a)} to {_mean(e.b)})")
            elif e.verdict == NO_EFFECT:
                still.append(f"`{e.component}`")
            else:
                open_.append(f"`{e.component}`")
        said = moved + ([f"no effect beyond +-{w.entry['margin']:g}: {', '.join(still)}"] if still else []) \
            + ([f"undecided: {', '.join(open_)}"] if open_ else [])
        parts.append(f"With {setting}: {'; '.join(said)}.")
    return " ".join(parts)


def markdown(whys: list[Why], run_command: str = "rtclab study run") -> list[str]:
    """The page's "Why" section, one subsection per entry."""
    if not whys:
        return []
    lines = ["", "## Why", "", f"The rule: {WHY_RULE}."]
    for w in whys:
        e = w.entry
        lines += ["", f"### {e['id']}", "",
                  f"Explains: {', '.join(f'[{c}](#{c})' for c in e['explains'])}. {e['question'].strip()}.", "",
                  "Components switched (axis `" + e["axis"] + "`, against `" + e["baseline"] + "`): "
                  + "; ".join(f"`{k}`: {v}" for k, v in e["components"].items()) + "."]
        if e.get("left_out"):
            lines += ["", f"Left out: {e['left_out'].strip()}"]
        lines += ["", f"The margin: +-{e['margin']:g}. {e['margin_why'].strip()}"]
        if w.study is None:
            lines += ["", "Not run: no study read holds " + " or ".join(f"`{n}`" for n in e["studies"])
                      + ". To run it, then archive it and regenerate this page:", "",
                      f"    {run_command} {e['study_file']}"]
            continue
        if w.note:
            lines += ["", f"Undecided: {w.note}."]
            continue
        factor = w.study.doc.get("quick_factor")
        shortened = f" (every time x{factor:g} of the study file's: its provenance below)" \
            if isinstance(factor, (int, float)) and factor != 1 else ""
        lines += ["", f"Measured in `{w.study.name}`{shortened}: {_summary(w)}", "",
                  "| setting | switched | A (baseline) mean | B mean | B - A | 95 % CI (Welch) | n (A / B) | effect |",
                  "|---|---|---|---|---|---|---|---|"]
        for x in w.effects:
            ci = "-" if x.lo is None else f"[{_num(x.lo)}, {_num(x.hi)}]"
            verdict = x.verdict + (f" ({x.why})" if x.why else "")
            lines.append(f"| {x.setting} | `{x.component}` | {_mean(x.a)} | {_mean(x.b)} | {_num(x.diff)} | {ci} | "
                         f"{_n(x.a)} / {_n(x.b)} | **{verdict}** |")
    return lines


def explained_by(whys: list[Why]) -> dict[str, list[str]]:
    """Claim id -> the why entries that explain it (the claim's section links them)."""
    out: dict[str, list[str]] = {}
    for w in whys:
        for c in w.entry["explains"]:
            out.setdefault(c, []).append(w.entry["id"])
    return out
