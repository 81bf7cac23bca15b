"""The `rtclab` command: analyze, dashboard, compare, show, synth, revalidate; export (tables, Flent files) and
import (an RTC event log, a getStats dump);
study (studies), findings; call, net and clean (the Node harness and netem, started from here).
Exit 0 when a report was produced (even with warnings), 2 when nothing could be analysed, 1 on a usage error;
revalidate: 0 no verdict changed, 1 one did, 2 a bad directory; export and import: 0 written, 2 not (the reason on
stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _progress(quiet: bool):
    if quiet:
        return None
    if sys.stderr.isatty():
        from rich.console import Console
        console = Console(stderr=True)
        return lambda what: console.print(f"[dim]rtclab: {what}...[/dim]")
    return lambda what: print(f"rtclab: {what}...", file=sys.stderr, flush=True)


def cmd_analyze(args: argparse.Namespace) -> int:
    from . import dashboard
    from .analyze import NothingToAnalyse, _json_default, analyze
    from .report import render

    run = Path(args.run_dir)
    try:
        m, table = analyze(run, run_tshark=not args.no_tshark, progress=_progress(args.quiet or args.json))
    except NothingToAnalyse as e:
        print(f"rtclab: nothing to analyse: {e}", file=sys.stderr)
        return 2
    text = render(m)
    (run / "report.txt").write_text(text)
    if not args.no_dashboard:
        try:
            dashboard.write(run, m, table)
        except Exception as e:  # the report stands without its dashboard; say why
            print(f"rtclab: dashboard not written: {type(e).__name__}: {e}", file=sys.stderr)
    if args.json:
        print(json.dumps(m, indent=1, default=_json_default))
    else:
        print(text, end="")
        print(f"wrote {run / 'metrics.json'}, {run / 'report.txt'}, {run / 'packets.parquet'}"
              + ("" if args.no_dashboard else f", {run / 'dashboard.html'}"))
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    """Rebuilds dashboard.html from metrics.json and packets.parquet: no capture is read, nothing re-analysed."""
    from . import dashboard
    run = Path(args.run_dir)
    try:
        path = dashboard.rebuild(run)
    except dashboard.DashboardError as e:
        print(f"rtclab: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from . import compare
    runs = [Path(p) for p in args.run_dirs]
    try:
        path, text = compare.write(runs, Path(args.out) if args.out else None, progress=_progress(args.quiet))
    except compare.CompareError as e:
        print(f"rtclab: {e}", file=sys.stderr)
        return 2
    print(text, end="")
    print(f"wrote {path}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from . import detail
    try:
        print(detail.show(Path(args.run_dir), args.side, frame=args.frame, flow=args.flow, limit=args.limit))
    except detail.DetailError as e:
        print(f"rtclab: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    from . import synth
    cfg = synth.SynthConfig(duration_s=args.duration, tcp_flows=args.tcp_flows, loss=args.loss, seed=args.seed,
                            video_pps=args.video_pps, tcp_pps=args.tcp_pps, snaplen=args.snaplen,
                            frames=args.frames or args.stall is not None,
                            stall_s=(args.stall[0], args.stall[1]) if args.stall is not None else None)
    truth = synth.write_run(Path(args.run_dir), cfg)
    print(f"wrote {args.run_dir}: {len(truth.t_send_ns)} forward packets, {int(truth.lost.sum())} lost, "
          f"{int(truth.duplicated.sum())} duplicated")
    return 0


# `rtclab call`, `rtclab net` and `rtclab clean` are the Node programs of the repository this package was installed
# from (editable, by scripts/setup.sh): one command family for users, whatever the language of each part.
NODE_PROGRAMS = {"call": "harness/cli.js", "net": "netem/cli.js", "clean": "harness/clean.js"}
REPO = Path(__file__).resolve().parents[2]


def cmd_findings(args: argparse.Namespace) -> int:
    """The reference studies' claims and RFC 8867's cases beside what the given study directories measured."""
    from . import findings, findings_page
    from .study import archive
    out_md = Path(args.out)
    out_html = Path(args.html)
    dirs = [Path(d) for d in args.study_dirs] or archive.study_dirs()
    try:
        if args.check:
            diff = findings_page.check(dirs, out_md, Path(args.claims))
            if diff is not None:
                print(f"rtclab findings --check: {out_md} is not what {len(dirs)} stud(ies) give: {diff}\n"
                      "regenerate it (npm run findings) or archive the studies it was made from", file=sys.stderr)
                return 1
            print(f"{out_md} is what {len(dirs)} stud(ies) give, byte for byte")
            return 0
        found = findings_page.write(dirs, out_md, out_html, Path(args.claims))
    except findings.FindingsError as e:
        print(f"rtclab findings: {e}", file=sys.stderr)
        return 2
    for f in found:
        print(f"{f.claim['id']:<28} {f.verdict}" + (f" ({f.study.name})" if f.study else ""))
    print(f"wrote {out_md}, {out_html}")
    return 0


def cmd_revalidate(args: argparse.Namespace) -> int:
    """Today's analyzer validity rules applied again to recorded runs (revalidate.py). Exit 0 when no run's verdict
    changed, 1 when one did (valid <-> INVALID), 2 when a directory is neither a run nor a study."""
    from . import validity
    from .revalidate import RevalidateError, describe, reaggregate, revalidate_run, run_dirs
    try:
        bounds = validity.load_bounds()
        targets = [(Path(d), *run_dirs(Path(d))) for d in args.dirs]
    except (RevalidateError, validity.BoundsError) as e:
        print(f"rtclab revalidate: {e}", file=sys.stderr)
        return 2
    flipped = judged = skipped = 0
    for root, runs, is_study in targets:
        outcomes = [revalidate_run(r, bounds, args.write) for r in runs]
        for o in outcomes:
            print(describe(o, root))
        flipped += sum(o.flipped for o in outcomes)
        skipped += sum(o.skipped is not None for o in outcomes)
        judged += sum(o.skipped is None for o in outcomes)
        if is_study and args.write:
            try:
                reaggregate(root)
                print(f"{root}: aggregated again (study.json, study.parquet)")
            except (ValueError, OSError) as e:
                print(f"rtclab revalidate: {root}: not aggregated again: {e}", file=sys.stderr)
    print(f"{flipped} of {judged} runs changed verdict ({skipped} skipped)"
          + ("; metrics.json updated" if args.write else "; nothing written (--write updates metrics.json)"))
    return 1 if flipped else 0


def cmd_export(args: argparse.Namespace) -> int:
    """A run's or a study's metrics as a tidy table (csv, parquet), or a run's time series as a Flent file."""
    from .exports import flent, tidy
    try:
        if args.format == "flent":
            path, doc = flent.export(Path(args.target), Path(args.out) if args.out else None)
            print(f"wrote {path}: {len(doc['results'])} series, {len(doc['x_values'])} points each "
                  f"(Flent test {doc['metadata']['NAME']})")
        else:
            path, n = tidy.export(Path(args.target), args.format, Path(args.out) if args.out else None)
            print(f"wrote {path}: {n} rows")
    except tidy.ExportError as e:
        print(f"rtclab export {args.format}: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_import_eventlog(args: argparse.Namespace) -> int:
    """A real call's RTC event log made into a run directory marked imported (imports/eventlog.py)."""
    from .imports import eventlog
    source = Path(args.file)
    out = Path(args.out) if args.out else Path(f"imported-{source.name.removesuffix('.log')}")
    try:
        doc = eventlog.import_eventlog(source, out, args.call_start, args.call_end)
    except eventlog.EventLogImportError as e:
        print(f"rtclab import eventlog: {e}", file=sys.stderr)
        return 2
    print((out / "report.txt").read_text(), end="")
    print(f"wrote {out} (imported.json, report.txt, dashboard.html, eventlog-a.log)")
    return 0 if doc["congestion_controller"] and doc["congestion_controller"]["sides"].get("a") else 2


def cmd_import_getstats(args: argparse.Namespace) -> int:
    """A field call's getStats dump made into run directories marked imported (imports/getstats_dump.py)."""
    from .imports import getstats_dump
    source = Path(args.file)
    out = Path(args.out) if args.out else Path(f"imported-{source.name.split('.')[0]}")
    try:
        calls = getstats_dump.import_dump(args.kind, source, out, args.side)
    except getstats_dump.DumpError as e:
        print(f"rtclab import {args.kind}: {e}", file=sys.stderr)
        return 2
    for c in calls:
        print((c.run_dir / "report.txt").read_text(), end="")
        print(f"wrote {c.run_dir} (call {c.call_id}: peer connection {c.peer_connection}, {c.samples} getStats "
              "samples; manifest.json, metrics.json, report.txt, dashboard.html)")
    return 0


def run_node_program(name: str, args: list[str]) -> int:
    """Runs `node <repo>/<program> args` in the current directory (relative paths stay the user's) and returns its
    exit status; its output is the terminal's. A Ctrl-C reaches it as it reaches us (the same process group)."""
    import shutil
    import subprocess
    program = REPO / NODE_PROGRAMS[name]
    node = shutil.which("node")
    if node is None or not program.exists():
        print(f"rtclab {name}: needs node and {program} (run scripts/setup.sh in the rtclab repository)",
              file=sys.stderr)
        return 2
    try:
        return subprocess.call([node, str(program), *args])
    except KeyboardInterrupt:
        return 130


def _exchange_parsers(sub: Any) -> None:
    """`rtclab export` and `rtclab import`: data out to other tools, a field call's log in (docs/export.md)."""
    x = sub.add_parser("export", help="a run's or a study's metrics as a tidy table (csv, parquet), or a run's time "
                       "series as a Flent data file (docs/export.md)")
    x.add_argument("format", choices=["csv", "parquet", "flent"])
    x.add_argument("target", metavar="RUN|STUDY", help="an analysed run directory, or an aggregated study directory "
                   "(csv, parquet; flent takes a run)")
    x.add_argument("--out", help="the file to write (default: <directory name>.metrics.csv / .metrics.parquet / "
                   ".flent.gz in the current directory)")
    x.set_defaults(func=cmd_export)
    i = sub.add_parser("import", help="a real call's RTC event log or getStats dump as a run directory marked "
                       "imported, without captures (docs/eventlog.md, docs/export.md)")
    isub = i.add_subparsers(dest="kind", required=True)
    e = isub.add_parser("eventlog", help="Chrome's RTC event log of the sending browser")
    e.add_argument("file", metavar="FILE")
    e.add_argument("--out", metavar="RUNDIR", help="the run directory to make (new or empty; default: "
                   "imported-<file name> in the current directory)")
    e.add_argument("--call-start", type=float, metavar="UNIX_S", help="count from this time (default: the log's "
                   "first outgoing RTP packet or estimate)")
    e.add_argument("--call-end", type=float, metavar="UNIX_S", help="count until this time (default: the log's last)")
    e.set_defaults(func=cmd_import_eventlog)
    for kind, what in (("webrtc-internals", "a chrome://webrtc-internals dump (JSON, or gzipped)"),
                       ("rtcstats", "an rtcstats dump (rtcstats-server's line-based JSON, or gzipped)")):
        g = isub.add_parser(kind, help=f"{what}: each peer connection a call, its getStats timeline, report and "
                            "dashboard as for a lab call, without captures (docs/export.md)")
        g.add_argument("file", metavar="FILE")
        g.add_argument("--out", metavar="DIR", help="the run directory to make (new or empty; default: "
                       "imported-<file name> in the current directory); with several calls, one run directory per "
                       "call in it (c1, c2, ...)")
        g.add_argument("--side", choices=["a", "b"], default="a", help="which side of a lab run the browser that "
                       "saved the dump stands for: a (default; its sending is the forward direction) or b")
        g.set_defaults(func=cmd_import_getstats)


def parser() -> argparse.ArgumentParser:
    """The analyzer's own commands (the study, call, net and clean ones are listed for --help; main hands them on
    before parsing)."""
    p = argparse.ArgumentParser(prog="rtclab", description="Analyse rtclab run directories; run and aggregate studies.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("study",
                   help="studies of many runs: rtclab study run FILE | aggregate OUT | report OUT | compare A B "
                   "(docs/studies.md)")
    sub.add_parser("call",
                   help="place a call: the harness (npm run call), e.g. rtclab call --scenario FILE (docs/harness.md)")
    sub.add_parser("net",
                   help="the emulated network alone (npm run net): rtclab net up|show|down|clean (docs/netem.md)")
    sub.add_parser("clean",
                   help="remove what interrupted runs left: networks, browser profiles (npm run clean)")
    a = sub.add_parser("analyze", help="report + metrics.json + packets.parquet + dashboard.html for one run")
    a.add_argument("run_dir")
    a.add_argument("--json", action="store_true", help="print the metrics as JSON instead of the report")
    a.add_argument("--no-tshark", action="store_true", help="skip the tshark jitter cross-check")
    a.add_argument("--no-dashboard", action="store_true")
    a.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    a.set_defaults(func=cmd_analyze)
    d = sub.add_parser("dashboard",
                       help="rebuild dashboard.html from metrics.json and packets.parquet (no re-analysis)")
    d.add_argument("run_dir")
    d.add_argument("-q", "--quiet", action="store_true")
    d.set_defaults(func=cmd_dashboard)
    c = sub.add_parser("compare", help="side-by-side table and comparison dashboard of several runs")
    c.add_argument("run_dirs", nargs="+")
    c.add_argument("--out", help="HTML file to write (default: compare.html in the current directory)")
    c.add_argument("-q", "--quiet", action="store_true")
    c.set_defaults(func=cmd_compare)
    s = sub.add_parser("show", help="one packet or one flow in full Wireshark detail (pyshark)")
    s.add_argument("run_dir")
    s.add_argument("--side", choices=["a", "b"], default="a", help="which capture (default a)")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--frame", type=int, help="frame number in that capture (packets.parquet: frame_send/frame_recv)")
    g.add_argument("--flow", type=int, help="flow id from metrics.json: its packets, one line each")
    s.add_argument("--limit", type=int, default=20, help="packets shown for --flow")
    s.set_defaults(func=cmd_show)
    f = sub.add_parser("findings", help="each reference claim and RFC 8867 case beside what the given studies "
                       "measured, with a verdict and each study's provenance: a Markdown page and an HTML dashboard "
                       "(docs/studies.md)")
    f.add_argument("study_dirs", nargs="*", help="study directories or archived studies (aggregated: study.json; "
                   "default: every study of results-archive/); a claim whose study is not among them is shown as not "
                   "run, with its command")
    f.add_argument("--claims", default=str(REPO / "studies" / "findings.yaml"), help="the claims file")
    f.add_argument("--out", default=str(REPO / "docs" / "findings.md"),
                   help="the Markdown page (default: the repository's docs/findings.md)")
    f.add_argument("--html", default=str(REPO / "results" / "findings.html"),
                   help="the dashboard (default: the repository's results/findings.html)")
    f.add_argument("--check", action="store_true", help="write nothing: compare the page the studies give with "
                   "--out byte for byte; exit 1 naming the first difference")
    f.set_defaults(func=cmd_findings)
    r = sub.add_parser("revalidate", help="apply today's analyzer validity rules to recorded runs (run or study "
                       "directories) and say which runs change verdict; exit 1 when one does (docs/analyzer.md)")
    r.add_argument("dirs", nargs="+", metavar="DIR", help="run directories, or study directories (every run of them)")
    r.add_argument("--write", action="store_true", help="update each run's metrics.json validity and frames, and "
                   "aggregate a study again")
    r.set_defaults(func=cmd_revalidate)
    _exchange_parsers(sub)
    y = sub.add_parser("synth", help="write a synthetic run directory (known delays, loss, reordering)")
    y.add_argument("run_dir")
    y.add_argument("--duration", type=float, default=20.0)
    y.add_argument("--tcp-flows", type=int, default=1)
    y.add_argument("--loss", type=float, default=0.01)
    y.add_argument("--video-pps", type=float, default=250.0)
    y.add_argument("--tcp-pps", type=float, default=400.0)
    y.add_argument("--snaplen", type=int, default=256)
    y.add_argument("--seed", type=int, default=1)
    y.add_argument("--frames", action="store_true", help="also the receiving page's per-frame record, frames-b.jsonl")
    y.add_argument("--stall", type=float, nargs=2, metavar=("FROM_S", "TO_S"),
                   help="with the frames: show none of the frames sent in this interval (a freeze)")
    y.set_defaults(func=cmd_synth)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["study"]:  # its own parser: rtclab study run FILE ... | aggregate OUT (docs/studies.md)
        # The one rtclab module that names the orchestrator, the package rtclab_study: it sits upstream of the
        # analyzer (it imports rtclab and drives Node and Ray), so no other rtclab module may import it
        # (test_package_split.py). `rtclab study ...` dispatches to it so that one console command runs and analyses
        # studies; the import is lazy, inside this branch, so that importing rtclab never loads the orchestrator.
        from rtclab_study.__main__ import main as study_main
        return study_main(argv[1:])
    if argv[:1] and argv[0] in NODE_PROGRAMS:  # rtclab call [--scenario FILE ...], rtclab net up|down ..., clean
        return run_node_program(argv[0], argv[1:])
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
