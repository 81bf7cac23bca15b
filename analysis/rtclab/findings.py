"""`rtclab findings DIR...`: each claim of studies/findings.yaml (the reference studies' findings and RFC 8867's
expectations) beside what the given study directories measured: mean, 95 % CI, n and phase per point, a verdict by a
rule written on the page, the INVALID attempts counted, and each study's provenance (study/provenance.py: dates,
machine, Chromium, backend, commits, n, time factor, command). One Markdown page and one HTML dashboard. It reads
study.json, plan.json and the used runs' manifest.json and metrics.json, never the captures: a study directory or its
archive in the repository (study/archive.py; by default every study of results-archive/), and `--check` compares the
page it makes with the committed one. The claims are data; this module only evaluates them (docs/studies.md,
"Findings")."""

from __future__ import annotations

import fnmatch
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .study import archive, provenance
from .study.aggregate import flow_values, summarise
from .study.compare import welch
from .study.report import StudyReportError, load

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CLAIMS = REPO / "studies" / "findings.yaml"
AGREES, DEVIATES, INCONCLUSIVE, NOT_RUN = "agrees", "deviates", "inconclusive", "not run"
KINDS = ("range", "trend", "difference")


class FindingsError(Exception):
    """A claims file or study directory that cannot be used (the CLI exits 2 with this message)."""


@dataclass
class Study:
    dir: Path
    doc: dict[str, Any]
    plan: dict[str, Any]
    prov: provenance.Provenance = field(default_factory=provenance.Provenance)

    @property
    def name(self) -> str:
        return str(self.doc["study"])

    def accepted_invalid(self) -> list[str]:
        """The checks whose INVALID runs the aggregation accepted (study.json accept_invalid), when it used any."""
        return list(self.doc["accept_invalid"]) if self.doc.get("accept_invalid") and self.doc.get("invalid_note") \
            else []


def _rel(p: Any) -> str:
    """A path as a command from the repository root names it: relative to the root when inside it."""
    path = Path(str(p))
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def read_study(d: Path) -> Study:
    try:
        doc = load(d)
    except StudyReportError as e:
        raise FindingsError(str(e)) from None
    plan = json.loads((d / "plan.json").read_text())
    return Study(d, doc, plan, prov=provenance.read(d, doc, plan))


def load_claims(path: Path) -> dict[str, Any]:
    """The claims file, checked: every claim has an id, a known kind, studies, points, a measure and its rule's
    parameters."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise FindingsError(f"{path}: {e}") from None
    problems = []
    for i, c in enumerate((doc or {}).get("claims") or []):
        cid = c.get("id", f"claims[{i}]")
        for key in ("id", "source", "says", "studies", "study_file", "kind", "points", "measure"):
            if key not in c:
                problems.append(f"{cid}: no {key}")
        if c.get("kind") not in KINDS:
            problems.append(f"{cid}: kind must be one of {', '.join(KINDS)}")
        if c.get("kind") in ("range", "difference") and not (isinstance(c.get("range"), list) and len(c["range"]) == 2):
            problems.append(f"{cid}: a {c.get('kind')} claim needs range: [lo, hi]")
        if c.get("kind") == "trend" and c.get("direction") not in ("increasing", "decreasing"):
            problems.append(f"{cid}: a trend claim needs direction: increasing or decreasing")
        if c.get("kind") == "difference" and not c.get("against"):
            problems.append(f"{cid}: a difference claim needs against: [study names]")
    if not (doc or {}).get("claims"):
        problems.append("no claims")
    if problems:
        raise FindingsError(f"{path}: " + "; ".join(problems))
    return doc


# ---- measuring -----------------------------------------------------------------------------------------------------

def _flow_where(m: dict[str, Any], where: dict[str, Any]) -> dict[str, Any] | None:
    """The busiest flow (packets sent) of the run that matches every field of `where`."""
    found = [f for f in m.get("flows") or [] if all(f.get(k) == v for k, v in where.items())]
    return max(found, key=lambda f: f.get("packets_sent") or 0) if found else None


def _run_value(m: dict[str, Any], measure: dict[str, Any]) -> float | None:
    if "share" in measure:
        flows = (((m.get("multiflow") or {}).get("shares") or {}).get("flows")) or []
        f = next((x for x in flows if f"{x.get('call')}/{x.get('track')}" == measure["share"]), None)
        return None if f is None or f.get("achieved_share") is None else float(f["achieved_share"])
    flow = _flow_where(m, measure["where"])
    if flow is None:
        return None
    return flow_values(m, flow, measure.get("phase", "all")).get(measure["metric"])


def measure_point(s: Study, point: str, measure: dict[str, Any]) -> dict[str, Any]:
    """The point's statistic (mean, sd, ci95_*, n) of the measure, its phase, and its attempts counted: used runs,
    INVALID attempts, INVALID runs used (aggregate --accept-invalid)."""
    p = next((x for x in s.doc["points"] if x["name"] == point), None)
    runs = [r for r in s.doc.get("runs") or [] if r.get("point") == point]
    counts = {"attempts": len(runs), "invalid_attempts": sum(1 for r in runs if r.get("status") == "invalid"),
              "invalid_used": sum(1 for r in runs if r.get("used") and r.get("accepted_invalid")),
              "missing": sum(1 for x in s.doc.get("missing") or [] if x.get("point") == point)}
    # Runs whose files could not be read (by aggregation, or here): n is short of them, and the page says why.
    left_out = [f"{x.get('dir')}: {x.get('reason')}" for x in (p or {}).get("runs_left_out") or []]
    phase = measure.get("phase", "all")
    stat: dict[str, Any] | None = None
    if p is not None and ("flow" in measure):
        stat = (((p.get("flows") or {}).get(measure["flow"]) or {}).get(phase) or {}).get(measure["metric"])
    elif p is not None:  # per run, from the used runs' metrics.json
        values = []
        for d in p.get("runs_used") or []:
            try:
                m = json.loads((s.dir / d / "metrics.json").read_text().replace("NaN", "null"))
            except (OSError, ValueError) as e:
                left_out.append(f"{d}: metrics.json unreadable: {e}")
                continue
            v = _run_value(m, measure)
            if v is not None and math.isfinite(v):
                values.append(v)
        stat = summarise(values)
    mean = stat.get("mean") if stat is not None else None
    if not isinstance(mean, (int, float)) or not math.isfinite(mean):  # no value, or a damaged one (NaN): none
        stat = None
    return {"point": point, "phase": phase, "stat": stat, **counts, "left_out": left_out}


def points_of(s: Study, patterns: list[str]) -> list[str]:
    names = [p["name"] for p in s.plan.get("points") or []]
    return [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]


# ---- verdicts ------------------------------------------------------------------------------------------------------

RULES = {
    "range": "each point's 95 % confidence interval of the mean (Student t over its runs) against the reference "
             "interval [lo, hi]: agrees when the interval lies inside it, deviates when it lies wholly outside, "
             "inconclusive when it straddles an edge",
    "trend": "the difference last point - first point of the sweep and its Welch 95 % confidence interval: agrees "
             "when the interval lies wholly on the claimed side of 0, deviates when it lies wholly on the other "
             "side, inconclusive when it contains 0",
    "difference": "per point, study B - study A and its Welch 95 % confidence interval against the interval [lo, hi] "
                  "the claim allows: agrees inside, deviates wholly outside, inconclusive when it straddles an edge",
    "common": "always inconclusive when a point has fewer than min_n runs (no interval), no value, or uses INVALID "
              "runs (aggregate --accept-invalid): INVALID runs are counted and shown, never taken as evidence",
}


def interval_verdict(lo: float | None, hi: float | None, ref: list[float]) -> str:
    """An interval [lo, hi] against the reference [a, b]: inside agrees, disjoint deviates, else inconclusive."""
    if lo is None or hi is None:
        return INCONCLUSIVE
    a, b = float(ref[0]), float(ref[1])
    if a <= lo and hi <= b:
        return AGREES
    if hi < a or lo > b:
        return DEVIATES
    return INCONCLUSIVE


def _why_inconclusive(m: dict[str, Any], min_n: int) -> str | None:
    st = m["stat"]
    if st is None:
        return "no value" + (f" ({m['missing']} repetition(s) without a valid run)" if m["missing"] else "")
    if m["invalid_used"]:
        return f"uses {m['invalid_used']} INVALID run(s)"
    if st["n"] < min_n:
        return f"n = {st['n']} < {min_n}: no confidence interval"
    return None


@dataclass
class Row:
    point: str
    phase: str
    a: dict[str, Any]  # measure_point of study A (the claim's study)
    b: dict[str, Any] | None  # of study B (difference claims)
    value: dict[str, Any] | None  # what the verdict judged: {mean, lo, hi, n}
    verdict: str
    why: str


@dataclass
class Finding:
    claim: dict[str, Any]
    study: Study | None
    against: Study | None
    rows: list[Row]
    verdict: str
    note: str = ""


def _ci(st: dict[str, Any] | None) -> tuple[float | None, float | None]:
    return (None, None) if st is None else (st.get("ci95_low"), st.get("ci95_high"))


def evaluate(claim: dict[str, Any], studies: dict[str, Study], min_n: int) -> Finding:
    s = next((studies[n] for n in claim["studies"] if n in studies), None)
    b = next((studies[n] for n in claim.get("against") or [] if n in studies), None) \
        if claim["kind"] == "difference" else None
    if s is None or (claim["kind"] == "difference" and b is None):
        return Finding(claim, s, b, [], NOT_RUN)
    pts = points_of(s, claim["points"])
    if claim["kind"] == "difference":
        assert b is not None
        pts = [p for p in pts if p in points_of(b, claim["points"])]
    if not pts:
        return Finding(claim, s, b, [], INCONCLUSIVE,
                       note="no point of the study matches " + ", ".join(claim["points"]))
    rows: list[Row] = []
    if claim["kind"] == "range":
        for p in pts:
            m = measure_point(s, p, claim["measure"])
            why = _why_inconclusive(m, min_n)
            lo, hi = _ci(m["stat"])
            verdict = INCONCLUSIVE if why else interval_verdict(lo, hi, claim["range"])
            rows.append(Row(p, m["phase"], m, None, None if m["stat"] is None else
                            {"mean": m["stat"]["mean"], "lo": lo, "hi": hi, "n": m["stat"]["n"]}, verdict, why or ""))
        return Finding(claim, s, None, rows, overall([r.verdict for r in rows]))
    if claim["kind"] == "difference":
        assert b is not None
        for p in pts:
            ma, mb = measure_point(s, p, claim["measure"]), measure_point(b, p, claim["measure"])
            why = _why_inconclusive(ma, min_n) or _why_inconclusive(mb, min_n)
            value = None
            verdict = INCONCLUSIVE
            if ma["stat"] is not None and mb["stat"] is not None:
                w = welch(ma["stat"], mb["stat"])
                hw, diff = w["ci95_half_width"], w["diff"]
                assert diff is not None  # both means are finite numbers (measure_point): never a made-up 0
                value = {"mean": diff, "lo": None if hw is None else diff - hw,
                         "hi": None if hw is None else diff + hw, "n": None}
                if not why:
                    verdict = interval_verdict(value["lo"], value["hi"], claim["range"])
            rows.append(Row(p, ma["phase"], ma, mb, value, verdict, why or ""))
        return Finding(claim, s, b, rows, overall([r.verdict for r in rows]))
    # trend: every point shown; the verdict from the first and the last
    ms = [measure_point(s, p, claim["measure"]) for p in pts]
    for m in ms:
        lo, hi = _ci(m["stat"])
        rows.append(Row(m["point"], m["phase"], m, None, None if m["stat"] is None else
                        {"mean": m["stat"]["mean"], "lo": lo, "hi": hi, "n": m["stat"]["n"]}, "", ""))
    first, last = ms[0], ms[-1]
    why = "one point: no trend" if len(ms) < 2 else \
        (_why_inconclusive(first, min_n) or _why_inconclusive(last, min_n))
    note = ""
    verdict = INCONCLUSIVE
    if len(ms) >= 2 and first["stat"] is not None and last["stat"] is not None:
        w = welch(first["stat"], last["stat"])
        hw, diff = w["ci95_half_width"], w["diff"]
        assert diff is not None  # both means are finite numbers (measure_point): never a made-up 0
        sign = 1.0 if claim["direction"] == "increasing" else -1.0
        note = (f"{last['point']} - {first['point']} = {diff:.4g}"
                + ("" if hw is None else f" ±{hw:.3g} (Welch 95 % CI)"))
        if not why and hw is not None:
            lo, hi = sign * diff - hw, sign * diff + hw
            verdict = AGREES if lo > 0 else DEVIATES if hi < 0 else INCONCLUSIVE
    if why:
        note = (note + "; " if note else "") + f"inconclusive: {why}"
    return Finding(claim, s, None, rows, verdict, note=note)


def overall(verdicts: list[str]) -> str:
    """A claim over several points: agrees when every point agrees, deviates when any deviates, else inconclusive."""
    if verdicts and all(v == AGREES for v in verdicts):
        return AGREES
    if any(v == DEVIATES for v in verdicts):
        return DEVIATES
    return INCONCLUSIVE


def run_commands(claim: dict[str, Any]) -> list[str]:
    """What runs a claim's studies (for a claim not run): the quick study, and on a Ray cluster when its points
    cannot be valid on a 2-core machine."""
    files = [claim["study_file"]] + ([claim["against_file"]] if claim.get("against_file") else [])
    cmds = [f"npm run study -- run {f}" for f in files]
    if claim.get("ray"):
        cmds += [f".venv/bin/rtclab study run {f} --ray HEAD:6379" for f in files]
    return cmds


def findings(dirs: list[Path], claims_file: Path = DEFAULT_CLAIMS) -> tuple[dict[str, Any], list[Finding], list[Study]]:
    doc = load_claims(claims_file)
    studies: dict[str, Study] = {}
    for d in dirs:
        s = read_study(d)
        if s.name in studies:
            raise FindingsError(f"{d} and {studies[s.name].dir} hold the same study {s.name}: give one of them")
        studies[s.name] = s
    min_n = int((doc.get("rule") or {}).get("min_n", 2))
    return doc, [evaluate(c, studies, min_n) for c in doc["claims"]], list(studies.values())


# ---- output --------------------------------------------------------------------------------------------------------

def fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.4g}"


def _value_text(r: Row) -> tuple[str, str, str]:
    """(mean, 95 % CI, n) of a row's judged value."""
    v = r.value
    if v is None:
        return "-", "-", "0" if r.a["stat"] is None else str(r.a["stat"]["n"])
    ci = "-" if v["lo"] is None else f"[{fmt(v['lo'])}, {fmt(v['hi'])}]"
    n = str(v["n"]) if v["n"] is not None else f"{r.a['stat']['n']} / {r.b['stat']['n']}" if r.b else "-"
    return fmt(v["mean"]), ci, n


def _invalid_text(r: Row) -> str:
    parts = []
    for m in (r.a, r.b):
        if m is None:
            continue
        t = f"{m['invalid_attempts']} INVALID of {m['attempts']} attempts"
        if m["invalid_used"]:
            t += f", {m['invalid_used']} INVALID used"
        if m["missing"]:
            t += f", {m['missing']} rep. without a valid run"
        if m.get("left_out"):
            t += f", {len(m['left_out'])} run(s) left out ({'; '.join(m['left_out'])})"
        parts.append(t)
    return " / ".join(parts)


def _reference(c: dict[str, Any]) -> str:
    unit = f" {c['unit']}" if c.get("unit") else ""
    if c["kind"] == "trend":
        return f"{c['direction']} over the sweep"
    what = "B - A in" if c["kind"] == "difference" else "in"
    return f"{what} [{fmt(c['range'][0])}, {fmt(c['range'][1])}]{unit}"


def _measure_text(c: dict[str, Any]) -> str:
    m = c["measure"]
    if "share" in m:
        return f"achieved share of {m['share']} (metrics.json multiflow.shares, per run)"
    if "where" in m:
        return (f"{m['metric']} of the forward flow with " + ", ".join(f"{k} {v}" for k, v in m["where"].items())
                + " (metrics.json flows[], per run)")
    return f"{m['metric']} of {m['flow']} (study.json)"


def markdown(claims_doc: dict[str, Any], found: list[Finding], studies: list[Study], claims_file: Path,
             dirs: list[Path]) -> str:
    min_n = int((claims_doc.get("rule") or {}).get("min_n", 2))
    counts = {v: sum(1 for f in found if f.verdict == v) for v in (AGREES, DEVIATES, INCONCLUSIVE, NOT_RUN)}
    lines = [
        "# Findings: the reference studies and RFC 8867 beside what rtclab measured",
        "",
        f"Generated by {_generated_by(dirs)} from the studies' study.json, plan.json and their used runs' "
        f"manifest.json and metrics.json; the claims are `{_rel(claims_file)}` (each claim's reference in words, the "
        "rule's bounds chosen there, not printed by the papers). Do not edit: run the command again; "
        "`rtclab findings --check` says whether this page is what the archive gives.",
        "",
        f"{len(found)} claims: {counts[AGREES]} agree, {counts[DEVIATES]} deviate, {counts[INCONCLUSIVE]} "
        f"inconclusive, {counts[NOT_RUN]} not run.",
        "",
        "## The verdict rule",
        "",
        *[f"- **{k}**: {v}." for k, v in RULES.items() if k != "common"],
        f"- **every kind**: {RULES['common']} (min_n = {min_n}).",
        "- A claim over several points agrees when every point agrees, deviates when any point deviates, and is "
        "inconclusive otherwise. A claim whose study was not given is **not run**, with the commands that run it.",
        "- Means and intervals are study.json's (docs/studies.md, \"Statistics\"), or for per-run measures the same "
        "statistics over the point's used runs; metric definitions: docs/studies.md (catalogue) and docs/metrics.md.",
        "",
        "## Claims",
        "",
        "| claim | source | reference says | checked as | study | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for f in found:
        c = f.claim
        study = "-" if f.study is None else f"`{f.study.name}`" + (f" vs `{f.against.name}`" if f.against else "")
        lines.append(f"| [{c['id']}](#{c['id']}) | {c['source']} | {c['says']} | {_measure_text(c)} "
                     f"{_reference(c)} | {study} | **{f.verdict}** |")
    for f in found:
        c = f.claim
        lines += ["", f"### {c['id']}", "", f"{c['source']}: {c['says']}.", "",
                  f"Checked as: {_measure_text(c)}, {_reference(c)} ({c['kind']} rule). Verdict: **{f.verdict}**"
                  + (f" ({f.note})" if f.note else "") + "."]
        if f.verdict == NOT_RUN:
            lines += ["", "Not run: no study read holds "
                      + " or ".join(f"`{n}`" for n in c["studies"] + (c.get("against") or []))
                      + ". To run it, then archive it (`.venv/bin/rtclab study archive results/studies/<its name>`) "
                        "and regenerate this page (`npm run findings`):", ""]
            lines += [f"    {cmd}" for cmd in run_commands(c)]
            if c.get("ray"):
                lines += ["", "(Its points need more than this 2-core machine to come out valid: the Ray command "
                          "runs them on a cluster, docs/studies.md \"Executors\".)"]
            continue
        head = "| point | phase | mean | 95 % CI | n | INVALID attempts | verdict |"
        if c["kind"] == "difference":
            head = ("| point | phase | A mean | B mean | B - A | 95 % CI (Welch) | n (A / B) "
                    "| INVALID attempts (A / B) | verdict |")
        lines += ["", head, "|" + "---|" * (head.count("|") - 1)]
        for r in f.rows:
            mean, ci, n = _value_text(r)
            verdict = r.verdict or "(sweep)"
            if r.why and r.verdict:
                verdict += f" ({r.why})"
            if c["kind"] == "difference":
                am = fmt(r.a["stat"]["mean"]) if r.a["stat"] else "-"
                bm = fmt(r.b["stat"]["mean"]) if r.b and r.b["stat"] else "-"
                lines.append(f"| {r.point} | {r.phase} | {am} | {bm} | {mean} | {ci} | {n} | {_invalid_text(r)} | "
                             f"{verdict} |")
            else:
                lines.append(f"| {r.point} | {r.phase} | {mean} | {ci} | {n} | {_invalid_text(r)} | {verdict} |")
    lines += ["", "## The studies", "",
              "Each study's provenance, from its plan.json, study.json and used runs' manifest.json "
              "(docs/studies.md, \"Provenance\"): the dates its runs started, the machine, Chromium, the backend, the "
              "commits of the code that ran (DIRTY when the tree had uncommitted changes), n per point, the time "
              "factor against the full study, and the commands that make it again from the repository root."
              if studies
              else "No study was read: every claim is not run."]
    for s in studies:
        sm = s.doc.get("summary") or {}
        lines += [""] + provenance.markdown(s.name, _rel(s.dir), s.prov, sm.get("runs_used", 0),
                                            sm.get("runs_used_invalid", 0), s.accepted_invalid())
    return "\n".join(lines) + "\n"


def _generated_by(dirs: list[Path]) -> str:
    """The command that makes the page again: plain `rtclab findings` when it read every archived study."""
    if [d.resolve() for d in dirs] == [d.resolve() for d in archive.study_dirs()]:
        return f"`rtclab findings` (every study of `{_rel(archive.DEFAULT_ARCHIVE)}/`)"
    return f"`rtclab findings {' '.join(_rel(d) for d in dirs)}`"


VERDICT_COLOURS = {AGREES: "#2ca02c", DEVIATES: "#d62728", INCONCLUSIVE: "#7f7f7f", NOT_RUN: "#bbbbbb"}


def _figure(f: Finding) -> dict[str, Any] | None:
    """Each point's judged value with its 95 % CI as bars, the reference interval shaded."""
    rows = [r for r in f.rows if r.value is not None]
    if not rows:
        return None
    c = f.claim
    data = [{"type": "bar", "x": [r.point for r in rows], "y": [r.value["mean"] for r in rows if r.value],
             "marker": {"color": [VERDICT_COLOURS.get(r.verdict, "#1f77b4") for r in rows]},
             "error_y": {"type": "data", "symmetric": False, "visible": True,
                         "array": [None if r.value["hi"] is None else r.value["hi"] - r.value["mean"]
                                   for r in rows if r.value],
                         "arrayminus": [None if r.value["lo"] is None else r.value["mean"] - r.value["lo"]
                                        for r in rows if r.value]},
             "hovertext": [f"{r.point}: {r.verdict or 'sweep'} {r.why}" for r in rows], "name": c["id"]}]
    shapes = []
    if c["kind"] in ("range", "difference"):
        shapes.append({"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": c["range"][0],
                       "y1": c["range"][1], "fillcolor": "#2ca02c", "opacity": 0.12, "line": {"width": 0}})
    what = "B - A, Welch 95 % CI" if c["kind"] == "difference" else "mean, 95 % CI"
    return {"data": data, "layout": {
        "title": {"text": f"{html.escape(c['id'])}: {html.escape(_measure_text(c))}<br><sub>{what}; shaded: the "
                          f"reference {html.escape(_reference(c))}; verdict {f.verdict}</sub>", "x": 0.01,
                  "xanchor": "left"},
        "height": 360, "shapes": shapes, "margin": {"l": 70, "r": 20, "t": 80, "b": 80}}}


def html_page(markdown_text: str, found: list[Finding]) -> str:
    """The dashboard: the page's text as preformatted Markdown (tables readable as they are) and a figure per claim
    with values, plotly.js embedded (offline)."""
    from . import page
    figs = [(f"claim-{i}", fig) for i, f in enumerate(found) if (fig := _figure(f)) is not None]
    badges = "".join(f'<span class="v" style="background:{VERDICT_COLOURS[f.verdict]}">{html.escape(f.claim["id"])}: '
                     f"{html.escape(f.verdict)}</span> " for f in found)
    body = f"<p>{badges}</p>\n{page.chart_divs(figs)}\n<h2>The page</h2><pre>{html.escape(markdown_text)}</pre>"
    style = (".v{color:#fff;padding:2px 6px;border-radius:4px;display:inline-block;margin:2px;font-size:12px}\n"
             "pre{font-size:12px;white-space:pre-wrap}")
    return page.render("rtclab findings", body, figs, style=style)


def page_text(dirs: list[Path], claims_file: Path = DEFAULT_CLAIMS) -> tuple[str, list[Finding]]:
    doc, found, studies = findings(dirs, claims_file)
    return markdown(doc, found, studies, claims_file, dirs), found


def first_difference(expected: str, got: str) -> str | None:
    """Where two pages first differ (line, column and both lines), or None when they are the same byte for byte."""
    if expected == got:
        return None
    a, b = expected.splitlines(keepends=True), got.splitlines(keepends=True)
    for i, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            col = next((j for j, (p, q) in enumerate(zip(x, y), start=1) if p != q), min(len(x), len(y)) + 1)
            return f"line {i}, column {col}: the page has {x.rstrip(chr(10))!r}; regenerated: {y.rstrip(chr(10))!r}"
    i = min(len(a), len(b)) + 1
    if len(a) > len(b):
        return f"line {i}: the page has {a[i - 1].rstrip(chr(10))!r}; the regenerated page ends before it"
    return f"line {i}: the regenerated page has {b[i - 1].rstrip(chr(10))!r}; the page ends before it"


def check(dirs: list[Path], page: Path, claims_file: Path = DEFAULT_CLAIMS) -> str | None:
    """None when `page` is byte for byte what the studies give, else the first difference."""
    text, _ = page_text(dirs, claims_file)
    try:
        committed = page.read_text()
    except OSError as e:
        return f"{page} unreadable: {e}"
    return first_difference(committed, text)


def write(dirs: list[Path], out_md: Path, out_html: Path, claims_file: Path = DEFAULT_CLAIMS) -> list[Finding]:
    text, found = page_text(dirs, claims_file)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_html.write_text(html_page(text, found), encoding="utf-8")
    return found
