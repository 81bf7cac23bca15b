"""Aggregation of a study directory: `study.parquet` (one row per valid run x flow x phase, the point's parameters as
columns) and `study.json` (per point, flow and phase: mean, sd, 95% confidence interval and n of each metric), read
from the runs' own metrics.json (docs/metrics.md) and nothing else. Invalid, incomplete and interrupted attempts are
excluded and listed. Definitions in docs/studies.md.

Flows are labelled the same way in every run, so that runs can be pooled: `<direction>:<kind>` (forward:video,
reverse:audio, forward:tcp, ...), with `:2`, `:3`, ... for further flows of the same direction and kind, ranked by
packets sent in the run; and `bottleneck`, the forward bottleneck's fairness entry of each phase (metrics.json
`fairness[phase]`); `controller:a`, `cpu` and `frames:b` (what the viewer at b saw), pseudo-flows of the whole
call."""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from .. import __version__ as RTCLAB_VERSION
from . import studydir
from .catalogue import (
    CATALOGUE,
    CONTROLLER_FLOW,
    CPU_CATALOGUE,
    CPU_FLOW,
    FIXED_COLUMNS,
    FRAMES_PREFIX,
    LIMITS_CATALOGUE,
    LIMITS_FLOW,
    METRICS,
    RFC_FLOW,
    _get,
)
from .distributions import DISTRIBUTIONS, RunSamples, boxes, run_samples
from .metric_rows import run_rows
from .tdist import t_quantile

STUDY_JSON_FORMAT_VERSION = 1
CONFIDENCE = 0.95


def summarise(values: list[float], confidence: float = CONFIDENCE) -> dict[str, float | int | None]:
    """mean, sample sd (n - 1), the Student t confidence interval of the mean and n, over the runs' values."""
    n = len(values)
    if n == 0:
        return {"mean": None, "sd": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None, "n": 0}
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if n == 1:
        return {"mean": mean, "sd": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None, "n": 1}
    sd = float(x.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "ci95_low": mean - half, "ci95_high": mean + half, "ci95_half_width": half, "n": n}


def _analyse(run_dir: Path) -> str | None:
    """Runs the analyzer on a run without metrics.json; None on success, else why not."""
    proc = subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(run_dir), "-q"], capture_output=True,
                          text=True)
    if proc.returncode != 0 or not (run_dir / "metrics.json").exists():
        return f"the analyzer failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
    return None


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float"
    return "string"


def _as_string(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def accepted_attempt(r: studydir.Repetition, accept_invalid: frozenset[str]) -> studydir.Attempt | None:
    """A repetition without a valid attempt: its last invalid attempt whose failed checks are all in accept_invalid."""
    for a in reversed(r.attempts):
        if a.status == studydir.INVALID and a.failed_names and set(a.failed_names) <= accept_invalid:
            return a
    return None


def aggregate(out: Path, analyse_missing: bool = True, accept_invalid: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Writes OUT/study.parquet and OUT/study.json from OUT/plan.json and the runs; returns study.json's content.
    accept_invalid: validity checks whose failure alone does not exclude a run (a repetition without a valid attempt
    then uses its last attempt that failed only those); every output names them (`invalid_note`).

    Read (read_study, used_runs: the plan, and each repetition's run), compute (collect_runs: the per-run rows, phases
    and samples; point_statistics: mean, sd, CI and n), present (write_parquet, study_doc, write_json)."""
    study = read_study(out, accept_invalid)
    listing = Listing(used_dirs={name: [] for name in study.point_names})
    collected = collect_runs(study, used_runs(out, study, listing, analyse_missing))
    statistics = point_statistics(study, collected)
    write_parquet(out, study, collected.rows, listing)
    doc = study_doc(study, listing, collected, statistics)
    write_json(out, doc)
    return doc


# --- read ---------------------------------------------------------------------------------------------------------


@dataclass
class Study:
    """What aggregation takes from plan.json and the study directory's scan, before any run is read."""
    plan: dict[str, Any]
    quick_factor: float
    points: list[dict[str, Any]]
    point_names: list[str]
    reps: dict[tuple[str, int], studydir.Repetition]
    max_attempts: int
    accept_invalid: frozenset[str]
    selected_metrics: list[str]  # the plan's network metrics, then RFC 8867's and the frames' (always)
    flow_patterns: list[str]  # the plan's `flows`: which flows study.json aggregates
    param_columns: list[str]  # study.parquet's parameter columns, in order
    params_of: dict[str, dict[str, Any]]  # point name -> its parameter columns' values
    log_damaged_lines: list[int]  # attempts.jsonl's unreadable lines (studydir.AttemptLog)


def read_study(out: Path, accept_invalid: frozenset[str]) -> Study:
    """The plan and the attempts on disk, read once: every later step works from these. Refuses an accept_invalid
    naming a check no attempt failed (a typo would otherwise silently accept nothing)."""
    plan = json.loads((out / "plan.json").read_text())
    quick_factor = float(plan.get("quick_factor", 1.0))
    points = plan["points"]
    point_names = [p["name"] for p in points]
    log = studydir.read_log(out)
    reps = studydir.scan(out, point_names, studydir.planned_repetitions(plan), log)
    failed_anywhere = {n for r in reps.values() for a in r.attempts for n in a.failed_names}
    unknown = sorted(accept_invalid - failed_anywhere)
    if unknown:
        raise ValueError(f"--accept-invalid {', '.join(unknown)}: no attempt of this study failed "
                         f"{'that check' if len(unknown) == 1 else 'those checks'} (checks that failed: "
                         f"{', '.join(sorted(failed_anywhere)) or 'none'})")
    max_attempts = int(plan["max_attempts"])
    selected_metrics = [x for x in plan.get("metrics") or list(CATALOGUE) if x in CATALOGUE]
    # RFC 8867's metrics always, as the CPU's: a plan written before they existed lists the catalogue of its day.
    selected_metrics += [m.name for m in CATALOGUE.values() if m.family in ("rfc8867", "frames")
                         and m.name not in selected_metrics]
    flow_patterns = list(plan.get("flows") or ["*"])
    param_columns, params_of = parameter_columns(plan, points)
    return Study(plan=plan, quick_factor=quick_factor, points=points, point_names=point_names, reps=reps,
                 max_attempts=max_attempts, accept_invalid=accept_invalid, selected_metrics=selected_metrics,
                 flow_patterns=flow_patterns, param_columns=param_columns, params_of=params_of,
                 log_damaged_lines=log.damaged_lines)


def parameter_columns(plan: dict[str, Any],
                      points: list[dict[str, Any]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """study.parquet's parameter columns, so that a row says which point it belongs to without the plan: each axis by
    name (its label), each varied field by its path (its value); a name taken by a fixed or metric column gets
    `param_`. Returns the columns in order and each point's values."""
    varied_paths: list[str] = []
    for ax in plan.get("axes") or []:
        for p in ax["paths"]:
            if p not in varied_paths:
                varied_paths.append(p)
    for p in points:
        for s in p.get("settings") or []:
            if s["path"] not in varied_paths:
                varied_paths.append(s["path"])
    axis_names = [ax["name"] for ax in plan.get("axes") or []]
    reserved = set(FIXED_COLUMNS) | set(METRICS)
    axis_col = {a: (a if a not in reserved else f"param_{a}") for a in axis_names}
    path_col = {p: (p if p not in reserved and p not in axis_col.values() else f"param_{p}") for p in varied_paths}
    params_of: dict[str, dict[str, Any]] = {}
    for p in points:
        row: dict[str, Any] = {axis_col[a]: (p.get("labels") or {}).get(a) for a in axis_names}
        values = {s["path"]: s["value"] for s in p.get("settings") or []}
        row.update({path_col[k]: values.get(k) for k in varied_paths})
        params_of[p["name"]] = row
    return list(dict.fromkeys([*axis_col.values(), *path_col.values()])), params_of


@dataclass
class Listing:
    """Every attempt as study.json lists it (used or why not) and the repetitions still without a run; used_runs fills
    it in while the runs are read, so it is complete once they all have been."""
    used_dirs: dict[str, list[str]]  # point name -> its used runs' directories
    runs: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    accepted_runs: list[str] = field(default_factory=list)  # the used INVALID attempts' directories
    # The repetitions' chosen runs (valid, or accepted) that could not be read: {point, rep, dir, reason}. Their
    # repetition has a run but no values, so each point's n is short of them; every output names them.
    left_out: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class UsedRun:
    """One repetition's run, chosen and read."""
    point: str
    rep: int
    attempt: studydir.Attempt
    dir: str  # relative to the study directory, as listed
    accepted: bool  # an INVALID attempt used under accept_invalid
    metrics: dict[str, Any]


def used_runs(out: Path, study: Study, listing: Listing, analyse_missing: bool) -> Iterator[UsedRun]:
    """Each repetition's run, point by point in the plan's order: its valid attempt, or else (accept_invalid) the one
    accepted_attempt picks, with its metrics.json (analysed now when missing and analyse_missing). A generator, so that
    one run's metrics.json is in memory at a time; every attempt goes into `listing`."""
    for (point, rep), r in sorted(study.reps.items(), key=lambda kv: (study.point_names.index(kv[0][0]), kv[0][1])):
        chosen = r.valid or (accepted_attempt(r, study.accept_invalid) if study.accept_invalid else None)
        for a in r.attempts:
            entry = a.to_json(out)
            entry["used"] = False
            accepted = a is chosen and a.status == studydir.INVALID
            m: dict[str, Any] | None = None
            if a is chosen:
                m, why = read_run_metrics(a, accepted, analyse_missing)
                if m is None:
                    entry["excluded_because"] = why
                    listing.excluded.append(entry)
                    listing.left_out.append({"point": point, "rep": rep, "dir": entry["dir"], "reason": why})
                else:
                    entry["used"] = True
                    if accepted:
                        entry["accepted_invalid"] = a.failed_names
                        listing.accepted_runs.append(entry["dir"])
                    listing.used_dirs[point].append(entry["dir"])
            else:
                entry["excluded_because"] = _not_chosen_because(a)
                listing.excluded.append(entry)
            listing.runs.append(entry)
            if m is not None:
                yield UsedRun(point=point, rep=rep, attempt=a, dir=entry["dir"], accepted=accepted, metrics=m)
        st = r.state(study.max_attempts)
        if st != "done":
            listing.missing.append({"point": point, "rep": rep, "state": st, "attempts": len(r.attempts),
                                    "counted_attempts": r.counted()})


def read_run_metrics(a: studydir.Attempt, accepted: bool, analyse_missing: bool) -> tuple[dict[str, Any] | None,
                                                                                          str | None]:
    """The chosen attempt's metrics.json, or None and why it cannot be used: missing (analysed now if asked),
    unreadable, or failing the analyzer's own checks (a run analysed only now, study run --no-analyze)."""
    mpath = a.path / "metrics.json"
    why = None
    if not mpath.exists():
        why = _analyse(a.path) if analyse_missing else "no metrics.json"
    m: dict[str, Any] | None = None
    if why is None:
        try:
            m = json.loads(mpath.read_text())
        except (OSError, ValueError) as e:
            why = f"metrics.json unreadable: {e}"
    if m is not None and not accepted:
        # analysed only now (study run --no-analyze): the analyzer's own checks may fail it
        own = studydir.classify(a.path, a.point, a.rep, a.attempt, None)
        if own.status == studydir.INVALID:
            why, m = "invalid: " + "; ".join(own.failed_checks), None
    return m, why


def _not_chosen_because(a: studydir.Attempt) -> str:
    """Why study.json's `excluded` lists an attempt that was not its repetition's choice."""
    return {studydir.INVALID: "invalid: " + "; ".join(a.failed_checks or ["?"]),
            studydir.INCOMPLETE: f"incomplete: {a.error}",
            studydir.INTERRUPTED: f"interrupted: {a.error}"}.get(
        a.status, "a later attempt of the same repetition was used")


# --- compute ------------------------------------------------------------------------------------------------------


@dataclass
class Collected:
    """What the runs give, read once each: study.parquet's rows and, per point, its phases and boxes."""
    rows: list[dict[str, Any]]  # one per used run x flow or pseudo-flow x phase
    phase_info: dict[str, dict[str, dict[str, Any]]]  # point -> phase -> its scheduled start_s, end_s, cross_traffic
    distributions: dict[str, dict[str, Any]]  # point -> boxes()


def pooled_flow(label: str, flow_patterns: list[str]) -> bool:
    """Whether the boxes pool a flow's samples: a packet flow (no pseudo-flow) the plan's `flows` select."""
    return (label not in ("bottleneck", CONTROLLER_FLOW, CPU_FLOW, RFC_FLOW, LIMITS_FLOW)
            and not label.startswith(FRAMES_PREFIX) and any(fnmatch.fnmatchcase(label, pat) for pat in flow_patterns))


def collect_runs(study: Study, runs: Iterable[UsedRun]) -> Collected:
    """The per-run step, one pass over the used runs: each one's rows (study_rows), its point's phases as scheduled
    and its samples for the boxes. The runs come point by point, so the samples are pooled one point at a time and
    memory holds one point's."""
    rows: list[dict[str, Any]] = []
    phase_info: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in study.point_names}
    distributions: dict[str, dict[str, Any]] = {name: {} for name in study.point_names}
    point_samples: list[RunSamples] = []
    pooling: str | None = None

    def wanted(label: str) -> bool:
        return pooled_flow(label, study.flow_patterns)
    for run in runs:
        if pooling != run.point:
            if pooling is not None:
                distributions[pooling] = boxes(point_samples)
            pooling, point_samples = run.point, []
        point_samples.append(run_samples(run.attempt.path, run.metrics, wanted, run.dir))
        # A point's phase is named by its schedule; each run's measured bounds (the cross traffic's first and last
        # data) stay in its rows of study.parquet (phase_start_s, phase_end_s).
        for ph in run.metrics.get("phases") or []:
            phase_info[run.point].setdefault(ph["name"], {
                "start_s": ph.get("scheduled_start_s", ph.get("start_s")),
                "end_s": ph.get("scheduled_end_s", ph.get("end_s")),
                "cross_traffic": ph.get("cross_traffic")})
        rows += study_rows(study, run)
    if pooling is not None:
        distributions[pooling] = boxes(point_samples)
    return Collected(rows=rows, phase_info=phase_info, distributions=distributions)


def study_rows(study: Study, run: UsedRun) -> list[dict[str, Any]]:
    """One run's rows of study.parquet: run_rows (its flows and pseudo-flows x phases) with the columns that say
    which study, point, repetition and attempt they come from, and the point's parameters."""
    run_id = _get(run.metrics, "run", "id")
    return [{"study": study.plan["study"], "quick_factor": study.quick_factor, "point": run.point, "rep": run.rep,
             "attempt": run.attempt.attempt, "run_dir": run.dir, "run_id": run_id,
             "accepted_invalid": ",".join(run.attempt.failed_names) if run.accepted else None,
             **study.params_of[run.point], **x} for x in run_rows(run.metrics)]


def aggregated_flow(label: str, flow_patterns: list[str]) -> bool:
    """Whether study.json carries a flow's statistics: the plan's `flows` select them, but the CPU, RFC 8867,
    frames and limits pseudo-flows always (properties of the whole call, of the sender's controller)."""
    return label in (CPU_FLOW, RFC_FLOW, LIMITS_FLOW) or label.startswith(FRAMES_PREFIX) or \
        any(fnmatch.fnmatchcase(label, pat) for pat in flow_patterns)


def flow_family(label: str) -> str:
    """The Metric.family whose metrics a flow's rows carry."""
    return {"bottleneck": "bottleneck", CONTROLLER_FLOW: "controller", CPU_FLOW: "cpu", RFC_FLOW: "rfc8867",
            LIMITS_FLOW: "limits"}.get(label, "frames" if label.startswith(FRAMES_PREFIX) else "flow")


def point_statistics(study: Study, collected: Collected) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """The per-point step: {point: {flow: {phase: {metric: summarise()}}}} over the point's runs, for the aggregated
    flows and the selected metrics (and the CPU's) of each flow's family; flows sorted by label, phases in the
    point's order (a phase no run scheduled last)."""
    groups: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    wanted: dict[str, bool] = {}
    for x in collected.rows:
        label = x["flow"]
        if label not in wanted:
            wanted[label] = aggregated_flow(label, study.flow_patterns)
        if wanted[label]:
            groups.setdefault(x["point"], {}).setdefault((label, x["phase"]), []).append(x)
    metrics = study.selected_metrics + list(CPU_CATALOGUE) + list(LIMITS_CATALOGUE)
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for name in study.point_names:
        phase_order = list(collected.phase_info[name])
        flows: dict[str, dict[str, dict[str, Any]]] = {}
        for (flow, phase), grp in groups.get(name, {}).items():
            family = flow_family(flow)
            stats: dict[str, Any] = {}
            for metric in metrics:
                if METRICS[metric].family != family:
                    continue
                present = [float(v) for v in (g.get(metric) for g in grp) if v is not None]
                stats[metric] = summarise(present)
            flows.setdefault(flow, {})[phase] = stats
        out[name] = {f: {ph: flows[f][ph] for ph in sorted(flows[f], key=lambda ph: phase_order.index(ph)
                                                            if ph in phase_order else 99)}
                     for f in sorted(flows)}
    return out


# --- present ------------------------------------------------------------------------------------------------------


def _invalid_note(study: Study, listing: Listing) -> str | None:
    """The warning every output carries when INVALID runs were used (--accept-invalid)."""
    if not listing.accepted_runs:
        return None
    return (f"INCLUDES {len(listing.accepted_runs)} INVALID run(s): repetitions without a valid run use an attempt "
            f"that failed only {', '.join(sorted(study.accept_invalid))} (--accept-invalid; column accepted_invalid)")


def write_parquet(out: Path, study: Study, rows: list[dict[str, Any]], listing: Listing) -> None:
    """OUT/study.parquet: the rows with fixed types (metrics float, parameters by their values' kind), the study's
    name and notes in the schema's metadata; written to a temporary file and renamed, so a reader never sees half."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    param_columns = study.param_columns
    columns: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for c in FIXED_COLUMNS + param_columns + list(METRICS):
        vals = [x.get(c) for x in rows]
        if c in METRICS or c in ("quick_factor", "phase_start_s", "phase_end_s"):
            columns[c], types[c] = vals, pa.float64()
        elif c in ("rep", "attempt", "ssrc"):
            columns[c], types[c] = vals, pa.int64()
        elif c == "phase_cross_traffic":
            columns[c], types[c] = vals, pa.bool_()
        elif c in param_columns:
            kind = _column_type(vals)
            if kind == "float":
                columns[c], types[c] = [None if v is None else float(v) for v in vals], pa.float64()
            elif kind == "bool":
                columns[c], types[c] = vals, pa.bool_()
            else:
                columns[c], types[c] = [_as_string(v) for v in vals], pa.string()
        else:
            columns[c], types[c] = [_as_string(v) for v in vals], pa.string()
    table = pa.table({c: pa.array(columns[c], type=types[c]) for c in columns})
    table = table.replace_schema_metadata({"rtclab_study": study.plan["study"], "quick_factor": str(study.quick_factor),
                                           "quick_note": study.plan.get("quick_note") or "",
                                           "invalid_note": _invalid_note(study, listing) or "",
                                           "phase_column": "every row is one phase"})
    tmp = out / "study.parquet.tmp"
    pq.write_table(table, tmp)
    tmp.replace(out / "study.parquet")


def study_doc(study: Study, listing: Listing, collected: Collected,
              statistics: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> dict[str, Any]:
    """study.json's content: what the statistics and boxes are over, the metrics' definitions, the plan's size, every
    attempt (used or why not) and per point its runs, phases, statistics and boxes."""
    plan, points = study.plan, study.points
    invalid_note = _invalid_note(study, listing)
    used_runs = (f"runs used: valid, or INVALID only for {', '.join(sorted(study.accept_invalid))}"
                 if listing.accepted_runs else "valid runs")
    out_points = []
    for p in points:
        name = p["name"]
        out_points.append({"name": name, "params": p.get("params"), "labels": p.get("labels"),
                           "settings": p.get("settings"), "scenario_file": p.get("scenario_file"),
                           "runs_used": listing.used_dirs[name], "n_runs": len(listing.used_dirs[name]),
                           "runs_left_out": [{"dir": x["dir"], "reason": x["reason"]} for x in listing.left_out
                                             if x["point"] == name],
                           "phases": [{"name": k, **v} for k, v in collected.phase_info[name].items()],
                           "flows": statistics[name], "distributions": collected.distributions[name]})
    counts: dict[str, int] = {}
    for listed in listing.runs:
        counts[listed["status"]] = counts.get(listed["status"], 0) + 1
    return {
        "study_format_version": STUDY_JSON_FORMAT_VERSION,
        "study": plan["study"], "description": plan.get("description", ""),
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "rtclab_version": RTCLAB_VERSION,
        "quick_factor": study.quick_factor, "quick_note": plan.get("quick_note"),
        "accept_invalid": sorted(study.accept_invalid), "invalid_note": invalid_note,
        "statistics": {
            "over": f"the {used_runs} of a point (one per repetition); a run where a metric is undefined (null in "
                    "its metrics.json) is left out of that metric's n; a chosen run whose metrics.json cannot be "
                    "read is left out of every n and listed with why (`left_out`, each point's `runs_left_out`)",
            "mean": "arithmetic mean", "sd": "sample standard deviation (n - 1); null when n < 2",
            "ci95": "mean -/+ t(0.975, n - 1) * sd / sqrt(n), Student's t; null when n < 2",
            "n": "runs with a value", "phase": "each statistic sits under its phase: 'all' is the whole call, the "
                                              "others as metrics.json defines phases (cross traffic)"},
        "distributions": {"over": f"the samples of the point's {used_runs} pooled "
                                  "(a run with more samples weighs more)",
                          "quantiles": "p5, p25, p50, p75, p95: numpy.percentile (linear interpolation) of the pooled "
                                       "samples; the box is p25-p50-p75, the whiskers p5 and p95",
                          "n_samples": "pooled samples", "n_runs": "runs that gave a sample",
                          "left_out": "runs whose samples could not be read (no or a damaged packets.parquet, no "
                                      "call_start for a phase), each with why",
                          "runs": f"the point's {used_runs}", **DISTRIBUTIONS},
        "metrics": {k: {"family": METRICS[k].family, "unit": METRICS[k].unit,
                        "definition": METRICS[k].definition} for k in study.selected_metrics + list(CPU_CATALOGUE)
                    + list(LIMITS_CATALOGUE)},
        "flows_aggregated": study.flow_patterns,
        "plan": {"repetitions": plan["repetitions"],
                 **({"repetitions_per_point": plan["repetitions_per_point"],
                     "repetitions_from": plan.get("repetitions_from")} if plan.get("repetitions_per_point") else {}),
                 "max_attempts": study.max_attempts, "seed": plan["seed"],
                 "shuffle": plan["shuffle"], "points": len(points), "runs_planned": len(plan["order"]),
                 "total_call_s": plan.get("total_call_s")},
        "summary": {"repetitions_with_valid_run": sum(1 for r in study.reps.values() if r.valid is not None),
                    "repetitions_without": len(listing.missing), "attempts": counts, "runs_used": len(
                        [e for e in listing.runs if e["used"]]), "runs_used_invalid": len(listing.accepted_runs),
                    "runs_left_out": len(listing.left_out),
                    "attempts_log_damaged_lines": study.log_damaged_lines},
        "runs": listing.runs, "excluded": listing.excluded, "missing": listing.missing, "left_out": listing.left_out,
        "points": out_points,
    }


def write_json(out: Path, doc: dict[str, Any]) -> None:
    """OUT/study.json, written to a temporary file and renamed, so a reader never sees half."""
    tmpj = out / "study.json.tmp"
    tmpj.write_text(json.dumps(doc, indent=1) + "\n")
    tmpj.replace(out / "study.json")


def text_summary(doc: dict[str, Any], metrics: tuple[str, ...] = ("throughput_bps", "queuing_delay_ms_mean",
                                                                   "loss_ratio_bytes", "tq_ms_mean")) -> str:
    """A short table of the forward video flow over the whole call, per point (mean +- CI half-width, n); in a study
    without a call (no forward video in any point), of the busiest forward TCP flow."""
    lines = []
    flow = "forward:video" if any("forward:video" in p["flows"] for p in doc["points"]) else "forward:tcp"
    if doc.get("quick_note"):
        lines.append(f"[{doc['quick_note']}]")
    if doc.get("invalid_note"):
        lines.append(f"[{doc['invalid_note']}]")
    head = ["point", "n"] + [f"{m} (all)" for m in metrics]
    body = []
    for p in doc["points"]:
        st = (p["flows"].get(flow) or {}).get("all") or {}
        cells = [p["name"], str(p["n_runs"])]
        for m in metrics:
            s = st.get(m) or {}
            if s.get("mean") is None:
                cells.append("-")
            else:
                hw = s.get("ci95_half_width")
                cells.append(f"{s['mean']:.4g}" + ("" if hw is None else f" ±{hw:.2g}"))
        body.append(cells)
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    over = "runs used (INVALID ones among them, above)" if doc.get("invalid_note") else "valid runs"
    lines.append(f"{flow} over the whole run; mean ±95% CI half-width (Student t) over the {over}")
    s = doc["summary"]
    lines.append(f"repetitions with a valid run: {s['repetitions_with_valid_run']}, without: {s['repetitions_without']}"
                 f"; attempts: {', '.join(f'{k} {v}' for k, v in sorted(s['attempts'].items())) or 'none'}")
    lines += left_out_lines(doc)
    return "\n".join(lines) + "\n"


def left_out_lines(doc: dict[str, Any]) -> list[str]:
    """What the study could not read, one line each with why: the chosen runs (study.json `left_out`; n is short of
    them) and the attempt log's damaged lines (summary `attempts_log_damaged_lines`)."""
    left_out = doc.get("left_out") or []
    lines = [f"{len(left_out)} run(s) left out, their repetition's n short of them:"] if left_out else []
    lines += [f"  {x['dir']}: {x['reason']}" for x in left_out]
    damaged = (doc.get("summary") or {}).get("attempts_log_damaged_lines") or []
    if damaged:
        lines.append(f"attempts.jsonl: {len(damaged)} damaged line(s) skipped (line {', '.join(map(str, damaged))}): "
                     "the attempts they recorded are classified without their start or end")
    return lines
