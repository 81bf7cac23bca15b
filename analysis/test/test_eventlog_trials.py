"""The field trials' evidence (eventlog/trials.py) and the field_trials_took_effect check (validity.py), on a real
event log of this machine's Chromium run with no trial (analysis/test/data/eventlog-chromium156-a.log): none of the
registry's trials may be shown there, so a run that claims one but ran Chrome's default is INVALID."""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rtclab import rundir, validity
from rtclab.eventlog import parser, trials
from rtclab.eventlog.feedback import transport_feedback

REAL_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-a.log"
REGISTRY = trials.load_registry()


@pytest.fixture(scope="module")
def log() -> parser.EventLog:
    return parser.read(REAL_LOG)


def test_registry_names_the_trials_and_their_evidence() -> None:
    assert {t.name for t in REGISTRY.values()} == {"loss_based_v2_off", "trendline_window_60", "backoff_095",
                                                   "rapid_recovery"}
    assert REGISTRY["WebRTC-BweBackOffFactor"].group == "Enabled-0.95"
    assert all(t.evidence in trials.EVIDENCE for t in REGISTRY.values())


def test_bad_registry_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"trials": [{"name": "x", "key": "K", "group": "G", "evidence": "telepathy"}]}))
    with pytest.raises(trials.RegistryError, match="unknown evidence 'telepathy'"):
        trials.load_registry(bad)
    bad.write_text(json.dumps({"trials": [{"name": "x", "key": "K", "group": "G", "evidence": None}]}))
    with pytest.raises(trials.RegistryError, match="unknown evidence None"):
        trials.load_registry(bad)


def test_field_trial_strings() -> None:
    assert trials.parse_field_trials("") == []
    assert trials.parse_field_trials("A/x:1/B/Enabled-0.9/") == [("A", "x:1"), ("B", "Enabled-0.9")]
    with pytest.raises(ValueError, match="not Key/Group/ pairs"):
        trials.parse_field_trials("A/x/B/")


def test_default_run_shows_no_trial(log: parser.EventLog) -> None:
    for trial in REGISTRY.values():
        assert trials.evidence(log, trial)["shown"] is False, trial.name


def test_default_run_has_v2_decreases(log: parser.EventLog) -> None:
    """The default's LossBasedBweV2 lowers the target below the delay-based estimate at no loss at all: decreases
    the classic rule cannot make, what a run with v2 off must not have."""
    seen = trials.classic_loss_rule(log, transport_feedback(log.incoming_rtcp)[0],
                                    REGISTRY["WebRTC-Bwe-LossBasedBweV2"])["seen"]
    assert " 0 by the classic rule" in seen and "at loss 0/256" in seen


def test_classic_rule_is_recognised(log: parser.EventLog) -> None:
    """The same log with its loss-based decreases rewritten by the classic rule (loss 40/256, x (512 - 40) / 512):
    shown."""
    lb = {k: v.copy() for k, v in log.loss_based.items()}
    db = log.delay_based
    for i in range(1, len(lb["time_ms"])):
        j = int(np.searchsorted(db["time_ms"], lb["time_ms"][i], side="right")) - 1
        new = lb["bitrate_bps"][i]
        if j >= 0 and new < lb["bitrate_bps"][i - 1] - 1 and new < db["bitrate_bps"][j] - 1:
            lb["fraction_loss"][i] = 40
            lb["bitrate_bps"][i] = lb["bitrate_bps"][i - 1] * (512 - 40) // 512
    classic = replace(log, loss_based=lb)
    out = trials.classic_loss_rule(classic, transport_feedback(log.incoming_rtcp)[0],
                                   REGISTRY["WebRTC-Bwe-LossBasedBweV2"])
    assert out["shown"] is True, out["seen"]


def test_window_evidence_follows_the_replay(log: parser.EventLog) -> None:
    """A "trial" of window 20 against a default of 60 is the same comparison turned round: this default run agrees
    with the window of 20 better, so it shows."""
    fb = transport_feedback(log.incoming_rtcp)[0]
    turned = replace(REGISTRY["WebRTC-Bwe-TrendlineEstimatorSettings"], value=20, default_value=60)
    assert trials.trendline_window(log, fb, turned)["shown"] is True


def test_backoff_ratio_is_the_factor(log: parser.EventLog) -> None:
    """Chrome's acknowledged rate replayed: this default run's over-use decreases are at 0.85 x it (3 of 5 within
    0.005, the others the link-capacity branch), none at 0.95; a "trial" of 0.85 against a default of 0.95 shows."""
    fb = transport_feedback(log.incoming_rtcp)[0]
    trial = REGISTRY["WebRTC-BweBackOffFactor"]
    seen = trials.backoff_factor(log, fb, trial)
    assert seen["shown"] is False and "0 at the trial's 0.95, 3 at the default's 0.85" in seen["seen"], seen["seen"]
    assert trials.backoff_factor(log, fb, replace(trial, value=0.85, default_value=0.95))["shown"] is True


def test_acknowledged_rate_is_the_windowed_min_of_send_and_receive_rates() -> None:
    """RobustThroughputEstimator by hand: 30 packets of 1000 B sent every 10 ms and received every 20 ms, a span of
    580 ms (under the 1 s window: all kept); receive rate 29 x 8000 bit / 580 ms, send rate 29 x 8000 bit / 290 ms:
    the smaller, 400 kbit/s. 200 packets 10 ms apart: trimmed to the 1 s window, 101 packets."""
    est = trials._RobustThroughput()
    for i in range(30):
        est.add(20.0 * i, 10.0 * i, 1000)
    est.trim()
    assert est.bitrate_bps() == pytest.approx(29 * 8000 / 0.58)
    est = trials._RobustThroughput()
    for i in range(9):
        est.add(20.0 * i, 10.0 * i, 1000)
    assert est.bitrate_bps() is None  # fewer than 10 packets
    est = trials._RobustThroughput()
    for i in range(200):
        est.add(10.0 * i, 10.0 * i, 1000)
    est.trim()
    assert len(est.window) == 101 and est.bitrate_bps() == pytest.approx(100 * 8000 / 1.0)


def test_recovery_probe_is_the_one_after_a_large_drop_outside_alr(log: parser.EventLog) -> None:
    """The default run's probes at 0.85 x the target before a large drop come in ALR (Chrome's default sends them
    only there): no evidence. A log of one probe cluster, 1 s after a large drop at 0.85 x the target before it, no
    ALR: shown; the same probe at 2 x, or 6 s after the drop: not."""
    fb = transport_feedback(log.incoming_rtcp)[0]
    trial = REGISTRY["WebRTC-BweRapidRecoveryExperiment"]
    default = trials.recovery_probe(log, fb, trial)
    assert default["shown"] is False and re.search(r"; [1-9]\d* such in or just after ALR", default["seen"]), default
    lb = log.loss_based
    i = int(np.flatnonzero(lb["bitrate_bps"][1:] < 0.66 * lb["bitrate_bps"][:-1])[0]) + 1
    no_alr = {k: v[:0] for k, v in log.alr.items()}

    def one_probe(after_ms: int, bps: int) -> parser.EventLog:
        c = {k: v[:1].copy() for k, v in log.probe_clusters.items()}
        c["time_ms"][0], c["bitrate_bps"][0] = int(lb["time_ms"][i]) + after_ms, bps
        return replace(log, alr=no_alr, probe_clusters=c)
    before = int(lb["bitrate_bps"][i - 1])
    assert trials.recovery_probe(one_probe(1000, int(0.85 * before)), fb, trial)["shown"] is True
    assert trials.recovery_probe(one_probe(1000, 2 * before), fb, trial)["shown"] is False
    assert trials.recovery_probe(one_probe(6000, int(0.85 * before)), fb, trial)["shown"] is False


def _run_with(tmp_path: Path, field_trials: str, with_log: bool = True) -> validity.RecordedRun:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({
        "format_version": 3, "status": "completed",
        "scenario": {"calls": [{"id": "c1", "field_trials": field_trials}]}}))
    if with_log:
        shutil.copy(REAL_LOG, run / "eventlog-a.log")
    return validity.RecordedRun(rundir.load(run), 0.0, 60.0, None, validity.load_bounds())


def test_check_skips_runs_without_registry_trials(tmp_path: Path) -> None:
    assert validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-Foo/Enabled/")) is None


def test_check_fails_a_trial_the_log_does_not_show(tmp_path: Path) -> None:
    check = validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-BweBackOffFactor/Enabled-0.95/"))
    assert check is not None and check["ok"] is False
    assert "backoff_095 (WebRTC-BweBackOffFactor/Enabled-0.95): not shown" in check["detail"]


def test_check_fails_another_group_and_a_missing_log(tmp_path: Path) -> None:
    check = validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-BweBackOffFactor/Enabled-0.9/"))
    assert check is not None and check["ok"] is False and "is not the registry's 'Enabled-0.95'" in check["detail"]
    other = tmp_path / "other"
    other.mkdir()
    check = validity.field_trials_took_effect(_run_with(other, "WebRTC-BweRapidRecoveryExperiment/Enabled/", False))
    assert check is not None and check["ok"] is False and "no eventlog-a.log" in check["detail"]
