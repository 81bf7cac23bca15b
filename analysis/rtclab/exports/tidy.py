"""Tidy long tables of a run's or a study's metrics (docs/export.md, "Tidy tables"): one row per (study point, run,
flow, phase, metric) with its value and unit, for R and pandas.

A run's rows come from its metrics.json through the same per-flow reading a study's aggregation uses
(study/metric_rows.run_rows), a study's from its study.parquet (the aggregation's own rows: the runs it used, with
the points' parameters); both are melted here, nothing is recomputed. A value the analyzer has not got stays missing:
an empty CSV cell, a Parquet null, never 0. Only the metrics of a row's own family are listed (a video flow has no
`n_dd`), so a missing value is one the analyzer could not give for that flow."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from ..study.catalogue import FIXED_COLUMNS, METRICS
from ..study.metric_rows import run_rows


class ExportError(Exception):
    """An input that cannot be exported: the message names the file and what is wrong."""


# The columns every table has, in order; a study's parameter columns follow `accepted_invalid`.
LEADING_COLUMNS = ["study", "quick_factor", "point", "rep", "attempt", "run_dir", "run_id", "run_valid",
                   "accepted_invalid"]
ROW_COLUMNS = ["flow", "direction", "kind", "ssrc", "phase", "phase_start_s", "phase_end_s", "phase_cross_traffic"]
VALUE_COLUMNS = ["metric", "value", "unit"]
RESERVED = set(LEADING_COLUMNS) | set(ROW_COLUMNS) | set(VALUE_COLUMNS)

# A row's kind -> the catalogue family of the metrics it carries (study/catalogue.py); every other kind is a packet
# flow's (video, audio, rtx, rtcp, tcp, stun, ...).
FAMILY_OF_KIND = {"bottleneck": "bottleneck", "controller": "controller", "limits": "limits", "rfc8867": "rfc8867",
                  "frames": "frames", "cpu": "cpu"}


def _family(kind: Any) -> str:
    return FAMILY_OF_KIND.get(str(kind), "flow")


def _number(v: Any) -> float | None:
    """A metric's value as a float; None (missing) for null, NaN and what is not a number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def melt(wide: list[dict[str, Any]], leading: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Wide rows (one per flow x phase, a column per metric, as study.parquet's) to long ones: one per metric of the
    row's family, with its unit. `leading`: columns to give every row (a run's identity when the wide rows lack it)."""
    out = []
    for w in wide:
        family = _family(w.get("kind"))
        base = {**(leading or {}), **{k: v for k, v in w.items() if k not in METRICS}}
        for name, metric in METRICS.items():
            if metric.family != family:
                continue
            out.append({**base, "metric": name, "value": _number(w.get(name)), "unit": metric.unit})
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ExportError(f"{path} missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        raise ExportError(f"{path} unreadable: {e}") from None
    if not isinstance(doc, dict):
        raise ExportError(f"{path} is not a JSON object")
    return doc


def run_table(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """A run's long rows (from its metrics.json) and the table's columns."""
    path = run_dir / "metrics.json"
    if not path.exists():
        raise ExportError(f"{path} missing: run `rtclab analyze {run_dir}` first")
    m = _read_json(path)
    run = m.get("run") or {}
    valid = (m.get("validity") or {}).get("valid")
    leading = {"study": None, "quick_factor": None, "point": None, "rep": None, "attempt": None,
               "run_dir": str(run_dir), "run_id": run.get("id"),
               "run_valid": valid if isinstance(valid, bool) else None, "accepted_invalid": None}
    return melt(run_rows(m), leading), LEADING_COLUMNS + ROW_COLUMNS + VALUE_COLUMNS


def study_table(study_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """A study's long rows (from its study.parquet) and the table's columns: the study's parameter columns after the
    leading ones (renamed `param_<name>` where a name is one of this table's own)."""
    import pyarrow.parquet as pq

    path = study_dir / "study.parquet"
    if not path.exists():
        raise ExportError(f"{path} missing: run `rtclab study aggregate {study_dir}` first")
    try:
        wide = pq.read_table(path).to_pylist()
        names = pq.read_schema(path).names
    except Exception as e:  # pyarrow raises several kinds for a damaged file
        raise ExportError(f"{path} unreadable: {type(e).__name__}: {e}") from None
    missing = [c for c in ["study", "point", "run_dir", "flow", "kind", "phase"] if c not in names]
    if missing:
        raise ExportError(f"{path} is not a study.parquet: no column {', '.join(missing)}")
    params = [c for c in names if c not in FIXED_COLUMNS and c not in METRICS]
    renamed = {c: (f"param_{c}" if c in RESERVED else c) for c in params}
    for w in wide:
        for c, new in renamed.items():
            if new != c:
                w[new] = w.pop(c)
        # study.parquet holds the runs the aggregation used: valid ones, and INVALID ones only when accepted.
        w["run_valid"] = w.get("accepted_invalid") is None
    columns = LEADING_COLUMNS + list(renamed.values()) + ROW_COLUMNS + VALUE_COLUMNS
    return melt(wide), columns


def refuse_imported(target: Path) -> None:
    """An imported run (`rtclab import`) has no metrics.json: say what it is rather than ask for an analysis."""
    if (target / "imported.json").exists():
        raise ExportError(f"{target} is an imported run (imported.json): it has no captures and no metrics.json to "
                          "export; its congestion controller's section is in imported.json")


def table(target: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The long rows of a run directory (metrics.json) or a study directory (study.parquet or plan.json)."""
    if not target.is_dir():
        raise ExportError(f"{target}: no such directory")
    refuse_imported(target)
    if (target / "study.parquet").exists() or (target / "plan.json").exists():
        return study_table(target)
    if (target / "metrics.json").exists() or (target / "manifest.json").exists():
        return run_table(target)
    raise ExportError(f"{target}: neither a run directory (no metrics.json or manifest.json) nor a study directory "
                      "(no study.parquet or plan.json)")


def _cell(v: Any) -> Any:
    """A CSV cell: missing is empty; booleans as true/false (what R's and pandas' readers parse)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write_csv(rows: list[dict[str, Any]], columns: list[str], out: Path) -> None:
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in columns])
    tmp.replace(out)


def write_parquet(rows: list[dict[str, Any]], columns: list[str], out: Path) -> None:
    """Typed columns: value, quick_factor and the phase bounds float64, rep/attempt/ssrc int64, run_valid and
    phase_cross_traffic bool, a parameter column by its values' kind, the rest strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fixed: dict[str, Any] = {"value": pa.float64(), "quick_factor": pa.float64(), "phase_start_s": pa.float64(),
                             "phase_end_s": pa.float64(), "rep": pa.int64(), "attempt": pa.int64(),
                             "ssrc": pa.int64(), "run_valid": pa.bool_(), "phase_cross_traffic": pa.bool_()}
    arrays: dict[str, Any] = {}
    for c in columns:
        vals = [r.get(c) for r in rows]
        if c in fixed:
            arrays[c] = pa.array(vals, type=fixed[c])
        elif c in RESERVED:
            arrays[c] = pa.array([None if v is None else str(v) for v in vals], type=pa.string())
        else:
            arrays[c] = pa.array(vals)  # a parameter: pyarrow infers its type (study.parquet fixed one already)
    tmp = out.with_name(out.name + ".tmp")
    pq.write_table(pa.table(arrays), tmp)
    tmp.replace(out)


def export(target: Path, fmt: str, out: Path | None) -> tuple[Path, int]:
    """Writes the table of a run or study as csv or parquet; returns the file and its row count. Default file:
    `<dir name>.metrics.<fmt>` in the current directory."""
    rows, columns = table(target)
    path = out if out is not None else Path(f"{target.resolve().name}.metrics.{fmt}")
    (write_csv if fmt == "csv" else write_parquet)(rows, columns, path)
    return path, len(rows)
