#!/usr/bin/env python3
"""A run's CPU, before and after the cuts of docs/harness.md ("A run's CPU"), side by side: the same scenario run as
it was set up before them (both browsers send media, each page draws its local preview) and as it is now (media a -> b
only, no preview), alternately, through the product itself (`node harness/cli.js --no-analyze`). Per set-up it prints
each component's mean CPU over the call (from the run's own cpu.jsonl, in cores: 1.0 = one core busy), the host's
total (/proc/stat), the ratio after/before and the run's validity.

  .venv/bin/python bench/cpu/cost.py                                  # the default call, 2 pairs of 60 s
  .venv/bin/python bench/cpu/cost.py --setups c16-fq8 --pairs 1       # Carlucci 2016 (c) quick, FQ-CoDel, 8 CUBIC
  .venv/bin/python bench/cpu/cost.py --setups default,c16-fq8 --duration 40
  .venv/bin/python bench/cpu/cost.py --budget RUN_DIR...            # the table for runs already made (a study's)

Not a timed test: the numbers depend on the machine and on what else runs on it; run it with nothing else running.
Results with their commands in bench/cpu/RESULTS.md. Run as root from the repository (namespaces, tc, captures).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from rtclab import cpu, rundir

ROOT = Path(__file__).resolve().parents[2]

# name -> (base scenario, fields set on it by dotted path, default duration in seconds); c16-fq8 is the point of
# studies/carlucci2016/c-tcp-10mbps-quick.yaml that was invalid for CPU before the cuts.
SETUPS: dict[str, tuple[str, dict[str, Any], float]] = {
    "default": ("scenarios/default.yaml", {}, 60),
    "c16-fq8": ("scenarios/repro/carlucci2016-tcp-quick.yaml", {
        "network.forward.qdisc": {"kind": "fq_codel", "target_ms": 13, "interval_ms": 100, "limit_packets": 10240},
        "cross_traffic": [{"kind": "tcp", "flows": 8, "congestion_control": "cubic", "start_s": 25, "stop_s": 75}],
    }, 100),
}

# How runs were set up before the cuts: both browsers send, both pages draw their local preview.
BEFORE = {"call.direction": "both", "call.local_preview": True}


def with_fields(doc: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    for dotted, value in fields.items():
        *parents, last = dotted.split(".")
        node = doc
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return doc


def scenario_file(setup: str, before: bool, work: Path) -> Path:
    base_file, fields, _ = SETUPS[setup]
    doc = with_fields(yaml.safe_load((ROOT / base_file).read_text()), fields)
    if before:
        doc = with_fields(doc, BEFORE)
    path = work / f"{setup}-{'before' if before else 'after'}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cpu_over_call(run: Path) -> dict[str, Any]:
    """Mean cores per component and of the host over the call, as the analyzer computes them (metrics.json `cpu`,
    docs/metrics.md), with the run's validity."""
    r = rundir.load(run)
    t0, t1 = r.call_start_s, r.call_end_s
    if t0 is None or t1 is None:
        raise SystemExit(f"{run}: the call never started (see {run}.log)")
    use = cpu.analyse(rundir.read_cpu(r), t0, t1 - t0, (r.manifest.get("host") or {}).get("cpus"))
    if use is None or not use["window"]["samples"]:
        raise SystemExit(f"{run}: no cpu.jsonl sample within the call")
    components = {name: e["mean_cores"] for name, e in use["components"].items()}
    components[cpu.OUTSIDE] = use["outside_run"]["mean_cores"]
    checks = r.manifest.get("validity") or {}
    return {"host": use["host_busy"]["mean_cores"], "cpus": use["cpus"], "components": components,
            "valid": bool(checks.get("valid")), "failed": [c["name"] for c in checks.get("checks", []) if not c["ok"]]}


def run_call(scenario: Path, duration: float, out: Path) -> dict[str, Any]:
    cmd = ["node", "harness/cli.js", "--scenario", str(scenario), "--duration", str(duration), "--out",
           str(out), "--no-analyze"]
    with open(out.with_suffix(".log"), "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if not (out / "cpu.jsonl").exists():
        raise SystemExit(f"the run did not start (exit status {code}): see {out.with_suffix('.log')}")
    return cpu_over_call(out)


def table(setup: str, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    def mean(runs: list[dict[str, Any]], key: str) -> float:
        return sum(r["components"].get(key, 0.0) for r in runs) / len(runs)
    names = sorted({k for r in before + after for k in r["components"]}, key=lambda k: -mean(before, k))
    rows = [f"{setup}: mean CPU over the call, cores (1.0 = one core), {len(before)} run(s) each",
            f"{'component':<18} {'before':>7} {'after':>7} {'after/before':>13}"]
    for name in names:
        b, a = mean(before, name), mean(after, name)
        rows.append(f"{name:<18} {b:7.3f} {a:7.3f} {(a / b if b > 0.0005 else float('nan')):13.2f}")
    hb = sum(r["host"] for r in before) / len(before)
    ha = sum(r["host"] for r in after) / len(after)
    rows.append(f"{'host (/proc/stat)':<18} {hb:7.3f} {ha:7.3f} {ha / hb:13.2f}   ({100 * (1 - ha / hb):.0f} % less)")
    for label, runs in (("before", before), ("after", after)):
        rows.append(f"  {label}: host per run " + ", ".join(f"{r['host']:.3f}" for r in runs) + "; validity " +
                    ", ".join("valid" if r["valid"] else "INVALID (" + ", ".join(r["failed"]) + ")" for r in runs))
    return "\n".join(rows)


def budget(runs: list[Path]) -> str:
    """One column per run: each component's mean cores over the call, the host's, and the headroom left."""
    found = [(run, cpu_over_call(run)) for run in runs]
    # A study's runs are all called 1-1, 1-2 ...: then their point names them too.
    unique = len({run.name for run in runs}) == len(runs)
    labels = [run.name if unique else f"{run.parent.name}/{run.name}" for run in runs]
    names = sorted({k for _, r in found for k in r["components"]},
                   key=lambda k: -max(r["components"].get(k, 0) for _, r in found))
    width = max(12, *(len(label) for label in labels))
    rows = [f"{'component':<18} " + " ".join(f"{label:>{width}}" for label in labels)]
    for name in names:
        rows.append(f"{name:<18} " + " ".join(f"{r['components'].get(name, 0.0):>{width}.3f}" for _, r in found))
    cpus = [r["cpus"] or 2 for _, r in found]
    rows.append(f"{'host (/proc/stat)':<18} " + " ".join(f"{r['host']:>{width}.3f}" for _, r in found))
    rows.append(f"{'headroom to 90 %':<18} "
                + " ".join(f"{0.9 * n - r['host']:>{width}.3f}" for n, (_, r) in zip(cpus, found)))
    rows.append(f"{'validity':<18} " + " ".join(f"{'valid' if r['valid'] else 'INVALID':>{width}}" for _, r in found))
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setups", default="default", help=f"comma-separated, of: {', '.join(SETUPS)}")
    ap.add_argument("--pairs", type=int, default=2, help="before/after pairs per set-up (run alternately)")
    ap.add_argument("--duration", type=float, default=None, help="call length in s (default: the set-up's)")
    ap.add_argument("--out", type=Path, default=None, help="where the run directories go (default: a temporary one)")
    ap.add_argument("--budget", type=Path, nargs="+", default=None, metavar="RUN_DIR",
                    help="print the per-component table of these runs (made already) and run nothing")
    args = ap.parse_args()
    if args.budget:
        print(budget(args.budget))
        return 0
    setups = args.setups.split(",")
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        ap.error(f"unknown set-up(s) {', '.join(unknown)}; known: {', '.join(SETUPS)}")
    work = args.out or Path(tempfile.mkdtemp(prefix="rtclab-cpu-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, runs in {work}", flush=True)
    for setup in setups:
        duration = args.duration or SETUPS[setup][2]
        results: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        for i in range(args.pairs):
            for before in (True, False):
                label = "before" if before else "after"
                print(f"{setup} pair {i + 1}/{args.pairs}: {label} ({duration:.0f} s call) ...", flush=True)
                r = run_call(scenario_file(setup, before, work), duration, work / f"{setup}-{label}-{i + 1}")
                verdict = "valid" if r["valid"] else "INVALID " + ", ".join(r["failed"])
                print(f"  host {r['host']:.3f} cores, {verdict}", flush=True)
                results[before].append(r)
        print(table(setup, results[True], results[False]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
