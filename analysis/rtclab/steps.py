"""A run's scheduled changes (each capacity step after a link's first rate, each delay step) and when the backend
applied them: its `capacity_change` and `delay_change` events (docs/run-directory.md) carry `applied_ns`, measured by
the backend (docs/netem.md, "Scheduled changes"). The analyzer puts each step where it was applied (`as_applied`);
in runs older than that measurement, where it was scheduled."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .scenario import Link, Scenario

EVENTS = ("capacity_change", "delay_change")


@dataclass(frozen=True)
class Step:
    direction: str  # "forward" | "reverse"
    event: str  # "capacity_change" | "delay_change"
    index: int  # its place in the link's schedule (rate: 1, 2, ...; delay_schedule: 0, 1, ...)
    at_s: float  # scheduled, from the call's start
    value: float  # kbit/s or delay ms
    hop: int | None = None  # the hop of a chain of bottlenecks whose (forward) link has the step

    @property
    def value_key(self) -> str:
        return "kbit" if self.event == "capacity_change" else "delay_ms"

    def label(self) -> str:
        what = (f"capacity step to {self.value:g} kbit/s" if self.event == "capacity_change"
                else f"delay step to {self.value:g} ms")
        where = "" if self.hop is None else f"hop {self.hop} "
        return f"the {where}{self.direction} {what} at {self.at_s:g} s"


def link_steps(direction: str, link: Link, hop: int | None = None) -> list[Step]:
    """A link's steps: the rate schedule's after its first, then the delay schedule's (as netem/steps.js lists them)."""
    out = [Step(direction, "capacity_change", i, at, kbit, hop) for i, (at, kbit) in enumerate(link.schedule or [])
           if i > 0]
    out += [Step(direction, "delay_change", i, at, d, hop) for i, (at, d) in enumerate(link.delay_schedule)]
    return out


def due_steps(scen: Scenario) -> list[Step]:
    """Every step of both links, and of each hop of a chain (its way back has none), due during the run (at_s before
    its duration)."""
    steps = [s for d in ("forward", "reverse") for s in link_steps(d, scen.link(d))]
    steps += [s for h, link in enumerate(scen.hops) for s in link_steps("forward", link, h)]
    return [s for s in steps if s.at_s < scen.duration_s]


def event_of(step: Step, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The event that reports this step (its direction, kind, time and value), None when there is none."""
    for e in events:
        if (e.get("event") == step.event and e.get("direction") == step.direction and e.get("hop") == step.hop
                and e.get("at_s") == step.at_s and e.get(step.value_key) == step.value):
            return e
    return None


def applied_at_s(step: Step, events: list[dict[str, Any]], call_start_s: float | None) -> float:
    """When the step was applied, s from the call's start: its event's measured applied_ns; else (an older run, a
    failed step, no call start) its scheduled time."""
    e = event_of(step, events)
    applied = e.get("applied_ns") if e else None
    if call_start_s is None or not isinstance(applied, (int, float)) or isinstance(applied, bool):
        return step.at_s
    return applied / 1e9 - call_start_s


def _link_as_applied(direction: str, link: Link, events: list[dict[str, Any]], call_start_s: float | None) -> Link:
    moved = {(s.event, s.index): applied_at_s(s, events, call_start_s) for s in link_steps(direction, link)}
    schedule = None if link.schedule is None else sorted(
        [(moved.get(("capacity_change", i), at), kbit) for i, (at, kbit) in enumerate(link.schedule)],
        key=lambda s: s[0])
    delays = tuple(sorted(((moved.get(("delay_change", i), at), d) for i, (at, d) in enumerate(link.delay_schedule)),
                          key=lambda s: s[0]))
    return replace(link, schedule=schedule, delay_schedule=delays)


def as_applied(scen: Scenario, events: list[dict[str, Any]], call_start_s: float | None) -> Scenario:
    """The scenario with every step moved to when the run applied it (applied_at_s)."""
    return replace(scen, forward=_link_as_applied("forward", scen.forward, events, call_start_s),
                   reverse=_link_as_applied("reverse", scen.reverse, events, call_start_s))
