"""GCC's counts (rtclab.eventlog.gcc) and the trendline replay (replay) on hand-built logs: n_dd and the time in
each detector state against an independent computation written here event by event; the replay against feedback
whose one-way delay is held constant (normal), grows (over-use) and shrinks (under-use); and the agreement measure."""

from __future__ import annotations

import numpy as np

from rtclab.eventlog import gcc, parser, replay
from rtclab.eventlog.feedback import Feedback

N, O, U = parser.NORMAL, parser.OVERUSING, parser.UNDERUSING  # noqa: E741 one letter each, for the tables below


def make_log(delay: list[tuple[int, int, int]], loss: list[tuple[int, int]],
             rtp: dict | None = None) -> parser.EventLog:
    a = lambda rows, i: np.array([r[i] for r in rows], dtype=np.int64)
    empty = {c: np.zeros(0, np.int64) for c in parser.RTP_COLUMNS}
    return parser.EventLog(
        version=2, utc_offset_ms=0, outgoing_rtp=rtp or empty, incoming_rtp=dict(empty), incoming_rtcp=[],
        outgoing_rtcp=[], delay_based={"time_ms": a(delay, 0), "bitrate_bps": a(delay, 1), "state": a(delay, 2)},
        loss_based={"time_ms": a(loss, 0), "bitrate_bps": a(loss, 1), "fraction_loss": np.zeros(len(loss), np.int64),
                    "total_packets": np.zeros(len(loss), np.int64)},
        probe_clusters={k: np.zeros(0, np.int64) for k in ("time_ms", "id", "bitrate_bps", "min_packets", "min_bytes")},
        probe_results={k: np.zeros(0, np.int64) for k in ("time_ms", "id", "bitrate_bps", "failure")},
        alr={k: np.zeros(0, np.int64) for k in ("time_ms", "in_alr")})


DELAY = [(1000, 800_000, N), (1500, 900_000, N), (2000, 700_000, O), (2300, 600_000, O), (2600, 650_000, U),
         (3000, 640_000, N), (3400, 500_000, O), (4000, 520_000, N)]
LOSS = [(900, 1_000_000), (2300, 600_000), (3300, 450_000)]


def independent_n_dd(delay, loss, start=-1e18, end=1e18):
    """Walks the events in time order, keeping the latest loss-based estimate seen before each delay-based one."""
    count, prev = 0, None
    for t, bps, _ in delay:
        bound = max([b for (tl, b) in loss if tl < t] and [b for (tl, b) in loss if tl < t][-1:] or [float("inf")])
        if prev is not None and bps < prev and bps < bound and start <= t <= end:
            count += 1
        prev = bps
    return count


def test_n_dd_counts_binding_decreases():
    log = make_log(DELAY, LOSS)
    got = gcc.controller_summary(log)["n_dd"]
    # 700k at 2000 (bound 1M): yes; 600k at 2300 (the 600k loss estimate is logged at the same ms, after it): yes;
    # 640k at 3000: lower than 650k and under 600k? no (640k > 600k); 500k at 3400 (bound 450k): no
    assert got == independent_n_dd(DELAY, LOSS) == 2
    assert gcc.n_dd(log.delay_based["time_ms"], log.delay_based["bitrate_bps"], log.loss_based["time_ms"],
                    log.loss_based["bitrate_bps"], start_ms=2100) == independent_n_dd(DELAY, LOSS, start=2100) == 1


def test_time_in_each_state():
    log = make_log(DELAY, LOSS)
    # An end past the log's last event (4000 ms here) is cut to it: the log says nothing later.
    s = gcc.controller_summary(log, end_ms=4500)
    expected = {"normal": 0.0, "overusing": 0.0, "underusing": 0.0}
    names = {N: "normal", O: "overusing", U: "underusing"}
    for (t, _, st), nxt in zip(DELAY, [d[0] for d in DELAY[1:]] + [4000]):
        expected[names[st]] += (nxt - t) / 1000
    assert s["detector_state_s"] == expected
    assert abs(sum(s["detector_state_fraction"].values()) - 1) < 1e-12
    assert s["overuse_events"] == 2
    # A window clips the states: from 2100 to 3200 ms.
    w = gcc.state_durations_s(log.delay_based["time_ms"], log.delay_based["state"], 3200, 2100)
    assert w == {"normal": 0.2, "overusing": 0.5, "underusing": 0.4}


def synthetic(queue_ms_per_s: float, seconds: float = 6.0) -> tuple[parser.EventLog, Feedback]:
    """Packets every 5 ms (one per send group), feedback every 50 ms; one-way delay grows by queue_ms_per_s."""
    n = int(seconds * 200)
    send = 10_000 + 5 * np.arange(n)
    arrival_us = (send * 1000 + 20_000 + (np.arange(n) * 5 / 1000 * queue_ms_per_s * 1000)).astype(np.int64)
    rtp = {c: np.zeros(n, np.int64) for c in parser.RTP_COLUMNS}
    rtp["time_ms"], rtp["transport_seq"] = send.astype(np.int64), np.arange(n, dtype=np.int64) % 65536
    log = make_log([(10_000, 1_000_000, N)], [], rtp)
    fb_time = (send // 50) * 50 + 50 + 20 + 5  # the feedback reaches the sender after the last packet it reports
    fb = Feedback(feedback_index=(send // 50 - send[0] // 50).astype(np.int64), log_time_ms=fb_time.astype(np.int64),
                  seq=rtp["transport_seq"].copy(), received=np.ones(n, bool), recv_time_us=arrival_us)
    return log, fb


def test_replay_states_follow_the_delay_trend():
    for rate, state in ((0.0, N), (40.0, O), (-40.0, U)):
        log, fb = synthetic(rate)
        r = replay.replay(log, fb)
        # After the filter's window fills, the state settles on the trend's sign.
        assert r.state[-1] == state, (rate, r.state[-10:])
        assert (r.gamma >= replay.THRESHOLD_MIN).all() and (r.gamma <= replay.THRESHOLD_MAX).all()
    log, fb = synthetic(0.0)
    r = replay.replay(log, fb)
    finite = r.m[np.isfinite(r.m)]
    assert np.abs(finite).max() < 1e-6  # no delay change, no trend
    assert r.gamma[-1] == replay.THRESHOLD_MIN  # gamma decays towards |m| = 0 and stops at its floor


def test_modified_trend_is_the_slope_times_gain_and_deltas():
    # A steady growth of g ms per second of arrival: the smoothed delay's slope tends to g/1000 ms per ms, so
    # m -> 60 * 4 * g / 1000 once 60 deltas were seen.
    g = 20.0
    log, fb = synthetic(g, seconds=4.0)
    r = replay.replay(log, fb)
    assert abs(r.m[-1] - 60 * 4 * g / 1000) < 0.05 * 60 * 4 * g / 1000


def test_agreement_counts_logged_updates_and_time():
    log = make_log([(1000, 1, N), (2000, 1, O), (3000, 1, N)], [])
    r = replay.Replay(t_ms=np.zeros(0), m=np.zeros(0), gamma=np.zeros(0),
                      feedback_time_ms=np.array([900, 1900, 2500, 2900, 3500]), state=np.array([N, O, O, N, N]))
    a = replay.agreement(log, r)
    # at 1000: N vs N; at 2000: O vs O (feedback 1900); at 3000: N vs N (2900)
    assert a["updates"] == 3 and a["agreeing_updates"] == 3
    # over time from 1000 to 3500 (the last feedback): they disagree from 1900 to 2000 (replay O, logged N) and from
    # 2900 to 3000 (replay N, logged O): 200 of 2500 ms
    assert abs(a["time_agreement"] - (1 - 200 / 2500)) < 1e-9
    assert a["logged_to_replayed"] == {"normal->normal": 2, "overusing->overusing": 1}
