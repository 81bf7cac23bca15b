"""The per-run overhead of a study against what a user would otherwise write: a plain shell loop of
`node harness/cli.js --scenario S --duration D --out DIR` calls (each analysed by the harness, as in a study).

    flock /tmp/rtclab-realcalls.lock .venv/bin/python bench/study/bench_overhead.py [--runs 3] [--duration 10]
        [--scenario scenarios/default.yaml] [--rounds 1] [--aggregate-runs 1000]

Each round runs the shell loop, then a study of the same scenario with `repetitions: RUNS` (serial executor), on a
quiet machine (the caller holds the real-calls lock). Overhead of a run = everything but its call: wall time
minus the call's own duration (the manifest's call_end - call_start), i.e. set-up, teardown, analysis and, for the
study, its bookkeeping (the plan, the attempt log, classifying each run) and the final aggregation. Printed per
run for both, and their ratio (study / loop). The aggregation alone is timed on the study's own runs
(`rtclab_study aggregate`), and with --aggregate-runs K on K synthetic runs by bench_aggregate.py.
Results: bench/study/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parents[2]


def call_seconds(run_dir: Path) -> float:
    t = json.loads((run_dir / "manifest.json").read_text())["timings"]
    return float(t["call_end"] - t["call_start"]) if t.get("call_end") and t.get("call_start") else 0.0


def shell_loop(work: Path, scenario: Path, runs: int, duration_s: float) -> tuple[float, list[Path]]:
    dirs = [work / f"loop-{i}" for i in range(runs)]
    script = "".join(f"node harness/cli.js --scenario {scenario} --duration {duration_s:g} --out {d} >/dev/null 2>&1\n"
                     for d in dirs)
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", script], cwd=ROOT, check=False)
    return time.perf_counter() - t0, dirs


def study(work: Path, scenario: Path, runs: int, duration_s: float) -> tuple[float, list[Path], float]:
    f = work / "overhead.yaml"
    f.write_text(f"name: bench-overhead\nbase: {scenario}\npoints:\n  - name: only\n    set: {{duration_s: "
                 f"{duration_s:g}}}\n"
                 f"repetitions: {runs}\nmax_attempts: 1\nshuffle: false\n")
    out = work / "study"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtclab_study", "run", str(f), "--out", str(out)], cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    dirs = sorted((out / "runs" / "only").glob("*-1"))
    t1 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rtclab_study", "aggregate", str(out)], cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return wall, [d for d in dirs if d.is_dir()], time.perf_counter() - t1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0, help="call length in seconds")
    ap.add_argument("--scenario", default="scenarios/default.yaml")
    ap.add_argument("--rounds", type=int, default=1, help="shell loop then study, this many times")
    ap.add_argument("--aggregate-runs", type=int, default=0, help="also time aggregation over K synthetic runs")
    ap.add_argument("--keep", help="keep the runs here")
    args = ap.parse_args(argv)
    scenario = (ROOT / args.scenario).resolve()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rtclab-bench-overhead-"))
    try:
        loop_over: list[float] = []
        study_over: list[float] = []
        aggs: list[float] = []
        for r in range(args.rounds):
            work = base / f"round-{r}"
            work.mkdir(parents=True)
            wall, dirs = shell_loop(work, scenario, args.runs, args.duration)
            calls = sum(call_seconds(d) for d in dirs)
            loop_over.append((wall - calls) / args.runs)
            print(f"round {r + 1}: shell loop: {args.runs} runs in {wall:.1f} s, calls {calls:.1f} s, overhead "
                  f"{loop_over[-1]:.1f} s per run")
            wall, dirs, agg_s = study(work, scenario, args.runs, args.duration)
            calls = sum(call_seconds(d) for d in dirs)
            if len(dirs) != args.runs:
                print(f"round {r + 1}: the study made {len(dirs)} runs, not {args.runs}: see {work}")
                return 1
            study_over.append((wall - calls) / args.runs)
            aggs.append(agg_s)
            print(f"round {r + 1}: study:      {args.runs} runs in {wall:.1f} s, calls {calls:.1f} s, overhead "
                  f"{study_over[-1]:.1f} s per run (aggregating its {args.runs} runs again: {agg_s:.1f} s)")
        lo, so = fmean(loop_over), fmean(study_over)
        print(f"per-run overhead (wall - call): shell loop {lo:.1f} s, study {so:.1f} s, ratio {so / lo:.2f} "
              f"({args.rounds} round(s) x {args.runs} runs of {args.duration:g} s); study - loop = "
              f"{so - lo:+.1f} s per run, of which aggregation {fmean(aggs) / args.runs:.1f} s")
        if args.aggregate_runs:
            subprocess.run([sys.executable, str(ROOT / "bench" / "study" / "bench_aggregate.py"), "--runs",
                            str(args.aggregate_runs)], check=True)
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
