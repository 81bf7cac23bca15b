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
ACKED_WINDOW_MS = 500.0  # the acknowledged-rate window the back-off ratio is taken over (BitrateEstimator's, at most)
BACKOFF_OFFSET_BPS = 5000  # AimdRateControl subtracts 5 kbps after the factor
# The estimated ratio is rough (the acknowledged rate is re-estimated here, RTP sizes only, and the decrease can take
# the link-capacity branch): shown only when its median is this close to the trial's factor and nearer than the
# default's, else unproven (an INVALID run rather than a default run passed as the variant).
BACKOFF_TOLERANCE = 0.03
RECOVERY_FRACTION = 0.85  # probe_controller.cc kProbeFractionAfterDrop
RECOVERY_DROP_WINDOW_MS = 10_000.0  # the estimate before the drop: within 5 s of the drop, the drop within 5 s
ALR_ENDED_MS = 3000.0  # probe_controller.cc kAlrEndedTimeout: a recovery probe this soon after ALR is the default's
PROBE_RATE_TOLERANCE = 0.005


class RegistryError(Exception):
    """harness/gcc-trials.json is missing or malformed."""


@dataclass(frozen=True)
class Trial:
    name: str
    key: str
    group: str
    evidence: str | None
    no_evidence_reason: str | None
    value: float | None
    default_value: float | None


def load_registry(path: Path = REGISTRY_FILE) -> dict[str, Trial]:
    """The registry's trials by key."""
    try:
        doc = json.loads(path.read_text())
        trials = [Trial(t["name"], t["key"], t["group"], t["evidence"], t.get("no_evidence_reason"),
                        t.get("value"), t.get("default_value")) for t in doc["trials"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RegistryError(f"{path}: the field trial registry cannot be read ({type(e).__name__}: {e})") from None
    for t in trials:
        if t.evidence is not None and t.evidence not in EVIDENCE:
            raise RegistryError(f"{path}: trial {t.name}: unknown evidence {t.evidence!r} (known: {sorted(EVIDENCE)})")
        if t.evidence is None and not t.no_evidence_reason:
            raise RegistryError(f"{path}: trial {t.name} has no evidence and no no_evidence_reason")
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


def classic_loss_rule(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """LossBasedBweV2 off: every decrease of the loss-based target below the delay-based estimate follows the classic
    rule, logged fraction loss of 26/256 or more and target = previous x (512 - loss) / 512 (1 bps of rounding). v2's
    decreases follow other rules and come at lower loss; none at all leaves it unproven."""
    lb, db = log.loss_based, log.delay_based
    classic, other = 0, 0
    examples: list[str] = []
    for i in range(1, len(lb["time_ms"])):
        t, new, prev, q8 = (float(lb["time_ms"][i]), int(lb["bitrate_bps"][i]), int(lb["bitrate_bps"][i - 1]),
                            int(lb["fraction_loss"][i]))
        d = _latest(db["time_ms"], db["bitrate_bps"], t)
        if d is None or not (new < prev - 1 and new < d - 1):
            continue
        expected = prev * (512 - q8) // 512
        if q8 >= HIGH_LOSS_Q8 and abs(new - expected) <= 1:
            classic += 1
        else:
            other += 1
            if len(examples) < 3:
                examples.append(f"{prev}->{new} bps at loss {q8}/256 (t {t / 1000:.1f} s)")
    seen = (f"{classic + other} decreases of the loss-based target below the delay-based estimate, {classic} by the "
            f"classic rule (loss >= {HIGH_LOSS_Q8}/256, x (512 - loss) / 512), {other} by another rule"
            + (f" (e.g. {'; '.join(examples)})" if examples else ""))
    if classic + other == 0:
        return _result(False, seen + ": the loss-based controller never limited the target, nothing to judge")
    return _result(other == 0, seen)


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


def _acked_rate_bps(log: EventLog, fb: Feedback) -> Callable[[float], float | None]:
    """The rate of the bytes reported received over the last ACKED_WINDOW_MS of arrival times, as known at a log
    time (the feedback logged at or before it); RTP sizes, no transport overhead."""
    o = log.outgoing_rtp
    has = o["transport_seq"] >= 0
    seq = unwrap16(o["transport_seq"][has])
    size = (o["header_size"] + o["payload_size"] + o["padding_size"])[has]
    by_seq = dict(zip(seq.tolist(), size.tolist()))
    fb_seq = unwrap16(fb.seq)
    if len(seq) and len(fb_seq):
        fb_seq = fb_seq + (int(seq[0]) - int(seq[0]) % 65536)
    rows = np.flatnonzero(fb.received)
    sizes = np.array([by_seq.get(int(s), -1) for s in fb_seq[rows]], dtype=np.int64)
    keep = sizes >= 0
    log_t, arr_ms, sizes = fb.log_time_ms[rows][keep], fb.recv_time_us[rows][keep] / 1000.0, sizes[keep]

    def rate(at_ms: float) -> float | None:
        known = log_t <= at_ms
        if known.sum() < 2:
            return None
        a, s = arr_ms[known], sizes[known]
        last = float(a.max())
        inside = a > last - ACKED_WINDOW_MS
        span = last - float(a[inside].min())
        return None if span < ACKED_WINDOW_MS / 2 else float(s[inside].sum()) * 8 / (span / 1000.0)
    return rate


def backoff_factor(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """The back-off factor: at each decrease of the delay-based estimate logged with the detector overusing,
    (new estimate + 5 kbps) / acknowledged rate; the median of those ratios within BACKOFF_TOLERANCE of the trial's
    factor and nearer it than the default's. No over-use decrease leaves it unproven."""
    assert trial.value is not None and trial.default_value is not None
    d = log.delay_based
    rate = _acked_rate_bps(log, fb)
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
    med = float(np.median(ratios))
    seen = (f"{len(ratios)} over-use decreases, (estimate + 5 kbps) / acknowledged rate median {med:.3f} "
            f"(trial {trial.value:g}, default {trial.default_value:g})")
    near = abs(med - trial.value) <= BACKOFF_TOLERANCE and abs(med - trial.value) < abs(med - trial.default_value)
    return _result(near, seen)


def recovery_probe(log: EventLog, fb: Feedback, trial: Trial) -> dict[str, Any]:
    """Rapid recovery: a probe cluster at 0.85 x an estimate logged in the 10 s before it, started outside ALR and not
    within 3 s of ALR's end (the default sends that probe only there)."""
    c, alr = log.probe_clusters, log.alr
    estimates = np.concatenate([log.loss_based["bitrate_bps"], log.delay_based["bitrate_bps"]]).astype(float)
    est_t = np.concatenate([log.loss_based["time_ms"], log.delay_based["time_ms"]]).astype(float)
    alr_order = np.argsort(alr["time_ms"], kind="stable")
    alr_t, alr_on = alr["time_ms"][alr_order].astype(float), alr["in_alr"][alr_order]
    found, in_alr = [], 0
    for t, bps in zip(c["time_ms"].astype(float), c["bitrate_bps"].astype(float)):
        before = (est_t < t) & (est_t >= t - RECOVERY_DROP_WINDOW_MS)
        if not np.any(np.abs(RECOVERY_FRACTION * estimates[before] - bps) <= PROBE_RATE_TOLERANCE * bps + 1):
            continue
        state = _latest(alr_t, alr_on, t)
        ended = alr_t[(alr_t <= t) & (alr_t > t - ALR_ENDED_MS) & (alr_on == 0)]
        if state == 1 or len(ended):
            in_alr += 1
        else:
            found.append(f"{bps / 1000:.0f} kbps at {t / 1000:.1f} s")
    seen = (f"{len(found)} probe clusters at 0.85 x an estimate of the 10 s before, outside ALR"
            + (f" ({'; '.join(found[:3])})" if found else "") + f"; {in_alr} such in or just after ALR")
    return _result(bool(found), seen + ("" if found else ": no recovery probe outside ALR"))


EVIDENCE: dict[str, Callable[[EventLog, Feedback, Trial], dict[str, Any]]] = {
    "classic_loss_rule": classic_loss_rule, "trendline_window": trendline_window, "backoff_factor": backoff_factor,
    "recovery_probe": recovery_probe}


def evidence(log: EventLog, trial: Trial) -> dict[str, Any]:
    """One trial's evidence from the sender's log."""
    if trial.evidence is None:
        return _result(False, str(trial.no_evidence_reason))
    fb, _ = transport_feedback(log.incoming_rtcp)
    return EVIDENCE[trial.evidence](log, fb, trial)
