"""The scenario as the analyzer sees it: validated against scenarios/schema.json (jsonschema), then a typed view of
what the metrics need (per direction the propagation delay, jitter, random loss, capacity schedule and queue
discipline; the call's duration; the cross traffic). The manifest holds the scenario normalised by the harness (every
default filled in); a field that is absent all the same takes the schema's default, the only source of defaults.

    python -m rtclab.scenario FILE.json [FILE ...]  # prints each file's typed view as a line of JSON; exit 2 naming
                                                    # the file and the field at the first invalid one
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import yamlload

# The package's copy of scenarios/schema.json (a link to it in the repository; a wheel carries the file itself), so an
# installed analyzer reads run directories without the repository.
SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")


class ScenarioError(Exception):
    """An invalid scenario; the message names the field."""


@dataclass(frozen=True)
class Link:
    delay_ms: float  # one-way propagation delay (before the first step of delay_schedule)
    jitter_ms: float
    loss_percent: float
    schedule: list[tuple[float, float]] | None  # capacity [(at_s, kbit)], sorted; None: no rate limit or a trace
    trace: str | None  # a Mahimahi-style trace file: no single capacity (trace_capacity.py reads it)
    qdisc_kind: str
    # Later propagation delays [(at_s, delay_ms)], at_s > 0 increasing: a packet that reaches the bottleneck from at_s
    # on gets delay_ms (docs/netem.md, "delay_schedule").
    delay_schedule: tuple[tuple[float, float], ...] = ()
    trace_offset_ms: int = 0  # where in the trace the link starts (with a trace only)

    def delay_ms_at(self, t_s: float) -> float:
        """The propagation delay of a packet reaching the bottleneck t_s seconds after call start."""
        current = self.delay_ms
        for at_s, delay_ms in self.delay_schedule:
            if at_s <= t_s:
                current = delay_ms
        return current

    def capacity_bps_at(self, t_s: float) -> float | None:
        """Link-layer bits/s at t_s seconds after call start (the first step's rate before it starts)."""
        if not self.schedule:
            return None
        current = self.schedule[0][1]
        for at_s, kbit in self.schedule:
            if at_s <= t_s:
                current = kbit
        return current * 1000.0

    def mean_capacity_bps(self, start_s: float, end_s: float) -> float | None:
        """Time-weighted mean capacity over [start_s, end_s), exact for a piecewise-constant schedule."""
        if not self.schedule or end_s <= start_s:
            return None
        edges = sorted({start_s, end_s, *(at for at, _ in self.schedule if start_s < at < end_s)})
        total = 0.0
        for lo, hi in zip(edges, edges[1:]):
            rate = self.capacity_bps_at(lo)
            total += (rate or 0.0) * (hi - lo)
        return total / (end_s - start_s)


@dataclass(frozen=True)
class CrossTraffic:
    direction: str  # "forward": data a -> b (its ACKs go b -> a); "reverse": data b -> a
    flows: int
    start_s: float
    stop_s: float | None  # None: until the end of the call
    congestion_control: str
    dscp: int
    kind: str = "tcp"  # "tcp": long-lived iperf3 flows; "tcp_short": RFC 8868 5.1's downloads (netem/short_tcp.py)

    def active(self, lo_s: float, hi_s: float) -> bool:
        """Whether it sends during any part of [lo_s, hi_s)."""
        stop = float("inf") if self.stop_s is None else self.stop_s
        return self.start_s < hi_s and stop > lo_s


@dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    forward: Link
    reverse: Link
    cross_traffic: list[CrossTraffic]
    # The first call's own one-way delay (calls[0].delay_ms, each direction), None: the links'. The first call is the
    # one whose getStats the analysis reads, so its RTTm is what Tq is measured against.
    first_call_delay_ms: float | None = None
    hops: tuple[Link, ...] = ()  # a chain of bottlenecks (network.hops), each hop's link a -> b
    # With hops: each call's id and path (the hops it crosses, every hop where the scenario names none), in order.
    call_paths: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def path_delay_ms(self, path: tuple[int, ...]) -> float:
        """A path's one-way propagation delay in a chain: the sum of its hops' delay_ms (each way)."""
        return float(sum(self.hops[h].delay_ms for h in path))

    @property
    def round_trip_propagation_ms(self) -> float:
        """RTTm of Carlucci et al.: the configured round-trip propagation delay (at the call's start) of the first
        call: in a chain its path's, both ways."""
        if self.hops and self.call_paths:
            return 2 * self.path_delay_ms(self.call_paths[0][1])
        if self.first_call_delay_ms is not None:
            return 2 * self.first_call_delay_ms
        return self.forward.delay_ms + self.reverse.delay_ms

    def round_trip_propagation_ms_at(self, t_s: float) -> float:
        """RTTm at t_s seconds after call start, under the links' delay schedules (both read at t_s: a step moves
        the round trip within one one-way delay of it); a call's own delay has no schedule. In a chain: the first
        call's hops a -> b at t_s, and their plain way back at each hop's delay_ms (scenarios/chain.js reverseHop)."""
        if self.hops and self.call_paths:
            path = self.call_paths[0][1]
            return sum(self.hops[h].delay_ms_at(t_s) for h in path) + self.path_delay_ms(path)
        if self.first_call_delay_ms is not None:
            return 2 * self.first_call_delay_ms
        return self.forward.delay_ms_at(t_s) + self.reverse.delay_ms_at(t_s)

    def link(self, direction: str) -> Link:
        return self.forward if direction == "forward" else self.reverse


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return doc


def _field(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(the scenario itself)"


def validate(doc: Any) -> None:
    """Raises ScenarioError naming the first invalid field (the deepest error jsonschema finds)."""
    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (-len(e.absolute_path), e.message))
    if errors:
        best = jsonschema.exceptions.best_match(errors) or errors[0]
        raise ScenarioError(f"scenario field {_field(best.absolute_path)}: {best.message}")


def _default(*pointer: str) -> Any:
    """The schema's default at a path of property names through the link / cross-traffic definitions."""
    node: Any = schema()
    for key in pointer:
        node = node[key]
    return node.get("default")


def _link_default(name: str, neutral: Any) -> Any:
    value = _default("definitions", "link", "properties", name)
    return neutral if value is None else value


def _link(doc: dict[str, Any] | None) -> Link:
    doc = doc if doc is not None else {}
    rate = doc.get("rate", _default("definitions", "rate"))
    schedule: list[tuple[float, float]] | None = None
    trace = None
    trace_offset_ms = 0  # the normalised link always has it; absent means the trace's start (scenarios/schema.json)
    if isinstance(rate, dict):
        if "kbit" in rate:
            schedule = [(0, rate["kbit"])]
        elif "schedule" in rate:
            steps = sorted(rate["schedule"], key=lambda s: s["at_s"])  # stable: equal times keep their order
            schedule = [(s["at_s"], s["kbit"]) for s in steps]
        elif "trace" in rate:
            trace = rate["trace"]
            trace_offset_ms = rate.get("trace_offset_ms", 0)
    qdisc = doc.get("qdisc") or _default("definitions", "qdisc") or {"kind": "fifo"}
    return Link(delay_ms=doc.get("delay_ms", _link_default("delay_ms", 0)),
                jitter_ms=doc.get("jitter_ms", _link_default("jitter_ms", 0)),
                loss_percent=doc.get("loss_percent", _link_default("loss_percent", 0)),
                schedule=schedule, trace=trace, trace_offset_ms=trace_offset_ms, qdisc_kind=qdisc["kind"],
                delay_schedule=tuple((step["at_s"], step["delay_ms"]) for step in doc.get("delay_schedule") or []))


def _cross(doc: dict[str, Any]) -> CrossTraffic:
    props = schema()["properties"]["cross_traffic"]["items"]["properties"]
    get = lambda k: doc.get(k, props[k].get("default"))
    return CrossTraffic(direction=get("direction"), flows=get("flows"), start_s=get("start_s"), stop_s=get("stop_s"),
                        congestion_control=get("congestion_control"), dscp=get("dscp"), kind=doc["kind"])


def view(doc: Any) -> Scenario:
    """Validates a scenario document and returns its typed view."""
    validate(doc)
    network = doc.get("network") or {}
    return Scenario(name=doc.get("name", _default("properties", "name")),
                    duration_s=doc.get("duration_s", _default("properties", "duration_s")),
                    forward=_link(network.get("forward")), reverse=_link(network.get("reverse")),
                    cross_traffic=[_cross(c) for c in doc.get("cross_traffic") or []],
                    hops=tuple(_link(h) for h in network.get("hops") or []),
                    call_paths=_call_paths(doc, len(network.get("hops") or [])),
                    first_call_delay_ms=_first_call_delay(doc))


def _call_paths(doc: dict[str, Any], n: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """With n > 0 hops: each call's id and path (calls[], else the one call; a null path is every hop)."""
    if n == 0:
        return ()
    listed = doc.get("calls")
    items: list[Any] = listed if isinstance(listed, list) and listed else [doc.get("call") or {}]
    return tuple((str(c.get("id", i)), tuple(int(h) for h in c["path"]) if isinstance(c.get("path"), list)
                  else tuple(range(n))) for i, c in enumerate(items))


def _first_call_delay(doc: dict[str, Any]) -> float | None:
    """calls[0].delay_ms (else call.delay_ms for a scenario without calls), None when absent or null."""
    calls = doc.get("calls")
    first = calls[0] if isinstance(calls, list) and calls else doc.get("call")
    delay = first.get("delay_ms") if isinstance(first, dict) else None
    return float(delay) if delay is not None else None


def to_json(s: Scenario) -> dict[str, Any]:
    """The typed view as JSON: what `python -m rtclab.scenario` prints (compared with the Node normaliser's)."""
    def link(x: Link) -> dict[str, Any]:
        rate: dict[str, Any] | None = None
        if x.schedule is not None:
            rate = {"schedule": [[at, kbit] for at, kbit in x.schedule]}
        elif x.trace is not None:
            rate = {"trace": x.trace, "trace_offset_ms": x.trace_offset_ms}
        return {"delay_ms": x.delay_ms, "delay_schedule": [list(step) for step in x.delay_schedule],
                "jitter_ms": x.jitter_ms, "loss_percent": x.loss_percent, "rate": rate, "qdisc_kind": x.qdisc_kind}
    return {"duration_s": s.duration_s, "forward": link(s.forward), "reverse": link(s.reverse),
            "hops": [link(h) for h in s.hops],
            "cross_traffic": [{"kind": c.kind, "direction": c.direction, "flows": c.flows, "start_s": c.start_s,
                               "stop_s": c.stop_s, "congestion_control": c.congestion_control, "dscp": c.dscp}
                              for c in s.cross_traffic],
            "first_call_delay_ms": s.first_call_delay_ms,
            "call_paths": [{"id": i, "path": list(p)} for i, p in s.call_paths]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m rtclab.scenario FILE.json [FILE ...]", file=sys.stderr)
        return 1
    for path in map(Path, args):  # several in one process: the conformance test asks about every scenario at once
        try:
            text = path.read_text()
            doc = json.loads(text) if path.suffix == ".json" else yamlload.safe_load(text)
            print(json.dumps(to_json(view(doc))), flush=True)
        except (OSError, ValueError, yaml.YAMLError, ScenarioError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
