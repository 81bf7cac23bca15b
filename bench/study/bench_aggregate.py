"""Times `rtclab.study` aggregation (study.parquet + study.json) over many runs without placing a call: a few
synthetic runs are made with rtclab.synth and analysed for real (`rtclab analyze`), then their metrics.json and
manifest.json are copied into RUNS run directories of a study directory (points x repetitions), with the numbers
of each copy perturbed so that no two runs are the same, and the aggregation is timed.

    .venv/bin/python bench/study/bench_aggregate.py [--runs 1000] [--points 10] [--keep DIR]

Prints a line for the aggregation (runs, flows x phases rows, seconds, runs per second), then one for the study
dashboard written from it (OUT/dashboard.html: the runs carry no packets.parquet here, so the boxes hold Tq only
and the time series come from getStats). Results: bench/study/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rtclab import synth
from rtclab.analyze import analyze
from rtclab.study import aggregate as agg
from rtclab.study import dashboard, studydir
from rtclab_study import plan as planmod
from rtclab_study import spec


def _perturb(x: Any, rng: random.Random) -> Any:
    if isinstance(x, dict):
        return {k: _perturb(v, rng) for k, v in x.items()}
    if isinstance(x, list):
        return [_perturb(v, rng) for v in x]
    if isinstance(x, float):
        return x * (1 + rng.uniform(-0.05, 0.05))
    return x


def build(out: Path, runs: int, points: int, templates: int = 3) -> None:
    work = out.parent / "templates"
    metrics: list[tuple[str, str]] = []
    for i in range(templates):
        d = work / f"t{i}"
        synth.write_run(d, synth.SynthConfig(duration_s=12.0, tcp_start_s=3.0, tcp_stop_s=9.0, seed=100 + i,
                                             tcp_flows=1 + i, loss=0.005 * (i + 1)))
        analyze(d, run_tshark=False)  # what `rtclab analyze` writes, in this process (not the part timed)
        metrics.append(((d / "metrics.json").read_text(), (d / "manifest.json").read_text()))
    reps = -(-runs // points)
    study_file = out.parent / "bench.yaml"
    study_file.write_text("name: bench-aggregate\nbase: {duration_s: 12}\nshuffle: false\n"
                          f"repetitions: {reps}\npoints:\n" +
                          "".join(f"  - {{name: p{i}, set: {{duration_s: {12 + i}}}}}\n" for i in range(points)))
    plan = planmod.make(spec.load(study_file))
    planmod.write(plan, out)
    rng = random.Random(1)
    for n, pr in enumerate(plan.order[:runs]):
        d = studydir.attempt_dir(out, pr.point, pr.rep, 1)
        d.mkdir(parents=True)
        m_text, manifest = metrics[n % len(metrics)]
        m = _perturb(json.loads(m_text), rng)
        (d / "metrics.json").write_text(json.dumps(m))
        (d / "manifest.json").write_text(manifest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--points", type=int, default=10)
    ap.add_argument("--keep", help="build the study directory here and keep it")
    args = ap.parse_args(argv)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rtclab-bench-study-"))
    out = base / "study"
    try:
        t0 = time.perf_counter()
        build(out, args.runs, args.points)
        t_build = time.perf_counter() - t0
        t1, c1 = time.perf_counter(), time.process_time()
        doc = agg.aggregate(out, analyse_missing=False)
        t_agg, c_agg = time.perf_counter() - t1, time.process_time() - c1
        import pyarrow.parquet as pq
        rows = pq.read_metadata(out / "study.parquet").num_rows
        used = doc["summary"]["runs_used"]
        print(f"aggregated {used} runs ({rows} run x flow x phase rows, {args.points} points) in {t_agg:.2f} s "
              f"({c_agg:.2f} s of CPU): "
              f"{used / t_agg:.0f} runs/s; study.json {(out / 'study.json').stat().st_size / 1e6:.1f} MB, "
              f"study.parquet {(out / 'study.parquet').stat().st_size / 1e6:.1f} MB (set-up {t_build:.1f} s)")
        t2, c2 = time.perf_counter(), time.process_time()
        page = dashboard.write(out, doc)
        t_dash, c_dash = time.perf_counter() - t2, time.process_time() - c2
        print(f"dashboard of {used} runs in {t_dash:.2f} s ({c_dash:.2f} s of CPU): {page.stat().st_size / 1e6:.1f} MB")
        return 0 if used == args.runs else 1
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
