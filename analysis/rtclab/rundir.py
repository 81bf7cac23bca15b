"""Reads the harness's side of a run directory (docs/run-directory.md): manifest, events, getStats samples, iperf3
output. Every reader tolerates a missing or damaged file: it records a problem and returns what it could read."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_A = "10.0.1.2"
DEFAULT_B = "10.0.2.2"


@dataclass
class Phase:
    name: str
    start_s: float  # seconds since timings.call_start
    end_s: float


@dataclass
class RunDir:
    path: Path
    manifest: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what is missing or damaged, in words for the report

    @property
    def scenario(self) -> dict[str, Any]:
        return self.manifest.get("scenario") or {}

    @property
    def addr_a(self) -> str:
        return ((self.manifest.get("topology") or {}).get("data") or {}).get("a") or DEFAULT_A

    @property
    def addr_b(self) -> str:
        return ((self.manifest.get("topology") or {}).get("data") or {}).get("b") or DEFAULT_B

    @property
    def call_start_s(self) -> float | None:
        """Epoch seconds of t = 0 for the scenario's schedules."""
        t = (self.manifest.get("timings") or {}).get("call_start")
        return float(t) if isinstance(t, (int, float)) and t > 0 else None

    @property
    def call_end_s(self) -> float | None:
        t = (self.manifest.get("timings") or {}).get("call_end")
        return float(t) if isinstance(t, (int, float)) and t > 0 else None

    def file(self, name: str) -> Path:
        return self.path / name


def ip_to_int(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def int_to_ip(value: int) -> str:
    return str(ipaddress.IPv4Address(int(value)))


def read_jsonl(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Reads a JSON-lines file; a damaged line (an interrupted write) is skipped and reported."""
    out: list[dict[str, Any]] = []
    bad = 0
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(value, dict):
                out.append(value)
    if bad:
        problems.append(f"{path.name}: {bad} damaged line(s) skipped (interrupted write?)")
    return out


def load(path: Path) -> RunDir:
    run = RunDir(path=path)
    mpath = path / "manifest.json"
    if not mpath.exists():
        run.problems.append("manifest.json missing: addresses, capacity and phases use defaults; validity unknown")
    else:
        try:
            run.manifest = json.loads(mpath.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            run.problems.append(f"manifest.json unreadable ({e}): addresses, capacity and phases use defaults")
    status = run.manifest.get("status")
    if status and status != "complete":
        why = run.manifest.get("error") or "no reason recorded"
        run.problems.append(f"run status is '{status}' ({why}): metrics cover the part that was recorded")
    epath = path / "events.jsonl"
    if epath.exists():
        run.events = read_jsonl(epath, run.problems)
    return run


def capacity_bps_at(run: RunDir, t_s: float) -> float | None:
    """The forward link's configured rate (link-layer bits/s) at t_s seconds after call start, or None."""
    rate = ((run.scenario.get("network") or {}).get("forward") or {}).get("rate")
    if not rate:
        return None
    if "kbit" in rate:
        return float(rate["kbit"]) * 1000.0
    if "schedule" in rate:
        current = None
        for step in sorted(rate["schedule"], key=lambda s: s["at_s"]):
            if step["at_s"] <= t_s or current is None:
                current = float(step["kbit"]) * 1000.0
        return current
    return None  # a trace: no single capacity


def mean_capacity_bps(run: RunDir, start_s: float, end_s: float) -> float | None:
    """Time-weighted mean of the forward capacity over [start_s, end_s)."""
    rate = ((run.scenario.get("network") or {}).get("forward") or {}).get("rate")
    if not rate or end_s <= start_s:
        return None
    if "kbit" in rate:
        return float(rate["kbit"]) * 1000.0
    if "schedule" not in rate:
        return None
    steps = 200
    dt = (end_s - start_s) / steps
    values = [capacity_bps_at(run, start_s + (i + 0.5) * dt) for i in range(steps)]
    return sum(v for v in values if v is not None) / steps


def phases(run: RunDir, duration_s: float) -> list[Phase]:
    """'all', then the intervals between cross-traffic starts and stops (before / during / after)."""
    out = [Phase("all", 0.0, duration_s)]
    cross = run.scenario.get("cross_traffic") or []
    if not cross:
        return out
    bounds = {0.0, duration_s}
    for c in cross:
        start = float(c.get("start_s") or 0.0)
        stop = c.get("stop_s")
        bounds.add(min(start, duration_s))
        bounds.add(min(float(stop), duration_s) if stop is not None else duration_s)
    edges = sorted(b for b in bounds if 0.0 <= b <= duration_s)
    first_start = min(float(c.get("start_s") or 0.0) for c in cross)
    named: list[Phase] = []
    for lo, hi in zip(edges, edges[1:]):
        if hi - lo < 1e-9:
            continue
        mid = (lo + hi) / 2
        active = any(
            float(c.get("start_s") or 0.0) <= mid < (float(c["stop_s"]) if c.get("stop_s") is not None else 1e18)
            for c in cross
        )
        name = "cross_traffic" if active else ("before_cross_traffic" if hi <= first_start else "after_cross_traffic")
        named.append(Phase(name, lo, hi))
    for p in named:  # a name that repeats (several cross-traffic periods) gets its interval appended
        if sum(q.name == p.name for q in named) > 1:
            p.name = f"{p.name}_{p.start_s:g}-{p.end_s:g}s"
    out.extend(named)
    return out


def iperf3_summaries(run: RunDir) -> list[dict[str, Any]]:
    """Per cross-traffic client: mean throughput and mean RTT as iperf3 measured them (TCP's own view)."""
    out = []
    for p in sorted(run.path.glob("iperf3-*.json")):
        try:
            doc = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            run.problems.append(f"{p.name} unreadable: cross-traffic RTT from iperf3 missing")
            continue
        end = doc.get("end") or {}
        streams = end.get("streams") or []
        rtts = [s["sender"]["mean_rtt"] for s in streams if isinstance(s.get("sender"), dict) and "mean_rtt" in s["sender"]]
        sent = (end.get("sum_sent") or {}).get("bits_per_second")
        out.append({
            "file": p.name,
            "throughput_bps": sent,
            "mean_rtt_ms": (sum(rtts) / len(rtts) / 1000.0) if rtts else None,
            "retransmits": (end.get("sum_sent") or {}).get("retransmits"),
        })
    return out
