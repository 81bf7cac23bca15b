"""The field trials' evidence (eventlog/trials.py) and the field_trials_took_effect check (validity.py), on a real
event log of this machine's Chromium run with no trial (analysis/test/data/eventlog-chromium156-a.log): none of the
registry's trials may be shown there, so a run that claims one but ran Chrome's default is INVALID. And on a real log
of a run with LossBasedBweV2 off (eventlog-chromium156-v2off-a.log: `npm run call -- --scenario
scenarios/gcc-trials/loss-based-v2-off.yaml --duration 60`, 2 Mbit/s DT/300 beside 2 CUBIC flows)."""
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
V2_OFF_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-v2off-a.log"
REGISTRY = trials.load_registry()


@pytest.fixture(scope="module")
def log() -> parser.EventLog:
    return parser.read(REAL_LOG)


def test_registry_names_the_trials_and_their_evidence() -> None:
    assert {t.name for t in REGISTRY.values()} == {"loss_based_v2_off", "trendline_window_60", "backoff_095"}
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
    """The default's LossBasedBweV2 lowers the target below the delay-based estimate at no loss at all: updates the
    classic rule cannot make, what a run with v2 off must not have; and not one classic increase."""
    out = trials.classic_loss_rule(log, transport_feedback(log.incoming_rtcp)[0], REGISTRY["WebRTC-Bwe-LossBasedBweV2"])
    assert out["shown"] is False and "LossBasedBweV2 acted" in out["seen"], out["seen"]
    assert re.search(r"0 increases by the classic ramp.* [1-9]\d* updates the classic rule cannot make", out["seen"])
    assert "at loss 0/256" in out["seen"]


def test_v2_off_run_shows_the_classic_rule() -> None:
    """The run with v2 off: 8 increases exactly by the classic ramp, its one decrease at loss >= 26/256 by the classic
    rule, nothing else below the delay-based estimate: shown."""
    log = parser.read(V2_OFF_LOG)
    out = trials.classic_loss_rule(log, transport_feedback(log.incoming_rtcp)[0], REGISTRY["WebRTC-Bwe-LossBasedBweV2"])
    assert out["shown"] is True, out["seen"]
    assert re.search(r"\b8 increases by the classic ramp.*, 1 decreases by the classic loss rule, 0 updates",
                     out["seen"]), out["seen"]


def _below_estimate(log: parser.EventLog) -> np.ndarray:
    """Indices of the loss-based log's updates below the delay-based estimate in force, after the start phase."""
    lb, db = log.loss_based, log.delay_based
    j = np.searchsorted(db["time_ms"], lb["time_ms"], side="right") - 1
    below = (j >= 0) & (lb["bitrate_bps"] < db["bitrate_bps"][np.maximum(j, 0)] - 1)
    return np.flatnonzero(below & (lb["time_ms"] >= lb["time_ms"][0] + trials.RAMP_START_MS))


def test_one_v2_update_or_too_few_ramps_is_not_shown() -> None:
    """The v2-off log with one update below the estimate turned into a decrease at loss 0 (what v2 does and the
    classic rule cannot): not shown, v2 acted. The log cut after its second classic increase: too few to judge."""
    log = parser.read(V2_OFF_LOG)
    fb = transport_feedback(log.incoming_rtcp)[0]
    trial = REGISTRY["WebRTC-Bwe-LossBasedBweV2"]
    lb = {k: v.copy() for k, v in log.loss_based.items()}
    i = int(_below_estimate(log)[-1])
    lb["bitrate_bps"][i], lb["fraction_loss"][i] = lb["bitrate_bps"][i - 1] * 9 // 10, 0
    out = trials.classic_loss_rule(replace(log, loss_based=lb), fb, trial)
    assert out["shown"] is False and "1 updates the classic rule cannot make" in out["seen"], out["seen"]
    bps = log.loss_based["bitrate_bps"]
    ramps = [int(k) for k in _below_estimate(log) if bps[k] > bps[k - 1]]
    cut = {k: v[:ramps[1] + 1] for k, v in log.loss_based.items()}
    out = trials.classic_loss_rule(replace(log, loss_based=cut), fb, trial)
    assert out["shown"] is False and "nothing to judge" in out["seen"], out["seen"]


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


def _run_with(tmp_path: Path, field_trials: str, with_log: bool = True,
              log: Path = REAL_LOG) -> validity.RecordedRun:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({
        "format_version": 3, "status": "completed",
        "scenario": {"calls": [{"id": "c1", "field_trials": field_trials}]}}))
    if with_log:
        shutil.copy(log, run / "eventlog-a.log")
    return validity.RecordedRun(rundir.load(run), 0.0, 60.0, None, validity.load_bounds())


def test_check_skips_runs_without_registry_trials(tmp_path: Path) -> None:
    assert validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-Foo/Enabled/")) is None


def test_check_fails_a_trial_the_log_does_not_show(tmp_path: Path) -> None:
    check = validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-BweBackOffFactor/Enabled-0.95/"))
    assert check is not None and check["ok"] is False
    assert "backoff_095 (WebRTC-BweBackOffFactor/Enabled-0.95): not shown" in check["detail"]


def test_check_passes_a_trial_the_log_shows(tmp_path: Path) -> None:
    check = validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-Bwe-LossBasedBweV2/Enabled:false/",
                                                        log=V2_OFF_LOG))
    assert check is not None and check["ok"] is True, check
    assert "loss_based_v2_off (WebRTC-Bwe-LossBasedBweV2/Enabled:false): shown" in check["detail"]


def test_check_fails_another_group_and_a_missing_log(tmp_path: Path) -> None:
    check = validity.field_trials_took_effect(_run_with(tmp_path, "WebRTC-BweBackOffFactor/Enabled-0.9/"))
    assert check is not None and check["ok"] is False and "is not the registry's 'Enabled-0.95'" in check["detail"]
    other = tmp_path / "other"
    other.mkdir()
    check = validity.field_trials_took_effect(_run_with(other, "WebRTC-Bwe-LossBasedBweV2/Enabled:false/", False))
    assert check is not None and check["ok"] is False and "no eventlog-a.log" in check["detail"]
