"""Box plots of a study's per-packet and per-report distributions: per point, flow and phase, the quantiles of the
samples pooled over the point's valid runs (definitions in docs/studies.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .catalogue import _get
from .metric_rows import _finite, flow_labels

# Box plots (Carlucci et al. 2016 draw queuing delay as boxes at the 25/50/75th percentiles with whiskers at the 5th and
# 95th): per point, flow and phase, the quantiles of the samples pooled over the point's valid runs.
BOX_PERCENTILES = (5, 25, 50, 75, 95)
DISTRIBUTIONS = {
    "queuing_delay_ms": "per-packet queuing delay from the captures (one-way delay - the configured propagation "
                        "delay; packets.parquet queuing_delay_ns of the flow's delivered packets, a packet in a phase "
                        "by its departure time), pooled over the point's valid runs",
    "tq_ms": "Tq = RTCP RTT - RTTm, one sample per getStats report of the flow's SSRC (metrics.json getstats series "
             "tq_ms:<kind>:<ssrc>, a sample in a phase by its time), pooled over the point's valid runs",
}
PACKET_COLUMNS = ["flow", "status", "t_send_ns", "queuing_delay_ns"]


def box(samples: list[np.ndarray], runs: int,
        left_out: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The quantiles of the pooled samples (numpy's linear rule, as metrics.json's percentiles), their mean, min, max,
    n_samples and n_runs (runs that gave at least one sample) out of `runs` (the point's valid runs), and `left_out`:
    the runs whose samples could not be read, each with why ({"run", "reason"})."""
    x = np.concatenate(samples) if samples else np.empty(0)
    out: dict[str, Any] = {"n_samples": int(x.size), "n_runs": sum(1 for s in samples if s.size), "runs": runs,
                           "left_out": left_out or []}
    if not x.size:
        return {**out, "mean": None, "min": None, "max": None, **{f"p{q}": None for q in BOX_PERCENTILES}}
    qs = np.percentile(x, BOX_PERCENTILES)
    return {**out, "mean": float(x.mean()), "min": float(x.min()), "max": float(x.max()),
            **{f"p{q}": float(v) for q, v in zip(BOX_PERCENTILES, qs)}}


SampleKey = tuple[str, str, str]  # (flow label, phase, distribution)


@dataclass
class RunSamples:
    """One run's samples for the boxes, and the (flow, phase, distribution) it could not give, each with why."""
    dir: str  # relative to the study directory, as listed
    samples: dict[SampleKey, np.ndarray]
    left_out: dict[SampleKey, str]


def run_samples(run_dir: Path, m: dict[str, Any], wanted: Callable[[str], bool], listed_dir: str = "") -> RunSamples:
    """One run's samples for the boxes: {(flow label, phase, distribution): values}, for the packet flows `wanted`
    accepts. Queuing delay needs the run's packets.parquet, and for a phase other than the whole call the run's
    call_start (packet times are epoch ns); Tq its metrics.json. What cannot be read is left out with its reason."""
    phases = m.get("phases") or [{"name": "all", "start_s": 0.0, "end_s": _get(m, "run", "duration_s")}]
    flows = m.get("flows") or []
    labels = {int(f.get("id", i)): lab for i, (lab, f) in enumerate(zip(flow_labels(flows), flows)) if wanted(lab)}
    out: dict[SampleKey, np.ndarray] = {}
    left_out: dict[SampleKey, str] = {}
    call_start = _finite(_get(m, "run", "call_start"))
    ppath = run_dir / "packets.parquet"
    t, why = None, "no packets.parquet"
    if labels and ppath.exists():
        import pyarrow.parquet as pq
        try:
            t = pq.read_table(ppath, columns=PACKET_COLUMNS)
        except Exception as e:  # pyarrow raises several kinds for a damaged table
            why = f"packets.parquet unreadable: {type(e).__name__}: {e}"
    if labels and t is None:
        left_out.update({(label, ph["name"], "queuing_delay_ms"): why for label in labels.values() for ph in phases})
    if t is not None:
        import pyarrow.compute as pc
        keep = pc.and_(pc.equal(t["status"].cast("string"), "delivered"),
                       pc.greater_equal(t["queuing_delay_ns"], 0))
        t = t.filter(keep)
        flow_ids = t["flow"].to_numpy().astype(np.int64)
        t_send = t["t_send_ns"].to_numpy()
        qd_ms = t["queuing_delay_ns"].to_numpy() / 1e6
        order = np.argsort(flow_ids, kind="stable")
        sorted_ids = flow_ids[order]
        for fid, label in labels.items():
            rows = order[np.searchsorted(sorted_ids, fid, "left"):np.searchsorted(sorted_ids, fid, "right")]
            for ph in phases:
                key = (label, ph["name"], "queuing_delay_ms")
                if ph["name"] == "all":
                    out[key] = qd_ms[rows]
                elif call_start is None:  # a phase is seconds since the call's start: without it, nowhere
                    left_out[key] = "no run.call_start in metrics.json: packets cannot be placed in the phase"
                else:  # as the analyzer's phases: departures in [start, end)
                    t0_ns = int(round(call_start * 1e9))
                    lo = t0_ns + int(float(ph["start_s"]) * 1e9)
                    hi = t0_ns + int(float(ph["end_s"]) * 1e9)
                    out[key] = qd_ms[rows[(t_send[rows] >= lo) & (t_send[rows] < hi)]]
    for fid, label in labels.items():
        flow: dict[str, Any] = next((f for i, f in enumerate(flows) if int(f.get("id", i)) == fid), {})
        ssrc = flow.get("ssrc")
        series = _get(m, "getstats", "directions", str(flow.get("direction")), "series") or {}
        pts = next((v for k, v in series.items() if k.startswith("tq_ms:") and k.rsplit(":", 1)[-1] == str(ssrc)),
                   None) if ssrc is not None else None
        if not pts:
            continue
        arr = np.asarray([p for p in pts if _finite(p[1]) is not None], dtype=float).reshape(-1, 2)
        for ph in phases:
            if ph["name"] == "all":
                sel = arr[:, 1]
            else:  # as getstats.per_phase: samples in [start, end) seconds since call start
                sel = arr[(arr[:, 0] >= float(ph["start_s"])) & (arr[:, 0] < float(ph["end_s"])), 1]
            out[(label, ph["name"], "tq_ms")] = sel
    return RunSamples(dir=listed_dir, samples=out, left_out=left_out)


def boxes(runs: list[RunSamples]) -> dict[str, dict[str, dict[str, Any]]]:
    """{flow: {phase: {distribution: box}}} over one point's runs."""
    keys = sorted({k for r in runs for k in (*r.samples, *r.left_out)})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for flow, phase, dist in keys:
        key = (flow, phase, dist)
        per_run = [r.samples[key] for r in runs if key in r.samples]
        left_out = [{"run": r.dir, "reason": r.left_out[key]} for r in runs if key in r.left_out]
        out.setdefault(flow, {}).setdefault(phase, {})[dist] = box(per_run, len(runs), left_out)
    return out
