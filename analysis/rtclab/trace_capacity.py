"""The capacity of a trace link (docs/metrics.md, "Capacity of a trace link"): the delivery opportunities of the
Mahimahi trace the run played, looped and started at its offset as the userspace bottleneck plays them
(docs/bottleneck.md), each 1500 IP bytes = 1514 link-layer bytes, counted over an interval of the call.

The run directory keeps the trace each direction played (`trace-<direction>`, copied there by netem at run time);
a run recorded before that is read from the scenario's path, if that file is still there. The trace's time 0 is
where the bottleneck took it (its schedule log's `trace_start`: the call's start, or the restart signal's arrival
when that came later), else the call's start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import scenario
from .rundir import RunDir, read_jsonl

# What one delivery opportunity carries, in the link-layer bytes every rate of the analysis counts (the bottleneck's
# TRACE_OPPORTUNITY_BYTES): 1500 IP bytes + the 14-byte Ethernet header.
OPPORTUNITY_BITS = 1514 * 8
SERIES_BINS_S = {"per_100ms": 0.1, "per_1s": 1.0}


class TraceError(Exception):
    """A trace file that cannot be read as Mahimahi's format; the message names the file and the line."""


def read_opportunities(path: Path) -> np.ndarray:
    """A trace file's delivery opportunities (ms, non-decreasing, the last > 0: the period)."""
    try:
        lines = path.read_text().split()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: cannot be read ({e})") from None
    try:
        ms = np.array([int(x) for x in lines], dtype=np.int64)
    except ValueError as e:
        raise TraceError(f"{path}: not a file of integer ms timestamps ({e})") from None
    if ms.size == 0 or ms[-1] <= 0:
        raise TraceError(f"{path}: must end in a timestamp > 0 ms (its period)")
    if ms.size > 1 and bool((np.diff(ms) < 0).any()):
        raise TraceError(f"{path}: timestamps go back in time")
    return ms


@dataclass(frozen=True)
class TraceCapacity:
    """The link's delivery opportunities over the call, in ms since the call's start (t0)."""
    file: str  # what was read (the run directory's copy, or the scenario's path)
    period_ms: int
    offset_ms: int
    start_s: float  # the trace's time 0, in s since the call's start
    start_source: str  # "schedule log" (where the bottleneck took it) or "call start" (a run that did not record it)
    times_ms: np.ndarray  # sorted, from start_s to past the call's end

    @staticmethod
    def looped(file: str, opportunities_ms: np.ndarray, offset_ms: int, until_s: float, start_s: float = 0.0,
               start_source: str = "call start") -> TraceCapacity:
        """The trace looped as Mahimahi loops it (repetition r's opportunity k at r * period + timestamp k), started
        offset_ms in (link time 0 = trace time offset_ms; opportunities before it are not played) at start_s, up to
        until_s."""
        period = int(opportunities_ms[-1])
        repetitions = int((offset_ms + until_s * 1000.0) // period) + 2
        trace_ms = (np.arange(repetitions, dtype=np.int64)[:, None] * period + opportunities_ms[None, :]).ravel()
        times = (trace_ms[trace_ms >= offset_ms] - offset_ms) + start_s * 1000.0
        return TraceCapacity(file=file, period_ms=period, offset_ms=offset_ms, start_s=start_s,
                             start_source=start_source, times_ms=times)

    def opportunities(self, start_s: float, end_s: float) -> int:
        """Delivery opportunities at link times in [start_s, end_s)."""
        lo, hi = np.searchsorted(self.times_ms, [start_s * 1000.0, end_s * 1000.0], side="left")
        return int(hi - lo)

    def mean_capacity_bps(self, start_s: float, end_s: float) -> float | None:
        """Link-layer bits/s the trace offered over [start_s, end_s): its opportunities x 1514 bytes x 8 / span."""
        if end_s <= start_s:
            return None
        return self.opportunities(start_s, end_s) * OPPORTUNITY_BITS / (end_s - start_s)

    def series(self, bin_s: float, duration_s: float) -> list[list[float]]:
        """[bin start s, bit/s] for consecutive bins from 0 over the call; the last bin ends at duration_s."""
        n = int(np.ceil(round(duration_s / bin_s, 9)))
        # One list of edges, rounded to the ns, shared by neighbouring bins: each opportunity falls in exactly one.
        edges = np.round(np.minimum(np.arange(n + 1) * bin_s, duration_s), 9)
        counts = np.diff(np.searchsorted(self.times_ms, edges * 1000.0, side="left"))
        bps = counts * OPPORTUNITY_BITS / np.diff(edges)
        return [[float(s), float(b)] for s, b in zip(edges[:-1], bps)]

    def to_json(self, duration_s: float) -> dict[str, Any]:
        """metrics.json `capacity_trace`: the file, its period and offset, and the capacity per 100 ms and per 1 s."""
        return {"file": self.file, "period_ms": self.period_ms, "offset_ms": self.offset_ms,
                "start_s": self.start_s, "start_source": self.start_source,
                **{name: self.series(bin_s, duration_s) for name, bin_s in SERIES_BINS_S.items()}}


def trace_start_ns(run: RunDir) -> int | None:
    """The forward trace's last time 0 (epoch ns) as its bottleneck took it: the schedule log's latest `trace_start`
    (docs/bottleneck-log.md); None when the run recorded none."""
    path = run.file("bottleneck-forward.schedule.jsonl")
    if not path.exists():
        return None
    starts = [r for r in read_jsonl(path, run.problems)
              if r.get("kind") == "trace_start" and isinstance(r.get("t0_ns"), int)]
    return max(starts, key=lambda r: int(r.get("restart", 0)))["t0_ns"] if starts else None


def forward_trace(run: RunDir, link: scenario.Link, t0_s: float, until_s: float,
                  gaps: list[str]) -> TraceCapacity | None:
    """The forward link's trace capacity, or None (not a trace link; or its file missing or unreadable: named in
    `gaps`, and capacity and utilisation are then unknown)."""
    if link.trace is None:
        return None
    copy = run.file("trace-forward")
    path = copy if copy.exists() else Path(link.trace)
    try:
        opportunities = read_opportunities(path)
    except TraceError as e:
        where = "" if copy.exists() else " (the run directory holds no trace-forward: the scenario's path was tried)"
        gaps.append(f"forward trace unreadable{where}: {e}; capacity and utilisation are unknown")
        return None
    name = copy.name if copy.exists() else str(path)
    start_ns = trace_start_ns(run)
    start_s = 0.0 if start_ns is None else (start_ns - round(t0_s * 1e9)) / 1e9
    return TraceCapacity.looped(name, opportunities, link.trace_offset_ms, until_s, start_s,
                                "call start" if start_ns is None else "schedule log")
