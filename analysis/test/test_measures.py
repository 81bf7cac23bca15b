"""The real-call tests' measure helper (analysis/test-support/measures.py), which bench/reliability/spreads.mjs reads:
each line printed and appended whole to RTCLAB_MEASURES_FILE when it is set, a value not measured written null, and
the values behind a run's timing checks read from a hand-built run directory."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from measures import measure, measure_line, measure_run_timing


def test_the_line_keeps_the_decimals_asked_and_writes_null_for_a_value_not_measured():
    assert measure_line("outage.covered_s", 1.98765) == "measure: outage.covered_s=1.988"
    assert measure_line("outage.freeze_ms", 2000, 1) == "measure: outage.freeze_ms=2000.0"
    for missing in (None, math.nan, math.inf):
        assert measure_line("outage.freeze_ms", missing, 1) == "measure: outage.freeze_ms=null"
    with pytest.raises(ValueError, match="measure name 'a b'"):
        measure_line("a b", 1.0)


def test_measure_prints_and_appends_to_the_file_only_while_it_is_set(tmp_path, capsys, monkeypatch):
    file = tmp_path / "measures.txt"
    monkeypatch.delenv("RTCLAB_MEASURES_FILE", raising=False)
    measure("x.y.first_ms", 1.5, 1)
    monkeypatch.setenv("RTCLAB_MEASURES_FILE", str(file))
    measure("x.y.second_ms", 2, 0)
    measure("x.y.third_ms", None)
    assert capsys.readouterr().out.splitlines() == ["measure: x.y.first_ms=1.5", "measure: x.y.second_ms=2",
                                                    "measure: x.y.third_ms=null"]
    assert file.read_text() == "measure: x.y.second_ms=2\nmeasure: x.y.third_ms=null\n"


def test_a_runs_timing_values_come_from_its_manifest_events_and_bottleneck_stats(tmp_path: Path, capsys, monkeypatch):
    # Its made-up values are not the real tier's: kept out of the file the test command shows (scripts/test.sh).
    monkeypatch.delenv("RTCLAB_MEASURES_FILE", raising=False)
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({
        "host_cpu_busy_fraction": 0.4321, "calls": [{"id": "c1"}],
        "captures": {"a": {"packets": 10, "dropped_by_kernel": 0}, "b": {"packets": 9, "dropped_by_kernel": 2}}}))
    (run / "events.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"event": "call_start"}, {"event": "call_connected", "seconds_after_pages_loaded": 1.25}]) + "\n")
    # Two lines: the last one (written at the bottleneck's exit) counts. No reverse bottleneck: not measured.
    (run / "bottleneck-forward.stats.jsonl").write_text("\n".join(json.dumps(c) for c in [
        {"forwarded": 10, "released_late_10ms": 0, "released_late_100ms": 0, "max_lateness_ms": 0.5},
        {"forwarded": 2000, "released_late_10ms": 5, "released_late_100ms": 1, "max_lateness_ms": 12.3456}]) + "\n")
    measure_run_timing("demo.run", run)
    assert capsys.readouterr().out.splitlines() == [
        "measure: demo.run.host_cpu_busy_fraction=0.4321",
        "measure: demo.run.connect_s=1.250",
        "measure: demo.run.forward_max_lateness_ms=12.346",
        "measure: demo.run.forward_late_10ms_pct=0.2500",
        "measure: demo.run.forward_late_100ms=1",
        "measure: demo.run.reverse_max_lateness_ms=null",
        "measure: demo.run.reverse_late_10ms_pct=null",
        "measure: demo.run.reverse_late_100ms=null",
        "measure: demo.run.capture_drops=2",
    ]
