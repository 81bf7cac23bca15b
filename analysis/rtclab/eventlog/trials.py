"""Evidence from a sender's RTC event log that a GCC field trial took effect (docs/gcc-trials.md). Chrome ignores a
trial it does not parse without a word, so a run with a trial is valid only when its log shows the trial's effect.

The trials and which evidence each has are in harness/gcc-trials.json (the registry the harness reads too). Each
evidence function returns `{"shown": bool, "seen": str}`: shown False says what was seen instead, including "nothing
to judge" (no over-use, no loss-limited decrease), which leaves the trial unproven.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import replay
from .feedback import Feedback, transport_feedback, unwrap16
from .parser import OVERUSING, EventLog

REGISTRY_FILE = Path(__file__).resolve().parents[3] / "harness" / "gcc-trials.json"

HIGH_LOSS_Q8 = 26  # the classic rule decreases when loss > 10 %: fraction_loss (of 256) 26 or more
TRANSPORT_OVERHEAD_B = 28  # IPv4 + UDP: what the transport feedback adapter adds to each RTP packet's size
BACKOFF_OFFSET_BPS = 5000  # AimdRateControl subtracts 5 kbps after the factor
# A decrease by the factor x the acknowledged rate gives the factor back to within BACKOFF_MATCH: in 57 default runs
# of this machine (724 over-use decreases) 66 % of the ratios were within 0.001 of 0.85 and 76 % within 0.005, while
# no run had more than 1 within 0.005 of 0.95 (docs/gcc-trials.md). The rest come from the link-capacity branch.
BACKOFF_MATCH = 0.005
BACKOFF_MIN_AT_FACTOR = 3
BACKOFF_DOMINANCE = 2
HISTORY_MS = 999.0  # the classic rule's ramp is from the smallest target of the last second (its history keeps 999 ms)
RAMP_START_MS = 3000.0  # the start phase (2 s from the first loss report) may lift the target: judged after it
# 3 exact classic increases at least: none in 117 runs with v2 on here, 8 or more in each of 5 with v2 off.
CLASSIC_MIN_RAMPS = 3


class RegistryError(Exception):
    """harness/gcc-trials.json is missing or malformed."""


@dataclass(frozen=True)
class Trial:
    name: str
    key: str
    group: str
    evidence: str
    value: float | None
    default_value: float | None


def load_registry(path: Path = REGISTRY_FILE) -> dict[str, Trial]:
    """The registry's trials by key."""
    try:
        doc = json.loads(path.read_text())
        trials = [Trial(t["name"], t["key"], t["group"], t["evidence"], t.get("value"), t.get("default_value"))
                  for t in doc["trials"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RegistryError(f"{path}: the field trial registry cannot be read ({type(e).__name__}: {e})") from None
    for t in trials:
        if t.evidence not in EVIDENCE:  # a trial without evidence would always be INVALID: not in the registry
            raise RegistryError(f"{path}: trial {t.name}: unknown evidence {t.evidence!r} (known: {sorted(EVIDENCE)})")
    return {t.key: t for t in trials}


def parse_field_trials(trials: str) -> list[tuple[str, str]]:
    """(key, group) pairs of a --force-fieldtrials string ("Key/Group/Key/Group/")."""
    parts = trials[:-1].split("/") if trials.endswith("/") else trials.split("/")
    if not trials:
        return []
    if len(parts) % 2 or not all(parts):
        raise ValueError(f"field_trials {trials!r}: not Key/Group/ pairs")
    return list(zip(parts[0::2], parts[1::2]))


def _result(shown: bool, seen: str) -> dict[str, Any]:
    return {"shown": shown, "seen": seen}


def _latest(times: np.ndarray, values: np.ndarray, at: float) -> float | None:
    """The value of a step series in force at `at` (its last update at or before it), None before the first."""
    i = int(np.searchsorted(times, at, side="right")) - 1
    return None if i < 0 else float(values[i])


def _ramp(prev_min: int) -> int:
    """The classic rule's increase (send_side_bandwidth_estimation.cc): 1.08 x the smallest target of the last second,
    rounded, + 1 kbps."""
    return int(prev_min * 1.08 + 0.5) + 1000


def classic_loss_rule(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """LossBasedBweV2 off: the classic rule sets the loss-based target, and v2 makes no update. Judged where the target
    is below the delay-based estimate in force (at it, the delay-based estimate sets it, whichever controller runs):
    - shown by the classic rule's own increases: exactly 1.08 x the smallest target of the last second + 1 kbps (the
      history's first entry is the target in force 999 ms back or a later one, so either counts); v2 never lands on
      that value (0 in each of 117 logs of runs with v2 on on this machine, 8 to 294 in each of 5 with v2 off);
    - contradicted by any update v2 makes and the classic rule cannot: a decrease that is neither the rule's
      x (512 - loss) / 512 at loss >= 26/256 nor its ramp from the last second's smallest target, or an increase above
      1.08 x the previous target + 1 kbps (every default run here had such decreases, most at loss 0/256).
    The first RAMP_START_MS of the log are left out: the start phase lifts the target to the delay-based estimate."""
    lb, db = log.loss_based, log.delay_based
    t = lb["time_ms"].astype(float)
    bps = lb["bitrate_bps"].astype(np.int64)
    db_t, db_bps = db["time_ms"].astype(float), db["bitrate_bps"]
    ramps = classic = 0
    v2: list[str] = []
    for i in range(1, len(t)):
        new, prev, q8 = int(bps[i]), int(bps[i - 1]), int(lb["fraction_loss"][i])
        d = _latest(db_t, db_bps, t[i])
        if t[i] < t[0] + RAMP_START_MS or d is None or new >= d - 1 or abs(new - prev) <= 1:
            continue
        in_window = bps[(t > t[i] - HISTORY_MS) & (t < t[i])]
        at_start = _latest(t, bps, t[i] - HISTORY_MS)
        history_min = {int(in_window.min(initial=prev))}
        if at_start is not None:
            history_min.add(int(min(at_start, *history_min)))
        if any(abs(new - _ramp(m)) <= 1 for m in history_min):
            ramps += 1
        elif new < prev and q8 >= HIGH_LOSS_Q8 and abs(new - prev * (512 - q8) // 512) <= 1:
            classic += 1
        elif new < prev or new > _ramp(prev) + 1:
            v2.append(f"{prev}->{new} bps at loss {q8}/256, {(t[i] - t[0]) / 1000:.1f} s after the first estimate")
    seen = (f"below the delay-based estimate, {ramps} increases by the classic ramp (1.08 x the last second's "
            f"smallest target + 1 kbps), {classic} decreases by the classic loss rule, {len(v2)} updates the classic "
            "rule cannot make" + (f" (e.g. {'; '.join(v2[:3])})" if v2 else ""))
    if v2:
        return _result(False, seen + ": LossBasedBweV2 acted")
    if ramps < CLASSIC_MIN_RAMPS:
        return _result(False, seen + f": fewer than {CLASSIC_MIN_RAMPS} classic increases, nothing to judge")
    return _result(True, seen)


def trendline_window(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """A trendline window of `value` groups: the replayed detector with the trial's window agrees with Chrome's logged
    states at more of its updates than with the default window."""
    assert trial.value is not None and trial.default_value is not None
    messages = replay.group_deltas(log, fb)
    if not messages:
        return _result(False, "no transport feedback to replay the detector from, nothing to judge")
    agree = {}
    for label, w in (("trial", int(trial.value)), ("default", int(trial.default_value))):
        params = replace(replay.DEFAULTS, window=w)
        agree[label] = replay.agreement(log, replay.detect(messages, params))
    a, b = agree["trial"]["update_agreement"], agree["default"]["update_agreement"]
    if a is None or b is None:
        return _result(False, "no logged detector update to compare the replays with, nothing to judge")
    seen = (f"the detector replayed with window {int(trial.value)} agrees with Chrome's logged state at "
            f"{100 * a:.1f}% of {agree['trial']['updates']} updates, with window {int(trial.default_value)} at "
            f"{100 * b:.1f}%")
    return _result(a > b, seen)


def _acknowledged_bitrate(log: EventLog, fb: Feedback) -> Callable[[float], float | None]:
    """Chrome's acknowledged bitrate as goog_cc held it at a log time: its default estimator, RobustThroughputEstimator
    (goog_cc/robust_throughput_estimator.cc, "WebRTC-Bwe-RobustThroughputEstimatorSettings" enabled by default),
    replayed over the logged transport feedback, each feedback's received packets in receive time order, sizes as the
    transport feedback adapter counts them (the RTP packet + IPv4/UDP, TRANSPORT_OVERHEAD_B). None before it has
    an estimate."""
    o = log.outgoing_rtp
    has = o["transport_seq"] >= 0
    seq = unwrap16(o["transport_seq"][has])
    size = (o["header_size"] + o["payload_size"] + o["padding_size"])[has] + TRANSPORT_OVERHEAD_B
    by_seq = dict(zip(seq.tolist(), zip(o["time_ms"][has].astype(float).tolist(), size.tolist())))
    fb_seq = unwrap16(fb.seq)
    if len(seq) and len(fb_seq):
        fb_seq = fb_seq + (int(seq[0]) - int(seq[0]) % 65536)
    est = _RobustThroughput()
    times: list[float] = []
    rates: list[float] = []
    rows = np.flatnonzero(fb.received)
    starts = np.flatnonzero(np.diff(fb.feedback_index[rows], prepend=-1))
    for r in np.split(rows, starts[1:]):
        for i in r[np.argsort(fb.recv_time_us[r], kind="stable")]:
            sent = by_seq.get(int(fb_seq[i]))
            if sent is not None:
                est.add(fb.recv_time_us[i] / 1000.0, *sent)
        est.trim()
        bps = est.bitrate_bps()
        if bps is not None:
            times.append(float(fb.log_time_ms[r[0]]))
            rates.append(bps)
    t_arr, r_arr = np.array(times), np.array(rates)
    return lambda at_ms: _latest(t_arr, r_arr, at_ms)


class _RobustThroughput:
    """RobustThroughputEstimator with its default settings: a window of at least 20 received packets and 1 s (at
    most 500 packets, 5 s); the rate is the smaller of the send rate and the receive rate over it, the receive span
    without its largest gap (plus the second largest), each side without its edge packet's size; 10 packets at least."""
    WINDOW_PACKETS, MAX_WINDOW_PACKETS, REQUIRED_PACKETS = 20, 500, 10
    MIN_WINDOW_MS, MAX_WINDOW_MS, MAX_REORDERING_MS = 1000.0, 5000.0, 1000.0

    def __init__(self) -> None:
        self.window: list[tuple[float, float, int]] = []  # (receive ms, send ms, bytes), in receive time order
        self.latest_discarded_send = -np.inf

    def add(self, recv_ms: float, send_ms: float, size: int) -> None:
        w = self.window
        w.append((recv_ms, send_ms, size))
        i = len(w) - 1
        while i > 0 and w[i][0] < w[i - 1][0]:
            w[i], w[i - 1] = w[i - 1], w[i]
            i -= 1
        if w[-1][0] - recv_ms > self.MAX_REORDERING_MS:
            w.clear()
            self.latest_discarded_send = -np.inf

    def trim(self) -> None:
        w = self.window
        while w and (len(w) > self.MAX_WINDOW_PACKETS or w[-1][0] - w[0][0] > self.MAX_WINDOW_MS
                     or (len(w) > self.WINDOW_PACKETS and w[-1][0] - w[0][0] > self.MIN_WINDOW_MS)):
            self.latest_discarded_send = max(self.latest_discarded_send, w.pop(0)[1])

    def bitrate_bps(self) -> float | None:
        w = self.window
        if len(w) < self.REQUIRED_PACKETS:
            return None
        gaps = sorted((b[0] - a[0] for a, b in zip(w, w[1:])), reverse=True) + [0.0, 0.0]
        recv_size = sum(p[2] for p in w) - w[0][2]
        recv_ms = max(w[-1][0] - w[0][0] - gaps[0] + gaps[1], 1.0)
        sent = [p for p in w if p[1] >= self.latest_discarded_send]
        recv_rate = recv_size * 8000.0 / recv_ms
        if len(sent) < self.REQUIRED_PACKETS:
            return recv_rate
        last = max(sent, key=lambda p: p[1])  # the first of the latest send time, as Chrome's strict >
        send_size = sum(p[2] for p in sent) - last[2]
        send_ms = max(last[1] - min(p[1] for p in sent), 1.0)
        return min(send_size * 8000.0 / send_ms, recv_rate)


def backoff_factor(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """The back-off factor: at each decrease of the delay-based estimate logged with the detector overusing,
    (new estimate + 5 kbps) / acknowledged rate, the rate replayed as Chrome's estimator held it. AimdRateControl's
    usual decrease makes that ratio the factor itself; its other branch (the factor x the link capacity estimate)
    scatters. Shown when at least BACKOFF_MIN_AT_FACTOR ratios are at the trial's factor (within BACKOFF_MATCH) and
    more than BACKOFF_DOMINANCE times as many as at the default's."""
    assert trial.value is not None and trial.default_value is not None
    d = log.delay_based
    rate = _acknowledged_bitrate(log, fb)
    ratios = []
    for i in range(1, len(d["time_ms"])):
        if d["state"][i] != OVERUSING or d["bitrate_bps"][i] >= d["bitrate_bps"][i - 1]:
            continue
        acked = rate(float(d["time_ms"][i]))
        if acked:
            ratios.append((int(d["bitrate_bps"][i]) + BACKOFF_OFFSET_BPS) / acked)
    if not ratios:
        return _result(False, "no decrease of the delay-based estimate on over-use with a known acknowledged rate, "
                              "nothing to judge")
    r = np.array(ratios)
    at_trial = int(np.sum(np.abs(r - trial.value) <= BACKOFF_MATCH))
    at_default = int(np.sum(np.abs(r - trial.default_value) <= BACKOFF_MATCH))
    seen = (f"{len(r)} over-use decreases, (estimate + 5 kbps) / acknowledged rate: {at_trial} at the trial's "
            f"{trial.value:g}, {at_default} at the default's {trial.default_value:g} (within {BACKOFF_MATCH:g}; "
            f"median {float(np.median(r)):.3f})")
    return _result(at_trial >= BACKOFF_MIN_AT_FACTOR and at_trial > BACKOFF_DOMINANCE * at_default, seen)


EVIDENCE: dict[str, Callable[[EventLog, Feedback, Trial], dict[str, Any]]] = {
    "classic_loss_rule": classic_loss_rule, "trendline_window": trendline_window, "backoff_factor": backoff_factor}


def evidence(log: EventLog, trial: Trial) -> dict[str, Any]:
    """One trial's evidence from the sender's log."""
    fb, _ = transport_feedback(log.incoming_rtcp)
    return EVIDENCE[trial.evidence](log, fb, trial)
