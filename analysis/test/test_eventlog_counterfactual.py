"""The over-use detector replayed with other constants (rtclab.eventlog.counterfactual): today's variant is the
replay (replay.py) and its counts follow from the replay's states by an independent walk; each variant's detector on
a built ramp of delays against the trendline and threshold computed here with numpy's least squares and the
documented update rules (where the first over-use falls is known by construction); the counts over a span by hand;
a missing input is null with a reason; and the real Chromium 156 log end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rtclab import packets
from rtclab.eventlog import analysis, counterfactual, feedback, gcc, parser, replay
from rtclab.eventlog.feedback import Feedback

N, O, U = parser.NORMAL, parser.OVERUSING, parser.UNDERUSING  # noqa: E741 one letter each
REAL_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-a.log"
SEND_MS = 5.0  # send gap between groups in the built ramps


def variant(name: str) -> counterfactual.Variant:
    return next(v for v in counterfactual.VARIANTS if v.name == name)


def test_each_variant_differs_from_today_in_one_parameter() -> None:
    names = [v.name for v in counterfactual.VARIANTS]
    assert names[0] == counterfactual.TODAY and len(set(names)) == len(names)
    assert counterfactual.differs_in(variant(counterfactual.TODAY).params) == {}
    assert counterfactual.differs_in(variant("gains_2016").params) == {"k_up": 0.01, "k_down": 0.00018}
    assert counterfactual.differs_in(variant("threshold_fixed").params) == {"k_up": 0.0, "k_down": 0.0}
    assert counterfactual.differs_in(variant("window_10").params) == {"window": 10}
    assert counterfactual.differs_in(variant("smoothing_095").params) == {"smoothing": 0.95}
    # The adaptive threshold's gains count as one parameter (a pair); every other variant changes one constant, and
    # none the constants that make the input (the send groups): the same delays go through every variant.
    for v in counterfactual.VARIANTS[1:]:
        changed = set(counterfactual.differs_in(v.params))
        assert changed == {"k_up", "k_down"} or len(changed) == 1, v.name
        assert v.params.grouping() == replay.DEFAULTS.grouping()


# --- each variant on a built ramp, against an independent computation -------------------------------------------

def ramp(g_ms: list[float]) -> list[replay.Message]:
    """One send group every 5 ms, one feedback message per group; group n arrives 5 + g_ms[n] ms after the
    previous one, so the accumulated delay grows by g_ms[n]."""
    arrival = np.cumsum([SEND_MS + g for g in g_ms])
    return [replay.Message(time_ms=1000.0 + float(a), restart=(n == 0), deltas=[(SEND_MS, SEND_MS + g, float(a))])
            for n, (g, a) in enumerate(zip(g_ms, arrival))]


def expected_states(p: replay.Params, g_ms: list[float]) -> list[int]:
    """The detector's state after each group, computed here: the smoothed delay by its recursion, the trend by
    numpy's least squares over the last `window` points (0 until the window is full), m = min(n, 60) x trend x gain,
    and the threshold and over-use rules as docs/eventlog.md states them."""
    g = np.asarray(g_ms, float)
    x = np.cumsum(SEND_MS + g)
    x = x - x[0]
    acc = np.cumsum(g)
    smoothed = np.zeros(len(g))
    for n in range(len(g)):
        smoothed[n] = p.smoothing * (smoothed[n - 1] if n else 0.0) + (1 - p.smoothing) * acc[n]
    gamma, last, prev_trend, time_over, count, state = p.threshold_start, None, 0.0, -1.0, 0, N
    out = []
    for n in range(len(g)):
        deltas = n + 1
        trend = prev_trend
        if deltas >= p.window:
            trend = float(np.polyfit(x[n - p.window + 1:n + 1], smoothed[n - p.window + 1:n + 1], 1)[0])
        if deltas >= 2:
            m = min(deltas, p.min_num_deltas) * trend * p.threshold_gain
            if m > gamma:
                time_over = SEND_MS / 2 if time_over == -1 else time_over + SEND_MS
                count += 1
                if time_over > p.overusing_time_ms and count > 1 and trend >= prev_trend:
                    time_over, count, state = 0.0, 0, O
            else:
                time_over, count, state = -1.0, 0, (U if m < -gamma else N)
            prev_trend = trend
            now = x[n]
            last = now if last is None else last
            if abs(m) <= gamma + p.max_adapt_offset_ms:
                k = p.k_down if abs(m) < gamma else p.k_up
                gamma = min(max(gamma + k * (abs(m) - gamma) * min(now - last, p.max_time_delta_ms),
                                p.threshold_min), p.threshold_max)
            last = now
        out.append(state)
    return out


# 30 groups without queuing, 60 whose delay grows 0.3 ms each, 60 draining 0.4 ms each, 60 growing 1 ms each.
RAMP = [0.0] * 30 + [0.3] * 60 + [-0.4] * 60 + [1.0] * 60


@pytest.mark.parametrize("name", [v.name for v in counterfactual.VARIANTS])
def test_each_variant_on_a_built_ramp_matches_the_computation_here(name: str) -> None:
    p = variant(name).params
    r = replay.detect(ramp(RAMP), p)
    want = expected_states(p, RAMP)
    assert r.state.tolist() == want
    assert O in want  # the ramps raise an over-use under every variant
    # By construction: no trend before the window is full, and over-use needs a third update over the threshold
    # (time over: 2.5 + 5 + 5 ms > 10 ms), so none before group window + 2; and none before the first growth.
    first_over = want.index(O)
    assert first_over >= max(p.window + 1, 30 + 2)


def test_the_variants_differ_where_their_parameter_matters() -> None:
    states = {v.name: replay.detect(ramp(RAMP), v.params).state for v in counterfactual.VARIANTS}
    first = {k: int(np.argmax(s == O)) for k, s in states.items()}
    # A shorter window sees the first growth sooner; a longer one later.
    assert first["window_10"] < first[counterfactual.TODAY] < first["window_40"]
    # The same ramp through a fixed 12.5 ms threshold: the first over-use is the third update whose m exceeds 12.5.
    p = variant("threshold_fixed").params
    r = replay.detect(ramp(RAMP), p)
    over = np.flatnonzero(r.m > replay.THRESHOLD_START)
    assert first["threshold_fixed"] == over[2] and np.all(r.gamma == replay.THRESHOLD_START)


# --- the counts over a span ---------------------------------------------------------------------------------------

def test_signals_count_transitions_and_time_by_hand() -> None:
    r = replay.Replay(t_ms=np.zeros(0), m=np.zeros(0), gamma=np.zeros(0),
                      feedback_time_ms=np.array([100, 200, 300, 400, 500]), state=np.array([N, O, O, N, O]))
    s = counterfactual.signals(r, 0.0, 600.0)
    # counted from the first feedback (100): N 100-200, O 200-400, N 400-500, O 500-600
    assert s == {"window_s": 0.5, "overuse_transitions": 2,
                 "state_s": {"normal": 0.2, "overusing": 0.3, "underusing": 0.0}}
    s = counterfactual.signals(r, 250.0, 450.0)
    assert s is not None and s["overuse_transitions"] == 0 and s["window_s"] == 0.2
    assert s["state_s"] == pytest.approx({"normal": 0.05, "overusing": 0.15, "underusing": 0.0})
    assert counterfactual.signals(r, 700.0, 800.0) is not None  # the last state holds to the span's end
    assert counterfactual.signals(r, 0.0, 50.0) is None  # before the first feedback: nothing to count, not zero


# --- today's variant is the replay ------------------------------------------------------------------------------

def independent_counts(times: np.ndarray, states: np.ndarray, start: float, end: float) -> tuple[int, dict]:
    """Transitions into over-use and seconds per state, walking the replay's states one message at a time."""
    names = {N: "normal", O: "overusing", U: "underusing"}
    secs = {"normal": 0.0, "overusing": 0.0, "underusing": 0.0}
    transitions, previous = 0, None
    for i, (t, s) in enumerate(zip(times.tolist(), states.tolist())):
        if s == O and previous != O and start <= t <= end:
            transitions += 1
        previous = s
        nxt = times[i + 1] if i + 1 < len(times) else end
        lo, hi = min(max(t, start), end), min(max(nxt, start), end)
        secs[names[s]] += (hi - lo) / 1000
    return transitions, secs


def test_todays_variant_is_the_replay_on_the_real_log() -> None:
    log = parser.read(REAL_LOG)
    fb, _ = feedback.transport_feedback(log.incoming_rtcp)
    r = replay.replay(log, fb)
    end = gcc.log_end_ms(log)
    cf = counterfactual.analyse(log, fb, -math.inf, end, None, "not placed")
    today = cf["variants"][counterfactual.TODAY]
    transitions, secs = independent_counts(r.feedback_time_ms, r.state, -math.inf, end)
    assert today["call"]["overuse_transitions"] == transitions
    assert today["call"]["state_s"] == pytest.approx(secs)
    assert today["update_agreement"] == replay.agreement(log, r)["update_agreement"]
    assert cf["window"] == "log" and cf["feedback_messages"] == len(r.feedback_time_ms)
    assert cf["group_deltas"] == len(r.t_ms)
    assert all(v["phases"] is None for v in cf["variants"].values()) and cf["phases_reason"] == "not placed"


# --- missing input ------------------------------------------------------------------------------------------------

def test_no_feedback_is_missing_not_zero() -> None:
    log = parser.read(REAL_LOG)
    empty = Feedback(feedback_index=np.zeros(0, np.int64), log_time_ms=np.zeros(0, np.int64),
                     seq=np.zeros(0, np.int64), received=np.zeros(0, bool), recv_time_us=np.zeros(0, np.int64))
    cf = counterfactual.analyse(log, empty, 0.0, 1e12, [("cross_traffic", 0.0, 1e12)], None)
    assert cf["variants"] is None and "no transport feedback" in cf["reason"]
    assert cf["feedback_messages"] == 0


# --- end to end: the section of a real Chromium 156 log -----------------------------------------------------------

def test_the_real_log_end_to_end() -> None:
    log = parser.read(REAL_LOG)
    assert log.utc_offset_ms is not None
    first_ms = float(log.outgoing_rtp["time_ms"][0])
    end_ms = gcc.log_end_ms(log)
    call_start_s = (first_ms + log.utc_offset_ms) / 1000
    length_s = (end_ms - first_ms) / 1000
    third = length_s / 3
    phases_s = [("before_cross_traffic", 0.0, third), ("cross_traffic", third, 2 * third),
                ("after_cross_traffic", 2 * third, length_s + 5.0)]  # the last phase runs past the log's end
    out = analysis.side(REAL_LOG, None, packets.FORWARD, call_start_s, call_start_s + length_s + 5.0, phases_s)
    cf = out["counterfactual"]
    assert cf["kind"] == counterfactual.KIND and cf["window"] == "call" and cf["phases_reason"] is None
    assert set(cf["variants"]) == {v.name for v in counterfactual.VARIANTS}
    today = cf["variants"][counterfactual.TODAY]
    assert today["update_agreement"] == out["replay"]["update_agreement"]
    for name, v in cf["variants"].items():
        assert v["kind"] == counterfactual.KIND
        assert list(v["phases"]) == [p[0] for p in phases_s]
        # The phases tile the call: their counts add up to the call's.
        assert sum(p["overuse_transitions"] for p in v["phases"].values()) == v["call"]["overuse_transitions"], name
        for state in ("normal", "overusing", "underusing"):
            assert sum(p["state_s"][state] for p in v["phases"].values()) == pytest.approx(
                v["call"]["state_s"][state]), (name, state)
        assert v["call"]["window_s"] == pytest.approx(sum(p["window_s"] for p in v["phases"].values()))
    # A phase that lies beyond the log's end has nothing counted: null, not zero.
    late = analysis.side(REAL_LOG, None, packets.FORWARD, call_start_s, call_start_s + length_s + 20.0,
                         [("after_cross_traffic", length_s + 10.0, length_s + 20.0)])
    assert late["counterfactual"]["variants"][counterfactual.TODAY]["phases"] == {"after_cross_traffic": None}


def test_the_report_prints_each_variant_as_metrics_json_has_it() -> None:
    from rtclab import report

    log = parser.read(REAL_LOG)
    assert log.utc_offset_ms is not None
    first_ms, end_ms = float(log.outgoing_rtp["time_ms"][0]), gcc.log_end_ms(log)
    call_start_s, length_s = (first_ms + log.utc_offset_ms) / 1000, (end_ms - first_ms) / 1000
    phases_s = [("before_cross_traffic", 0.0, length_s / 2), ("cross_traffic", length_s / 2, length_s)]
    cf = analysis.side(REAL_LOG, None, packets.FORWARD, call_start_s, call_start_s + length_s, phases_s)[
        "counterfactual"]
    lines = report._counterfactual_lines(cf)
    assert "counterfactual on fixed input" in lines[0] and "not a result" in lines[0]
    header = lines[1].split()
    assert header[header.index("before_cross_traffic") + 1] == "cross_traffic"
    rows = {line.split()[0]: line.split() for line in lines[3:]}
    assert list(rows) == [v.name for v in counterfactual.VARIANTS]
    for name, v in cf["variants"].items():
        cells = rows[name]
        transitions = [v["call"]["overuse_transitions"]] + [v["phases"][p]["overuse_transitions"] for p, _, _ in
                                                            phases_s]
        assert [int(c) for c in cells[-6:-3]] == transitions, name
        assert cells[-3] == f"{v['call']['state_s']['overusing'] / v['call']['window_s'] * 100:.1f}%"
        assert cells[-1] == f"{v['update_agreement'] * 100:.1f}%"
    assert "(today's)" in lines[3] and "k_up 0.01, k_down 0.00018" in lines[4]
    # Without input, the reason instead of a table.
    none = report._counterfactual_lines({**cf, "variants": None, "reason": "no transport feedback"})
    assert len(none) == 1 and none[0].endswith(": no transport feedback")
