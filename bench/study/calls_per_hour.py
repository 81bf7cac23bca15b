"""Valid runs per hour: the same study file run serially and with another executor (`--parallel auto` by default,
or `--parallel N`), one after the other from the same commit, then `rtclab study compare` of the two, so that what a
claim reads can be seen not to move when runs share the machine.

    flock /tmp/rtclab-quiet.lock .venv/bin/python bench/study/calls_per_hour.py STUDY.yaml [--parallel auto|N]
        [--costs-from PILOT_DIR] [--quick F] [--out DIR]

Per executor: the wall time of the whole `rtclab study run` (set-up, calls, analysis, aggregation), the attempts and
the valid runs it made (study.json summary), and valid runs per hour = valid runs / wall hours. Then the ratio of the
second to serial, and the comparison page of the two study directories (the key metrics per shared point, both CIs
and their difference). Run it on a quiet machine (the caller holds the lock): anything beside it changes both the
validity and the time. Results: bench/study/RESULTS.md."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_study(study: Path, out: Path, executor: list[str], quick: float | None) -> dict[str, float]:
    cmd = [sys.executable, "-m", "rtclab_study", "run", str(study), "--out", str(out), *executor]
    if quick is not None:
        cmd += ["--quick", f"{quick:g}"]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT).returncode
    wall_s = time.perf_counter() - t0
    if code not in (0, 3):  # 3: some repetition without a valid run, still a study to count
        raise SystemExit(f"the study exited {code}: see its output above")
    summary = json.loads((out / "study.json").read_text())["summary"]
    attempts = summary["attempts"]
    valid = int(attempts.get("valid", 0))
    return {"wall_s": wall_s, "attempts": float(sum(attempts.values())), "valid": float(valid),
            "valid_per_hour": valid / (wall_s / 3600)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", type=Path)
    ap.add_argument("--parallel", default="auto", help="the executor set against serial: auto (default) or N")
    ap.add_argument("--costs-from", type=Path, default=None,
                    help="with --parallel auto: a pilot study directory whose runs measured the points' costs (as "
                         "a planned study's pilot does), so that no point's first run runs alone")
    ap.add_argument("--quick", type=float, default=None, help="--quick F for both runs of the study")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench-calls-per-hour")
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} is not empty: choose another --out (each run needs fresh study directories)")
    serial_dir, other_dir = args.out / "serial", args.out / f"parallel-{args.parallel}"
    serial = run_study(args.study, serial_dir, [], args.quick)
    seeded = ["--costs-from", str(args.costs_from)] if args.costs_from else []
    other = run_study(args.study, other_dir, ["--parallel", str(args.parallel), *seeded], args.quick)
    print(f"\n{'executor':<40} {'wall':>9} {'attempts':>9} {'valid':>6} {'valid runs/h':>13}")
    label = f"--parallel {args.parallel}" + (" (costs from the pilot)" if args.costs_from else "")
    for name, r in (("serial", serial), (label, other)):
        print(f"{name:<40} {r['wall_s']:>8.0f}s {r['attempts']:>9.0f} {r['valid']:>6.0f} {r['valid_per_hour']:>13.1f}")
    if serial["valid_per_hour"]:
        print(f"valid runs per hour, --parallel {args.parallel} / serial: "
              f"{other['valid_per_hour'] / serial['valid_per_hour']:.2f}")
    page = args.out / "compare.html"
    subprocess.run([sys.executable, "-m", "rtclab.cli", "study", "compare", str(serial_dir), str(other_dir),
                    "--out", str(page)], cwd=ROOT, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
