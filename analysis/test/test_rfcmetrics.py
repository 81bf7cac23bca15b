"""RFC 8867's metrics (rtclab.rfcmetrics, docs/metrics.md "RFC 8867 metrics") against hand computations: designed
per-second rates through a capacity step and a flow that joins, pauses and resumes, whose expected numbers are worked
out in the comments; then a synthetic run analysed for real, its rate and target series against the generator's own
truth."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rtclab import analyze, rfcmetrics, synth
from rtclab.rfcmetrics import MediaFlow

PACKET_BYTES = 125  # 1000 bits: a window with m packets has a rate of m kbit/s


def flow(name: str, kbit_per_window: list[int]) -> MediaFlow:
    """A flow whose window k delivers kbit_per_window[k] packets of 1000 bits, evenly spaced inside the window."""
    t = np.concatenate([k + (np.arange(m) + 0.5) / m for k, m in enumerate(kbit_per_window) if m > 0])
    return MediaFlow(name=name, src=f"{name}:1", dst="b:2", t_recv_s=t, nbytes=np.full(t.size, PACKET_BYTES),
                     t_media_s=t, queuing_delay_ms=np.array([1.0, 3.0]), packets_sent=4, packets_lost=1)


def no_tcp(lo: float, hi: float) -> int:
    return 0


def test_a_capacity_step_down_hand_computed():
    # 1000 kbit/s for 4 s, then 300 kbit/s to 8 s; one flow, so its target is the capacity; band 0.2.
    rates = [500, 850, 900, 1100, 700, 400, 350, 280]

    def cap(lo: float, hi: float) -> float:
        return 1e6 if hi <= 4 else 3e5
    r = rfcmetrics.analyse([flow("c1", rates)], 8.0, cap, no_tcp, [[0, 1e6], [4, 3e5], [8, 3e5]], band=0.2)
    f = r["flows"][0]
    assert f["rate_bps"] == [x * 1000.0 for x in rates]
    assert f["target_bps"] == [1e6] * 4 + [3e5] * 4
    # Segment [0, 4): 500/1000 is out of the band, 850, 900, 1100 in it: settled from window 1, 1 s after its start.
    # Segment [4, 8): 700/300 and 400/300 (1.33) out, 350/300 (1.17) and 280/300 in: settled from window 6, 2 s.
    assert [(s["start_s"], s["end_s"], s["converged_after_s"]) for s in f["segments"]] == [(0, 4, 1.0), (4, 8, 2.0)]
    assert r["summary"]["convergence_time_s"] == 1.5 and r["summary"]["converged_fraction"] == 1.0
    # The step at 4 s: the first window at most 1.2 x 300 = 360 is window 6 (350), which ends at 7 s: 3 s.
    assert r["capacity_changes"] == [{"at_s": 4.0, "from_bps": 1e6, "to_bps": 3e5, "direction": "down",
                                      "flows": [{"flow": "c1", "target_bps": 3e5, "reaction_time_s": 3.0}]}]
    assert r["summary"]["reaction_time_down_s"] == 3.0 and r["summary"]["reaction_time_up_s"] is None
    # Ramp-up: from the first packet (0.5 / 500 s) to the end of the first window at least 800 (window 1, ends at 2).
    assert f["ramp_ups"] == [{"kind": "start", "at_s": 0.001, "ramp_up_s": pytest.approx(2 - 0.001)}]
    # Rate / target: 5080 kbit delivered against 4 x 1000 + 4 x 300 = 5200.
    assert r["summary"]["rate_to_target_ratio"] == pytest.approx(5080 / 5200)
    assert f["queuing_delay_ms"]["mean"] == 2.0 and f["loss_ratio"] == 0.25
    assert r["summary"]["media_jain_index"] is None  # one flow: no fairness among flows


def test_an_increase_not_reached_and_a_segment_that_never_settles():
    # 500 kbit/s, then 2000 from 3 s; the flow stays at 900: 900 < 0.8 x 2000 = 1600, never reached.
    def cap(lo: float, hi: float) -> float:
        return 5e5 if hi <= 3 else 2e6
    r = rfcmetrics.analyse([flow("c1", [450, 500, 520, 900, 900, 900])], 6.0, cap, no_tcp,
                           [[0, 5e5], [3, 2e6], [6, 2e6]])
    assert r["capacity_changes"][0]["flows"][0]["reaction_time_s"] is None
    assert r["summary"]["reaction_time_up_s"] is None and r["summary"]["reactions_not_reached"] == 1
    assert [s["converged_after_s"] for s in r["flows"][0]["segments"]] == [0.0, None]
    assert r["summary"]["converged_fraction"] == 0.5 and r["summary"]["convergence_time_s"] == 0.0


def test_fair_share_pause_resume_and_jain_hand_computed():
    # Capacity 1000 kbit/s over 10 s. A sends 900 in every window; B joins in window 2, sends in 2-4, pauses (no
    # packet from 4.999 s to 7.0017 s, over PAUSE_GAP_S = 2 s) and resumes in 7-9.
    a = flow("A", [900] * 10)
    b = flow("B", [0, 0, 200, 450, 500, 0, 0, 300, 420, 480])
    r = rfcmetrics.analyse([a, b], 10.0, lambda lo, hi: 1e6, no_tcp, None)
    fa, fb = r["flows"]
    # Windows 5 and 6 lie wholly inside B's pause: B is inactive there and A alone has the whole capacity.
    assert fa["target_bps"] == [1e6, 1e6, 5e5, 5e5, 5e5, 1e6, 1e6, 5e5, 5e5, 5e5]
    assert fb["target_bps"] == [None, None, 5e5, 5e5, 5e5, None, None, 5e5, 5e5, 5e5]
    assert fb["pauses"] == [{"from_s": pytest.approx(4 + 499.5 / 500), "to_s": pytest.approx(7 + 0.5 / 300)}]
    # B's ramp-ups: from 2.0025 s to the end of window 3 (450 >= 0.8 x 500 = 400), from 7.00167 s to the end of
    # window 8 (420).
    assert [(x["kind"], x["ramp_up_s"]) for x in fb["ramp_ups"]] == [
        ("start", pytest.approx(4 - (2 + 0.5 / 200))), ("resume", pytest.approx(9 - (7 + 0.5 / 300)))]
    # A's: its window 0 already reaches 0.8 x 1000 (900), so from its first packet (0.5 / 900 s) to 1 s.
    assert r["summary"]["ramp_up_s"] == pytest.approx(((4 - 2.0025) + (9 - (7 + 0.5 / 300)) + (1 - 0.5 / 900)) / 3)
    # Jain over the windows both are active (2, 3, 4, 7, 8, 9): A 900, B (200+450+500+300+420+480)/6.
    mb = 2350 / 6
    assert r["media_jain_windows"] == 6
    assert r["summary"]["media_jain_index"] == pytest.approx((900 + mb) ** 2 / (2 * (900 ** 2 + mb ** 2)))
    # Rate / target per flow: A 9000 / (4 x 1000 + 6 x 500) = 9/7; B 2350 / (6 x 500); the run's: their mean.
    assert fa["rate_to_target"] == pytest.approx(9000 / 7000)
    assert fb["rate_to_target"] == pytest.approx(2350 / 3000)
    assert r["summary"]["rate_to_target_ratio"] == pytest.approx((9 / 7 + 2350 / 3000) / 2)


def test_regain_of_the_fair_share_after_a_scheduled_pause_hand_computed():
    # 1500 kbit/s shared by three calls over 12 s. B is scheduled to pause at 4 s and resume at 7 s: it sends nothing
    # in windows 4-6 (a gap of over PAUSE_GAP_S), so A and C share the capacity there (750 each) and all three from
    # window 7 on (500 each). After the resume B sends 200, 400, 480, 500, 500.
    a, c = flow("A", [500] * 4 + [740] * 3 + [500] * 5), flow("C", [500] * 12)
    b = flow("B", [500] * 4 + [0] * 3 + [200, 400, 480, 500, 500])
    r = rfcmetrics.analyse([a, b, c], 12.0, lambda lo, hi: 1.5e6, no_tcp, None,
                           scheduled={"B": [(4.0, 7.0)], "D": [(2.0, 3.0)]})
    assert r["flows"][0]["target_bps"] == [5e5] * 4 + [7.5e5] * 3 + [5e5] * 5
    # From the resume (7 s) the first window at least 0.8 x 500 = 400 is window 8 (400): it ends at 9 s, 2 s later.
    # D names no flow of the run: not measured, with the reason.
    assert r["scheduled_pauses"] == [
        {"call": "B", "at_s": 4.0, "resume_s": 7.0, "regain_fair_share_s": 2.0, "fair_share_bps": 5e5,
         "not_measured": None},
        {"call": "D", "at_s": 2.0, "resume_s": 3.0, "regain_fair_share_s": None, "fair_share_bps": None,
         "not_measured": "the call's media flow was not found in the captures"}]
    assert r["summary"]["regain_fair_share_s"] == 2.0 and r["summary"]["regains_not_reached"] == 0
    # Without scheduled pauses the list is empty and the mean missing (null), never 0.
    plain = rfcmetrics.analyse([a, b, c], 12.0, lambda lo, hi: 1.5e6, no_tcp, None)
    assert plain["scheduled_pauses"] == [] and plain["summary"]["regain_fair_share_s"] is None


def test_a_fair_share_not_regained_before_the_next_pause():
    # One call alone on 1000 kbit/s, paused 2-4 s and 6-8 s (scheduled). After the first resume it sends 300, 350 (<
    # 800) until the second pause: not reached (searched in windows 4 and 5 only: window 6 starts at the next pause),
    # its fair share that of window 4; after the second resume window 8 reaches 900: 1 s.
    f = flow("c1", [900, 900, 0, 0, 300, 350, 0, 0, 900, 900])
    r = rfcmetrics.analyse([f], 10.0, lambda lo, hi: 1e6, no_tcp, None, scheduled={"c1": [(2.0, 4.0), (6.0, 8.0)]})
    assert [(x["regain_fair_share_s"], x["fair_share_bps"], x["not_measured"]) for x in r["scheduled_pauses"]] == \
        [(None, 1e6, None), (1.0, 1e6, None)]
    assert r["summary"]["regain_fair_share_s"] == 1.0 and r["summary"]["regains_not_reached"] == 1


def test_tcp_competitors_share_the_capacity():
    # One media flow, two TCP flows from 2 s: the flow's target falls from 900 to 300 kbit/s.
    r = rfcmetrics.analyse([flow("c1", [300] * 4)], 4.0, lambda lo, hi: 9e5, lambda lo, hi: 2 if hi > 2 else 0, None)
    assert r["flows"][0]["target_bps"] == [9e5, 9e5, 3e5, 3e5]
    assert r["tcp_competitors"] == [0, 0, 2, 2]


def test_a_synthetic_run_analysed_against_its_truth(tmp_path: Path):
    """A synthetic run (constant-rate media, one TCP flow 5-15 s) given a capacity schedule of 3 Mbit/s, then 1.5
    Mbit/s from 8 s: the analyzer's rate series equals the generator's delivered media bytes per second, its target
    the capacity over 1 + the TCP flows running."""
    run = tmp_path / "run"
    cfg = synth.SynthConfig(duration_s=20.0, tcp_flows=1, tcp_start_s=5.0, tcp_stop_s=15.0, cpu=False)
    truth = synth.write_run(run, cfg)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["scenario"]["network"]["forward"]["rate"] = {"schedule": [{"at_s": 0, "kbit": 3000},
                                                                       {"at_s": 8, "kbit": 1500}]}
    (run / "manifest.json").write_text(json.dumps(manifest))
    m, _ = analyze.analyze(run, run_tshark=False)
    r = json.loads((run / "metrics.json").read_text())["rfc8867"]
    assert r == json.loads(json.dumps(m["rfc8867"]))
    assert [f["name"] for f in r["flows"]] == ["media 1"]
    media = (truth.kind <= 2) & ~truth.lost  # video, audio and RTCP share the call's 5-tuple (synth.py)
    t = (truth.t_recv_ns[media] - int(cfg.start_epoch_s * 1e9)) / 1e9
    expected = np.zeros(20)
    for ti, nbytes in zip(t, truth.ip_len[media] + 14):
        if ti < 20:
            expected[math.floor(ti)] += nbytes * 8
    assert r["flows"][0]["rate_bps"] == pytest.approx(list(expected), abs=0.06)
    # TCP runs during 5-15 s: windows 5-14 have two competitors; the capacity halves from 8 s.
    assert r["flows"][0]["target_bps"] == [3e6] * 5 + [1.5e6] * 3 + [7.5e5] * 7 + [1.5e6] * 5
    assert r["capacity_changes"][0]["at_s"] == 8 and r["capacity_changes"][0]["direction"] == "down"
    rate = 250 * 1214 * 8 + 50 * 174 * 8 + 5 * 94 * 8  # the generator's media: video, audio, RTCP packets per second
    # ~2.5 Mbit/s against 1.5 Mbit/s: far above the band, so the step's reaction is never reached.
    assert rate > 1.2 * 1.5e6 and r["capacity_changes"][0]["flows"][0]["reaction_time_s"] is None
