"""Scheduled changes as the run applied them (rtclab.steps, rtclab.schedule_check): the check schedule_applied on a
run's events, the same rule as harness/validity.js; and the analysis putting each step where it was applied (its
event's measured applied_ns), on a hand-built run whose link really changed 30 ms after its scheduled time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtclab import packets, rundir, scenario, steps, validity
from rtclab.analyze import analyze
from rtclab.schedule_check import schedule_applied
from runbuild import MS, T0_NS, Run
from runbuild import scenario as scenario_doc

LINK = {"delay_ms": 25, "delay_schedule": [{"at_s": 2, "delay_ms": 125}],
        "rate": {"schedule": [{"at_s": 0, "kbit": 2000}, {"at_s": 3, "kbit": 500}]}}


def applied(event: str, at_s: float, value: float, late_ms: float | None, **extra: Any) -> dict[str, Any]:
    """A step's event as a backend writes it (netem/steps.js stepEvent), applied late_ms after its time."""
    scheduled = T0_NS + int(at_s * 1e9)
    key = "kbit" if event == "capacity_change" else "delay_ms"
    return {"event": event, "direction": "forward", "at_s": at_s, key: value,
            "scheduled_ns": scheduled, "applied_ns": None if late_ms is None else scheduled + int(late_ms * MS),
            "late_ms": late_ms, "ok": late_ms is not None, "by": "tc", **extra}


SCEN = scenario.view(scenario_doc(6, LINK))


def test_every_step_due_applied_within_the_bound_is_ok() -> None:
    c = schedule_applied([applied("delay_change", 2, 125, 0.4), applied("capacity_change", 3, 500, -3.2)], SCEN, 50)
    assert c == {"name": "schedule_applied", "ok": True,
                 "detail": "2 scheduled change(s) applied, the furthest from its time by 3.2 ms (bound 50 ms)"}
    assert validity.load_bounds().step_max_late_ms == 50  # the harness's bound too (harness/validity-bounds.json)


def test_a_late_failed_or_missing_step_makes_the_run_invalid_naming_it() -> None:
    late = schedule_applied([applied("delay_change", 2, 125, 120.5), applied("capacity_change", 3, 500, 1)], SCEN, 50)
    assert late is not None and late["ok"] is False
    assert "the forward delay step to 125 ms at 2 s was applied 120.5 ms late (bound 50 ms)" in late["detail"]
    tc_failed = applied("capacity_change", 3, 500, None, error="`tc qdisc change ...` exited with 2")
    failed = schedule_applied([applied("delay_change", 2, 125, 0), tc_failed], SCEN, 50)
    assert failed is not None and failed["ok"] is False
    assert ("the forward capacity step to 500 kbit/s at 3 s failed: `tc qdisc change ...` exited with 2"
            in failed["detail"])
    missing = schedule_applied([applied("delay_change", 2, 125, 0)], SCEN, 50)
    assert missing is not None
    assert "capacity step to 500 kbit/s at 3 s: no event says it was applied" in missing["detail"]


def test_an_older_runs_events_are_not_measured_and_a_run_without_steps_has_no_check() -> None:
    old = [{"event": "delay_change", "direction": "forward", "delay_ms": 125, "at_s": 2, "ok": True, "by": "tc"},
           applied("capacity_change", 3, 500, 1)]
    c = schedule_applied(old, SCEN, 50)
    assert c is not None and c["ok"] is None and c["detail"].startswith("not measured: the forward delay step")
    assert schedule_applied([], scenario.view(scenario_doc(6, {"delay_ms": 10})), 50) is None
    # A step after the run's end is not due.
    short = scenario.view(scenario_doc(2.5, LINK))
    assert [s.event for s in steps.due_steps(short)] == ["delay_change"]


def test_as_applied_moves_each_step_to_its_measured_time_and_keeps_the_scheduled_one_without() -> None:
    events = [applied("delay_change", 2, 125, 30), applied("capacity_change", 3, 500, 40)]
    s = steps.as_applied(SCEN, events, T0_NS / 1e9)
    assert s.forward.delay_schedule[0][0] == pytest.approx(2.03)
    assert s.forward.schedule is not None and s.forward.schedule[1][0] == pytest.approx(3.04)
    assert s.forward.capacity_bps_at(3.02) == 2e6 and s.forward.capacity_bps_at(3.05) == 5e5
    assert steps.as_applied(SCEN, [], T0_NS / 1e9) == SCEN
    assert steps.as_applied(SCEN, events, None) == SCEN, "no call start: the scheduled times"


def test_the_analysis_uses_the_measured_time_of_a_delay_step(tmp_path: Path) -> None:
    # The link's delay really changed 30 ms after its scheduled 2 s (its event says so): packets sent in 2.00-2.03 s
    # crossed at the old delay, and their queuing delay is their wait, not -100 ms.
    run, waits = Run(), []
    for i in range(300):  # one packet every 20 ms for 6 s, each waiting 0-9 ms at the bottleneck
        t = T0_NS + i * 20 * MS
        wait = (i % 10) * MS
        delay = 25 if t < T0_NS + 2030 * MS else 125
        run.rtp(t, [t + wait + delay * MS], seq=i, ts=i * 900)
        waits.append(wait / MS)
    d = tmp_path / "r"
    d.mkdir()
    run.write(d, scenario_doc(6, LINK))
    events = [applied("delay_change", 2, 125, 30), applied("capacity_change", 3, 500, 40)]
    (d / "events.jsonl").write_text("".join(json.dumps({"t": 0, **e}) + "\n" for e in events))
    loaded = rundir.load(d)
    assert loaded.configured_scenario == SCEN and loaded.scenario != SCEN
    m, table = analyze(d, run_tshark=False)
    c = table.cols
    fwd = (c["direction"] == packets.FORWARD) & (c["status"] == packets.DELIVERED)
    assert (c["queuing_delay_ns"][fwd] / MS).tolist() == pytest.approx(waits)
    assert m["capacity_steps"][1][0] == pytest.approx(3.04)
    # metrics.json names the scenario as it was asked for.
    assert m["scenario"]["forward"]["delay_schedule"] == [[2, 125]]
    # Without the events (an older run) the step is where it was scheduled: the two packets read -100 ms.
    (d / "events.jsonl").unlink()
    _, table = analyze(d, run_tshark=False)
    c = table.cols
    got = c["queuing_delay_ns"][(c["direction"] == packets.FORWARD) & (c["status"] == packets.DELIVERED)] / MS
    assert int(np.sum(got < -50)) == 2
