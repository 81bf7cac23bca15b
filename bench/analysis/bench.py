#!/usr/bin/env python3
"""Benchmark of the analyzer's join + metrics against tshark -T fields and pyshark, on a synthetic pair of captures
generated here (never committed).

  .venv/bin/python bench/analysis/bench.py                      # 10 million forward packets (about 24 s of analysis)
  .venv/bin/python bench/analysis/bench.py --packets 1000000    # quicker

Prints packets per second for each tool and the ratios, the analyzer's peak memory per packet, and checks the
analyzer's loss count against the generator's truth. `rtclab analyze` runs pinned to one core (taskset -c 0); tshark
and pyshark run on a prefix of the same capture (they need minutes for the whole of it) and are extrapolated as rates.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtclab import rundir

TSHARK_FIELDS = ["frame.time_epoch", "ip.src", "ip.dst", "ip.id", "ip.dsfield.ecn", "udp.srcport", "udp.dstport",
                 "tcp.seq_raw", "rtp.ssrc", "rtp.seq", "rtp.timestamp", "rtp.p_type"]


def generate(run: Path, packets: int) -> int:
    """Writes the synthetic run in a child process (its ten gigabytes of numpy temporaries are gone before the
    analyzer is timed); returns how many forward packets the model lost."""
    code = ("from pathlib import Path; from bench_gen import config_for; from rtclab import synth; "
            f"t = synth.write_run(Path({str(run)!r}), config_for({packets}), with_getstats=False); "
            "print(int(t.lost.sum()))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
    if res.returncode != 0:
        raise SystemExit(f"generating the synthetic run failed:\n{res.stderr}")
    return int(res.stdout.split()[-1])


def pcap_prefix(src: Path, dst: Path, count: int) -> int:
    """Writes the first `count` records of a nanosecond pcap (read by the analyzer's rtclab.rundir.pcap_records) to a
    new one with the same header; returns how many it wrote."""
    with src.open("rb") as f:
        head = f.read(24)
    if struct.unpack("<I", head[:4])[0] != 0xA1B23C4D:
        raise SystemExit(f"{src}: expected a little-endian nanosecond pcap (the synthetic run's)")
    n = 0
    with dst.open("wb") as out:
        out.write(head)
        for ts_ns, orig_len, data in rundir.pcap_records(src):
            if n >= count:
                break
            out.write(struct.pack("<IIII", ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, len(data), orig_len) + data)
            n += 1
    return n


def time_rtclab(run: Path, pin: bool) -> tuple[float, int, float, dict]:
    """Wall time and peak RSS of `rtclab analyze`. The RSS comes from GNU time in the child: this process's own
    getrusage would count the generator's arrays, which a forked child shares until it execs."""
    cmd = [sys.executable, "-m", "rtclab.cli", "analyze", str(run), "--no-tshark", "--no-dashboard", "-q"]
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    rss_file = run / "bench-rss.txt"
    if Path("/usr/bin/time").exists():
        cmd = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_file), *cmd]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"rtclab analyze failed:\n{res.stderr}")
    fields = rss_file.read_text().split()[-3:] if rss_file.exists() else ["0", "nan", "nan"]
    peak, cpu = int(fields[0]) * 1024, float(fields[1]) + float(fields[2])
    return wall, peak, cpu, json.loads((run / "metrics.json").read_text())


def time_tshark(capture: Path) -> tuple[float, int]:
    # TCP sequence analysis off: the fields asked for do not need it, and on the synthetic TCP flows (no real
    # handshake, ACKs not tied to the data) it makes tshark quadratic (100 000 packets: 55 s instead of 5 s).
    cmd = ["tshark", "-n", "-r", str(capture), "-o", "rtp.heuristic_rtp:TRUE", "-o",
           "tcp.analyze_sequence_numbers:FALSE",
           "-T", "fields"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    return wall, res.stdout.count("\n")


def time_pyshark(capture: Path, use_json: bool) -> tuple[float, int]:
    import pyshark
    t = time.perf_counter()
    cap = pyshark.FileCapture(str(capture), override_prefs={"rtp.heuristic_rtp": "TRUE",
                                                            "tcp.analyze_sequence_numbers": "FALSE"}, use_json=use_json,
                              keep_packets=False)
    n = 0
    try:
        for p in cap:
            _ = (p.ip.id, p.ip.src, p.ip.dst)
            if hasattr(p, "rtp"):
                _ = (p.rtp.ssrc, p.rtp.seq, p.rtp.timestamp)
            n += 1
    finally:
        cap.close()
    return time.perf_counter() - t, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=10_000_000, help="forward packets in the synthetic call")
    ap.add_argument("--tshark-packets", type=int, default=200_000, help="prefix dissected by tshark -T fields")
    ap.add_argument("--pyshark-packets", type=int, default=2_000, help="prefix dissected by pyshark")
    ap.add_argument("--dir", help="where to write the synthetic run (default: a temporary directory, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic run")
    ap.add_argument("--no-pin", action="store_true", help="do not pin rtclab to one core")
    args = ap.parse_args()

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="rtclab-bench-"))
    run = base / "run"
    try:
        print(f"generating a synthetic run with {args.packets:,} forward packets in {run} ...", flush=True)
        t = time.perf_counter()
        true_lost = generate(run, args.packets)
        gen_s = time.perf_counter() - t
        sizes = {s: (run / f"capture-{s}.pcap").stat().st_size for s in "ab"}
        print(f"  generated in {gen_s:.1f} s: capture-a {sizes['a'] / 1e9:.2f} GB, capture-b {sizes['b'] / 1e9:.2f} GB")

        wall, peak_bytes, cpu_s, m = time_rtclab(run, pin=not args.no_pin)
        records = m["inputs"]["capture_a"]["records"] + m["inputs"]["capture_b"]["records"]
        departures = sum(f["packets_sent"] for f in m["flows"])  # left one side and were joined (lost or delivered)
        fwd = [f for f in m["flows"] if f["direction"] == "forward"]
        lost = sum(f["packets_lost"] for f in fwd)
        unknown = sum(f["packets_unknown"] for f in fwd)
        print("\nrtclab analyze (join + metrics + metrics.json + "
              f"packets.parquet{'' if args.no_pin else ', one core'}):")
        print(f"  {records:,} capture records ({departures:,} departures joined) in {wall:.2f} s "
              f"= {records / wall / 1e6:.2f} M records/s, {departures / wall / 1e6:.2f} M departures/s")
        print(f"  CPU time {cpu_s:.2f} s (user + system) = {records / cpu_s / 1e6:.2f} M records/s of CPU; "
              f"the rest of the "
              f"wall time is other processes on this shared machine")
        print(f"  steps (s): {m['timings_s']}")
        print(f"  peak memory {peak_bytes / 1e6:.0f} MB = {peak_bytes / records:.0f} bytes per record "
              f"(captures are memory-mapped: {sum(sizes.values()) / 1e9:.2f} GB of files)")
        agree = lost <= true_lost <= lost + unknown
        print(f"  forward packets lost: {lost:,} by the join (+{unknown:,} in flight when a capture stopped), "
              f"{true_lost:,} in the generator's truth ({'agree' if agree else 'DIFFER'})")

        prefix = base / "prefix.pcap"
        n = pcap_prefix(run / "capture-a.pcap", prefix, args.tshark_packets)
        ts_wall, ts_n = time_tshark(prefix)
        n_py = pcap_prefix(run / "capture-a.pcap", base / "prefix-small.pcap", args.pyshark_packets)
        py_wall, py_n = time_pyshark(base / "prefix-small.pcap", use_json=False)
        pyj_wall, pyj_n = time_pyshark(base / "prefix-small.pcap", use_json=True)
        ours = records / wall
        rates = {"tshark -T fields": ts_n / ts_wall, "pyshark": py_n / py_wall, "pyshark (JSON mode)": pyj_n / pyj_wall}
        print(f"\nsame capture, first {n:,} packets for tshark, first {n_py:,} for pyshark:")
        print(f"  {'tool':<22}{'packets/s':>14}{'rtclab is':>14}")
        print(f"  {'rtclab analyze':<22}{ours:>14,.0f}{'1x':>14}")
        for name, r in rates.items():
            print(f"  {name:<22}{r:>14,.0f}{ours / r:>13,.0f}x")
        target = 1_000_000
        print(f"\ntarget >= {target:,} packets/s end to end on one core: {'met' if ours >= target else 'NOT met'} "
              f"({ours:,.0f})")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(base if not args.dir else run, ignore_errors=True)
            for p in (base / "prefix.pcap", base / "prefix-small.pcap"):
                p.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
