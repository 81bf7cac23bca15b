"""The benchmarks' scripts read run files with the analyzer's library and use its one percentile rule: gtlog.py on a
hand-built pair of captures and ground-truth log, checked against values computed here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from pcapbuild import percentile
from runbuild import MS, T0_NS, Run, log_key, write_gtlog

ROOT = Path(__file__).resolve().parents[2]
GTLOG = ROOT / "bench" / "bottleneck" / "gtlog.py"


@pytest.fixture(scope="module")
def standing_queue(tmp_path_factory):
    """300 packets through a bottleneck that holds each 100-109 ms and releases it 0-60 us late."""
    d = tmp_path_factory.mktemp("gtlog")
    run, log = Run(), []
    for i in range(300):
        t = T0_NS + i * 10 * MS
        arrive = t + 20_000
        dequeue = arrive + (100 + i % 10) * MS
        due = dequeue + 1 * MS + 20 * MS
        release = due + (i % 7) * 10_000
        p = run.rtp(t, [] if i in (17, 18) else [release + 15_000], seq=i, ts=i * 900)
        key, ip_len, ip_id = log_key(p.frame)
        log.append({"arrival_ns": arrive, "dequeue_ns": dequeue, "tx_end_ns": dequeue + MS, "due_ns": due,
                    "release_ns": release, "key": key, "ip_len": ip_len, "ip_id": ip_id,
                    "event": 2 if i in (17, 18) else 0})
    run.write(d, {"duration_s": 3.1})
    write_gtlog(d / "bottleneck-forward.gtlog", log)
    return d, run, log


def gtlog(*args: str) -> dict:
    r = subprocess.run([sys.executable, str(GTLOG), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def us(values_ns: list[int], q: float) -> float:
    return round(percentile(values_ns, q) / 1000, 1)


def test_lateness_percentiles_by_the_one_rule(standing_queue):
    d, _, log = standing_queue
    out = gtlog("lateness", str(d / "bottleneck-forward.gtlog"))
    late = [r["release_ns"] - r["due_ns"] for r in log if r["event"] == 0]
    assert out["events"] == {"forwarded": 298, "dropped_tail": 2}
    assert out["lateness"] == {"n": 298, "p50_us": us(late, 50), "p99_us": us(late, 99), "p99_9_us": us(late, 99.9),
                               "max_us": max(late) / 1000, "min_us": min(late) / 1000}


def test_path_joins_captures_and_log_with_the_analyzers_key(standing_queue):
    d, run, log = standing_queue
    out = gtlog("path", str(d / "capture-a.pcap"), str(d / "capture-b.pcap"), "--log",
                str(d / "bottleneck-forward.gtlog"), "--skip-s", "0")
    owd = [p.arrivals[0] - p.t_send for p in run.packets if p.arrivals]
    assert out["sent"] == 300 and out["received"] == 298
    assert out["one_way_delay_ms"] == {"min": round(min(owd) / 1e6, 3), "max": round(max(owd) / 1e6, 3)}
    assert out["sent_not_in_log"] == 0 and out["log_forwarded_missing_at_b"] == 0
    assert out["log_dropped_present_at_b"] == 0
    # OWD - (release - arrival) is the hops written above: 20 us before the bottleneck, 15 us after.
    assert out["owd_minus_log_release"]["p50_us"] == 35.0 and out["owd_minus_log_release"]["n"] == 298
    queue = [x - min(owd) for x in owd]
    assert out["queuing_delay_after_skip"]["p99_us"] == us(queue, 99)


def test_cpu_bench_budget_is_the_analyzers_cpu_summary(tmp_path):
    """bench/cpu/cost.py --budget prints, per run, each component's mean cores and the host's as metrics.json `cpu`
    has them (the analyzer's one computation), and the headroom to the 90 % validity limit."""
    from rtclab import analyze, synth
    run = tmp_path / "run"
    synth.write_run(run, synth.SynthConfig())
    m, _ = analyze.analyze(run, run_tshark=False)
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "cpu" / "cost.py"), "--budget", str(run)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {line[:18].strip(): line[18:].split() for line in r.stdout.splitlines()[1:]}
    c = m["cpu"]
    for name, entry in c["components"].items():
        assert float(rows[name][0]) == pytest.approx(entry["mean_cores"], abs=5e-4), name
    assert float(rows["outside the run"][0]) == pytest.approx(c["outside_run"]["mean_cores"], abs=5e-4)
    assert float(rows["host (/proc/stat)"][0]) == pytest.approx(c["host_busy"]["mean_cores"], abs=5e-4)
    assert float(rows["headroom to 90 %"][0]) == pytest.approx(0.9 * c["cpus"] - c["host_busy"]["mean_cores"], abs=1e-3)


def test_uml_probe_against_the_calls_reverse_packets(tmp_path):
    """bench/uml/probe_vs_packets.py: for each second the probe saw late, the reverse packets' largest one-way delay
    beyond the run's minimum in that second, checked against the values written here."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    t0 = 1_700_000_000.0
    offsets = [0.002 + i * 0.004 for i in range(1000)]  # 4 s of reverse packets, one every 4 ms
    sent = [t0 + x for x in offsets]
    owd_ms = [25.0 + (12.0 if 2.0 <= x < 2.02 else 0.0) for x in offsets]  # 5 packets 12 ms late in second 2-3
    pq.write_table(pa.table({"direction": ["reverse"] * 1000 + ["forward"],
                             "t_send_ns": [int(t * 1e9) for t in sent] + [int(t0 * 1e9)],
                             "owd_ns": [int(o * 1e6) for o in owd_ms] + [900_000_000]}), tmp_path / "packets.parquet")
    (tmp_path / "manifest.json").write_text(json.dumps({"timings": {"call_start": t0}}))
    seconds = [{"t": t0 + k, "samples": 50, "late_1ms": 0, "late_10ms": 1 if k in (2, 3) else 0, "late_100ms": 0,
                "max_ms": 24.0 if k == 2 else 13.0 if k == 3 else 2.0} for k in range(1, 5)]
    (tmp_path / "uml-timer.jsonl").write_text("".join(json.dumps(x) + "\n" for x in seconds))
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "uml" / "probe_vs_packets.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    extra = [o - 25.0 for o in owd_ms]
    p999 = percentile(extra, 99.9)
    assert f"1000 reverse packets, extra one-way delay p99.9 {p999:.1f} ms, max 12.0 ms, 5 over 10 ms" in lines[0]
    assert lines[1:] == [
        "     1.0-   2.0 s: probe max  24.0 ms (1 of 50 answers over 10 ms); reverse packets 250, max extra 0.0 ms",
        "     2.0-   3.0 s: probe max  13.0 ms (1 of 50 answers over 10 ms); reverse packets 250, max extra 12.0 ms"]


def test_pie_timer_finds_the_update_period_and_checks_each_step(tmp_path):
    """bench/uml/pie_timer.py on samples written here: sch_pie's probability updated every 40 ms by its own formula
    (tupdate 30 ms at HZ 100), read every 2.5 ms; one stretch of 300 ms without updates (queue below target)."""
    sys.path.insert(0, str(ROOT / "bench" / "uml"))
    try:
        import pie_timer
    finally:
        sys.path.pop(0)
    lines, prob, qdelay_old, n_updates = [], 0.0, 0.0, 0
    t, next_update = 100.0, 100.04
    while t < 104.0:
        qdelay = 0.030 + 0.010 * math.sin(t * 7)  # above the 20 ms target: every update moves the probability
        if t >= next_update:
            if not 101.0 <= t < 101.3:
                prob += pie_timer.step(prob, qdelay, qdelay_old)
                n_updates += 1
            qdelay_old, next_update = qdelay, next_update + 0.040
        lines.append(f"{t + 1.7e9:.6f} {t:.6f} 3 {int(prob * 2**64)} {int(qdelay * 1e6)} 30000 0\n")
        t += 0.0025
    (tmp_path / "pie-samples.txt").write_text("".join(lines))
    (tmp_path / "pie-timer.json").write_text(json.dumps({"backend": {"kernel_hz": 100}, "tupdate_ms": 30}))
    m = pie_timer.measure(pie_timer.read_samples(tmp_path / "pie-samples.txt"), 0.030, 100)
    assert m["linux_period_ms"] == pytest.approx(40.0)
    assert m["updates"] == n_updates - 1 - 1  # gaps between consecutive updates, less the one across the stretch
    assert m["interval_ms"]["median"] == pytest.approx(40.0, abs=2.5)
    assert m["step_correlation"] > 0.99
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "uml" / "pie_timer.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Linux's period at HZ 100: 40 ms" in r.stdout


def test_uml_late_seconds_against_the_hypervisors_steal(tmp_path):
    """bench/uml/steal_lateness.py on a run written here: 6 seconds, two late (a 24 ms answer; ping silent 80 ms), each
    matched to the cpu.jsonl sample that overlaps it most (half-second samples shifted by 0.3 s)."""
    t0 = 1_700_000_000.0
    (tmp_path / "manifest.json").write_text(json.dumps({"timings": {"call_start": t0}}))
    probe = [(1, 2.0, 0.0), (2, 24.0, 0.0), (3, 3.0, 0.0), (4, 1.0, 80.0), (5, 9.9, 49.0), (6, 0.5, 0.0)]
    (tmp_path / "uml-timer.jsonl").write_text("".join(
        json.dumps({"t": t0 + k, "samples": 200, "max_ms": m, "gap_ms": g}) + "\n" for k, m, g in probe))
    # Steal per half second, the samples ending at k + 0.3 and k + 0.8: the second (k - 1, k] overlaps most (0.5 s)
    # with the one ending at k - 0.2, i.e. at (k - 1) + 0.8.
    steal = {1.8: 0.4, 2.8: 0.06, 3.8: 0.2, 4.8: 0.3, 5.8: 0.0, 0.8: 0.0}
    lines = [{"kind": "header", "t": t0, "interval_s": 0.5, "cpus": 2}]
    lines += [{"kind": "sample", "t": t0 + x, "dt": 0.5, "host": {"busy": 1.0, "steal": steal.get(round(x, 1), 0.9)},
               "groups": {}, "procs": {}} for x in [k / 2 + 0.3 for k in range(0, 14)]]
    (tmp_path / "cpu.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "uml" / "steal_lateness.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # Late: the seconds ending at 2 (steal of the sample ending 1.8: 0.4) and 4 (ending 3.8: 0.2); the others end at
    # 1, 3, 5, 6 (samples ending 0.8, 2.8, 4.8, 5.8: 0, 0.06, 0.3, 0).
    assert r.stdout.splitlines() == [
        f"{tmp_path}: late seconds 2: steal mean 0.300 cores, 2 (100 %) with >= 0.1; "
        "others 4: steal mean 0.090 cores, 1 (25 %) with >= 0.1",
        f"  {tmp_path} second ending 2.0 s into the call: probe max 24.0 ms, steal 0.40 cores",
        f"  {tmp_path} second ending 4.0 s into the call: probe max 1.0 ms, steal 0.20 cores"]
