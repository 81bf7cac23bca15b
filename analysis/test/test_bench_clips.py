"""bench/clips/compare.py on hand-built run directories: each measure read from where docs/metrics.md puts it, the QP
from the sender's getStats counters, the ratio of the means and its spread over run pairs computed here, an invalid
run left out with its failed checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPARE = ROOT / "bench" / "clips" / "compare.py"


def write_run(d: Path, *, rate_bps: float, psnr: float, n_dd: int, qp: list[tuple[int, int]],
              valid: bool = True) -> None:
    """A run directory: metrics.json with the fields compare.py reads, getstats-a.jsonl with (framesEncoded, qpSum)
    samples of the video outbound-rtp (and an audio one and a sample without qpSum that must be skipped)."""
    d.mkdir(parents=True)
    m = {
        "validity": {"valid": valid, "checks": [{"name": "capture_complete", "ok": valid}, {"name": "x", "ok": True}]},
        "flows": [{"direction": "forward", "kind": "video", "packets_received": 900,
                   "throughput_bps": {"mean": rate_bps}, "queuing_delay_ms": {"p50": 10.0, "p95": 40.0}},
                  {"direction": "forward", "kind": "video", "packets_received": 3, "throughput_bps": {"mean": 1.0}},
                  {"direction": "forward", "kind": "audio", "packets_received": 3000, "throughput_bps": {"mean": 5e4}}],
        "getstats": {"directions": {"forward": {"streams": [
            {"kind": "audio", "target_bitrate_bps": {"mean": 1.0}},
            {"kind": "video", "target_bitrate_bps": {"mean": rate_bps + 100e3}, "sent_frame_height": {"mean": 720.0},
             "sent_fps": {"mean": 30.0},
             "quality_limitation_durations_s": {"bandwidth": 15.0, "cpu": 0, "none": 45.0, "other": 0}}]}}},
        "frames": {"b": {"quality": {"psnr_db": {"mean": psnr}, "ssim": {"mean": 0.9}}}},
        "congestion_controller": {"sides": {"a": {"controller": {
            "n_dd": n_dd, "overuse_events": 2, "detector_state_fraction": {"overusing": 0.05}}}}},
    }
    (d / "metrics.json").write_text(json.dumps(m))
    lines = [{"report": [{"type": "outbound-rtp", "kind": "video", "framesEncoded": 0}]}]
    for frames, qp_sum in qp:
        lines.append({"report": [{"type": "outbound-rtp", "kind": "audio", "packetsSent": 5},
                                 {"type": "outbound-rtp", "kind": "video", "framesEncoded": frames, "qpSum": qp_sum}]})
    (d / "getstats-a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def compare(out: Path) -> dict:
    r = subprocess.run([sys.executable, str(COMPARE), str(out), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_measures_ratios_and_spread(tmp_path):
    write_run(tmp_path / "testsrc2-1", rate_bps=1.0e6, psnr=30.0, n_dd=4, qp=[(10, 300), (110, 2300)])  # QP 20
    write_run(tmp_path / "testsrc2-2", rate_bps=1.5e6, psnr=34.0, n_dd=0, qp=[(5, 100), (65, 1300)])  # QP 20
    write_run(tmp_path / "natural-1", rate_bps=1.2e6, psnr=36.0, n_dd=2, qp=[(10, 100), (110, 3100)])  # QP 30
    write_run(tmp_path / "natural-2", rate_bps=1.8e6, psnr=38.0, n_dd=6, qp=[(1, 40), (41, 1640)])  # QP 40
    write_run(tmp_path / "natural-3", rate_bps=9e9, psnr=99.0, n_dd=99, qp=[(1, 1), (2, 2)], valid=False)
    (tmp_path / "natural-4").mkdir()  # a call that left no metrics
    out = compare(tmp_path)
    rows = {r["measure"]: r for r in out["rows"]}
    assert sorted(out["left_out"]) == ["natural-3: INVALID (capture_complete)",
                                       "natural-4: no metrics.json (see natural-4.log)"]

    rate = rows["video rate (flow throughput)"]
    assert rate["testsrc2"]["values"] == [1000.0, 1500.0] and rate["natural"]["values"] == [1200.0, 1800.0]
    assert abs(rate["ratio"] - 1500 / 1250) < 1e-12
    assert (rate["ratio_min"], rate["ratio_max"]) == (1200 / 1500, 1800 / 1000)

    qp = rows["QP (qpSum / framesEncoded)"]
    assert qp["testsrc2"]["values"] == [20.0, 20.0] and qp["natural"]["values"] == [30.0, 40.0]
    assert qp["ratio"] == 35 / 20 and (qp["ratio_min"], qp["ratio_max"]) == (1.5, 2.0)

    psnr = rows["PSNR"]
    assert psnr["natural"]["mean"] == 37.0 and psnr["natural"]["min"] == 36.0 and psnr["natural"]["max"] == 38.0

    # A testsrc2 run with n_dd 0: the ratio of the means stands, the spread has no finite top.
    n_dd = rows["GCC n_dd"]
    assert n_dd["ratio"] == 4 / 2 and n_dd["ratio_min"] == 2 / 4 and n_dd["ratio_max"] is None

    assert rows["encoder target (getStats targetBitrate)"]["testsrc2"]["values"] == [1100.0, 1600.0]
    assert rows["bandwidth-limited share"]["natural"]["values"] == [0.25, 0.25]
    assert rows["video queuing delay p95"]["ratio"] == 1.0


def test_a_clip_without_valid_runs_is_an_error(tmp_path):
    write_run(tmp_path / "testsrc2-1", rate_bps=1e6, psnr=30.0, n_dd=1, qp=[(1, 1), (2, 3)])
    write_run(tmp_path / "natural-1", rate_bps=1e6, psnr=30.0, n_dd=1, qp=[(1, 1), (2, 3)], valid=False)
    r = subprocess.run([sys.executable, str(COMPARE), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "a clip has no valid run" in r.stderr and "natural-1: INVALID (capture_complete)" in r.stderr
