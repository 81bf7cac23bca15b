#!/usr/bin/env python3
"""Where this machine's limit is: one real call beside n TCP CUBIC flows at a constant 1 Mbit/s fair share, at rising
capacities (Carlucci et al. 2016 (c), up to 100 Mbit/s and 99 flows), through the product itself (`node
harness/cli.js`, analysed as `npm run call` does). For each set-up it prints what decides whether such a run can be
trusted here: the run's validity checks, packets the captures dropped, packets lost outside the model (left a but
never reached the bottleneck's log, or forwarded by it and never seen at b: the analyzer's `owd_vs_ground_truth`
join), ground-truth log records lost, the bottleneck's release lateness, the host's CPU, and what the link carried.

  .venv/bin/python bench/scale/scale.py                          # 10/9, 50/49, 100/99 Mbit/s/flows, 60 s calls
  .venv/bin/python bench/scale/scale.py --setups 100000:99 --duration 90 --qdisc fq_codel

Not a timed test: its numbers depend on the machine and on what else runs on it (the load is printed). Results, with
their commands, in bench/scale/RESULTS.md. Run as root from the repository (namespaces, tc, packet capture).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from rtclab import rundir
from rtclab.stats import percentile

REPO = Path(__file__).resolve().parents[2]
QDISCS = {
    "fifo": {"kind": "fifo", "limit_ms": 300},
    "codel": {"kind": "codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 1000},
    "pie": {"kind": "pie", "target_ms": 20, "tupdate_ms": 30, "limit_packets": 1000},
    "sfq": {"kind": "sfq", "limit_ms": 300},
    "fq_codel": {"kind": "fq_codel", "target_ms": 13, "interval_ms": 100, "limit_packets": 10240},
}


def scenario(kbit: int, flows: int, duration_s: float, qdisc: str, backend: str) -> dict[str, Any]:
    """The set-up of Carlucci 2016 (c) at one capacity: TCP from a quarter to three quarters of the call."""
    return {
        "name": f"scale-{kbit // 1000}mbps-{flows}tcp",
        "description": f"one call beside {flows} CUBIC flows at {kbit / 1000:g} Mbit/s, {qdisc} (bench/scale)",
        "duration_s": duration_s,
        "backend": backend,
        "network": {"forward": {"delay_ms": 25, "rate": {"kbit": kbit}, "qdisc": QDISCS[qdisc]},
                    "reverse": {"delay_ms": 25}},
        "cross_traffic": [{"kind": "tcp", "flows": flows, "congestion_control": "cubic",
                           "start_s": duration_s / 4, "stop_s": duration_s * 3 / 4}],
    }


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def lateness_us(run_dir: Path) -> dict[str, float | None]:
    """Release lateness (release_ns - due_ns) of the forward bottleneck's forwarded packets, from its log."""
    path = run_dir / "bottleneck-forward.gtlog"
    if not path.exists():
        return {"p99": None, "p999": None, "max": None}
    log = rundir.read_gtlog(path)
    rec = log.records[np.isin(log.records["event"], rundir.GTLOG_FORWARDED)]
    late = (rec["release_ns"].astype(np.int64) - rec["due_ns"].astype(np.int64)) / 1e3
    return {"p99": percentile(late, 99), "p999": percentile(late, 99.9),
            "max": float(late.max()) if late.size else None}


def summarise(run_dir: Path, kbit: int, flows: int, wall_s: float, load_before: str, exit_code: int) -> dict[str, Any]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    metrics_path = run_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    checks = manifest.get("validity", {}).get("checks", [])
    failed = [f"{c['name']}: {c['detail']}" for c in checks if not c.get("ok")]
    gt = metrics.get("ground_truth") or {}
    joined = gt.get("joined")
    records = gt.get("records")
    departures = gt.get("departures")
    # Forward departures at capture-a that the bottleneck never logged: lost before it (NFQUEUE overruns, the veth).
    departures_not_in_log = departures - joined if departures is not None and joined is not None else None
    stats_lost = 0
    stats_path = run_dir / "bottleneck-forward.stats.jsonl"
    if stats_path.exists():
        lines = [json.loads(x) for x in stats_path.read_text().splitlines() if x.strip().startswith("{")]
        stats_lost = max((x.get("log_records_lost", 0) for x in lines), default=0)
    fairness = metrics.get("fairness", {})
    cross = next((v for k, v in fairness.items() if v.get("start_s") is not None
                  and k.startswith("cross_traffic")), None)
    video = next((f for f in metrics.get("flows", []) if f.get("direction") == "forward" and f.get("kind") == "video"),
                 None)
    video_cross = None
    if video:
        ph = next((v for k, v in video.get("phases", {}).items() if k.startswith("cross_traffic")), None)
        video_cross = (ph or {}).get("throughput_bps", {}).get("mean")
    captures = manifest.get("captures") or {}
    return {
        "setup": f"{kbit // 1000} Mbit/s, {flows} TCP", "kbit": kbit, "flows": flows, "run_dir": str(run_dir),
        "exit_code": exit_code, "status": manifest.get("status"), "valid": manifest.get("validity", {}).get("valid"),
        "failed_checks": failed, "load_before": load_before, "wall_s": round(wall_s, 1),
        "host_cpu_busy": manifest.get("host_cpu_busy_fraction"),
        "capture_drops": {s: c.get("dropped_by_kernel") for s, c in captures.items()},
        "log_records": records, "departures_joined_to_log": joined,
        "drops_but_captured_at_b": gt.get("dropped_but_captured_at_b"),
        "forwarded_but_lost": gt.get("forwarded_but_lost_in_capture"),
        "departures_not_in_log": departures_not_in_log,
        "log_records_lost": stats_lost, "lateness_us": lateness_us(run_dir),
        "cross_phase_received_bps": (cross or {}).get("received_bps"),
        "cross_phase_utilisation": (cross or {}).get("utilisation"),
        "cross_phase_jain": (cross or {}).get("jain_index"),
        "video_cross_phase_bps": video_cross,
    }


def fmt(x: Any, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if x is None else f"{x * scale:.{digits}f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--setups", default="10000:9,50000:49,100000:99",
                   help="capacity_kbit:tcp_flows, comma separated (default %(default)s)")
    p.add_argument("--duration", type=float, default=60.0, help="call length in s; TCP runs its middle half")
    p.add_argument("--qdisc", default="fifo", choices=sorted(QDISCS))
    p.add_argument("--backend", default="auto", choices=["auto", "kernel", "userspace"])
    p.add_argument("--out", help="directory for the runs (default: a new one under /tmp)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("scale.py: needs root (namespaces, tc, packet capture)", file=sys.stderr)
        return 2
    try:
        setups = [tuple(int(v) for v in s.split(":")) for s in args.setups.split(",")]
    except ValueError:
        print(f"scale.py: --setups must look like 100000:99,50000:49 (got {args.setups!r})", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rtclab-bench-scale."))
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for kbit, flows in setups:
        sc = scenario(kbit, flows, args.duration, args.qdisc, args.backend)
        sc_path = out / f"{sc['name']}.json"
        sc_path.write_text(json.dumps(sc, indent=2))
        run_dir = out / sc["name"]
        load = load_average()
        print(f"scale: {sc['description']}, {args.duration:g} s call (load average {load}) -> {run_dir}", flush=True)
        t0 = time.monotonic()
        code = subprocess.call(["node", str(REPO / "harness" / "cli.js"), "--scenario", str(sc_path), "--out",
                                str(run_dir)], cwd=REPO, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        if not (run_dir / "manifest.json").exists():
            print(f"scale: no manifest in {run_dir} (harness exit {code})", file=sys.stderr)
            continue
        r = summarise(run_dir, kbit, flows, wall, load, code)
        results.append(r)
        print(json.dumps(r), flush=True)
    (out / "summary.json").write_text(json.dumps(results, indent=2))
    print()
    print(f"{'set-up':<18} {'valid':<6} {'host CPU':>8} {'cap drops a/b':>13} {'not in log':>10} {'fwd lost':>8} "
          f"{'log lost':>8} {'late p99/p99.9/max us':>22} {'U cross':>7} {'video cross kb/s':>16} {'Jain':>5}")
    for r in results:
        d = r["capture_drops"]
        late = r["lateness_us"]
        not_in_log = r["departures_not_in_log"]
        print(f"{r['setup']:<18} {str(r['valid']):<6} {fmt(r['host_cpu_busy'], 100, 0) + '%':>8} "
              f"{str(d.get('a')) + '/' + str(d.get('b')):>13} {'-' if not_in_log is None else str(not_in_log):>10} "
              f"{str(r['forwarded_but_lost']):>8} {r['log_records_lost']:>8} "
              f"{fmt(late['p99'], 1, 0) + '/' + fmt(late['p999'], 1, 0) + '/' + fmt(late['max'], 1, 0):>22} "
              f"{fmt(r['cross_phase_utilisation'], 100, 0) + '%':>7} {fmt(r['video_cross_phase_bps'], 1e-3, 0):>16} "
              f"{fmt(r['cross_phase_jain'], 1, 2):>5}")
        for f in r["failed_checks"]:
            print(f"    FAIL {f}")
    print(f"\nruns and summary.json in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
