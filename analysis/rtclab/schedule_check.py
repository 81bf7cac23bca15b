"""The validity check `schedule_applied`, as harness/validity.js makes it when the run ends, for re-judging a recorded
run: every capacity and delay step due during the run was applied (its event says ok, with a measured applied time)
within the bound of its scheduled time, either way (docs/harness.md, "Validity checks"); a step whose event says
it was applied but carries no measured time (an older run's) is not measured (ok None)."""

from __future__ import annotations

from typing import Any

from .scenario import Scenario
from .steps import due_steps, event_of

NAME = "schedule_applied"


def schedule_applied(events: list[dict[str, Any]], scen: Scenario, max_late_ms: float) -> dict[str, Any] | None:
    """{"name", "ok", "detail"} for the run's events (events.jsonl) and scenario as configured; None when no step was
    due (the harness makes no such check then). max_late_ms: `schedule.max_late_ms` of harness/validity-bounds.json,
    above what this machine's backends showed (bench/bottleneck/RESULTS.md, "Scheduled changes")."""
    steps = due_steps(scen)
    if not steps:
        return None
    problems: list[str] = []
    unmeasured: list[str] = []  # applied, with no measured time: an event of an older run
    furthest = 0.0
    for step in steps:
        e = event_of(step, events)
        late = e.get("late_ms") if e else None
        if e is None:
            problems.append(f"{step.label()}: no event says it was applied")
        elif e.get("ok") is not True:
            problems.append(f"{step.label()} failed: {e.get('error') or 'no reason given'}")
        elif not isinstance(late, (int, float)) or isinstance(late, bool):
            unmeasured.append(step.label())
        elif abs(late) > max_late_ms:
            problems.append(f"{step.label()} was applied {abs(late):.1f} ms {'late' if late > 0 else 'early'} "
                            f"(bound {max_late_ms:g} ms)")
        else:
            furthest = max(furthest, abs(late))
    if problems:
        return {"name": NAME, "ok": False,
                "detail": f"{'; '.join(problems)}: the link did not change when the scenario says"}
    if unmeasured:
        return {"name": NAME, "ok": None,
                "detail": f"not measured: {'; '.join(unmeasured)}: applied, but its event carries no applied time "
                          f"(recorded before the backends measured it)"}
    return {"name": NAME, "ok": True, "detail": f"{len(steps)} scheduled change(s) applied, the furthest from its time "
                                                f"by {furthest:.1f} ms (bound {max_late_ms:g} ms)"}
