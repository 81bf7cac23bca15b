"""bench/frames: the numbers of bench/frames/RESULTS.md from the run directories bench/frames/run.sh wrote.

    .venv/bin/python bench/frames/summarize.py /tmp/frames-bench [NAME ...]

Per run (metrics.json, report.txt): validity, glass-to-glass p50/p95 and its sender/network/receiver parts
(frames.b), glass-to-glass p50 and the network part's p50 minus the forward one-way propagation delay, the forward
video flow's one-way and queuing delay (flows[]), the report's picture quality and CPU lines. With --series NAME:
per-second means of the network part (frames.b.series, by display time) against the forward video packets' queuing
delay (packets.parquet, by departure) and the bottleneck's queue delay (bottleneck_queue.series), and their
correlations. Reads only; computes nothing the analyzer did not (but the per-second binning).
"""

import json
import statistics
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def video_flow(m):
    flows = [f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"]
    return max(flows, key=lambda f: f["packets_received"]) if flows else None


def report_lines(run, *starts):
    lines = (run / "report.txt").read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        if any(line.startswith(s) for s in starts):
            out.append(line)
            if line.startswith("CPU"):
                out.append(lines[i + 1])
    return out


def summary(run):
    m = json.loads((run / "metrics.json").read_text())
    fb = m["frames"]["b"]
    delay = m["scenario"]["forward"]["delay_ms"]
    d = {"run": run.name, "valid": m["validity"]["valid"], "delay_ms": delay,
         "failed": [c["name"] for c in m["validity"]["checks"] if not c["ok"]]}
    for k in ("glass_to_glass_ms", "sender_ms", "network_ms", "receiver_ms"):
        d[k] = (fb[k]["p50"], fb[k]["p95"])
    d["g2g_p50_minus_prop"] = fb["glass_to_glass_ms"]["p50"] - delay
    d["net_p50_minus_prop"] = fb["network_ms"]["p50"] - delay
    d["records"], d["joined_ratio"], d["numbered_ratio"] = fb["records"], fb["joined_ratio"], fb["numbered_ratio"]
    d["freezes"] = (fb["freezes"]["count"], fb["freezes"]["total_ms"])
    d["never_shown"] = (fb["never_shown"], fb["sent_frames"])
    v = video_flow(m)
    d["video_owd"] = (v["owd_ms"]["p50"], v["owd_ms"]["p95"])
    d["video_queue"] = (v["queuing_delay_ms"]["mean"], v["queuing_delay_ms"]["p50"], v["queuing_delay_ms"]["p95"])
    d["network_mean"] = fb["network_ms"]["mean"]
    d["lines"] = report_lines(run, "validity", "  delay p50/p95", "  picture quality", "CPU", "frames shown")
    return d, m


def series(run, m):
    fb = m["frames"]["b"]
    s = fb["series"]
    t = np.array(s["t_s"], float)
    net = np.array([np.nan if x is None else x for x in s["network_ms"]], float)
    call_start_ns = m["run"]["call_start"] * 1e9
    tab = pq.read_table(run / "packets.parquet",
                        columns=["direction", "status", "ssrc", "t_send_ns", "queuing_delay_ns"])
    cols = {c: tab.column(c).to_pylist() for c in tab.column_names}
    ssrc = fb["ssrc"]
    sel = [i for i in range(tab.num_rows) if cols["direction"][i] == "forward" and cols["ssrc"][i] == ssrc
           and cols["status"][i] == "delivered"]
    pt = (np.array([cols["t_send_ns"][i] for i in sel], float) - call_start_ns) / 1e9
    pq_ms = np.array([cols["queuing_delay_ns"][i] for i in sel], float) / 1e6
    bq = np.array(m["bottleneck_queue"]["series"]["queue_delay_ms"], float) if m.get("bottleneck_queue") else None
    end = int(m["run"]["duration_s"])
    rows = []
    for sec in range(end):
        a = net[(t >= sec) & (t < sec + 1) & ~np.isnan(net)]
        b = pq_ms[(pt >= sec) & (pt < sec + 1)]
        c = bq[(bq[:, 0] >= sec) & (bq[:, 0] < sec + 1), 1] if bq is not None else np.array([])
        mean = [x.mean() if x.size else np.nan for x in (a, b, c)]
        rows.append((sec, *mean))
    r = np.array(rows)
    ok = ~np.isnan(r).any(axis=1)
    corr_pkt = float(np.corrcoef(r[ok, 1], r[ok, 2])[0, 1])
    corr_bq = float(np.corrcoef(r[ok, 1], r[ok, 3])[0, 1])
    return r, corr_pkt, corr_bq, int(ok.sum())


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: summarize.py OUT_DIR [RUN...] [--series RUN...]  (OUT_DIR: the run directories of run.sh)")
        sys.exit(0 if len(sys.argv) > 1 else 2)
    out = Path(sys.argv[1])
    if not out.is_dir():
        sys.exit(f"summarize.py: {out}: no such directory")
    args = sys.argv[2:]
    want_series = []
    if "--series" in args:
        i = args.index("--series")
        want_series = args[i + 1:]
        args = args[:i]
    names = args or sorted(p.name for p in out.iterdir() if (p / "metrics.json").exists())
    rows = []
    for n in names:
        d, _ = summary(out / n)
        rows.append(d)
        print(f"== {n}: valid {d['valid']} {d['failed'] or ''} delay {d['delay_ms']} ms, {d['records']} records,"
              f" numbered {d['numbered_ratio']:.4f} joined {d['joined_ratio']:.4f}, freezes {d['freezes']},"
              f" never shown {d['never_shown'][0]}/{d['never_shown'][1]}")
        print("   p50/p95 ms: g2g %.1f/%.1f sender %.1f/%.1f network %.1f/%.1f receiver %.1f/%.1f" % (
            *d["glass_to_glass_ms"], *d["sender_ms"], *d["network_ms"], *d["receiver_ms"]))
        print("   g2g p50 - prop %.1f ms; network p50 - prop %.1f ms; network mean %.1f" % (
            d["g2g_p50_minus_prop"], d["net_p50_minus_prop"], d["network_mean"]))
        print("   video packets: owd p50/p95 %.1f/%.1f ms; queuing delay mean/p50/p95 %.1f/%.1f/%.1f ms" % (
            *d["video_owd"], *d["video_queue"]))
        for line in d["lines"]:
            print("   |", line)
    groups = {}
    for d in rows:
        groups.setdefault(d["run"].rsplit("-", 1)[0], []).append(d)
    for g, ds in groups.items():
        if len(ds) < 2:
            continue
        for k in ("g2g_p50_minus_prop",):
            v = [d[k] for d in ds]
            print(f"-- {g} ({len(ds)} runs) {k}: " + ", ".join(f"{x:.1f}" for x in v)
                  + f"; mean {statistics.mean(v):.1f}, sd {statistics.stdev(v):.1f}, range {max(v) - min(v):.1f} ms")
        for k in ("glass_to_glass_ms", "sender_ms", "network_ms", "receiver_ms"):
            p50 = [d[k][0] for d in ds]
            p95 = [d[k][1] for d in ds]
            print(f"   {k}: p50 {min(p50):.1f}-{max(p50):.1f} (range {max(p50) - min(p50):.1f}),"
                  f" p95 {min(p95):.1f}-{max(p95):.1f} (range {max(p95) - min(p95):.1f})")
    for n in want_series:
        d, m = summary(out / n)
        r, cp, cb, k = series(out / n, m)
        print(f"== {n} per second: network part mean vs video packets' queuing delay mean (by departure) vs bottleneck"
              f" queue delay: correlation {cp:.3f} (packets), {cb:.3f} (queue), over {k} s")
        print("   s  network_ms  pkt_queue_ms  bq_delay_ms  network - pkt_queue")
        for sec, a, b, c in r:
            print(f"  {int(sec):3d}  {a:9.1f}  {b:11.1f}  {c:10.1f}  {a - b:9.1f}")


if __name__ == "__main__":
    main()
