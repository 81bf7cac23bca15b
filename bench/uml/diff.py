#!/usr/bin/env python3
"""The differential benchmark of issue 19 (bench/uml/README.md): the same traffic through the userspace bottleneck
and through Linux's own qdiscs in the user-mode Linux guest (the uml backend), for DropTail in packets and in bytes,
CoDel, PIE, SFQ, FQ-CoDel and prio at the reference studies' parameters, at 10 Mbit/s and 25 ms each way (Carlucci
et al. 2016 (c)). Per discipline and backend one network (bench/uml/cell.mjs) plays every traffic pattern in turn;
measure.py reads the captures and counters, agreement.py decides per row whether the two agree.

  flock -x /tmp/rtclab-quiet.lock .venv/bin/python bench/uml/diff.py                 # the whole table (~20 min)
  flock -x /tmp/rtclab-quiet.lock .venv/bin/python bench/uml/diff.py --disciplines codel,pie --traffic tcp1
  .venv/bin/python bench/uml/diff.py --analyse DIR                                  # the table again from DIR's runs

Not a timed test: its numbers depend on the machine and on what else runs on it. Results in bench/uml/RESULTS.md.
Run as root from the repository (namespaces, tc, packet capture).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agreement  # noqa: E402
import measure  # noqa: E402
from cells import run_cell  # noqa: E402

CAPACITY_KBIT = 10000
UDP_LEN = 1200  # UDP payload: 1242-byte frames
EF = 46  # the UDP flow's DSCP: band 0 under prio, nothing under the others

# The reference studies' parameters: studies/carlucci2016/*.yaml (DT/300, CoDel 5/100, PIE 20/30, FQ-CoDel 13 ms,
# SFQ 300 ms) and scenarios/examples/prio.yaml (the thesis' strict priority: EF in a fifo over fq_codel).
DISCIPLINES: dict[str, dict[str, Any]] = {
    # DT/300 in packets: 300 ms of full-size frames at 10 Mbit/s = 375000 / 1514.
    "fifo_p": {"kind": "fifo", "limit_packets": 247},
    "fifo_b": {"kind": "fifo", "limit_ms": 300},
    "codel": {"kind": "codel", "target_ms": 5, "interval_ms": 100, "limit_packets": 1000},
    # timer_hz: the guest's CONFIG_HZ (linux.uml --showconfig), so that the userspace bottleneck models the update
    # timer of the kernel it is compared with (docs/bottleneck.md, "PIE's update period"); the guest ignores it.
    "pie": {"kind": "pie", "target_ms": 20, "tupdate_ms": 30, "limit_packets": 1000, "timer_hz": 100},
    "sfq": {"kind": "sfq", "limit_ms": 300},
    "fq_codel": {"kind": "fq_codel", "target_ms": 13, "interval_ms": 100, "limit_packets": 10240},
    "prio": {"kind": "prio", "bands": [
        {"dscp": [EF], "qdisc": {"kind": "fifo"}},
        {"qdisc": {"kind": "fq_codel", "quantum_bytes": 300, "limit_packets": 800, "target_ms": 2, "interval_ms": 50,
                   "ecn": False}}]},
}


def udp(x: float) -> dict[str, Any]:
    return {"kbit": round(x * CAPACITY_KBIT), "len": UDP_LEN, "dscp": EF}


# The mix: a 3 Mbit/s UDP flow (a video call's order of magnitude, more than the 2 Mbit/s fair share of 5 flows) and
# 4 ECN-capable CUBIC flows, so that the AQMs that mark (fq_codel's default ecn) show their CE marks.
TRAFFIC: dict[str, dict[str, Any]] = {
    "udp0.5": {"udp": udp(0.5)},
    "udp0.95": {"udp": udp(0.95)},
    "udp1.2": {"udp": udp(1.2)},
    "tcp1": {"tcp": {"flows": 1, "ecn": False}},
    "tcp5": {"tcp": {"flows": 5, "ecn": False}},
    "mix": {"udp": udp(0.3), "tcp": {"flows": 4, "ecn": True}},
}
BACKENDS = ("userspace", "uml")


def scenario(qdisc: dict[str, Any]) -> dict[str, Any]:
    return {"network": {"forward": {"delay_ms": 25, "rate": {"kbit": CAPACITY_KBIT}, "qdisc": qdisc},
                        "reverse": {"delay_ms": 25}}}


def fmt(x: Any, digits: int = 0) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def pair(a: Any, b: Any, digits: int = 0) -> str:
    return f"{fmt(a, digits)}/{fmt(b, digits)}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if not a or b is None else f"{b / a:.2f}"


def table(rows: list[dict[str, Any]]) -> None:
    print("\nper row: userspace/uml (ratio uml/userspace); counts over the whole pattern, rates and delays over its "
          "steady part;\ntimer: the bound of the guest timer probe's p99 lateness in ms that the delay tolerance used")
    print(f"{'disc':<9}{'traffic':<8}{'kbit at b':>16}{'ratio':>6}{'drops q':>12}{'CE q':>9}{'outside':>8}"
          f"{'qdelay p50':>12}{'p95':>12}{'p99':>12}{'UDP share':>10}{'Jain':>10}{'CPU r %':>9}{'timer':>6} verdict")
    for r in rows:
        us, uml = r["userspace"], r["uml"]
        if us is None or uml is None:
            print(f"{r['disc']:<9}{r['traffic']:<8} missing: {'userspace' if us is None else 'uml'}")
            continue
        qd = lambda m, p: (m["qdelay_ms"] or {}).get(p)
        print(f"{r['disc']:<9}{r['traffic']:<8}{pair(us['kbit'], uml['kbit']):>16}{ratio(us['kbit'], uml['kbit']):>6}"
              f"{pair(us['qdisc']['drops'], uml['qdisc']['drops']):>12}{pair(us['qdisc']['ce'], uml['qdisc']['ce']):>9}"
              f"{pair(agreement.lossless(us), agreement.lossless(uml)):>8}"
              f"{pair(qd(us, 'p50'), qd(uml, 'p50'), 1):>12}{pair(qd(us, 'p95'), qd(uml, 'p95'), 1):>12}"
              f"{pair(qd(us, 'p99'), qd(uml, 'p99'), 1):>12}{pair(us['udp_share'], uml['udp_share'], 2):>10}"
              f"{pair(us['jain'], uml['jain'], 2):>10}{pair(us['cpu_cores'] * 100, uml['cpu_cores'] * 100):>9}"
              f"{fmt((uml['timer'] or {}).get('p99_bound_ms'), 1):>6} "
              f"{r['verdict']}{': ' + '; '.join(r['reasons']) if r['reasons'] else ''}")


def analyse(out: Path, discs: list[str], traffic: list[str], warmup_s: float) -> list[dict[str, Any]]:
    measured: dict[tuple[str, str, str], dict[str, Any]] = {}
    for disc in discs:
        for backend in BACKENDS:
            run_dir = out / f"{disc}-{backend}"
            if not (run_dir / "cell.json").exists():
                print(f"diff: no cell.json in {run_dir}", file=sys.stderr)
                continue
            m = measure.measure_run(run_dir, warmup_s)
            if m["error"]:
                print(f"diff: {run_dir}: {m['error']}", file=sys.stderr)
            for p in m["patterns"]:
                measured[(disc, backend, p["name"])] = p
    rows = []
    for disc in discs:
        kind = DISCIPLINES[disc]["kind"]
        for t in traffic:
            us, uml = measured.get((disc, "userspace", t)), measured.get((disc, "uml", t))
            pat = {"name": t, **TRAFFIC[t]}
            reasons = agreement.verdict(us, uml, pat, CAPACITY_KBIT, kind) if us and uml else ["missing"]
            invalid = agreement.guest_invalid(uml) if uml else None
            verdict = "INVALID" if invalid else "DIFFER" if reasons else "agree"
            rows.append({"disc": disc, "traffic": t, "userspace": us, "uml": uml, "verdict": verdict,
                         "reasons": [invalid, *reasons] if invalid else reasons})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--disciplines", default=",".join(DISCIPLINES), help="comma separated (default: all)")
    p.add_argument("--traffic", default=",".join(TRAFFIC), help="comma separated (default: all)")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each traffic pattern")
    p.add_argument("--gap", type=float, default=2.0, help="idle seconds after each pattern (queues drain)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of each pattern left out of rates and delays")
    p.add_argument("--out", help="directory for the runs (default: a new one under /tmp)")
    p.add_argument("--analyse", metavar="DIR", help="do not run: analyse the runs in DIR again")
    args = p.parse_args()
    discs, traffic = args.disciplines.split(","), args.traffic.split(",")
    unknown = [d for d in discs if d not in DISCIPLINES] + [t for t in traffic if t not in TRAFFIC]
    if unknown:
        print(f"diff.py: unknown {', '.join(unknown)}; disciplines {', '.join(DISCIPLINES)}; traffic "
              f"{', '.join(TRAFFIC)}", file=sys.stderr)
        return 2
    if args.analyse:
        out = Path(args.analyse)
    else:
        if os.geteuid() != 0:
            print("diff.py: needs root (namespaces, tc, packet capture)", file=sys.stderr)
            return 2
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rtclab-bench-uml."))
        started = time.monotonic()
        print(f"diff: {len(discs)} disciplines x {len(traffic)} patterns x {len(BACKENDS)} backends, "
              f"{args.seconds:g} s each, load average {Path('/proc/loadavg').read_text().split()[:3]} -> {out}",
              flush=True)
        for disc in discs:
            for backend in BACKENDS:  # alternating, so that both see the machine's load of the same minutes
                run_cell(out / f"{disc}-{backend}", backend, scenario(DISCIPLINES[disc]),
                         [{"name": t, "seconds": args.seconds, **TRAFFIC[t]} for t in traffic], args.gap)
        print(f"diff: all runs in {time.monotonic() - started:.0f} s", flush=True)
    rows = analyse(out, discs, traffic, args.warmup)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    table(rows)
    count = {v: sum(1 for r in rows if r["verdict"] == v) for v in ("agree", "DIFFER", "INVALID")}
    print(f"\n{count['agree']} of {len(rows)} rows agree, {count['DIFFER']} differ, {count['INVALID']} invalid (the "
          f"guest's timers too late to compare); runs and summary.json in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
