"""ECN per flow, the bottleneck's CE marks against the captures, and the meters' action log (rtclab.ecn)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rtclab import dashboard_panels, ecn, synth
from rtclab.analyze import analyze


def test_the_account_counts_each_codepoint_and_the_ce_ratio_over_ect_packets():
    sent = np.array([0, 1, 2, 2, 2, 3, 2, 255], dtype=np.uint8)
    # Delivered: the 2nd to 7th departures; two ECT(0) of them arrive CE, the CE one stays CE.
    sent_delivered = np.array([1, 2, 2, 2, 3, 2], dtype=np.uint8)
    received = np.array([1, 3, 2, 3, 3, 2], dtype=np.uint8)
    acc = ecn.ecn_account(sent, sent_delivered, received)
    assert acc["sent"] == {"not_ect": 1, "ect1": 1, "ect0": 4, "ce": 1}
    assert acc["received"] == {"not_ect": 0, "ect1": 1, "ect0": 2, "ce": 3}
    assert acc["ect_delivered"] == 5 and acc["ce_marked_on_path"] == 2
    assert acc["ce_ratio"] == pytest.approx(2 / 5)
    assert ecn.ecn_account(np.array([0], np.uint8), np.array([0], np.uint8),
                           np.array([0], np.uint8))["ce_ratio"] is None


def test_log_and_captures_agree_packet_by_packet_and_each_disagreement_is_counted():
    #                  ECT0 marked, ECT0 not, CE already, not-ECT, ECT1 marked, ECT0 marked (flow 2)
    ecn_in = np.array([2, 2, 3, 0, 1, 2], np.uint8)
    event = np.array([1, 0, 1, 0, 1, 1], np.uint8)
    sent = np.array([2, 2, 3, 0, 1, 2], np.uint8)
    recv = np.array([3, 2, 3, 0, 3, 3], np.uint8)
    flow = np.array([1, 1, 1, 1, 1, 2], np.int64)
    acc = ecn.log_vs_capture(ecn_in, event, sent, recv, flow)
    assert (acc["bottleneck_ce_marks"], acc["ce_received"]) == (3, 3)
    assert (acc["logged_not_received_ce"], acc["received_ce_not_logged"]) == (0, 0)
    assert acc["by_flow"] == {1: {"bottleneck_ce_marks": 2, "ce_received": 2, "disagreements": 0},
                              2: {"bottleneck_ce_marks": 1, "ce_received": 1, "disagreements": 0}}
    # A mark the receiver did not see (bleached on the way), and a CE the log never made.
    recv2 = recv.copy()
    recv2[0] = 2
    recv2[1] = 3
    acc = ecn.log_vs_capture(ecn_in, event, sent, recv2, flow)
    assert (acc["logged_not_received_ce"], acc["received_ce_not_logged"]) == (1, 1)
    assert acc["by_flow"][1]["disagreements"] == 2


def test_per_flow_ecn_in_metrics_matches_what_the_synthetic_path_did(tmp_path):
    run = tmp_path / "ce"
    truth = synth.write_run(run, synth.SynthConfig(duration_s=3.0, duplicate=0.0, reorder=0.0, ce_mark=0.05))
    m, table = analyze(run, run_tshark=False, write=False)
    ce = truth.extra["ce"]
    fwd = [f for f in m["flows"] if f["direction"] == "forward"]
    assert sum(f["ecn"]["received"]["ce"] for f in fwd) == int(ce.sum()) > 0
    assert sum(f["ecn"]["sent"]["not_ect"] for f in fwd) == len(ce)
    for f in fwd:
        assert sum(f["ecn"]["sent"].values()) == f["packets_sent"]
        assert sum(f["ecn"]["received"].values()) == f["packets_received"]
        # Sent not-ECT: there is no CE ratio to give (a CE on a not-ECT packet is no ECN mark).
        assert f["ecn"]["ce_ratio"] is None


def _write_actions(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"t": 3.0, "meter"')  # + a torn last line


FLOW = {"src": "10.0.1.2", "dst": "10.0.2.2", "proto": 6, "sport": 40000, "dport": 5201}


def test_the_action_log_is_read_summarised_and_drawn(tmp_path):
    t0 = 1000.0
    lines = [
        {"t": t0 + 0.15, "t_ns": 0, "meter": 0, "action": "ce_fraction", "flow": FLOW, "event": "window",
         "rate_kbit": 4000.0, "limit_kbit": 2000.0, "fraction": 0.5, "ce_marked": 0, "demoted": 0},
        {"t": t0 + 0.30, "t_ns": 0, "meter": 0, "action": "ce_fraction", "flow": FLOW, "event": "window",
         "rate_kbit": 3000.0, "limit_kbit": 2000.0, "fraction": 0.75, "ce_marked": 20, "demoted": 0},
        {"t": t0 + 0.45, "t_ns": 0, "meter": 0, "action": "ce_fraction", "flow": FLOW, "event": "window",
         "rate_kbit": 1000.0, "limit_kbit": 2000.0, "fraction": 0.5, "ce_marked": 30, "demoted": 0},
        {"t": t0 + 0.1, "t_ns": 0, "meter": 1, "action": "demote", "flow": None, "event": "start",
         "rate_kbit": 5000.0, "limit_kbit": 2000.0, "until": t0 + 2.1},
        {"t": t0 + 2.1, "t_ns": 0, "meter": 1, "action": "demote", "flow": None, "event": "end"},
        {"t": t0 + 0.2, "t_ns": 0, "meter": 1, "action": "demote", "flow": None, "event": "window",
         "rate_kbit": 5000.0, "limit_kbit": 2000.0, "fraction": 0.0, "ce_marked": 0, "demoted": 17},
    ]
    _write_actions(tmp_path / "bottleneck-forward.actions.jsonl", lines)
    problems: list[str] = []
    got = ecn.meter_actions(tmp_path, t0, problems)
    assert got is not None and list(got) == ["forward"]
    assert len(problems) == 1 and "line 7" in problems[0]
    summary = {(s["meter"], s["flow"]): s for s in got["forward"]["summary"]}
    frac = summary[(0, "10.0.1.2:40000 > 10.0.2.2:5201/6")]
    assert (frac["windows"], frac["windows_over_limit"], frac["ce_marked"]) == (3, 2, 50)
    assert frac["mean_fraction"] == pytest.approx((0.5 + 0.75 + 0.5) / 3)
    dem = summary[(1, "class")]
    assert (dem["holds"], dem["held_s"], dem["demoted"], dem["first_action_s"]) == (
        1, pytest.approx(2.0), 17, pytest.approx(0.1))
    series = {s["meter"]: s for s in got["forward"]["series"]}
    assert series[0]["t_s"] == pytest.approx([0.15, 0.30, 0.45])
    assert series[1]["holds"] == [[pytest.approx(0.1), pytest.approx(2.1)]]
    # The dashboard draws both: rates with the limit, and the fraction and the hold.
    m = {"ground_truth": {"meter_actions": got}}
    panels = dashboard_panels.meter_panels(m)
    assert [len(p[2]) for p in panels] == [4, 2]
    hold = next(tr for tr in panels[1][2] if "hold" in tr["name"])
    assert hold["y"][:4] == [0, 1, 1, 0] and hold["x"][1] == pytest.approx(0.1)
    assert ecn.meter_actions(tmp_path / "none", t0, problems) is None
