"""The arrival-time filter replayed: GCC's delay-gradient trend m(t) and adaptive threshold gamma(t), recomputed from
the packets' send times and the arrival times the transport feedback reported, as libwebrtc's send-side trendline
estimator computes them (modules/congestion_controller/goog_cc: inter_arrival_delta.cc, trendline_estimator.cc,
delay_based_bwe.cc; read to learn the method, this is an independent implementation), with its published constants:

- packets are grouped by send time: a group holds the packets sent within 5 ms of its first one, and a packet that
  arrives within 5 ms of the group's last and less than its send-time gap later (a burst) joins the group while the
  group spans under 100 ms of arrivals; between two complete groups the delay variation is
  d = (arrival difference) - (send difference) of their last packets' send and arrival times;
- accumulated delay = sum of d; smoothed delay = 0.9 * smoothed + 0.1 * accumulated; over a window of the last 20
  groups the least-squares slope of smoothed delay against arrival time is the trend;
- m(t) = min(number of deltas, 60) * trend * 4 (threshold gain), the modified trend compared with gamma;
- over-use when m > gamma for more than 10 ms (counting half the first group's send gap) in more than one update and
  the trend is not falling; under-use when m < -gamma; normal otherwise;
- gamma adapts: gamma += k * (|m| - gamma) * min(dt, 100 ms), k = 0.039 when |m| < gamma, else 0.0087; not adapted
  when |m| > gamma + 15; clamped to [6, 600]; starts at 12.5;
- the filter restarts after 2 s without feedback, after 3 reordered groups in a row, and when arrival and feedback
  clocks drift apart by 3 s or more.

The detector runs once per feedback message over its received packets sorted by arrival time, as Chrome's does; its
state after each message is compared with the states Chrome logged (`agreement`).

The constants are one `Params` object (defaults: the ones above); the replay runs in two steps, the send-group deltas
of each feedback message (`group_deltas`, the filter's input) and the trendline and detector over them (`detect`),
so that counterfactual.py can run the same input through the detector with other constants.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .feedback import Feedback, unwrap16
from .parser import NORMAL, OVERUSING, UNDERUSING, EventLog

Array = npt.NDArray[Any]

SEND_GROUP_MS = 5.0
BURST_DELTA_MS = 5.0
MAX_BURST_MS = 100.0
WINDOW = 20
SMOOTHING = 0.9
THRESHOLD_GAIN = 4.0
MIN_NUM_DELTAS = 60
DELTA_COUNTER_MAX = 1000
OVERUSING_TIME_MS = 10.0
K_UP, K_DOWN = 0.0087, 0.039
MAX_ADAPT_OFFSET_MS = 15.0
MAX_TIME_DELTA_MS = 100.0
THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_START = 6.0, 600.0, 12.5
STREAM_TIMEOUT_MS = 2000.0
REORDERED_RESET = 3
ARRIVAL_OFFSET_RESET_MS = 3000.0


@dataclass(frozen=True)
class Params:
    """The estimator's constants, libwebrtc's by default (the module's docstring says what each does)."""
    send_group_ms: float = SEND_GROUP_MS
    burst_delta_ms: float = BURST_DELTA_MS
    max_burst_ms: float = MAX_BURST_MS
    window: int = WINDOW
    smoothing: float = SMOOTHING
    threshold_gain: float = THRESHOLD_GAIN
    min_num_deltas: int = MIN_NUM_DELTAS
    delta_counter_max: int = DELTA_COUNTER_MAX
    overusing_time_ms: float = OVERUSING_TIME_MS
    k_up: float = K_UP
    k_down: float = K_DOWN
    max_adapt_offset_ms: float = MAX_ADAPT_OFFSET_MS
    max_time_delta_ms: float = MAX_TIME_DELTA_MS
    threshold_min: float = THRESHOLD_MIN
    threshold_max: float = THRESHOLD_MAX
    threshold_start: float = THRESHOLD_START
    stream_timeout_ms: float = STREAM_TIMEOUT_MS
    reordered_reset: int = REORDERED_RESET
    arrival_offset_reset_ms: float = ARRIVAL_OFFSET_RESET_MS

    def grouping(self) -> tuple[float, ...]:
        """The constants that decide the input (the send groups, their deltas, the restarts), not the detector."""
        return (self.send_group_ms, self.burst_delta_ms, self.max_burst_ms, self.stream_timeout_ms,
                self.reordered_reset, self.arrival_offset_reset_ms)


DEFAULTS = Params()


class _Group:
    def __init__(self) -> None:
        self.first_send = self.send = self.first_arrival = self.complete = math.nan
        self.last_system = math.nan
        self.empty = True


class _InterArrival:
    """Send-time groups and the deltas between consecutive complete ones."""

    def __init__(self, p: Params = DEFAULTS) -> None:
        self.p = p
        self.current, self.previous = _Group(), _Group()
        self.reordered = 0

    def _belongs_to_burst(self, arrival: float, send: float) -> bool:
        arrival_delta = arrival - self.current.complete
        send_delta = send - self.current.send
        if send_delta == 0:
            return True
        return (arrival_delta - send_delta < 0 and arrival_delta <= self.p.burst_delta_ms
                and arrival - self.current.first_arrival < self.p.max_burst_ms)

    def deltas(self, send: float, arrival: float, system: float) -> tuple[float, float] | None:
        """(send delta, arrival delta) when this packet completes a group after a complete one, else None."""
        g = self.current
        result = None
        if g.empty:
            g.send = g.first_send = send
            g.first_arrival = arrival
        elif g.first_send > send:
            return None  # sent before the current group: out of order
        elif not self._belongs_to_burst(arrival, send) and send - g.first_send > self.p.send_group_ms:
            if not self.previous.empty:
                send_delta = g.send - self.previous.send
                arrival_delta = g.complete - self.previous.complete
                if arrival_delta - (g.last_system - self.previous.last_system) >= self.p.arrival_offset_reset_ms:
                    self.__init__(self.p)  # type: ignore[misc]
                    return None
                if arrival_delta < 0:
                    self.reordered += 1
                    if self.reordered >= self.p.reordered_reset:
                        self.__init__(self.p)  # type: ignore[misc]
                    return None
                self.reordered = 0
                result = (send_delta, arrival_delta)
            self.previous = g
            g = self.current = _Group()
            g.send = g.first_send = send
            g.first_arrival = arrival
        else:
            g.send = max(g.send, send)
        g.empty = False
        g.complete = arrival
        g.last_system = system
        return result


class _Trendline:
    def __init__(self, p: Params = DEFAULTS) -> None:
        self.p = p
        self.num_deltas = 0
        self.first_arrival = math.nan
        self.accumulated = self.smoothed = 0.0
        self.history: deque[tuple[float, float]] = deque()
        self.threshold = p.threshold_start
        self.last_update = math.nan
        self.prev_trend = 0.0
        self.time_over = -1.0
        self.overuse_count = 0
        self.state = NORMAL
        self.modified_trend = math.nan

    def update(self, recv_delta: float, send_delta: float, arrival: float) -> None:
        p = self.p
        self.num_deltas = min(self.num_deltas + 1, p.delta_counter_max)
        if math.isnan(self.first_arrival):
            self.first_arrival = arrival
        self.accumulated += recv_delta - send_delta
        self.smoothed = p.smoothing * self.smoothed + (1 - p.smoothing) * self.accumulated
        self.history.append((arrival - self.first_arrival, self.smoothed))
        if len(self.history) > p.window:
            self.history.popleft()
        trend = self.prev_trend
        if len(self.history) == p.window:
            # Least squares over the window: plain floats (numpy's per-call cost exceeds the arithmetic here).
            x_mean = sum(h[0] for h in self.history) / p.window
            y_mean = sum(h[1] for h in self.history) / p.window
            denominator = sum((h[0] - x_mean) ** 2 for h in self.history)
            if denominator != 0:
                trend = sum((h[0] - x_mean) * (h[1] - y_mean) for h in self.history) / denominator
        self._detect(trend, send_delta, arrival)

    def _detect(self, trend: float, send_delta: float, now: float) -> None:
        if self.num_deltas < 2:
            self.state = NORMAL
            return
        m = min(self.num_deltas, self.p.min_num_deltas) * trend * self.p.threshold_gain
        self.modified_trend = m
        if m > self.threshold:
            self.time_over = send_delta / 2 if self.time_over == -1 else self.time_over + send_delta
            self.overuse_count += 1
            if self.time_over > self.p.overusing_time_ms and self.overuse_count > 1 and trend >= self.prev_trend:
                self.time_over = 0
                self.overuse_count = 0
                self.state = OVERUSING
        elif m < -self.threshold:
            self.time_over, self.overuse_count, self.state = -1, 0, UNDERUSING
        else:
            self.time_over, self.overuse_count, self.state = -1, 0, NORMAL
        self.prev_trend = trend
        self._adapt(m, now)

    def _adapt(self, m: float, now: float) -> None:
        p = self.p
        if math.isnan(self.last_update):
            self.last_update = now
        if abs(m) > self.threshold + p.max_adapt_offset_ms:
            self.last_update = now
            return
        k = p.k_down if abs(m) < self.threshold else p.k_up
        dt = min(now - self.last_update, p.max_time_delta_ms)
        self.threshold = min(max(self.threshold + k * (abs(m) - self.threshold) * dt, p.threshold_min),
                             p.threshold_max)
        self.last_update = now


@dataclass
class Replay:
    """The replayed filter. Per trendline update (one per completed send group): `t_ms` (the feedback's log time),
    `m` (modified trend, ms), `gamma` (threshold, ms). Per feedback message: `feedback_time_ms`, `state` after it."""
    t_ms: Array
    m: Array
    gamma: Array
    feedback_time_ms: Array
    state: Array


@dataclass
class Message:
    """One feedback message's share of the filter's input: its log time, whether the filter restarts before it (no
    feedback for more than stream_timeout_ms), and the deltas its packets completed: (send delta, arrival delta,
    arrival time of the packet that completed the group), ms."""
    time_ms: float
    restart: bool
    deltas: list[tuple[float, float, float]]


def group_deltas(log: EventLog, fb: Feedback, send_time_ms: Array | None = None,
                 params: Params = DEFAULTS) -> list[Message]:
    """The filter's input: the feedback messages that report a received packet the log holds as sent, each with the
    send-group deltas it completed. send_time_ms: each outgoing RTP packet's send time on Chrome's clock (default:
    the log's own, whole ms; the capture's wire time, converted, is finer)."""
    o = log.outgoing_rtp
    has = o["transport_seq"] >= 0
    seq = unwrap16(o["transport_seq"][has])
    send = (o["time_ms"] if send_time_ms is None else send_time_ms)[has].astype(float)
    by_seq = dict(zip(seq.tolist(), range(len(seq))))
    fb_seq = unwrap16(fb.seq)
    if len(seq) and len(fb_seq):
        fb_seq = fb_seq + (int(seq[0]) - int(seq[0]) % 65536)
    out: list[Message] = []
    inter = _InterArrival(params)
    last_feedback = -math.inf
    bounds = np.flatnonzero(np.diff(np.r_[-1, fb.feedback_index, -2]))  # start of each message's statuses
    for start, stop in zip(bounds[:-1], bounds[1:]):
        now = float(fb.log_time_ms[start])
        rows = [i for i in range(start, stop) if fb.received[i] and int(fb_seq[i]) in by_seq]
        if not rows:
            continue
        restart = now - last_feedback > params.stream_timeout_ms
        if restart:
            inter = _InterArrival(params)
        last_feedback = now
        rows.sort(key=lambda i: fb.recv_time_us[i])
        deltas = []
        for i in rows:
            arrival = fb.recv_time_us[i] / 1000.0
            d = inter.deltas(float(send[by_seq[int(fb_seq[i])]]), float(arrival), now)
            if d is not None:
                deltas.append((d[0], d[1], float(arrival)))
        out.append(Message(now, restart, deltas))
    return out


def detect(messages: list[Message], params: Params = DEFAULTS) -> Replay:
    """The trendline and the over-use detector over the input group_deltas gave, restarted where it says."""
    t_out, m_out, g_out, fb_times, states = [], [], [], [], []
    trend = _Trendline(params)
    for msg in messages:
        if msg.restart:
            trend = _Trendline(params)
        for send_delta, arrival_delta, arrival in msg.deltas:
            trend.update(arrival_delta, send_delta, arrival)
            t_out.append(msg.time_ms)
            m_out.append(trend.modified_trend)
            g_out.append(trend.threshold)
        fb_times.append(msg.time_ms)
        states.append(trend.state)
    as_f = lambda v: np.array(v, dtype=float)
    return Replay(as_f(t_out), as_f(m_out), as_f(g_out), np.array(fb_times, np.int64), np.array(states, np.int64))


def replay(log: EventLog, fb: Feedback, send_time_ms: Array | None = None, params: Params = DEFAULTS) -> Replay:
    """Runs the filter over every feedback message (group_deltas, then detect). send_time_ms: as group_deltas."""
    return detect(group_deltas(log, fb, send_time_ms, params), params)


def agreement(log: EventLog, r: Replay) -> dict[str, Any]:
    """How often the replay's detector state equals the one Chrome logged: at each logged delay-based update (the
    replay's state after the last feedback at or before it), and over time (share of the span from the first logged
    update to the last feedback during which the two states are equal)."""
    d = log.delay_based
    if not len(d["time_ms"]) or not len(r.feedback_time_ms):
        return {"updates": int(len(d["time_ms"])), "agreeing_updates": None, "update_agreement": None,
                "time_agreement": None}
    idx = np.searchsorted(r.feedback_time_ms, d["time_ms"], side="right") - 1
    replayed = np.where(idx >= 0, r.state[np.maximum(idx, 0)], NORMAL)
    same = replayed == d["state"]
    # Over time: both are step functions; sample them at every change of either.
    t = np.union1d(d["time_ms"], r.feedback_time_ms)
    t = t[t >= d["time_ms"][0]]
    logged_at = d["state"][np.searchsorted(d["time_ms"], t, side="right") - 1]
    ri = np.searchsorted(r.feedback_time_ms, t, side="right") - 1
    replay_at = np.where(ri >= 0, r.state[np.maximum(ri, 0)], NORMAL)
    dt = np.diff(t)
    time_share = float((dt * (logged_at[:-1] == replay_at[:-1])).sum() / dt.sum()) if dt.sum() > 0 else None
    confusion: dict[str, int] = {}
    names = {NORMAL: "normal", UNDERUSING: "underusing", OVERUSING: "overusing"}
    for lg, rp in zip(d["state"].tolist(), replayed.tolist()):
        key = f"{names.get(lg, 'unknown')}->{names.get(rp, 'unknown')}"
        confusion[key] = confusion.get(key, 0) + 1
    return {"updates": int(len(same)), "agreeing_updates": int(same.sum()), "update_agreement": float(same.mean()),
            "time_agreement": time_share, "logged_to_replayed": confusion}
