"""`rtclab findings DIR...`: each claim of studies/findings.yaml (the reference studies' findings and RFC 8867's
expectations) beside what the given study directories measured: mean, 95 % CI, n and phase per point, a verdict by a
rule written on the page, the INVALID attempts counted, and each study's provenance (study/provenance.py: dates,
machine, Chromium, backend, commits, n, time factor, command). One Markdown page and one HTML dashboard. It reads
study.json, plan.json, the points' scenario.json and the used runs' manifest.json and metrics.json, never the
captures: a study directory or its archive in the repository (study/archive.py; by default every study of
results-archive/), and `--check` compares the page it makes with the committed one. The claims are data; this module
only evaluates them (docs/studies.md, "Findings").

The decision rules are in verdicts.py, one function per kind, so that other tools (a sample-size planner) judge an
interval exactly as the page does; `measure_point`, `points_of` and `evaluate` give a claim's per-point values."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import yamlload
from .study import provenance
from .study.aggregate import summarise
from .study.compare import welch
from .study.metric_rows import flow_values
from .study.report import StudyReportError, load
from .verdicts import (
    AGREES,
    DEVIATES,
    INCONCLUSIVE,
    NOT_RUN,
    clip,
    decide,
    decide_trend,
    natural_bounds,
    trend_fit,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CLAIMS = REPO / "studies" / "findings.yaml"
KINDS = ("range", "trend", "difference")
MEASURES = ("flow", "where", "cross_traffic", "share", "rfc8867")
IPERF3_BASE_PORT = 5201  # cross-traffic item n's iperf3 server port in runs whose manifest predates topology

# The per-run RFC 8867 figure computed here (`measure: {rfc8867: ...}`), beside study.json's raw one.
RFC8867_MEASURES = ("rate_to_reachable_target",)


class FindingsError(Exception):
    """A claims file or study directory that cannot be used (the CLI exits 2 with this message)."""


@dataclass
class Study:
    dir: Path
    doc: dict[str, Any]
    plan: dict[str, Any]
    prov: provenance.Provenance = field(default_factory=provenance.Provenance)
    pilot_of: Path | None = None  # set aside: the directory of the same study planned from this one, read instead

    @property
    def name(self) -> str:
        return str(self.doc["study"])

    def accepted_invalid(self) -> list[str]:
        """The checks whose INVALID runs the aggregation accepted (study.json accept_invalid), when it used any."""
        return list(self.doc["accept_invalid"]) if self.doc.get("accept_invalid") and self.doc.get("invalid_note") \
            else []

    def point_plan(self, point: str) -> dict[str, Any]:
        return next((p for p in self.plan.get("points") or [] if p.get("name") == point), {})


def repo_relative(p: Any) -> str:
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
    try:
        plan = json.loads((d / "plan.json").read_text())
    except (OSError, ValueError) as e:
        raise FindingsError(f"{d}: plan.json unreadable: {e}") from None
    return Study(d, doc, plan, prov=provenance.read(d, doc, plan))


def load_claims(path: Path) -> dict[str, Any]:
    """The claims file, checked: every claim has an id, a known kind, studies, points, a measure, its rule's
    parameters and, for a band, why it is that wide."""
    try:
        doc = yamlload.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise FindingsError(f"{path}: {e}") from None
    problems = []
    for i, c in enumerate((doc or {}).get("claims") or []):
        cid = c.get("id", f"claims[{i}]")
        for key in ("id", "source", "says", "studies", "study_file", "kind", "measure"):
            if key not in c:
                problems.append(f"{cid}: no {key}")
        if "points" not in c and "pairs" not in c:
            problems.append(f"{cid}: no points (or pairs)")
        measure = c.get("measure") or {}
        if sum(1 for k in MEASURES if k in measure) != 1:
            problems.append(f"{cid}: the measure needs exactly one of {', '.join(MEASURES)}")
        if "rfc8867" in measure and measure["rfc8867"] not in RFC8867_MEASURES:
            problems.append(f"{cid}: measure rfc8867 must be one of {', '.join(RFC8867_MEASURES)}")
        if any(k in measure for k in ("flow", "where", "cross_traffic")) and "metric" not in measure:
            problems.append(f"{cid}: the measure needs a metric")
        kind = c.get("kind")
        if kind not in KINDS:
            problems.append(f"{cid}: kind must be one of {', '.join(KINDS)}")
        if kind in ("range", "difference"):
            r = c.get("range")
            if not (isinstance(r, list) and len(r) == 2 and any(x is not None for x in r)
                    and all(x is None or isinstance(x, (int, float)) for x in r)
                    and (None in r or r[0] <= r[1])):
                problems.append(f"{cid}: a {kind} claim needs range: [lo, hi] (null for an open end, lo <= hi)")
            if not c.get("band_why"):
                problems.append(f"{cid}: no band_why (why the band is as wide as it is, against the reference's "
                                "precision)")
        if kind == "range" and "pairs" in c:
            problems.append(f"{cid}: pairs belong to a difference claim")
        if kind == "trend":
            if c.get("direction") not in ("increasing", "decreasing"):
                problems.append(f"{cid}: a trend claim needs direction: increasing or decreasing")
            x = c.get("x") or {}
            if not x.get("param") or x.get("scale", "linear") not in ("linear", "log"):
                problems.append(f"{cid}: a trend claim needs x: {{param: NAME, scale: linear|log}}")
        if kind == "difference" and not (c.get("against") or c.get("pairs")):
            problems.append(f"{cid}: a difference claim needs against: [study names] or pairs: [[A, B], ...]")
        if kind == "difference" and c.get("against") and c.get("pairs"):
            problems.append(f"{cid}: a difference claim has against (two studies) or pairs (two points), not both")
        if c.get("pairs") is not None and not (isinstance(c["pairs"], list) and c["pairs"] and all(
                isinstance(p, list) and len(p) == 2 for p in c["pairs"])):
            problems.append(f"{cid}: pairs must be a list of [A point, B point]")
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


def _cross_traffic_ports(manifest: dict[str, Any], items: list[dict[str, Any]]) -> dict[int, int]:
    """Each cross-traffic item's iperf3 server port: the manifest's topology.cross_traffic (netem/cross.js), else
    5201 + n (runs recorded before the manifest held it)."""
    recorded = (manifest.get("topology") or {}).get("cross_traffic")
    if isinstance(recorded, list) and recorded:
        return {int(i["n"]): int(i["port"]) for i in recorded}
    return {n: IPERF3_BASE_PORT + n for n in range(len(items))}


def cross_traffic_flow(m: dict[str, Any], manifest: dict[str, Any], select: dict[str, Any]) -> dict[str, Any] | None:
    """The busiest forward TCP flow of the scenario's cross-traffic items that match every field of `select` (e.g.
    dscp 46), found by the items' iperf3 server ports: a flow's own `dscp` in metrics.json is its first packet's,
    and iperf3 sets the DSCP after its SYN, so a TCP flow's `dscp` field is 0 whatever it carried."""
    items = (m.get("scenario") or {}).get("cross_traffic") or []
    ports = _cross_traffic_ports(manifest, items)
    wanted = {str(ports[n]) for n, item in enumerate(items)
              if n in ports and all(item.get(k) == v for k, v in select.items())}
    found = [f for f in m.get("flows") or [] if f.get("direction") == "forward" and f.get("protocol") == "tcp"
             and str(f.get("dst", "")).rsplit(":", 1)[-1] in wanted]
    return max(found, key=lambda f: f.get("packets_sent") or 0) if found else None


def encoder_caps(scenario: dict[str, Any]) -> dict[str, float | None]:
    """Each call's encoder maximum in bit/s (by call id): the sum over its video tracks of the track's
    max_bitrate_kbps, else its call's; None when one of them sets none (Chrome's own maximum applies, which the
    scenario does not state)."""
    out: dict[str, float | None] = {}
    for c in scenario.get("calls") or []:
        kbps = [t.get("max_bitrate_kbps") if t.get("max_bitrate_kbps") is not None else c.get("max_bitrate_kbps")
                for t in c.get("tracks") or [{}]]
        out[str(c.get("id"))] = None if any(k is None for k in kbps) else 1000.0 * sum(float(k) for k in kbps)
    return out


def rate_to_reachable_target(rfc: dict[str, Any], caps: dict[str, float | None]) -> float | None:
    """RFC 8867's rate / target with each window's target lowered to what the flow's encoder may send: per media flow
    (metrics.json rfc8867.flows), its bits over the windows that have a target / the sum over them of min(target, its
    call's encoder maximum); the flows' mean, as summary.rate_to_target_ratio is of the raw ratios. A flow held at
    its encoder's cap is then at its target (its link-layer rate also carries audio, RTX and headers, so it reads a
    few per cent above 1 there), not under-using the link. None when a flow's call or cap is unknown."""
    ratios = []
    for f in rfc.get("flows") or []:
        name = str(f.get("name"))
        cap = caps.get(name) if name in caps else next(iter(caps.values())) if len(caps) == 1 else None
        if cap is None:
            return None
        rate = target = 0.0
        for r, t in zip(f.get("rate_bps") or [], f.get("target_bps") or []):
            if r is not None and t is not None:
                rate, target = rate + float(r), target + min(float(t), cap)
        if target > 0:
            ratios.append(rate / target)
    return sum(ratios) / len(ratios) if ratios else None


def _point_scenario(s: Study, point: str) -> tuple[dict[str, Any] | None, str]:
    """The point's scenario as the study ran it (plan.json scenario_file), or why it cannot be read."""
    f = s.point_plan(point).get("scenario_file")
    if not f:
        return None, f"plan.json names no scenario_file for {point}"
    try:
        return json.loads((s.dir / f).read_text()), ""
    except (OSError, ValueError) as e:
        return None, f"{f} unreadable: {e}"


def _run_value(m: dict[str, Any], measure: dict[str, Any], manifest: dict[str, Any],
               scenario: dict[str, Any]) -> float | None:
    if "share" in measure:
        flows = (((m.get("multiflow") or {}).get("shares") or {}).get("flows")) or []
        f = next((x for x in flows if f"{x.get('call')}/{x.get('track')}" == measure["share"]), None)
        return None if f is None or f.get("achieved_share") is None else float(f["achieved_share"])
    if "rfc8867" in measure:
        rfc = m.get("rfc8867")
        return None if not isinstance(rfc, dict) else rate_to_reachable_target(rfc, encoder_caps(scenario))
    flow = cross_traffic_flow(m, manifest, measure["cross_traffic"]) if "cross_traffic" in measure \
        else _flow_where(m, measure["where"])
    if flow is None:
        return None
    return flow_values(m, flow, measure.get("phase", "all")).get(measure["metric"])


def _read_json(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text().replace("NaN", "null"))
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def measure_point(s: Study, point: str, measure: dict[str, Any]) -> dict[str, Any]:
    """The point's statistic (mean, sd, ci95_*, n) of the measure, its phase, the per-run values (per-run measures;
    None for a statistic of study.json), and its attempts counted: used runs, INVALID attempts, INVALID runs used
    (aggregate --accept-invalid). `unmatched` says why the measure found nothing in runs that were read (its flow,
    phase or selector matches nothing there), else None."""
    p = next((x for x in s.doc["points"] if x["name"] == point), None)
    runs = [r for r in s.doc.get("runs") or [] if r.get("point") == point]
    counts = {"attempts": len(runs), "invalid_attempts": sum(1 for r in runs if r.get("status") == "invalid"),
              "invalid_used": sum(1 for r in runs if r.get("used") and r.get("accepted_invalid")),
              "missing": sum(1 for x in s.doc.get("missing") or [] if x.get("point") == point)}
    # Runs whose files could not be read (by aggregation, or here): n is short of them, and the page says why.
    left_out = [f"{x.get('dir')}: {x.get('reason')}" for x in (p or {}).get("runs_left_out") or []]
    phase = measure.get("phase", "all")
    used = list((p or {}).get("runs_used") or [])
    stat: dict[str, Any] | None = None
    values: list[float] | None = None
    unmatched: str | None = None
    if p is not None and "flow" in measure:
        by_phase = (p.get("flows") or {}).get(measure["flow"])
        if by_phase is None:
            unmatched = f"no flow {measure['flow']} in study.json"
        elif phase not in by_phase:
            unmatched = f"{measure['flow']} has no phase {phase}"
        else:
            stat = (by_phase.get(phase) or {}).get(measure["metric"])
    elif p is not None:  # per run, from the used runs' metrics.json (and manifest.json, the point's scenario)
        scenario, why_not = _point_scenario(s, point) if "rfc8867" in measure else ({}, "")
        values, empty = [], 0
        for d in used if scenario is not None else []:
            try:
                m = _read_json(s.dir / d / "metrics.json")
            except (OSError, ValueError) as e:
                left_out.append(f"{d}: metrics.json unreadable: {e}")
                continue
            manifest: dict[str, Any] = {}
            if "cross_traffic" in measure:
                try:
                    manifest = _read_json(s.dir / d / "manifest.json")
                except (OSError, ValueError) as e:
                    left_out.append(f"{d}: manifest.json unreadable (its cross-traffic ports): {e}")
                    continue
            v = _run_value(m, measure, manifest, scenario or {})
            if v is not None and math.isfinite(v):
                values.append(float(v))
            else:
                empty += 1
        if scenario is None:
            unmatched = why_not
        elif not values and empty:
            unmatched = f"the measure found no value in any of the {empty} run(s) read"
        stat = summarise(values)
    if not used:
        unmatched = None  # nothing was read: no value for that reason, not a selector that misses
    mean = stat.get("mean") if stat is not None else None
    if not isinstance(mean, (int, float)) or not math.isfinite(mean):  # no value, or a damaged one (NaN): none
        stat = None
    return {"point": point, "phase": phase, "stat": stat, "values": values, **counts, "left_out": left_out,
            "unmatched": unmatched}


def points_of(s: Study, patterns: list[str]) -> list[str]:
    names = [p["name"] for p in s.plan.get("points") or []]
    return [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]


def pairs_of(s: Study, pairs: list[list[str]]) -> list[tuple[str, str]]:
    """The claim's (A, B) point pairs whose two points the study has (a quick variant may hold only some)."""
    names = {p["name"] for p in s.plan.get("points") or []}
    return [(a, b) for a, b in pairs if a in names and b in names]


def x_of(s: Study, point: str, param: str) -> float | None:
    """The point's value of a sweep's parameter: its axis label when that is a number (an axis of lists, e.g. cross
    traffic labelled '3'), else the axis value, else the value a named point sets at that field path."""
    pp = s.point_plan(point)
    settings = [x.get("value") for x in pp.get("settings") or [] if x.get("path") == param]
    for v in ((pp.get("labels") or {}).get(param), (pp.get("params") or {}).get(param), *settings):
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            return x
    return None




def inconclusive_reason(m: dict[str, Any], min_n: int | None) -> str | None:
    """Why a point cannot be judged (None: it can); min_n None for a trend, whose interval pools every point."""
    st = m["stat"]
    if m.get("unmatched"):
        return f"the measure matches nothing: {m['unmatched']}"
    if st is None:
        return "no value" + (f" ({m['missing']} repetition(s) without a valid run)" if m["missing"] else "")
    if m["invalid_used"]:
        return f"uses {m['invalid_used']} INVALID run(s)"
    if min_n is not None and st["n"] < min_n:
        return f"n = {st['n']} < {min_n}: no confidence interval"
    return None


@dataclass
class Row:
    point: str
    phase: str
    a: dict[str, Any]  # measure_point of study A (the claim's study), or of pair's point A
    b: dict[str, Any] | None  # of study B, or of the pair's point B (difference claims)
    value: dict[str, Any] | None  # what the verdict judged: {mean, lo, hi, n} (lo, hi clipped for a range)
    verdict: str
    why: str
    clipped: bool = False  # the interval was clipped to the measure's natural bounds
    x: float | None = None  # the sweep's parameter (trend claims)
    beside: dict[str, Any] | None = None  # {a, b}: measure_point of the claim's `beside` measure, shown not judged


@dataclass
class Finding:
    claim: dict[str, Any]
    study: Study | None
    against: Study | None
    rows: list[Row]
    verdict: str
    note: str = ""
    fit: dict[str, Any] | None = None  # trend claims: trend_fit's slope and interval


def _ci(st: dict[str, Any] | None) -> tuple[float | None, float | None]:
    return (None, None) if st is None else (st.get("ci95_low"), st.get("ci95_high"))


def _beside(s: Study, claim: dict[str, Any], point: str) -> dict[str, Any] | None:
    b = claim.get("beside")
    return None if not b else measure_point(s, point, b["measure"])


def _range_row(s: Study, claim: dict[str, Any], p: str, min_n: int) -> Row:
    m = measure_point(s, p, claim["measure"])
    why = inconclusive_reason(m, min_n)
    lo, hi = _ci(m["stat"])
    clipped = False
    if lo is not None and hi is not None:
        lo, hi, clipped = clip(lo, hi, natural_bounds(claim["measure"]))
    verdict = INCONCLUSIVE if why else decide(claim, lo, hi)
    value = None if m["stat"] is None else {"mean": m["stat"]["mean"], "lo": lo, "hi": hi, "n": m["stat"]["n"]}
    bes = _beside(s, claim, p)
    return Row(p, m["phase"], m, None, value, verdict, why or "", clipped,
               beside=None if bes is None else {"a": bes, "b": None})


def _difference_row(label: str, ma: dict[str, Any], mb: dict[str, Any], claim: dict[str, Any], min_n: int,
                    beside: dict[str, Any] | None) -> Row:
    why = inconclusive_reason(ma, min_n) or inconclusive_reason(mb, min_n)
    value = None
    verdict = INCONCLUSIVE
    if ma["stat"] is not None and mb["stat"] is not None:
        w = welch(ma["stat"], mb["stat"])
        hw, diff = w["ci95_half_width"], w["diff"]
        assert diff is not None  # both means are finite numbers (measure_point): never a made-up 0
        value = {"mean": diff, "lo": None if hw is None else diff - hw, "hi": None if hw is None else diff + hw,
                 "n": None}
        if not why:
            verdict = decide(claim, value["lo"], value["hi"])
    return Row(label, ma["phase"], ma, mb, value, verdict, why or "", beside=beside)


def evaluate(claim: dict[str, Any], studies: dict[str, Study], min_n: int) -> Finding:
    """The claim against the studies given (by name): its rows, one per point (or pair), and its verdict."""
    s = next((studies[n] for n in claim["studies"] if n in studies), None)
    b = next((studies[n] for n in claim.get("against") or [] if n in studies), None) if claim.get("against") \
        else None
    if s is None or (claim.get("against") and b is None):
        return Finding(claim, s, b, [], NOT_RUN)
    kind = claim["kind"]
    if kind == "difference" and claim.get("pairs"):
        pairs = pairs_of(s, claim["pairs"])
        if not pairs:
            return Finding(claim, s, None, [], INCONCLUSIVE, note="the study has no pair of points of "
                           + ", ".join(f"{x} / {y}" for x, y in claim["pairs"]))
        rows = []
        for pa, pb in pairs:
            ba, bb = _beside(s, claim, pa), _beside(s, claim, pb)
            rows.append(_difference_row(f"{pb} - {pa}", measure_point(s, pa, claim["measure"]),
                                        measure_point(s, pb, claim["measure"]), claim, min_n,
                                        None if ba is None else {"a": ba, "b": bb}))
        return Finding(claim, s, None, rows, overall([r.verdict for r in rows]))
    pts = points_of(s, claim["points"])
    if b is not None:
        pts = [p for p in pts if p in points_of(b, claim["points"])]
    if not pts:
        return Finding(claim, s, b, [], INCONCLUSIVE,
                       note="no point of the study matches " + ", ".join(claim["points"]))
    if kind == "range":
        rows = [_range_row(s, claim, p, min_n) for p in pts]
        return Finding(claim, s, None, rows, overall([r.verdict for r in rows]))
    if kind == "difference":
        assert b is not None
        rows = [_difference_row(p, measure_point(s, p, claim["measure"]), measure_point(b, p, claim["measure"]),
                                claim, min_n, None) for p in pts]
        return Finding(claim, s, b, rows, overall([r.verdict for r in rows]))
    return _evaluate_trend(claim, s, pts)


def _evaluate_trend(claim: dict[str, Any], s: Study, pts: list[str]) -> Finding:
    """Every point's value shown; the verdict from the slope over all of them (trend_fit)."""
    xspec = claim["x"]
    log = xspec.get("scale", "linear") == "log"
    rows: list[Row] = []
    problems: list[str] = []
    xs: list[float] = []
    stats: list[dict[str, Any]] = []
    for p in pts:
        m = measure_point(s, p, claim["measure"])
        x = x_of(s, p, xspec["param"])
        why = inconclusive_reason(m, None) or ""
        if x is None or (log and x <= 0):
            why = why or f"no {'positive ' if log else ''}number for x = {xspec['param']}"
        lo, hi = _ci(m["stat"])
        rows.append(Row(p, m["phase"], m, None, None if m["stat"] is None else
                        {"mean": m["stat"]["mean"], "lo": lo, "hi": hi, "n": m["stat"]["n"]}, "", why, x=x))
        if why:
            problems.append(f"{p}: {why}")
        else:
            assert x is not None and m["stat"] is not None
            xs.append(math.log10(x) if log else x)
            stats.append(m["stat"])
    fit = trend_fit(xs, stats)
    per = f"per decade of {xspec['param']}" if log else f"per unit of {xspec['param']}"
    note = "" if fit["slope"] is None else f"slope {fit['slope']:.4g} {per}" + (
        "" if fit["ci95_half_width"] is None else
        f", 95 % CI [{fit['ci95_low']:.4g}, {fit['ci95_high']:.4g}] over {fit['n_runs']} runs at "
        f"{fit['n_points']} points ({fit['df']} df)")
    # INVALID runs or a measure matching nothing anywhere make the whole trend inconclusive; a point without a value
    # is left out of the fit and named.
    blocking = [x for x in problems if "INVALID" in x or "matches nothing" in x]
    verdict = INCONCLUSIVE if blocking else decide_trend(fit["ci95_low"], fit["ci95_high"], claim["direction"])
    if fit["slope"] is not None and fit["ci95_half_width"] is None:
        problems.append(f"N = {fit['n_runs']} runs: no interval for the slope")
    elif fit["slope"] is None:
        problems.append("fewer than two x values: no slope")
    if problems:
        note = (note + "; " if note else "") + ("inconclusive: " if verdict == INCONCLUSIVE else "left out: ") \
            + "; ".join(problems)
    return Finding(claim, s, None, rows, verdict, note=note, fit=fit)


def overall(verdicts: list[str]) -> str:
    """A claim over several points: agrees when every point agrees, deviates when any deviates, else inconclusive."""
    if verdicts and all(v == AGREES for v in verdicts):
        return AGREES
    if any(v == DEVIATES for v in verdicts):
        return DEVIATES
    return INCONCLUSIVE


def unmatched_selectors(claim: dict[str, Any], studies: dict[str, Study]) -> list[str]:
    """What of the claim matches nothing in the studies given that it reads: a point pattern or pair no point of the
    study has (the quick variant may lack a pair: at least one pair must be there), or a measure that found no value
    in the runs it read at a point (a flow label, phase or flow selector that is not there). Empty when all match
    or the claim's study is not given."""
    s = next((studies[n] for n in claim["studies"] if n in studies), None)
    if s is None:
        return []
    # The full study (the first name listed) has every point and pair the claim names; a quick variant may hold
    # only some, but at least one.
    full = s.name == claim["studies"][0]
    out: list[str] = []
    if claim.get("pairs"):
        pairs = pairs_of(s, claim["pairs"])
        missing = [f"{a} / {b}" for a, b in claim["pairs"] if (a, b) not in pairs]
        if not pairs or (full and missing):
            out.append(f"{s.name}: no pair of points " + ", ".join(missing))
        points = sorted({p for pair in pairs for p in pair})
    else:
        missing = [pat for pat in claim["points"] if not points_of(s, [pat])]
        if len(missing) == len(claim["points"]) or (full and missing):
            out.append(f"{s.name}: no point matches " + ", ".join(missing))
        points = points_of(s, claim["points"])
    b = next((studies[n] for n in claim.get("against") or [] if n in studies), None)
    for st in [s] + ([b] if b is not None else []):
        for p in points:
            for measure in [claim["measure"]] + ([claim["beside"]["measure"]] if claim.get("beside") else []):
                m = measure_point(st, p, measure)
                if m["unmatched"]:
                    out.append(f"{st.name} {p}: {m['unmatched']}")
    return out


def run_commands(claim: dict[str, Any]) -> list[str]:
    """What runs a claim's studies (for a claim not run): the quick study, and on a Ray cluster when its points
    cannot be valid on a 2-core machine."""
    files = [claim["study_file"]] + ([claim["against_file"]] if claim.get("against_file") else [])
    cmds = [f"rtclab study run {f}" for f in files]
    if claim.get("ray"):
        cmds += [f"rtclab study run {f} --ray HEAD:6379" for f in files]
    return cmds


def _is_pilot_of(pilot: Study, planned: Study) -> bool:
    """Whether `planned` ran with repetitions planned from `pilot` (its plan.json names the pilot's study and
    fingerprint), so that the two hold the same study at two stages."""
    fingerprint = pilot.plan.get("fingerprint")
    return fingerprint is not None and any(
        x.get("study") == pilot.name and x.get("fingerprint") == fingerprint
        for x in (planned.plan.get("repetitions_from") or {}).get("pilots") or [])


def planned_in_place_of_pilot(a: Study, b: Study) -> Study:
    """Of two directories holding the same study, the one whose repetitions were planned from the other: a study
    is its own pilot when it runs again with a plan from its first runs (rtclab study plan), and the page reads the
    planned runs, whose number was chosen for the claims; the pilot's runs are not pooled with them (they chose that
    number). Any other two of the same name are an error: which one the page reads must be given."""
    if _is_pilot_of(a, b):
        return b
    if _is_pilot_of(b, a):
        return a
    raise FindingsError(f"{b.dir} and {a.dir} hold the same study {a.name}, neither planned from the other: "
                        "give one of them")


def findings(dirs: list[Path], claims_file: Path = DEFAULT_CLAIMS) -> tuple[dict[str, Any], list[Finding], list[Study]]:
    """The claims file, each claim's finding, and every study read, in the order given: a pilot set aside for the
    study planned from it (`pilot_of`) among them, for its provenance and machine time, though no claim reads it."""
    doc = load_claims(claims_file)
    read = [read_study(d) for d in dirs]
    studies: dict[str, Study] = {}
    for s in read:
        if s.name in studies:
            planned = planned_in_place_of_pilot(studies[s.name], s)
            pilot = s if planned is studies[s.name] else studies[s.name]
            pilot.pilot_of = planned.dir
            s = planned
        studies[s.name] = s
    min_n = int((doc.get("rule") or {}).get("min_n", 2))
    return doc, [evaluate(c, studies, min_n) for c in doc["claims"]], read
