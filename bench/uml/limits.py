#!/usr/bin/env python3
"""The uml backend's limits on this machine (issue 19 item 6; bench/uml/README.md), beside the userspace bottleneck:

1. forwarding: UDP of 100-byte payloads (142-byte frames) at rising packet rates through 25 ms each way, no rate
   limit and a fifo too large to drop (100000 packets); per rate, packets that left a but never reached b beyond
   what the qdiscs say they dropped ("outside": lost outside the qdisc), and the CPU of namespace r (the guest's
   processes, or the userspace bottlenecks);
2. the 100 Mbit/s + 99 CUBIC set-up (Carlucci 2016 (c) at its largest, as bench/scale runs it, without the call):
   utilisation, loss outside the qdisc, queuing delay, Jain's index, CPU.

  flock -x /tmp/rtclab-quiet.lock .venv/bin/python bench/uml/limits.py               # both parts, both backends
  flock -x /tmp/rtclab-quiet.lock .venv/bin/python bench/uml/limits.py --parts rate --rates 5000,20000
  .venv/bin/python bench/uml/limits.py --analyse DIR

Not a timed test. Results in bench/uml/RESULTS.md. Run as root from the repository.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402
from cells import run_cell  # noqa: E402

PAYLOAD = 100  # bytes of UDP payload: 128-byte IP packets, 142-byte frames
BACKENDS = ("userspace", "uml")
FORWARDING = {"network": {"forward": {"delay_ms": 25, "rate": None, "qdisc": {"kind": "fifo", "limit_packets": 100000}},
                          "reverse": {"delay_ms": 25}}}
SCALE = {"network": {"forward": {"delay_ms": 25, "rate": {"kbit": 100000}, "qdisc": {"kind": "fifo", "limit_ms": 300}},
                     "reverse": {"delay_ms": 25}}}


def rate_patterns(rates: list[int], seconds: float) -> list[dict[str, Any]]:
    # iperf3's -b counts UDP payload bits.
    return [{"name": f"{pps}pps", "seconds": seconds, "pps": pps,
             "udp": {"kbit": round(pps * PAYLOAD * 8 / 1000), "len": PAYLOAD, "dscp": 0}} for pps in rates]


def show_rates(out: Path) -> None:
    print(f"\nforwarding: UDP {PAYLOAD}-byte payloads, 25 ms each way, no rate limit, fifo 100000")
    print(f"{'backend':<10}{'offered pps':>12}{'sent at a':>10}{'at b':>9}{'qdisc drops':>12}{'outside':>8}"
          f"{'drops: guest links / r links / raw sockets':>44}{'CPU r %':>8}{'qdelay p50/p99 ms':>18}")
    for backend in BACKENDS:
        run_dir = out / f"rate-{backend}"
        if not (run_dir / "cell.json").exists():
            continue
        m = measure.measure_run(run_dir, warmup_s=1.0)
        for p in m["patterns"]:
            q = p["qdelay_ms"] or {}
            links = f"{p['link_drops_guest'] or {}} / {p['link_drops_host_r'] or {}} / {p['socket_drops_host'] or {}}"
            print(f"{backend:<10}{p['name'].removesuffix('pps'):>12}{p['sent']:>10}{p['sent'] - p['lost']:>9}"
                  f"{p['qdisc']['drops']:>12}{p['lost'] - p['qdisc']['drops']:>8}{links:>44}"
                  f"{p['cpu_cores'] * 100:>8.0f}{measure_fmt(q.get('p50'))}/{measure_fmt(q.get('p99'))}".rstrip())
        if m["error"]:
            print(f"  {backend}: {m['error']}")


def measure_fmt(x: float | None) -> str:
    return f"{'-' if x is None else f'{x:.2f}':>12}"


def timer_text(t: dict[str, Any]) -> str:
    """The guest timer probe's late wake-ups in the window (of its 10 ms sleeps), or '-' without the probe."""
    if not t or not t.get("samples"):
        return "-"
    return f"{t['late_1ms'] / t['samples']:.1%}/{t['late_10ms'] / t['samples']:.1%}, {t['max_ms']:.1f} ms"


def show_scale(out: Path, warmup_s: float) -> None:
    print("\n100 Mbit/s, fifo 300 ms, 25 ms each way, 99 CUBIC flows")
    print(f"{'backend':<10}{'kbit at b':>10}{'util':>6}{'qdisc drops':>12}{'outside':>8}{'qdelay p50/p95/p99 ms':>24}"
          f"{'Jain':>6}{'CPU r %':>8}{'guest timer >1/>10 ms, max':>28}")
    for backend in BACKENDS:
        run_dir = out / f"scale-{backend}"
        if not (run_dir / "cell.json").exists():
            continue
        m = measure.measure_run(run_dir, warmup_s)
        for p in m["patterns"]:
            q = p["qdelay_ms"] or {}
            t = p["timer"] or {}
            qd = "/".join("-" if q.get(k) is None else f"{q[k]:.1f}" for k in ("p50", "p95", "p99"))
            print(f"{backend:<10}{p['kbit']:>10.0f}{p['utilisation']:>6.2f}{p['qdisc']['drops']:>12}"
                  f"{p['lost'] - p['qdisc']['drops']:>8}{qd:>24}{p['jain'] or 0:>6.2f}{p['cpu_cores'] * 100:>8.0f}"
                  f"{timer_text(t):>28}")
        if m["error"]:
            print(f"  {backend}: {m['error']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", default="rate,scale", help="rate, scale or both (default %(default)s)")
    p.add_argument("--rates", default="1000,2000,5000,10000,20000,40000", help="packets/s, comma separated")
    p.add_argument("--seconds", type=float, default=6.0, help="length of each rate step")
    p.add_argument("--scale-seconds", type=float, default=20.0, help="length of the 99-flow run")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--out", help="directory for the runs (default: a new one under /tmp)")
    p.add_argument("--analyse", metavar="DIR", help="do not run: analyse the runs in DIR again")
    args = p.parse_args()
    parts = args.parts.split(",")
    if args.analyse:
        out = Path(args.analyse)
    else:
        if os.geteuid() != 0:
            print("limits.py: needs root (namespaces, tc, packet capture)", file=sys.stderr)
            return 2
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rtclab-bench-uml-limits."))
        print(f"limits: load average {Path('/proc/loadavg').read_text().split()[:3]} -> {out}", flush=True)
        for backend in args.backends.split(","):
            if "rate" in parts:
                run_cell(out / f"rate-{backend}", backend, FORWARDING,
                         rate_patterns([int(r) for r in args.rates.split(",")], args.seconds), gap_s=2)
            if "scale" in parts:
                run_cell(out / f"scale-{backend}", backend, SCALE, [{"name": "99cubic", "seconds": args.scale_seconds,
                                                                       "tcp": {"flows": 99, "ecn": False}}], gap_s=3)
    if "rate" in parts:
        show_rates(out)
    if "scale" in parts:
        show_scale(out, warmup_s=5.0)
    (out / "measured.json").write_text(json.dumps(
        {name: measure.measure_run(out / name, 1.0) for name in sorted(os.listdir(out))
         if (out / name / "cell.json").exists()}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
