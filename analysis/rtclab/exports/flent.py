"""A run's time series as a Flent data file (`.flent.gz`; docs/export.md, "Flent"): the call's send and receive
rates, its queuing delay and RTT, and the cross traffic's rates, named as Flent's tests name theirs, so that Flent
opens it beside its own runs: its test's plots draw the cross traffic, its formatters list every series.

Flent's format (flent/resultset.py, file format version 4): gzipped JSON {"version": 4, "metadata": {...},
"x_values": [...], "results": {series: [value per x]}, "raw_values": {series: [{"t": Unix s, "val": v}, ...]}}.
Flent draws time-series plots from raw_values and its box, CDF and summary views from results. Here every series is
on the analyzer's window grid (metrics.json rfc8867: windows of window_s from the call's start, the RFC 8867
rates' own), x the window's centre in seconds since the call's start (T0).

- rates (Mbits/s): link-layer bits per window, by rfcmetrics.window_rates, the function that gives metrics.json's
  rfc8867 rates: received (arrivals at b) or sent (departures at a) of each call connection and each TCP connection;
- queuing delay (ms): each delivered packet's one-way delay minus the configured propagation delay (packets.parquet
  queuing_delay_ns) at its departure time as raw values; a window's result is the mean over the packets sent in it;
- RTT (ms): the sender's getStats RTCP round-trip time of the connection's video stream (metrics.json getstats
  series) as raw values; a window's result is the mean of the samples in it.
A window without a sample has no result (null), never 0; a rate window is 0 only when nothing was received in it."""

from __future__ import annotations

import datetime as _dt
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__ as RTCLAB_VERSION
from .. import packets
from ..rfcmetrics import ETHERNET_HEADER_BYTES, WINDOW_S, window_rates
from .tidy import ExportError, refuse_imported

FLENT_FORMAT_VERSION = 4
PACKET_COLUMNS = ("direction", "flow", "status", "t_send_ns", "t_recv_ns", "queuing_delay_ns", "ip_len")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # Flent's UTC timestamps (flent.util.format_date)


class Grid:
    """The window grid: n windows of w seconds from t0 (the call's start, whole microseconds: Flent's T0)."""

    def __init__(self, t0_us: int, w: float, n: int) -> None:
        self.t0_us, self.w, self.n = t0_us, w, n
        self.x = [round((k + 0.5) * w, 6) for k in range(n)]

    @property
    def t0_s(self) -> float:
        return self.t0_us / 1e6

    def rel_s(self, t_ns: np.ndarray) -> np.ndarray:
        return (t_ns - self.t0_us * 1000) / 1e9

    def window_means(self, t_s: np.ndarray, v: np.ndarray) -> list[float | None]:
        """Mean of the values whose time falls in each window; None for a window without one."""
        inside = (t_s >= 0) & (t_s < self.n * self.w)
        k = np.floor(t_s[inside] / self.w).astype(np.int64)
        count = np.bincount(k, minlength=self.n)[:self.n]
        total = np.bincount(k, weights=v[inside], minlength=self.n)[:self.n]
        return [float(s / c) if c else None for s, c in zip(total, count)]


class Series:
    """The series of one file in the making: results on the grid, raw values, units."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.results: dict[str, list[float | None]] = {}
        self.raw: dict[str, list[dict[str, float]]] = {}
        self.meta: dict[str, dict[str, Any]] = {}

    def add(self, name: str, units: str, results: list[float | None], raw_t_s: np.ndarray, raw_v: np.ndarray,
            source: str) -> None:
        self.results[name] = results
        self.raw[name] = [{"t": self.grid.t0_s + float(t), "val": float(v)} for t, v in zip(raw_t_s, raw_v)]
        self.meta[name] = {"UNITS": units, "RTCLAB_SOURCE": source}

    def add_rate(self, name: str, t_ns: np.ndarray, nbytes: np.ndarray, source: str) -> None:
        rates = window_rates(self.grid.rel_s(t_ns), nbytes, self.grid.n, self.grid.w) / 1e6
        self.add(name, "Mbits/s", [float(r) for r in rates], np.asarray(self.grid.x), rates, source)


def _read(run_dir: Path) -> tuple[dict[str, Any], packets.PacketTable]:
    mpath, ppath = run_dir / "metrics.json", run_dir / "packets.parquet"
    for p in (mpath, ppath):
        if not p.exists():
            raise ExportError(f"{p} missing: run `rtclab analyze {run_dir}` first")
    try:
        m = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        raise ExportError(f"{mpath} unreadable: {e}") from None
    try:
        table = packets.from_parquet(ppath, PACKET_COLUMNS)
    except Exception as e:  # pyarrow raises several kinds for a damaged file
        raise ExportError(f"{ppath} unreadable: {type(e).__name__}: {e}") from None
    if not isinstance((m.get("run") or {}).get("call_start"), (int, float)) or not m.get("flows"):
        raise ExportError(f"{mpath}: no call start or no flows (a run without a call has no series to export)")
    return m, table


def _rows(m: dict[str, Any], t: packets.PacketTable, direction: str, src: str, dst: str) -> np.ndarray:
    """The packet rows of one connection (every flow of metrics.json on that 5-tuple: media, RTCP, STUN, ...)."""
    ids = [f["id"] for f in m["flows"] if f.get("direction") == direction and f.get("src") == src
           and f.get("dst") == dst and f["id"] < len(t.bounds) - 1]
    return np.concatenate([t.rows_of(i) for i in ids]) if ids else np.zeros(0, dtype=np.int64)


def _arrivals(t: packets.PacketTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times and link-layer bytes of the first copies that reached the receiver (matched or not)."""
    c = t.cols
    st = c["status"][rows]
    arr = rows[(st == packets.DELIVERED) | (st == packets.UNMATCHED)]
    return c["t_recv_ns"][arr], c["ip_len"][arr].astype(np.int64) + ETHERNET_HEADER_BYTES


def _departures(t: packets.PacketTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = t.cols
    st = c["status"][rows]
    sent = rows[(st == packets.DELIVERED) | (st == packets.LOST)]
    return c["t_send_ns"][sent], c["ip_len"][sent].astype(np.int64) + ETHERNET_HEADER_BYTES


def _video_ssrc(m: dict[str, Any], src: str, dst: str) -> int | None:
    for f in m["flows"]:
        if f.get("direction") == "forward" and f.get("src") == src and f.get("dst") == dst \
                and f.get("kind") == "video" and f.get("ssrc") is not None:
            return int(f["ssrc"])
    return None


def _call_series(s: Series, m: dict[str, Any], t: packets.PacketTable, calls: list[dict[str, Any]],
                 missing: dict[str, str]) -> None:
    names = {(f.get("src"), f.get("dst")): f.get("name") for f in (m.get("rfc8867") or {}).get("flows") or []}
    gs = ((m.get("getstats") or {}).get("directions") or {}).get("forward", {}).get("series") or {}
    for i, conn in enumerate(calls, start=1):
        src, dst = conn["src"], conn["dst"]
        name = names.get((src, dst)) or f"c{i}"
        rows = _rows(m, t, "forward", src, dst)
        s.add_rate(f"WebRTC send rate::{name}", *_departures(t, rows), f"capture-a departures of {src} -> {dst}")
        s.add_rate(f"WebRTC receive rate::{name}", *_arrivals(t, rows), f"capture-b arrivals of {src} -> {dst}")
        c = t.cols
        got = rows[(c["status"][rows] == packets.DELIVERED) & (c["queuing_delay_ns"][rows] >= 0)]
        got = got[np.argsort(c["t_send_ns"][got], kind="stable")]
        t_s, qd_ms = s.grid.rel_s(c["t_send_ns"][got]), c["queuing_delay_ns"][got] / 1e6
        s.add(f"WebRTC queuing delay::{name}", "ms", s.grid.window_means(t_s, qd_ms), t_s, qd_ms,
              f"packets.parquet queuing_delay_ns of {src} -> {dst}, at departure")
        ssrc = _video_ssrc(m, src, dst)
        rtt = gs.get(f"rtt_ms:video:{ssrc}") if ssrc is not None else None
        rtt_name = f"WebRTC RTT::{name}"
        if not rtt:
            missing[rtt_name] = ("no video stream on this connection" if ssrc is None
                                 else f"metrics.json getstats has no rtt_ms series for SSRC {ssrc}")
            continue
        arr = np.asarray(rtt, dtype=float)
        s.add(rtt_name, "ms", s.grid.window_means(arr[:, 0], arr[:, 1]), arr[:, 0], arr[:, 1],
              f"metrics.json getstats.directions.forward.series rtt_ms:video:{ssrc}")


def _reverse_tcp(m: dict[str, Any], upload: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reverse TCP data connections the scenario runs, busiest first (not the ACK streams of the uploads)."""
    wanted = sum(int(c.get("flows") or 0) for c in (m.get("scenario") or {}).get("cross_traffic") or []
                 if c.get("direction") == "reverse")
    acks = {(c["dst"], c["src"]) for c in upload}
    flows = [f for f in m["flows"] if f.get("direction") == "reverse" and f.get("kind") == "tcp"
             and (f.get("src"), f.get("dst")) not in acks]
    return sorted(flows, key=lambda f: -(f.get("bytes_sent") or 0))[:wanted]


def _tcp_series(s: Series, m: dict[str, Any], t: packets.PacketTable, upload: list[dict[str, Any]]) -> dict[str, int]:
    """Flent's tcp_nup / tcp_ndown names: `TCP upload::1` ... (forward), `TCP download::1` ... (reverse), and their
    per-window sums. Returns the stream counts (Flent's test parameters)."""
    counts: dict[str, int] = {}
    for label, direction, conns in (("upload", "forward", upload), ("download", "reverse", _reverse_tcp(m, upload))):
        counts[f"{label}_streams"] = len(conns)
        total: np.ndarray | None = None
        for i, conn in enumerate(conns, start=1):
            name = f"TCP {label}::{i}"
            s.add_rate(name, *_arrivals(t, _rows(m, t, direction, conn["src"], conn["dst"])),
                       f"arrivals of {conn['src']} -> {conn['dst']}")
            col = np.asarray(s.results[name], dtype=float)
            total = col if total is None else total + col
        if total is not None:
            s.add(f"TCP {label} sum", "Mbits/s", [float(v) for v in total], np.asarray(s.grid.x), total,
                  f"the TCP {label} streams' rates, summed per window")
    return counts


def build(run_dir: Path) -> dict[str, Any]:
    """The Flent document (before gzip) of one analysed run."""
    m, table = _read(run_dir)
    run = m["run"]
    rfc = m.get("rfc8867") or {}
    w = float(rfc.get("window_s") or WINDOW_S)
    duration = float(run.get("duration_s") or 0.0)
    n = int(rfc["windows"]) if isinstance(rfc.get("windows"), int) else int(duration // w)
    grid = Grid(int(round(float(run["call_start"]) * 1e6)), w, n)
    s = Series(grid)
    conns = [c for c in ((m.get("fairness") or {}).get("all") or {}).get("connections") or [] if c.get("src")]
    missing: dict[str, str] = {}
    _call_series(s, m, table, [c for c in conns if c.get("role") == "call"], missing)
    counts = _tcp_series(s, m, table, [c for c in conns if c.get("role") == "tcp"])
    name = "tcp_ndown" if counts["download_streams"] and not counts["upload_streams"] else "tcp_nup"
    t0 = _dt.datetime.fromtimestamp(grid.t0_s, tz=_dt.timezone.utc).strftime(TIME_FORMAT)
    scen = m.get("scenario") or {}
    metadata = {
        "NAME": name, "TITLE": f"rtclab {run.get('scenario') or 'run'} {run.get('id')}", "TIME": t0, "T0": t0,
        "LENGTH": duration, "TOTAL_LENGTH": duration, "STEP_SIZE": w, "HOST": None, "HOSTS": [], "LOCAL_HOST": None,
        "NOTE": f"exported by rtclab {RTCLAB_VERSION} from {run_dir.name} (docs/export.md)",
        "DATA_FILENAME": None, "FLENT_VERSION": None, "IP_VERSION": 4,
        "TEST_PARAMETERS": {**{k: str(v) for k, v in counts.items()},
                            "rtclab_forward": json.dumps(scen.get("forward"), sort_keys=True),
                            "rtclab_reverse": json.dumps(scen.get("reverse"), sort_keys=True),
                            "rtclab_cross_traffic": json.dumps(scen.get("cross_traffic"), sort_keys=True),
                            "rtclab_backend": str(run.get("backend")),
                            "rtclab_valid": str((m.get("validity") or {}).get("valid"))},
        "SERIES_META": s.meta, "RTCLAB_VERSION": RTCLAB_VERSION, "RTCLAB_RUN_ID": run.get("id"),
        "RTCLAB_MISSING_SERIES": missing,
    }
    return {"version": FLENT_FORMAT_VERSION, "metadata": metadata, "x_values": grid.x, "results": s.results,
            "raw_values": s.raw}


def export(run_dir: Path, out: Path | None) -> tuple[Path, dict[str, Any]]:
    """Writes RUN's Flent file (default: `<run dir name>.flent.gz` in the current directory)."""
    if not run_dir.is_dir():
        raise ExportError(f"{run_dir}: no such directory")
    refuse_imported(run_dir)
    doc = build(run_dir)
    path = out if out is not None else Path(f"{run_dir.resolve().name}.flent.gz")
    if not path.name.endswith(".flent.gz"):
        raise ExportError(f"{path}: a Flent data file's name ends in .flent.gz (Flent picks its reader by it)")
    doc["metadata"]["DATA_FILENAME"] = path.name
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(doc, f)
    tmp.replace(path)
    return path, doc
