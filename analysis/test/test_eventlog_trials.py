"""The field trials' evidence (eventlog/trials.py) and the field_trials_took_effect check (validity.py), on a real
event log of this machine's Chromium run with no trial (analysis/test/data/eventlog-chromium156-a.log): none of the
registry's trials may be shown there, so a run that claims one but ran Chrome's default is INVALID."""
from __future__ import annotations

import json
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
                                                   "cwnd_off", "rapid_recovery"}
    assert REGISTRY["WebRTC-BweBackOffFactor"].group == "Enabled-0.95"
    assert REGISTRY["WebRTC-CongestionWindow"].evidence is None


def test_bad_registry_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"trials": [{"name": "x", "key": "K", "group": "G", "evidence": "telepathy"}]}))
    with pytest.raises(trials.RegistryError, match="unknown evidence 'telepathy'"):
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
        if j >= 0 and lb["bitrate_bps"][i] < lb["bitrate_bps"][i - 1] - 1 and lb["bitrate_bps"][i] < db["bitrate_bps"][j] - 1:
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
    check = validity.field_trials_took_effect(_run_with(other, "WebRTC-CongestionWindow/DropFrame:false/", False))
    assert check is not None and check["ok"] is False and "no eventlog-a.log" in check["detail"]
