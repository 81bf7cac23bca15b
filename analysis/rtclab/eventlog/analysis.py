"""The `congestion_controller` section of metrics.json: each browser's event log read, joined with the captures,
GCC's counts over the call, the transport feedback checked against the far capture, and the trendline replay with
its agreement (docs/metrics.md, "Congestion controller"; docs/eventlog.md). Side a sends the forward direction (the
bottleneck's), side b the reverse; both are reported, side a's numbers are repeated at the top of the section."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .. import packets
from . import counterfactual, feedback, gcc, join, limits, parser, replay

# Points per series kept for the dashboard (every k-th one beyond it).
MAX_POINTS = 3000


def _decimate(t_s: np.ndarray, v: np.ndarray) -> list[list[float]]:
    """[t_s, value] pairs, every k-th one beyond MAX_POINTS; points without a value (the trend before its second
    delta) are left out (JSON has no NaN)."""
    finite = np.isfinite(np.asarray(v, dtype=float))
    t_s, v = np.asarray(t_s)[finite], np.asarray(v)[finite]
    step = max(1, int(np.ceil(len(t_s) / MAX_POINTS)))
    return [[round(float(a), 4), float(b)] for a, b in zip(t_s[::step], v[::step])]


def _bands(t_s: np.ndarray, state: np.ndarray, end_s: float) -> list[list[Any]]:
    """[start_s, end_s, state name] of every logged non-normal detector state."""
    out = []
    ends = np.append(t_s[1:], max(end_s, float(t_s[-1]) if len(t_s) else end_s))
    for a, b, s in zip(t_s, ends, state):
        if s in (parser.OVERUSING, parser.UNDERUSING):
            out.append([round(float(a), 4), round(float(b), 4), parser.DETECTOR_STATES[int(s)]])
    return out


def side(path: Path, table: packets.PacketTable | None, direction: int, call_start_s: float | None,
         call_end_s: float | None, phases_s: list[tuple[str, float, float]] | None = None) -> dict[str, Any]:
    """Everything one sender's log gives. phases_s: the run's phases (name, start, end in s since the call's start;
    `all` among them) for the limiter's shares and the counterfactual replay. Raises parser.EventLogError for a log
    that cannot be read."""
    log = parser.read(path)
    out: dict[str, Any] = {"file": path.name, "format_version": log.version, "bytes": path.stat().st_size,
                           "has_end_event": log.has_end, "truncated_bytes": log.truncated_bytes,
                           "outgoing_rtp": int(len(log.outgoing_rtp["time_ms"]))}
    joined = join.join_rtp(log, table, direction) if table is not None else None
    if joined is not None and table is not None:
        out["join"] = join.join_summary(log, joined, table, direction)
    # Log time to Unix time: the begin event's offset; a v1 log has none, the join's median send-to-wire gives it.
    offset_ms: float | None = log.utc_offset_ms
    if offset_ms is None and joined is not None and joined.matched.any():
        offset_ms = float(np.median(joined.t_wire_send_ns[joined.matched] / 1e6 - joined.log_time_ms[joined.matched]))
    out["log_to_unix_offset_ms"] = offset_ms
    if joined is not None and table is not None and offset_ms is not None:
        # Chrome's send time on each packet the log holds, in the packet table (packets.parquet `chrome_send_ns`).
        col = table.cols.setdefault("chrome_send_ns", np.full(len(table), -1, dtype=np.int64))
        hit = joined.matched
        col[joined.row[hit]] = np.round((joined.log_time_ms[hit] + offset_ms) * 1e6).astype(np.int64)
    start_ms, end_ms = -np.inf, None
    if offset_ms is not None and call_start_s is not None:
        start_ms = call_start_s * 1000 - offset_ms
        end_ms = (call_end_s * 1000 - offset_ms) if call_end_s is not None else None
    out["controller"] = gcc.controller_summary(log, start_ms, end_ms)
    out["limits"] = _limits(log, start_ms, end_ms, offset_ms, call_start_s, phases_s)
    log_end_s = (gcc.log_end_ms(log) + offset_ms) / 1000 if offset_ms is not None else None
    out["log_ends_before_call_end_s"] = (call_end_s - log_end_s) if (call_end_s and log_end_s) else None
    fb, unreadable = feedback.transport_feedback(log.incoming_rtcp)
    out["feedback"] = {"messages": int(len(np.unique(fb.feedback_index))), "unreadable": unreadable}
    if joined is not None:
        out["feedback"].update(join.feedback_vs_capture(fb, joined))
    rep = replay.replay(log, fb)
    out["replay"] = {"send_times": "log", **replay.agreement(log, rep)}
    if joined is not None and joined.matched.any() and log.utc_offset_ms is not None:
        # The same replay with the capture's microsecond wire times as send times (Chrome's own are whole ms).
        wire_ms = np.where(joined.matched, joined.t_wire_send_ns / 1e6 - log.utc_offset_ms, log.outgoing_rtp["time_ms"])
        out["replay_wire_send_times"] = {"send_times": "capture",
                                         **replay.agreement(log, replay.replay(log, fb, wire_ms))}
    out["counterfactual"] = _counterfactual(log, fb, offset_ms, call_start_s, start_ms,
                                            min(gcc.log_end_ms(log), end_ms) if end_ms is not None
                                            else gcc.log_end_ms(log), phases_s)
    if offset_ms is not None and call_start_s is not None:
        to_s = lambda ms: (np.asarray(ms, dtype=float) + offset_ms) / 1000 - call_start_s
        ser = gcc.series(log)
        d_t, d_v = ser["delay_based"]
        l_t, l_v = ser["loss_based"]
        g_t, g_v = ser["target"]
        ok = np.isfinite(g_v)
        pc = log.probe_clusters
        pr = log.probe_results
        end_s = float(to_s(gcc.log_end_ms(log)))
        out["series"] = {
            "delay_based_bps": _decimate(to_s(d_t), d_v), "loss_based_bps": _decimate(to_s(l_t), l_v),
            "target_bps": _decimate(to_s(g_t[ok]), g_v[ok]),
            "probe_clusters_bps": _decimate(to_s(pc["time_ms"]), pc["bitrate_bps"]),
            "probe_results_bps": _decimate(to_s(pr["time_ms"][pr["failure"] < 0]),
                                           pr["bitrate_bps"][pr["failure"] < 0]),
            "detector_bands": _bands(to_s(log.delay_based["time_ms"]), log.delay_based["state"], end_s),
            "replay_m_ms": _decimate(to_s(rep.t_ms), rep.m), "replay_gamma_ms": _decimate(to_s(rep.t_ms), rep.gamma),
        }
    return out


def _counterfactual(log: parser.EventLog, fb: feedback.Feedback, offset_ms: float | None, call_start_s: float | None,
                    start_ms: float, end_ms: float, phases_s: list[tuple[str, float, float]] | None) -> dict[str, Any]:
    """The detector replayed with other constants (counterfactual.py) over the call window the controller's counts
    use, and over the phases placed on the log's clock."""
    phases_ms, reason = None, None
    if phases_s is None:
        reason = "no phases were given"
    elif offset_ms is None or call_start_s is None:
        reason = "the log's clock cannot be placed on the call's (no clock offset or no call start)"
    else:
        to_ms = lambda s: (call_start_s + s) * 1000 - offset_ms
        phases_ms = [(name, to_ms(a), to_ms(b)) for name, a, b in phases_s if name != "all"]  # `all`: the call
    return counterfactual.analyse(log, fb, start_ms, end_ms, phases_ms, reason)


def _limits(log: parser.EventLog, start_ms: float, end_ms: float | None, offset_ms: float | None,
            call_start_s: float | None, phases_s: list[tuple[str, float, float]] | None) -> dict[str, Any]:
    """Which estimate limited the target (limits.py) over the call window, as the controller's counts are (from the
    first estimate logged when the log cannot be placed on the call's clock), and per phase."""
    end = min(gcc.log_end_ms(log), end_ms) if end_ms is not None else gcc.log_end_ms(log)
    if offset_ms is None or call_start_s is None:
        firsts = [float(x[0]) for x in (log.delay_based["time_ms"], log.loss_based["time_ms"]) if len(x)]
        start = min(firsts) if firsts else end
        return limits.summary(log, start, end, [("all", start, end)], None)
    origin_ms = call_start_s * 1000 - offset_ms  # call start, in log ms
    phases_ms = [(name, origin_ms + a * 1000, origin_ms + b * 1000) for name, a, b in (phases_s or [])]
    if not any(name == "all" for name, _, _ in phases_ms):
        phases_ms.insert(0, ("all", start_ms, end))
    return limits.summary(log, start_ms, end, phases_ms, lambda ms: (ms - origin_ms) / 1000)


def analyse(run_dir: Path, table: packets.PacketTable | None, call_start_s: float | None,
            call_end_s: float | None, problems: list[str],
            phases_s: list[tuple[str, float, float]] | None = None) -> dict[str, Any] | None:
    """The section, or None when the run has no event log (recording off, or a run from before it existed).
    phases_s: the run's phases, as side() takes them."""
    sides: dict[str, Any] = {}
    for name, direction in (("a", packets.FORWARD), ("b", packets.REVERSE)):
        path = run_dir / f"eventlog-{name}.log"
        if not path.exists():
            continue
        try:
            sides[name] = side(path, table, direction, call_start_s, call_end_s, phases_s)
        except parser.EventLogError as e:
            problems.append(str(e))
            sides[name] = None
    if not sides:
        return None
    a = sides.get("a") or {}
    ctrl = a.get("controller") or {}
    return {
        "sender": "a",
        "n_dd": ctrl.get("n_dd"),
        "detector_state_s": ctrl.get("detector_state_s"),
        "detector_state_fraction": ctrl.get("detector_state_fraction"),
        "join_rate": (a.get("join") or {}).get("join_rate"),
        "replay_update_agreement": (a.get("replay") or {}).get("update_agreement"),
        "replay_time_agreement": (a.get("replay") or {}).get("time_agreement"),
        "sides": sides,
    }


def transport_cc_id(run_dir: Path) -> int | None:
    """The transport-wide sequence number's header extension id, from side a's event log (its stream configs)."""
    path = run_dir / "eventlog-a.log"
    if not path.exists():
        return None
    try:
        ids = parser.read(path).transport_cc_ids
    except parser.EventLogError:
        return None
    return min(ids) if ids else None
