"""The terminal report's formatting: a value or "-", a rate, a plain-text table (report.py and its parts)."""

from __future__ import annotations

from typing import Any


def _f(v: Any, fmt: str = ".1f", unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:{fmt}}{unit}"


def _rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    return f"{bps / 1e6:.2f} Mb/s" if bps >= 1e6 else f"{bps / 1e3:.0f} kb/s"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]
