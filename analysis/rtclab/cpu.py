"""Where the machine's CPU went during the call, from the harness's per-process accounting (cpu.jsonl, read by
rundir.read_cpu): the host's busy cores, each group of the run's processes (`<component>/<role>`) and each component
(the sum of its roles), and what the run's processes do not account for ("outside the run": other processes, and
kernel time charged to no process). Definitions in docs/metrics.md, "CPU"."""

from __future__ import annotations

from typing import Any

import numpy as np

from .rundir import CpuLog, CpuSample
from .stats import percentile

# A sample counts when its interval [t - dt, t] lies inside the call; the file's times are rounded (dt to 0.1 ms,
# epoch times to the millisecond), so an interval that starts or ends this close to a bound counts as inside.
WINDOW_SLACK_S = 1e-3
OUTSIDE = "outside the run"


def component(group: str) -> str:
    """`chromium-a/renderer` -> `chromium-a`; a name without a role is its own component."""
    return group.split("/", 1)[0]


def _summary(values: np.ndarray, dt: np.ndarray, busy_mean: float | None) -> dict[str, float | None]:
    """mean cores (weighted by each interval's length: CPU-seconds over seconds), p95 of the per-interval values,
    share of the host's busy time."""
    if not values.size:
        return {"mean_cores": None, "p95_cores": None, "share_of_host_busy": None}
    mean = float(np.dot(values, dt) / dt.sum())
    return {"mean_cores": mean, "p95_cores": percentile(values, 95),
            "share_of_host_busy": mean / busy_mean if busy_mean else None}


def _column(samples: list[CpuSample], value: Any) -> np.ndarray:
    return np.asarray([value(s) for s in samples], dtype=float)


def analyse(log: CpuLog | None, t0: float, duration_s: float, cpus: int | None) -> dict[str, Any] | None:
    """metrics.json `cpu` over the call [t0, t0 + duration_s] (epoch s); None without cpu.jsonl. `cpus`: the
    manifest's count, used when the file's header has none."""
    if log is None:
        return None
    header_cpus = log.header.get("cpus")
    if isinstance(header_cpus, int) and not isinstance(header_cpus, bool) and header_cpus > 0:
        cpus = header_cpus
    inside = [s for s in log.samples
              if s.t - s.dt >= t0 - WINDOW_SLACK_S and s.t <= t0 + duration_s + WINDOW_SLACK_S]
    dt = _column(inside, lambda s: s.dt)
    busy = _column(inside, lambda s: s.host["busy"])
    run = _column(inside, lambda s: sum(s.groups.values()))
    busy_mean = float(np.dot(busy, dt) / dt.sum()) if inside else None
    # Every group the run had, named in a process line or charged in a sample, even one idle during the call.
    names = {p["group"] for p in log.processes.values()} | {g for s in log.samples for g in s.groups}
    groups: dict[str, dict[str, Any]] = {}
    for g in names:
        entry = _summary(_column(inside, lambda s, g=g: s.groups.get(g, 0.0)), dt, busy_mean)
        groups[g] = {"component": component(g), "role": g.split("/", 1)[1] if "/" in g else "", **entry,
                     "processes": sum(1 for p in log.processes.values() if p["group"] == g)}
    components = {c: _summary(_column(inside, lambda s, c=c: sum(v for g, v in s.groups.items() if component(g) == c)),
                              dt, busy_mean)
                  for c in {component(g) for g in names}}

    def by_mean(d: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted(d.items(), key=lambda kv: (-(kv[1]["mean_cores"] or 0.0), kv[0])))
    host_busy = _summary(busy, dt, busy_mean)
    host_busy.pop("share_of_host_busy")
    return {
        "source": "cpu.jsonl",
        "cpus": cpus,
        "interval_s": log.header.get("interval_s"),
        "window": {"start_s": 0.0, "end_s": duration_s, "samples": len(inside),
                   "seconds": float(dt.sum()) if inside else 0.0, "samples_outside": len(log.samples) - len(inside)},
        "host_busy": dict(host_busy, mean_fraction=busy_mean / cpus if busy_mean is not None and cpus else None),
        "host_mean_cores": {k: (float(np.dot(_column(inside, lambda s, k=k: s.host.get(k, 0.0)), dt) / dt.sum())
                                if inside else None) for k in ("user", "system", "irq", "softirq", "steal")},
        "steal": _steal(inside, dt, busy_mean, t0),
        "kernel_irq_softirq": _summary(_column(inside, lambda s: s.host.get("irq", 0.0) + s.host.get("softirq", 0.0)),
                                       dt, busy_mean),
        "run": _summary(run, dt, busy_mean),
        # Clamped per interval: the two readings are taken a moment apart, so the run's sum can exceed the host's.
        "outside_run": _summary(np.maximum(busy - run, 0.0), dt, busy_mean),
        "components": by_mean(components),
        "groups": by_mean(groups),
        "series": _series(log.samples, t0),
    }


def _steal(inside: list[CpuSample], dt: np.ndarray, busy_mean: float | None, t0: float) -> dict[str, Any]:
    """The time the hypervisor ran something else while the host's CPUs had work (/proc/stat's steal; counted in host
    busy): the summary, and its worst interval (cores, and its middle in s since call start). On a virtual machine a
    second of steal is a second the bottleneck's and the guest's timers could not run, whatever their priority."""
    steal = _column(inside, lambda s: s.host.get("steal", 0.0))
    worst = int(np.argmax(steal)) if steal.size else None
    # With no steal at all there is no worst interval to name (argmax would name the first).
    at = None if worst is None or steal[worst] <= 0 else round(inside[worst].t - inside[worst].dt / 2 - t0, 3)
    return dict(_summary(steal, dt, busy_mean), max_cores=None if worst is None else float(steal[worst]), max_at_s=at)


def _series(samples: list[CpuSample], t0: float) -> dict[str, Any]:
    """Every sample (not only the call's), at its interval's middle in seconds since call start: host busy, each
    component, outside the run; for the dashboard."""
    comps = sorted({component(g) for s in samples for g in s.groups})
    return {
        "t_s": [round(s.t - s.dt / 2 - t0, 3) for s in samples],
        "host_busy": [round(s.host["busy"], 4) for s in samples],
        "outside_run": [round(max(s.host["busy"] - sum(s.groups.values()), 0.0), 4) for s in samples],
        "components": {c: [round(sum(v for g, v in s.groups.items() if component(g) == c), 4) for s in samples]
                       for c in comps},
    }
