"""Bad input gives a clear message, what can still be computed, and the gap marked; never only a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import inprocess
from rtclab import rundir, synth


def rtclab(*args: str) -> subprocess.CompletedProcess:
    """`rtclab ARGS...` in this process (test-support/inprocess.py)."""
    return inprocess.rtclab(*args)


def rtclab_process(*args: str) -> subprocess.CompletedProcess:
    """`python -m rtclab.cli ARGS...` as its own process: what a user sees, a traceback included."""
    return subprocess.run([sys.executable, "-m", "rtclab.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("good")
    synth.write_run(run, synth.SynthConfig(duration_s=4.0, tcp_start_s=1.0, tcp_stop_s=3.0))
    return run


def copy(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run, dst)
    return dst


def metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_truncated_capture_keeps_the_packets_before_the_cut(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    data = (run / "capture-b.pcap").read_bytes()
    (run / "capture-b.pcap").write_bytes(data[: len(data) // 2 + 7])  # cut inside a record
    r = rtclab("analyze", str(run), "--no-tshark", "-q")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert "capture-b.pcap: capture truncated" in r.stdout
    assert "gap: capture-b.pcap ends early" in r.stdout
    m = metrics(run)
    video = next(f for f in m["flows"] if f["kind"] == "video" and f["direction"] == "forward")
    # Departures after b's capture stopped are unknown, not lost: the loss ratio stays near the model's 1 %.
    assert video["packets_received"] > 300 and video["loss_ratio"] < 0.05


def test_corrupt_record_header_stops_reading_with_its_position(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    data = bytearray((run / "capture-a.pcap").read_bytes())
    data[24 + 8: 24 + 12] = (10_000_000).to_bytes(4, "little")  # first record claims 10 MB
    (run / "capture-a.pcap").write_bytes(bytes(data))
    r = rtclab("analyze", str(run), "--no-tshark", "-q")
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr
    assert "capture corrupt: record 1 at byte 24" in r.stdout


def test_unreadable_capture_falls_back_to_the_other_one(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    (run / "capture-a.pcap").write_bytes(b"this is not a capture at all")
    r = rtclab("analyze", str(run), "--no-tshark", "-q")
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr
    assert "not a pcap file" in r.stdout
    assert "gap: capture-a.pcap unreadable" in r.stdout
    video = next(f for f in metrics(run)["flows"] if f["kind"] == "video" and f["direction"] == "forward")
    assert video["owd_ms"]["count"] == 0 and video["throughput_bps"]["mean"] > 0 and video["jitter_ms"]["mean"] > 0
    assert video["rtp_seq_lost"] is not None


def test_pcapng_is_named(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    (run / "capture-a.pcap").write_bytes(b"\x0a\x0d\x0d\x0a" + b"\0" * 40)
    r = rtclab("analyze", str(run), "--no-tshark", "-q", "--no-dashboard")
    assert r.returncode == 0 and "pcapng is not supported" in r.stdout


def test_missing_getstats_and_interrupted_run(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    (run / "getstats-a.jsonl").unlink()
    with (run / "getstats-b.jsonl").open("a") as f:
        f.write('{"t": 1, "side": "b", "report": [{"id"')  # a write cut by the interruption
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(status="incomplete", error="Chromium B crashed at 3.1 s")
    (run / "manifest.json").write_text(json.dumps(manifest))
    r = rtclab("analyze", str(run), "--no-tshark", "-q")
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr
    assert "getstats-a.jsonl missing" in r.stdout
    assert "run status is 'incomplete' (Chromium B crashed at 3.1 s)" in r.stdout
    assert "getstats-b.jsonl: 1 damaged line(s) skipped" in r.stdout
    assert metrics(run)["flows"], "per-packet metrics still computed"


def test_nothing_to_analyse_is_a_non_zero_exit_with_a_reason(tmp_path):
    r = rtclab_process("analyze", str(tmp_path))
    assert r.returncode == 2
    assert "nothing to analyse" in r.stderr and "capture-a.pcap missing" in r.stderr
    assert "Traceback" not in r.stderr
    r = rtclab_process("analyze", str(tmp_path / "does-not-exist"))
    assert r.returncode == 2 and "is not a directory" in r.stderr


def test_json_output_is_the_metrics(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    r = rtclab("analyze", str(run), "--json", "--no-tshark", "--no-dashboard")
    assert r.returncode == 0
    m = json.loads(r.stdout)
    for f in m["flows"]:
        for key in ("src", "dst", "protocol", "kind", "ssrc", "packets_sent", "packets_received", "loss_ratio",
                    "owd_ms", "queuing_delay_ms", "throughput_bps", "reordered", "jitter_ms"):
            assert key in f
        for key in ("min", "mean", "p50", "p95", "p99", "max"):
            assert key in f["owd_ms"] and key in f["queuing_delay_ms"]
        assert "mean" in f["throughput_bps"]
    assert m["validity"]["valid"] is True


def test_compare_two_runs(good_run, tmp_path):
    other = tmp_path / "other"
    synth.write_run(other, synth.SynthConfig(duration_s=4.0, queue_peak_ms=80.0, loss=0.05, seed=7))
    out = tmp_path / "cmp.html"
    r = rtclab("compare", str(good_run), str(other), "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "valid", "video"]
    rows = {line.split()[1]: line for line in lines[2:4]}
    assert set(rows) == {good_run.name, "other"}
    html = out.read_text()
    assert "queuing_box" in html and "rate_bars" in html and "cdn" not in html.lower().split("<script>")[0]


def test_show_gives_wiresharks_full_dissection(good_run):
    r = rtclab("analyze", str(good_run), "--no-tshark", "--no-dashboard", "-q")
    assert r.returncode == 0
    video = next(f for f in metrics(good_run)["flows"] if f["kind"] == "video" and f["direction"] == "forward")
    r = rtclab("show", str(good_run), "--flow", str(video["id"]), "--limit", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and f"rtp.ssrc == {video['ssrc']:#010x}" in lines[0] and lines[-1] == "..."
    assert "seq 0 " in lines[1] and "seq 1 " in lines[2]
    r = rtclab("show", str(good_run), "--side", "b", "--frame", "1")
    assert r.returncode == 0 and "Layer IP" in r.stdout
    r = rtclab("show", str(good_run), "--flow", "9999")
    assert r.returncode == 2 and "no flow 9999" in r.stderr


def test_bottleneck_queue_from_the_emulators_counters(good_run, tmp_path):
    run = copy(good_run, tmp_path)
    t0 = json.loads((run / "manifest.json").read_text())["timings"]["call_start"]
    stats = [{"t": t0 + k * 0.1, "queue_bytes": 1250 * k, "queue_packets": k, "rate_kbit": 1000.0} for k in range(5)]
    (run / "bottleneck-forward.stats.jsonl").write_text("".join(json.dumps(s) + "\n" for s in stats))
    r = rtclab("analyze", str(run), "--no-tshark", "--no-dashboard", "-q")
    assert r.returncode == 0
    q = metrics(run)["bottleneck_queue"]
    # 1250 bytes at 1000 kbit/s = 10 ms
    assert q["queue_delay_ms"] == {"mean": 20.0, "max": 40.0} and q["queue_packets"]["max"] == 4.0
    assert q["series"]["queue_delay_ms"][1] == [0.1, 10.0]
    assert "forward bottleneck queue (bottleneck-forward.stats.jsonl): mean 20.0 ms, max 40.0 ms" in r.stdout
    # The kernel backend's tc statistics instead: the root qdisc of r-eth1.
    (run / "bottleneck-forward.stats.jsonl").unlink()
    tc = [{"t": t0 + k, "ns": "r", "qdiscs": [{"kind": "tbf", "dev": "r-eth1", "root": True, "backlog": 2500 * k,
                                                "qlen": 2 * k}, {"kind": "pfifo", "dev": "r-eth1", "backlog": 1}]}
          for k in range(3)]
    (run / "qdisc-stats.jsonl").write_text("".join(json.dumps(s) + "\n" for s in tc))
    rtclab("analyze", str(run), "--no-tshark", "--no-dashboard", "-q")
    q = metrics(run)["bottleneck_queue"]
    assert q["source"] == "qdisc-stats.jsonl" and q["queue_bytes"]["max"] == 5000.0


def _last_timestamp_s(pcap: Path) -> float:
    """The last record's time in a pcap, by the run-directory library's record reader (not the Rust decoder)."""
    return max(t for t, _, _ in rundir.pcap_records(pcap)) / 1e9


def test_an_interrupted_run_covers_what_was_recorded(good_run, tmp_path):
    # The call never ended (no call_end) and was to last 60 s: phases and rates cover the 4 s that were recorded.
    run = copy(good_run, tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["timings"]["call_end"] = None
    manifest["scenario"]["duration_s"] = 60
    manifest.update(status="incomplete", error="interrupted by SIGINT")
    (run / "manifest.json").write_text(json.dumps(manifest))
    r = rtclab("analyze", str(run), "--no-tshark", "--no-dashboard", "-q")
    assert r.returncode == 0, r.stderr
    m = metrics(run)
    recorded = max(_last_timestamp_s(run / f"capture-{s}.pcap") for s in "ab") - manifest["timings"]["call_start"]
    assert m["run"]["duration_s"] == pytest.approx(recorded, abs=1e-6)
    assert m["phases"][0] == {"name": "all", "start_s": 0.0, "end_s": pytest.approx(recorded, abs=1e-6),
                              "cross_traffic": False, "scheduled_start_s": 0.0,
                              "scheduled_end_s": pytest.approx(recorded, abs=1e-6)}
    assert recorded < 5
