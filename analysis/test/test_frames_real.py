"""REAL CALL (marker `real_calls`, root, real Chromium): the default call of scenarios/default.yaml (20 s; 22 s under
npm test) with the stamped default clip that test_eventlog_real.py reads too (conftest.py's default_call_run). The
receiving page records every presented frame and reads its stamp; the analysis reads a number on at least 99 % of the
frames tried and finds the RTP packets of at least 99 % of the frames shown (issue 20's bar), and its per-frame delays
agree with the same join done here from packets.parquet and frames-b.jsonl by plain Python. Run it under the
machine-wide lock:
flock -x /tmp/rtclab-quiet.lock .venv/bin/python -m pytest analysis/test/test_frames_real.py -p no:xdist"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from measures import measure, measure_run_timing
from rtclab import analyze, freezes, getstats, report

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.real_calls,
    pytest.mark.skipif(os.geteuid() != 0, reason="real calls need root (network namespaces, tc, captures)"),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def joined_by_hand(run: Path, m: dict, b: dict, lines: list[dict]) -> tuple[list[float], list[float]]:
    """The network and receiver parts (ms) of each shown frame the analyzer joins (b: metrics.json frames.b; lines:
    frames-b.jsonl), by the join done here by hand."""
    # The same join by hand: per shown frame, the first departure and last arrival of its RTP timestamp's packets, a
    # lost one's repair on the RTX stream in its place (docs/metrics.md "frames": in arrival order, each RTX packet
    # repairs the earliest-sent lost original of its frame whose payload is 2 bytes shorter and that left before it).
    t0_ms = round(m["run"]["call_start"] * 1000)  # the call's span in whole ms, as docs/metrics.md "frames" says
    end_ms = t0_ms + round(m["run"]["duration_s"] * 1000)
    # RTP rows only: the stream's RTCP sender reports carry its SSRC too, with rtp_ts 0 in the table (a frame record
    # with RTP timestamp 0 once matched them here and not in the analyzer's join, which is of RTP packets).
    cols = pq.read_table(run / "packets.parquet",
                         columns=["direction", "class", "ssrc", "status", "rtp_ts", "rtp_payload_len", "t_send_ns",
                                  "t_recv_ns"]).to_pydict()
    first_send: dict[int, int] = {}
    last_recv: dict[int, int] = {}
    lost: dict[tuple[int, int], list[int]] = {}  # (RTP timestamp, payload length) -> the lost originals' departures
    rtx: list[tuple[int, int | None, int, int]] = []
    for d, cls, ssrc, status, ts, length, s, r in zip(
            cols["direction"], cols["class"], cols["ssrc"], cols["status"], cols["rtp_ts"], cols["rtp_payload_len"],
            cols["t_send_ns"], cols["t_recv_ns"]):
        if d != "forward" or cls != "rtp":
            continue
        if ssrc == b["ssrc"]:
            if s is not None:
                first_send[ts] = min(first_send.get(ts, s), s)
            if status == "lost":
                lost.setdefault((ts, length), []).append(s)
            elif r is not None:
                last_recv[ts] = max(last_recv.get(ts, r), r)
        elif ssrc == b["rtx_ssrc"] and r is not None:
            rtx.append((r, s, ts, length))
    for r, s, ts, length in sorted(rtx, key=lambda x: x[0]):
        waiting = sorted(lost.get((ts, length - 2), []))
        i = next((i for i, sent in enumerate(waiting) if s is None or sent <= s), None)
        if i is not None:
            waiting.pop(i)
            lost[(ts, length - 2)] = waiting
            last_recv[ts] = max(last_recv.get(ts, r), r)
    unrepaired = {ts for (ts, _), left in lost.items() if left}
    network, receiver = [], []
    for f in lines[1:]:
        if f.get("kind") != "frame" or not t0_ms <= f["expected_display_ms"] < end_ms:
            continue
        ts = f["rtp_timestamp"]
        if ts in first_send and ts in last_recv and ts not in unrepaired:
            network.append((last_recv[ts] - first_send[ts]) / 1e6)
            receiver.append(f["expected_display_ms"] - last_recv[ts] / 1e6)
    return network, receiver


def test_a_real_call_numbers_and_joins_the_frames_it_shows(default_call_run):
    run = default_call_run
    manifest = json.loads((run / "manifest.json").read_text())
    measure_run_timing("frames.default", run)
    assert manifest["validity"]["valid"], manifest["validity"]
    lines = [json.loads(x) for x in (run / "frames-b.jsonl").read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["read_every"] == 1
    assert lines[0]["clip"]["stamp_version"] is not None and lines[0]["clip"]["frames"] == 150
    assert not (run / "frames-a.jsonl").exists()  # the default call sends a -> b only

    m, _ = analyze.analyze(run, run_tshark=False)
    b = m["frames"]["b"]
    measure("frames.default.records_per_s", b["records"] / m["run"]["duration_s"], 3)
    measure("frames.default.numbered_ratio", b.get("numbered_ratio"), 5)
    measure("frames.default.joined_ratio", b.get("joined_ratio"), 5)
    measure("frames.default.with_capture_time_ratio",
            b["with_capture_time"] / b["records"] if b["records"] else None, 5)
    measure("frames.default.number_jumps_ratio", b["number_jumps"] / b["numbered"] if b["numbered"] else None, 5)
    measure("frames.default.g2g_p50_ms", b["glass_to_glass_ms"].get("p50"), 3)
    # About as many frames presented as the sender sent (in the records' span): far fewer would mean the call stalled.
    # Not against the clip's 30 fps: at 1 Mbit/s Chrome's encoder is limited by bandwidth
    # (qualityLimitationReason "bandwidth") and "balanced" may lower the frame rate as well as the resolution (one run
    # of 2026-11-29 recorded 14.8 frames a second, others 27.6-28.4); the rate is a measure above.
    assert b["presented_frames"] >= 0.9 * b["sent_frames"], b
    assert b["read"] == b["records"]
    assert b["numbered_ratio"] >= 0.99, b
    assert b["joined_ratio"] >= 0.99, b
    assert b["with_capture_time"] >= 0.99 * b["records"], b
    assert b["number_jumps"] <= 0.01 * b["numbered"], b  # misread stamps
    assert b["shown_twice"] == 0, b
    # The sender's own reports give the capture clock; no frame can leave before it was captured.
    assert b["capture_source"] == "sender_reports"
    assert b["sender_ms"]["min"] >= 0, b["sender_ms"]
    g2g = b["glass_to_glass_ms"]
    assert 25 < g2g["p50"] < 2000, g2g  # at least the 25 ms propagation delay, and not absurd

    network, receiver = joined_by_hand(run, m, b, lines)
    assert len(network) == b["joined"]
    assert statistics.median(network) == pytest.approx(b["network_ms"]["p50"], abs=1e-3)
    assert statistics.median(receiver) == pytest.approx(b["receiver_ms"]["p50"], abs=1e-3)

    text = report.render(m)
    assert "frames shown at b (forward" in text and "delay p50/p95 ms: glass-to-glass" in text


def check_the_outage_froze_the_picture(run: Path, m: dict) -> None:
    """The freezes of the 12-14 s outage, in the record and in getStats (the test's docstring)."""
    fz = m["frames"]["b"]["freezes"]
    # The outage freezes the picture for most of it, and nothing froze it for a second or more before. Where the
    # freeze starts and how it ends is the call's: the frames already in the 300 ms queue and in the receiver's jitter
    # buffer are shown after 12 s (one run's freeze began at 12.81 s and lasted 1.25 s, on a new machine), and 1 kbit/s
    # still carries 250 bytes in the 2 s: a small frame that got through ended one run's freeze at 13.75 s, and split
    # another's in two (1051 + 951 ms, under load). So what is asserted is the freeze time inside the outage: at least
    # half of its 2 s (the run whose freeze began at 12.81 s: 1.19 s; the split one: about 2 s), each freeze begun in
    # it at most 4 s long. The recovery may freeze the picture again (seen once: 1.07 s at 18.3 s, GCC coming back
    # through the DropTail queue): not asserted.
    inside = [f for f in fz["list"] if f["start_s"] < 14.0 and f["start_s"] + f["duration_ms"] / 1000 > 12.0]
    covered_s = sum(min(14.0, f["start_s"] + f["duration_ms"] / 1000) - max(12.0, f["start_s"]) for f in inside)
    outage = [f for f in inside if f["duration_ms"] >= 1000]
    measure("outage.freeze_start_s", outage[0]["start_s"] if outage else None, 3)
    measure("outage.freeze_ms", outage[0]["duration_ms"] if outage else None, 1)
    measure("outage.covered_s", covered_s, 3)
    measure("outage.longest_inside_ms", max((f["duration_ms"] for f in inside), default=None), 1)
    early = [f for f in fz["list"] if f["duration_ms"] >= 1000 and f["start_s"] < 11.5]
    measure("outage.early_long_freezes", len(early), 0)
    assert covered_s >= 1.0, fz
    assert all(f["duration_ms"] <= 4000 for f in inside), fz
    assert not [f for f in fz["list"] if f["duration_ms"] >= 1000 and f["start_s"] < 11.5], fz
    g = fz["getstats"]
    # getStats saw the outage's freeze too. Over the whole call, the freezes as Chrome counts them (the record with the
    # frames decoded but not presented put back, docs/metrics.md "Freezes") against getStats' own counters over the
    # same span are printed, not held to a bound: the record cannot know when Chrome's renderer took the frames the
    # compositor skipped, and where a stall under load left them is a guess. Measured (bench/freezes/RESULTS.md):
    # quiet and in 9 of 10 loaded runs the same count or one more (totals -1.2 to +13 %); then, in a loaded run of the
    # fixed test, 7 against getStats' 5 (+22.8 %). What is exact is asserted: the frames put back are those getStats
    # decoded and the page did not present. As shown (the frames presented) differs by definition, printed too.
    ac = (g["as_chrome_freeze_count"], g["as_chrome_freezes_ms"])
    print(f"freezes over the span {g['start_s']:.1f}-{g['end_s']:.1f} s: getStats {g['freeze_count']:.0f}, "
          f"{g['freezes_ms']:.0f} ms; as Chrome counts {ac[0]}, {ac[1]:.0f} ms "
          f"({fz['as_chrome']['put_back_frames']} frames put back); as shown {g['record_freeze_count']}, "
          f"{g['record_freezes_ms']:.0f} ms; frames presented {g['presented']}, decoded {g['frames_decoded']:.0f}")
    measure("outage.as_chrome_count_diff", ac[0] - g["freeze_count"], 0)
    measure("outage.as_chrome_ms_diff_pct",
            100 * (ac[1] - g["freezes_ms"]) / g["freezes_ms"] if g["freezes_ms"] else None, 2)
    measure("outage.getstats_freezes_ms", g["freezes_ms"], 1)
    measure("outage.getstats_to_covered_ratio", g["freezes_ms"] / (covered_s * 1000) if covered_s else None, 4)
    assert g["freezes_ms"] >= 0.9 * covered_s * 1000, g
    # The frames put back are exactly those getStats decoded and the page did not present, over the span.
    assert fz["as_chrome"]["put_back_frames"] == max(0, g["frames_decoded"] - g["presented"]), g
    around = outage_window_freezes(run, m, 10.0, 17.0)
    print(f"freeze time in 10-17 s: getStats {around['freezes_ms']} ms, record {around['record_freezes_ms']} ms")
    measure("outage.window_getstats_freezes_ms", around["freezes_ms"], 1)
    measure("outage.window_record_freezes_ms", around["record_freezes_ms"], 1)
    measure("outage.window_diff_pct", 100 * (around["record_freezes_ms"] - around["freezes_ms"]) / around["freezes_ms"]
            if around["freezes_ms"] else None, 2)
    assert abs(around["freezes_ms"] - around["record_freezes_ms"]) <= 0.1 * around["freezes_ms"], around


def check_the_picture_was_worse_at_300_kbit(run: Path, m: dict) -> None:
    """PSNR and SSIM of the frames sampled at 300 kbit/s (24-31 s) against those at 1 Mbit/s (4-12 s)."""
    q = m["frames"]["b"]["quality"]
    assert "error" not in q, q
    rows = [json.loads(x) for x in (run / q["rows_file"]).read_text().splitlines()]
    assert len(rows) == q["compared"] > 0
    phase = lambda lo, hi: [r for r in rows if lo <= r["t_s"] < hi]
    full, low = phase(4, 12), phase(24, 31)
    mean = lambda rs, key: statistics.mean(r[key] for r in rs)
    print(f"quality at 1 Mbit/s: {len(full)} frames, PSNR {mean(full, 'psnr_db'):.2f} dB, SSIM "
          f"{mean(full, 'ssim'):.4f}, sizes {sorted({(r['width'], r['height']) for r in full})}; at 300 kbit/s: "
          f"{len(low)} frames, PSNR {mean(low, 'psnr_db'):.2f} dB, SSIM {mean(low, 'ssim'):.4f}, sizes "
          f"{sorted({(r['width'], r['height']) for r in low})}")
    measure("outage.full_sampled_frames", len(full), 0)
    measure("outage.low_sampled_frames", len(low), 0)
    measure("outage.psnr_gain_db", mean(full, "psnr_db") - mean(low, "psnr_db"), 3)
    measure("outage.ssim_gain", mean(full, "ssim") - mean(low, "ssim"), 5)
    # Enough frames for each mean: 300 kbit/s also lowers the frame rate, the more so on a slower machine (16-21
    # sampled frames in the low phase on one 2-vCPU machine, 11 on a slower one); the gain is over 1 dB.
    assert q["sample_every"] == 5 and len(full) >= 10 and len(low) >= 5, (len(full), len(low))
    assert mean(full, "psnr_db") > mean(low, "psnr_db")
    assert mean(full, "ssim") > mean(low, "ssim")
    assert "picture quality of" in report.render(m)


def check_the_network_part_follows_the_delay_step(run: Path, m: dict) -> None:
    """The network part of glass-to-glass steps by the 100 ms of the delay step at 31 s, queuing delay taken out."""
    t0_ns = round(m["run"]["call_start"] * 1e9)
    parts = frame_network_parts(run, m["frames"]["b"]["ssrc"])
    window = lambda lo, hi: [x for x in parts if t0_ns + lo * 1e9 <= x[0] < t0_ns + hi * 1e9]
    before, after = window(27, 30.75), window(31.25, 37)
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    step_raw, step_net = med(after, 1) - med(before, 1), med(after, 2) - med(before, 2)
    print(f"network part of glass-to-glass: median {med(before, 1):.1f} ms in 27-30.75 s ({len(before)} frames), "
          f"{med(after, 1):.1f} ms in 31.25-37 s ({len(after)}); without the packets' queuing delay "
          f"{med(before, 2):.1f} -> {med(after, 2):.1f} ms")
    measure("outage.step_before_frames", len(before), 0)
    measure("outage.step_after_frames", len(after), 0)
    assert len(before) >= 10 and len(after) >= 10, (len(before), len(after))
    measure("outage.step_net_ms", step_net, 2)
    measure("outage.step_raw_ms", step_raw, 2)
    # The step itself, with the packets' own queuing delay taken out: the 100 ms the scenario asked for. The raw part
    # (with the queue) is printed, not asserted: GCC may drain the queue across the step (41.2 ms once, on a new
    # machine's first fresh-clone CI), which is the call's doing, not the emulator's.
    assert 90 <= step_net <= 110, step_net


def test_a_2_s_outage_is_one_freeze_of_about_2_s_in_the_record_and_in_getstats(tmp_path):
    """The forward link drops to 1 kbit/s (nothing of the call fits: DT/300 holds less than a packet) from 12 to
    14 s of a 37 s call: the record's freezes cover most of it (the picture resumes when a frame decodable after the
    outage arrives; 1 kbit/s can still carry a small one before, which may split the freeze), and getStats' own
    totalFreezesDuration over the same span holds them.
    At 31 s the forward propagation delay steps from 25 to 125 ms: the network part of glass-to-glass (first packet
    of a frame sent to its last received) steps with it, by 100 ms once the queuing delay its packets saw is taken
    out (issue 20's "the network part of glass-to-glass tracks a configured delay step").
    From 20 s on the link carries 300 kbit/s: the picture quality of the frames sampled there (from 24 s, once GCC
    has come down) is lower, in PSNR and in SSIM, than that of the frames shown at 1 Mbit/s before the outage
    (4-12 s, after GCC's start) - issue 20's "unimpaired call against a 300 kbit/s call of the same clip", as two
    phases of one call."""
    doc = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    doc["name"] = "outage-2s"
    doc["network"]["forward"]["rate"] = {"schedule": [{"at_s": 0, "kbit": 1000}, {"at_s": 12, "kbit": 1},
                                                      {"at_s": 14, "kbit": 1000}, {"at_s": 20, "kbit": 300}]}
    # And a step of the propagation delay, 25 -> 125 ms at 31 s, after the picture quality's window (24-31 s: the
    # freezes the step can cause left too few sampled frames there once): the frames' network part follows it.
    doc["network"]["forward"]["delay_schedule"] = [{"at_s": 31, "delay_ms": 125}]
    scenario = tmp_path / "outage.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    run = tmp_path / "run"
    # Every 5th presented frame sampled (the default is every 30th): enough samples in each phase (8, 7 s) even at
    # the 12-15 fps of 300 kbit/s.
    proc = subprocess.run(["node", str(ROOT / "harness" / "cli.js"), "--scenario", str(scenario), "--duration", "37",
                           "--out", str(run), "--no-analyze"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RTCLAB_FRAMES_SAMPLE_EVERY": "5"})
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete", proc.stdout + proc.stderr
    m, _ = analyze.analyze(run, run_tshark=False)
    check_the_outage_froze_the_picture(run, m)
    check_the_picture_was_worse_at_300_kbit(run, m)
    check_the_network_part_follows_the_delay_step(run, m)
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert any(e.get("event") == "delay_change" and e.get("delay_ms") == 125 and e.get("ok") for e in events)


def outage_window_freezes(run: Path, m: dict, lo_s: float, hi_s: float) -> dict:
    """freezes.analyse over the frames presented at b in [lo_s, hi_s) of the call and the getStats samples of the
    shown stream taken in them: its `getstats` cross-check, for that window alone."""
    t0_ms = m["run"]["call_start"] * 1000.0
    recs = [json.loads(x) for x in (run / "frames-b.jsonl").read_text().splitlines()]
    shown = [r for r in recs if r.get("kind") == "frame" and isinstance(r.get("presentation_ms"), (int, float))
             and t0_ms + lo_s * 1000 <= r["presentation_ms"] < t0_ms + hi_s * 1000]
    side = getstats.read_side(run / "getstats-b.jsonl", [])
    assert side is not None
    out = freezes.analyse([float(r["presentation_ms"]) for r in shown], side.inbound.get(m["frames"]["b"]["ssrc"]),
                          t0_ms, [r.get("presented_frames") for r in shown])
    assert out["getstats"] is not None, "no getStats samples in the window"
    return out["getstats"]


def frame_network_parts(run: Path, ssrc: int) -> list[tuple[int, float, float]]:
    """Per RTP timestamp of the forward stream `ssrc`: (first packet's send time ns, last arrival - first send in ms,
    the same less the last-arriving packet's queuing delay), from packets.parquet by plain Python."""
    cols = pq.read_table(run / "packets.parquet", columns=["direction", "class", "ssrc", "rtp_ts", "t_send_ns",
                                                           "t_recv_ns", "queuing_delay_ns"]).to_pydict()
    first: dict[int, int] = {}
    last: dict[int, tuple[int, int]] = {}
    for d, cls, s, ts, sent, recv, q in zip(cols["direction"], cols["class"], cols["ssrc"], cols["rtp_ts"],
                                           cols["t_send_ns"], cols["t_recv_ns"], cols["queuing_delay_ns"]):
        if d != "forward" or cls != "rtp" or s != ssrc or sent is None:
            continue
        first[ts] = min(first.get(ts, sent), sent)
        if recv is not None and (ts not in last or recv > last[ts][0]):
            last[ts] = (recv, q)
    return [(first[ts], (recv - first[ts]) / 1e6, (recv - first[ts] - q) / 1e6)
            for ts, (recv, q) in last.items() if ts in first and q is not None and q >= 0]
