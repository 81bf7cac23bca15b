"""`python -m rtclab_study run FILE [--out DIR] [--dry-run] [--quick FACTOR] [--allow-dirty]`, `python -m rtclab_study
aggregate OUT`, `report OUT [--phase P] [--metric M]`, `archive OUT [--into DIR]` and `compare A B [--out FILE]` (also
`rtclab study ...`: rtclab/cli.py dispatches here). aggregate, report, archive and compare are the analyzer's
(rtclab.study); this CLI only offers them beside run, under one `rtclab study` command. `run` refuses a dirty git tree
unless --allow-dirty (tree.py). Exit status: 0 every repetition has a valid run; 3 some has none (invalid max_attempts
times); 2 a bad study file or a dirty tree (nothing ran) or a study directory that cannot be used; 130 interrupted
(resumable); 1 anything else."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from rtclab.study import aggregate as agg
from rtclab.study import plan as repplan
from rtclab.study import studydir

from . import executors, runner, spec, tree
from . import plan as planmod

# The repository whose tree a study runs from (the harness it starts is this one's).
REPO = spec.REPO_ROOT


def _plan(args: argparse.Namespace) -> planmod.Plan:
    study = spec.load(args.file)
    if args.repetitions_from:
        apply_repetitions_plan(study, Path(args.repetitions_from))
    return planmod.make(study, quick_factor=args.quick)


def apply_repetitions_plan(study: spec.Study, path: Path) -> None:
    """Each point's repetitions from a PLAN.json (`rtclab study plan --write`), checked against the study; the plan's
    file, hash, pilots and method go into plan.json (`repetitions_from`)."""
    try:
        doc = repplan.read_repetitions(path, study.name, [p.name for p in study.points])
    except repplan.PlanError as e:
        raise spec.StudyError(str(study.file), [str(e)]) from None
    study.repetitions_per_point = {str(k): int(v) for k, v in doc["repetitions"].items()}
    study.repetitions_from = {"file": planmod.repo_relative(path),
                              "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                              "pilots": doc.get("pilots"), "claims_file": doc.get("claims_file"),
                              "method": doc.get("method"), "study_file_repetitions": study.repetitions}


def target_study(pilot: Path, study_file: str | None) -> tuple[spec.Study, Path]:
    """The study a pilot plans: --study, else the full study its quick file shortens (plan.json quick_of), else the
    pilot's own study file (a pilot made of a full study's first runs)."""
    if study_file:
        path = Path(study_file)
    else:
        try:
            doc = json.loads((pilot / "plan.json").read_text())
        except (OSError, ValueError) as e:
            raise spec.StudyError(str(pilot), [f"no readable plan.json ({e}): not a study directory"]) from None
        rel = (doc.get("quick_of") or {}).get("file") or doc.get("study_file")
        if not rel:
            raise spec.StudyError(str(pilot), ["plan.json names no study file: give --study FILE"])
        path = Path(rel) if Path(rel).is_absolute() else REPO / rel
    return spec.load(path), path


def planned_target(study: spec.Study, path: Path) -> repplan.TargetStudy:
    """The study a repetitions plan is for: its points, calls and count, and each point's params, labels and
    settings as plan.json will hold them (where the findings read a sweep's x)."""
    default = spec.scenario_schema()["properties"]["duration_s"]["default"]
    return repplan.TargetStudy(
        name=study.name, file=planmod.repo_relative(path), points=[p.name for p in study.points],
        duration_s={p.name: float(p.doc.get("duration_s", default)) for p in study.points},
        repetitions=study.repetitions,
        point_plans=[{"name": p.name, "params": p.params, "labels": p.labels,
                      "settings": [{"path": x.path, "value": x.value} for x in p.settings]} for p in study.points])


def cmd_plan(args: argparse.Namespace) -> int:
    pilots = [Path(d) for d in args.pilot]
    try:
        study, path = target_study(pilots[0], args.study)
        target = planned_target(study, path)
        plan = repplan.make(pilots, target, Path(args.claims), power=args.power, cap=args.cap, ucl=args.ucl)
    except spec.StudyError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    except repplan.PlanError as e:
        print(f"rtclab study plan: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    print(repplan.text(plan), end="")
    if args.write:
        out = Path(args.write)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(repplan.to_json(plan), indent=1) + "\n")
        print(f"wrote {out}: run it with `rtclab study run {target.file} --repetitions-from {out} --out DIR`")
    return runner.EXIT_OK


def dry_run(plan: planmod.Plan, out: Path) -> str:
    """The runs in order, with what the study directory already holds, and the total call time."""
    lines = []
    note = plan.quick_note()
    if note:
        lines.append(f"[{note}]")
    s = plan.study
    lines.append(f"study {s.name}: {len(s.points)} point(s) x {runner.repetitions_text(s)} = {len(plan.order)} runs, "
                 f"{'shuffled with seed ' + str(s.seed) if s.shuffle else 'in plan order'}, up to {s.max_attempts} "
                 f"attempt(s) each; output {out}")
    for p in s.points:
        what = ", ".join(f"{x.path}={json.dumps(x.value)}" for x in p.settings) or "the base as it is"
        n = f"; {s.repetitions_of()[p.name]} repetition(s)" if s.repetitions_per_point is not None else ""
        lines.append(f"  point {p.name}: {plan.duration_s(p.name):g} s{n}; base {p.base_label}; {what}")
    reps = studydir.scan(out, [p.name for p in s.points], s.repetitions_of()) if (out / "plan.json").exists() else {}
    pending_s = 0.0
    pending = 0
    for i, r in enumerate(plan.order, start=1):
        rp = reps.get((r.point, r.rep))
        st = rp.state(s.max_attempts) if rp else "pending"
        tried = f", {len(rp.attempts)} attempt(s) so far" if rp and rp.attempts else ""
        if st == "pending":
            pending += 1
            pending_s += plan.duration_s(r.point)
        lines.append(f"  {i:4d}. {r.point} rep {r.rep}: {plan.duration_s(r.point):g} s call, {st}{tried}")
    over = runner.DEFAULT_OVERHEAD_S
    lines.append(f"total call time {runner.fmt_duration(plan.total_call_s)} for {len(plan.order)} runs; still to run: "
                 f"{pending} runs, {runner.fmt_duration(pending_s)} of calls, about "
                 f"{runner.fmt_duration(pending_s + pending * over)} with ~{over:g} s of set-up, teardown and "
                 f"analysis each (more when runs come out invalid and are re-run)")
    return "\n".join(lines) + "\n"


def make_executor(args: argparse.Namespace, out: Path, study: spec.Study) -> executors.Executor:
    """Serial (default), --parallel N, or --ray ADDRESS (executors.py, ray_executor.py)."""
    extra = ["--no-analyze"] if args.no_analyze else []
    if args.costs_from and args.parallel != "auto":
        raise executors.ExecutorError("--costs-from is for --parallel auto (the points' measured costs choose each "
                                      "run's CPUs only there)")
    if args.gather_captures and not args.ray:
        raise executors.ExecutorError("--gather-captures is for --ray (local runs keep their captures anyway)")
    if args.ray:
        if args.no_analyze and not args.gather_captures:
            raise executors.ExecutorError("--ray with --no-analyze needs --gather-captures: the driver can only "
                                          "analyse runs whose captures it has")
        from .ray_executor import RayExecutor
        return RayExecutor(args.ray, out, repo=Path(args.ray_repo) if args.ray_repo else spec.REPO_ROOT,
                           extra_args=extra, gather_captures=args.gather_captures)
    if args.parallel == "auto":
        from .packed import PackedExecutor
        return PackedExecutor(out, extra_args=extra, costs_from=cost_sources(args.costs_from or [], study))
    return executors.LocalExecutor(parallel=args.parallel, extra_args=extra)


def cost_sources(given: list[str], study: spec.Study) -> list[Path]:
    """The study directories whose runs measured the points' costs before this study: --costs-from, then the pilots
    of the repetitions plan it runs (repository-relative in PLAN.json), those that are still here."""
    dirs = [Path(d).resolve() for d in given]
    return dirs + [d for d in runner.pilot_dirs(study) if (d / "plan.json").is_file() and d not in dirs]


def stop_after_arg(text: str) -> float:
    """--stop-after's value in seconds: 90s, 20m, 1h30m, or a bare number of minutes."""
    text = text.strip()
    if text.isdigit():
        return float(text) * 60
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or m is None:
        raise argparse.ArgumentTypeError(f"must be a duration such as 45m, 1h30m or 600s, not {text!r}")
    h, mi, se = (int(x or 0) for x in m.groups())
    if h * 3600 + mi * 60 + se <= 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0, not {text!r}")
    return float(h * 3600 + mi * 60 + se)


def parallel_arg(text: str) -> int | str:
    """--parallel's value: a count, or `auto` (packed by each point's measured cost)."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of runs or auto, not {text!r}") from None


def cmd_run(args: argparse.Namespace) -> int:
    try:
        plan = _plan(args)
    except spec.StudyError as e:
        print(f"rtclab study: {e}\nnothing was run", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    except ValueError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    out = Path(args.out) if args.out else runner.default_out(plan.study.name, plan.quick_factor)
    out = out.resolve()
    if args.dry_run:
        print(dry_run(plan, out), end="")
        return runner.EXIT_OK
    try:
        executor = make_executor(args, out, plan.study)
    except executors.ExecutorError as e:
        print(f"rtclab study: {e}\nnothing was run", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    try:  # after the options' checks, which say what is wrong with the command whatever the tree
        state = tree.state(REPO)
        if state.dirty and not args.allow_dirty:
            raise tree.TreeError(tree.refusal(state))
    except tree.TreeError as e:
        executor.close()
        print(f"rtclab study: {e}\nnothing was run", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    try:
        code = runner.StudyRunner(plan, out, executor, tree_state=state, stop_after_s=args.stop_after).run()
    except executors.ExecutorError as e:  # during the study (e.g. every Ray node lost): resumable
        print(f"rtclab study: {e}\n{out} is resumable: run the same command again", file=sys.stderr)
        return runner.EXIT_FAILED
    except runner.StudyDirError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    if code in (runner.EXIT_INTERRUPTED, runner.EXIT_PAUSED):
        return code
    doc = agg.aggregate(out)
    print(agg.text_summary(doc), end="")
    print(f"wrote {out / 'study.json'}, {out / 'study.parquet'}, {_dashboard(out, doc)}")
    return code


def cmd_aggregate(args: argparse.Namespace) -> int:
    out = Path(args.out_dir)
    if not (out / "plan.json").exists():
        print(f"rtclab study: {out} holds no plan.json: not a study directory", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    accept = frozenset(n.strip() for arg in args.accept_invalid or [] for n in arg.split(",") if n.strip())
    try:
        doc = agg.aggregate(out, analyse_missing=not args.no_analyze, accept_invalid=accept)
    except ValueError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    print(agg.text_summary(doc), end="")
    print(f"wrote {out / 'study.json'}, {out / 'study.parquet'}, {_dashboard(out, doc)}")
    return runner.EXIT_OK


def _dashboard(out: Path, doc: dict[str, Any]) -> str:
    """Writes OUT/dashboard.html; the aggregation stands without it (and says why)."""
    from rtclab.study import dashboard
    try:
        return str(dashboard.write(out, doc))
    except Exception as e:  # e.g. a run's files unreadable: study.json and study.parquet are written already
        return f"no dashboard ({type(e).__name__}: {e})"


def cmd_report(args: argparse.Namespace) -> int:
    from rtclab.study import dashboard, report
    out = Path(args.out_dir)
    try:
        doc = report.load(out)
        metrics = report.check_metrics(args.metric)
        text = report.render(doc, args.phase, metrics)
    except report.StudyReportError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    print(text, end="")
    if not args.no_dashboard:
        print(f"wrote {dashboard.write(out, doc)}")
    return runner.EXIT_OK


def cmd_archive(args: argparse.Namespace) -> int:
    from rtclab.study import archive, report
    try:
        done = archive.archive(Path(args.out_dir), Path(args.into))
    except report.StudyReportError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    print(archive.describe(done))
    return runner.EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from rtclab.study import compare, report
    try:
        page, text = compare.write(Path(args.a), Path(args.b), Path(args.out) if args.out else None, args.phase,
                                   report.check_metrics(args.metric))
    except report.StudyReportError as e:
        print(f"rtclab study: {e}", file=sys.stderr)
        return runner.EXIT_BAD_STUDY
    print(text, end="")
    print(f"wrote {page}")
    return runner.EXIT_OK


def add_run_command(sub: Any) -> None:
    """`rtclab study run FILE` and its options (the longest list of the commands)."""
    r = sub.add_parser("run", help="run (or resume) every point x repetition, then aggregate")
    r.add_argument("file", help="study file (YAML), format in docs/studies.md")
    r.add_argument("--out", help="study directory (default: results/studies/<name>[-quick<F>])")
    r.add_argument("--dry-run", action="store_true", help="list the runs and the total call time; run nothing")
    r.add_argument("--quick", type=float, default=1.0, metavar="FACTOR",
                   help="scale durations and schedules by FACTOR (e.g. 0.1) for a first look; said in every output")
    r.add_argument("--allow-dirty", action="store_true",
                   help="run from a git tree with uncommitted changes or untracked files (refused otherwise); every "
                        "run is marked dirty")
    r.add_argument("--no-analyze", action="store_true",
                   help="do not analyse each run after its call (aggregation analyses the valid ones it uses)")
    where = r.add_mutually_exclusive_group()
    where.add_argument("--parallel", type=parallel_arg, metavar="N|auto",
                       help="N runs at once on this machine, each pinned to its own group of CPUs (at most one "
                            "run per CPU); a run whose CPUs were over 90%% busy during its call is invalid. auto: "
                            "as many CPUs per run as its point's runs measured (a point not measured yet runs "
                            "alone first; docs/studies.md, Executors)")
    where.add_argument("--ray", metavar="ADDRESS",
                       help="run on a Ray cluster (auto, or the head's host:port): one run per rtclab_slot, each "
                            "analysed on its node, the small files gathered here (docs/studies.md, Executors)")
    r.add_argument("--ray-repo", metavar="PATH",
                   help="the rtclab repository on every Ray node (default: this one's path)")
    r.add_argument("--gather-captures", action="store_true",
                   help="with --ray: bring every file of each run here, captures and packets.parquet included")
    r.add_argument("--repetitions-from", metavar="PLAN.json",
                   help="each point's repetitions from a plan written by `rtclab study plan --write` (instead of the "
                        "study file's count; recorded in plan.json); not into the pilot's directory")
    r.add_argument("--costs-from", action="append", metavar="DIR",
                   help="with --parallel auto: the points' costs measured in this study directory too (e.g. the "
                        "quick pilot; the pilots of --repetitions-from count without it), so that no point's first "
                        "run must run alone to measure it (repeatable)")
    r.add_argument("--stop-after", type=stop_after_arg, metavar="DURATION",
                   help="start no run after DURATION (e.g. 45m, 1h30m), let the running ones end, and stop with exit "
                        "4; run the same command again to go on (the machine free between two slices)")
    r.set_defaults(func=cmd_run)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rtclab study", description="Batches of real calls from a study file.")
    sub = p.add_subparsers(dest="command", required=True)
    add_run_command(sub)
    pl = sub.add_parser("plan", help="the repetitions per point each claim reading the study needs to be decided, "
                        "from a pilot's measured variance (docs/studies.md, Planning repetitions from a pilot)")
    pl.add_argument("pilot", nargs="+", metavar="DIR",
                    help="the pilot: an aggregated study directory (a quick study, or a full study's first runs); "
                         "then the pilots of the studies its difference claims compare it with")
    pl.add_argument("--claims", default=str(spec.REPO_ROOT / "studies" / "findings.yaml"), metavar="FILE",
                    help="the claims file (default: studies/findings.yaml)")
    pl.add_argument("--study", metavar="FILE",
                    help="the study file to plan (default: the full study the pilot's quick file shortens, else the "
                         "pilot's own)")
    pl.add_argument("--cap", type=int, default=repplan.DEFAULT_CAP, metavar="N",
                    help=f"at most N runs per point (default {repplan.DEFAULT_CAP})")
    pl.add_argument("--power", type=float, default=repplan.DEFAULT_POWER, metavar="P",
                    help="the probability of a decided interval when the true value is the pilot's (default "
                         f"{repplan.DEFAULT_POWER})")
    pl.add_argument("--ucl", type=float, default=repplan.DEFAULT_UCL, metavar="C",
                    help="plan with the pilot SD's one-sided C upper confidence limit (default 0.8, Browne 1995; 0: "
                         "the SD as measured)")
    pl.add_argument("--write", metavar="PLAN.json", help="write the plan for `run --repetitions-from`")
    pl.set_defaults(func=cmd_plan)
    a = sub.add_parser("aggregate", help="study.parquet and study.json from a study directory's runs")
    a.add_argument("out_dir")
    a.add_argument("--no-analyze", action="store_true", help="leave out valid runs without metrics.json")
    a.add_argument("--accept-invalid", action="append", metavar="CHECK[,CHECK]",
                   help="use a repetition's last attempt that failed only these validity checks when it has no valid "
                        "one (e.g. host_cpu_not_saturated on a small machine); every output says so")
    a.set_defaults(func=cmd_aggregate)
    rp = sub.add_parser("report", help="terminal tables per phase, point and flow, and OUT/dashboard.html")
    rp.add_argument("out_dir")
    rp.add_argument("--phase", help="one phase (default: the cross-traffic phase when there is one, then 'all')")
    rp.add_argument("--metric", action="append", help="a metric of the catalogue (repeatable; default: the key ones)")
    rp.add_argument("--no-dashboard", action="store_true", help="print the tables only")
    rp.set_defaults(func=cmd_report)
    ar = sub.add_parser("archive", help="the study's compact copy for the repository (results-archive/<name>/): "
                        "what findings and report read, no captures")
    ar.add_argument("out_dir")
    ar.add_argument("--into", default=str(spec.REPO_ROOT / "results-archive"),
                    help="the archive (default: the repository's results-archive/)")
    ar.set_defaults(func=cmd_archive)
    c = sub.add_parser("compare", help="two aggregated studies side by side: shared points, both CIs, difference")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--out", help="the HTML page (default: A/compare-with-<B's directory name>.html)")
    c.add_argument("--phase", help="one phase (default: the cross-traffic phase when there is one, then 'all')")
    c.add_argument("--metric", action="append", help="a metric of the catalogue (repeatable; default: the key ones)")
    c.set_defaults(func=cmd_compare)
    args = p.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
