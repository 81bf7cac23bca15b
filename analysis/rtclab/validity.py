"""The analyzer's own validity checks: rules judged from what a run directory recorded (the userspace bottleneck's
ground-truth logs, cpu.jsonl, the packet table), not from what the harness computed live, so that today's rules can
be applied again to old runs (`rtclab revalidate`). Each check is a function of one RecordedRun that returns
`{"name", "ok", "detail"}`; `ok` None means not measured (the run recorded nothing to judge it by): it does not make
the run invalid. Their bounds are in harness/validity-bounds.json, which the harness's live checks read too; why
these numbers: docs/harness.md, "Validity checks"."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import hops, multiflow, pause_check, schedule_check
from .cpu import WINDOW_SLACK_S
from .eventlog import parser as eventlog_parser
from .eventlog import trials as eventlog_trials
from .packets import FORWARD, REVERSE
from .rundir import GTLOG_FORWARDED, CpuLog, CpuSample, GroundTruthLog, RunDir, read_cpu, read_gtlog

BOUNDS_FILE = Path(__file__).resolve().parents[2] / "harness" / "validity-bounds.json"
DIRECTIONS = {"forward": FORWARD, "reverse": REVERSE}
# The packet table's columns the checks read (packets.parquet has them all).
PACKET_COLUMNS = ("direction", "ip_src", "ip_dst", "sport", "dport", "key", "cls", "ssrc", "t_send_ns", "ip_len")


class BoundsError(Exception):
    """harness/validity-bounds.json is missing or does not hold what the checks need."""


@dataclass(frozen=True)
class Bounds:
    lateness_max_ms: float  # no forwarded packet released later than this after its due time
    lateness_late_ms: float  # ... and at most lateness_max_late_fraction of them later than this
    lateness_max_late_fraction: float
    cpu_window_s: float  # the length of the sliding windows the CPU's busy share is judged over
    cpu_max_busy_fraction: float
    step_max_late_ms: float  # no capacity or delay step applied further than this from its scheduled time
    pause_max_apply_ms: float  # a call's pause or resume applied in its browser at most this late
    pause_max_wire_ms: float  # ... and on the wire at most this long after that
    pause_max_rate_kbps: float  # what a paused call may still send (RTP)


def load_bounds(path: Path = BOUNDS_FILE) -> Bounds:
    try:
        doc = json.loads(path.read_text())
        late, cpu = doc["release_lateness"], doc["cpu_window"]
        pause = doc["pause"]
        values = (late["max_ms"], late["late_ms"], late["max_late_fraction"], cpu["window_s"],
                  cpu["max_busy_fraction"], doc["schedule"]["max_late_ms"], pause["max_apply_ms"],
                  pause["max_wire_ms"], pause["max_rate_kbps"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BoundsError(f"{path}: the validity bounds cannot be read ({type(e).__name__}: {e})") from None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
        raise BoundsError(f"{path}: every validity bound must be a positive number, got {values}")
    return Bounds(*(float(v) for v in values))


@dataclass
class RecordedRun:
    """What the checks judge: the run directory, the call's span (t0 in epoch s, its length) and the packet table's
    columns (PACKET_COLUMNS; None without a packet table). The recorded files are read once, when a check first
    asks for them."""
    run: RunDir
    t0: float
    duration_s: float
    packets: dict[str, np.ndarray] | None
    bounds: Bounds

    @property
    def backend(self) -> str | None:
        used = (self.run.manifest.get("backend") or {}).get("used")
        return used if isinstance(used, str) else None

    @cached_property
    def gtlogs(self) -> dict[str, GroundTruthLog | str | None]:
        """Per bottleneck (a direction; in a chain of bottlenecks, each hop's: hop<i>-<direction>) its ground-truth
        log, the reason it cannot be read (str), or None when the run has none."""
        out: dict[str, GroundTruthLog | str | None] = {}
        n = hops.hop_count(self.run)
        names = list(DIRECTIONS) if n == 0 else [f"hop{h}-{d}" for h in range(n) for d in DIRECTIONS]
        for direction in names:
            path = self.run.file(f"bottleneck-{direction}.gtlog")
            if not path.exists():
                out[direction] = None
                continue
            try:
                out[direction] = read_gtlog(path)
            except (ValueError, OSError) as e:
                out[direction] = str(e)
        return out

    @cached_property
    def cpu(self) -> CpuLog | None:
        return read_cpu(self.run)

    @cached_property
    def call_keys(self) -> dict[str, np.ndarray] | str:
        """Per direction the ground-truth keys (FNV-1a) of the calls' own packets: the packet table's rows of each
        call's 5-tuple (its selected candidate pair), both ways; or why they cannot be told apart (str)."""
        if not self.run.has_calls:
            return "the run has no call"
        if self.packets is None:
            return "no packet table (no capture readable)"
        calls = multiflow.calls(self.run)
        unknown = [c.id for c in calls if c.five_tuple is None]
        if unknown:
            return f"the 5-tuple of call {', '.join(unknown)} is unknown (no selected candidate pair recorded)"
        c = self.packets
        out: dict[str, np.ndarray] = {}
        for name, code in DIRECTIONS.items():
            mine = np.zeros(len(c["direction"]), dtype=bool)
            for call in calls:
                assert call.five_tuple is not None
                src, sport, dst, dport = call.five_tuple
                if code == REVERSE:
                    src, sport, dst, dport = dst, dport, src, sport
                mine |= ((c["direction"] == code) & (c["ip_src"] == src) & (c["sport"] == sport)
                         & (c["ip_dst"] == dst) & (c["dport"] == dport))
            out[name] = np.unique(c["key"][mine].astype(np.uint64))
        return out


def _check(name: str, ok: bool | None, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


def _lateness(rec: RecordedRun, name: str, population: str,
              select: Callable[[str, np.ndarray], np.ndarray] | None) -> dict[str, Any]:
    """Per direction, the release lateness (release_ns - due_ns) of the forwarded packets due within the call, of
    those `select` keeps (all without it): the latest against lateness_max_ms, the share later than
    lateness_late_ms against lateness_max_late_fraction."""
    b = rec.bounds
    bound_text = (f"bounds: none over {b.lateness_max_ms:g} ms late, at most {100 * b.lateness_max_late_fraction:g}% "
                  f"over {b.lateness_late_ms:g} ms")
    logs = rec.gtlogs
    if all(v is None for v in logs.values()):
        if rec.backend == "userspace":
            return _check(name, False, "the userspace bottleneck wrote no ground-truth log: its release times are "
                                       "unknown")
        return _check(name, None, f"not measured: no ground-truth log (the {rec.backend or 'unknown'} backend's "
                                  "qdiscs record no release times)")
    ok = True
    parts = []
    lo_ns, hi_ns = int(rec.t0 * 1e9), int((rec.t0 + rec.duration_s) * 1e9)
    for direction, log in logs.items():
        if isinstance(log, str):
            ok = False
            parts.append(f"{direction}: {log}")
            continue
        if log is None:  # the userspace backend logs both directions; a run that does not say so may log one
            ok &= rec.backend != "userspace"
            parts.append(f"{direction}: no ground-truth log")
            continue
        r = log.records
        keep = np.isin(r["event"], GTLOG_FORWARDED) & (r["due_ns"] >= lo_ns) & (r["due_ns"] < hi_ns)
        if select is not None:  # by the packets' direction (a hop's name ends in it)
            keep &= select(direction.rsplit("-", 1)[-1], r["key"])
        late_ms = (r["release_ns"][keep].astype(np.int64) - r["due_ns"][keep].astype(np.int64)) / 1e6
        if not late_ms.size:
            parts.append(f"{direction}: no {population} forwarded within the call")
            continue
        worst = float(late_ms.max())
        over = int((late_ms > b.lateness_late_ms).sum())
        fraction = over / late_ms.size
        over_100 = int((late_ms > 100.0).sum())
        ok &= worst <= b.lateness_max_ms and fraction <= b.lateness_max_late_fraction
        parts.append(f"{direction}: {late_ms.size} {population}, the latest released {worst:.1f} ms after its due "
                     f"time, {over} ({100 * fraction:.2f}%) more than {b.lateness_late_ms:g} ms late, {over_100} more "
                     f"than 100 ms late")
    why = "" if ok else (": the emulator's own delay is in the one-way and queuing delays, larger than what the "
                         "controller reacts to")
    return _check(name, ok, f"{'; '.join(parts)} ({bound_text}, from the ground-truth log){why}")


def release_lateness_call_packets(rec: RecordedRun) -> dict[str, Any]:
    """The calls' own packets (each call's 5-tuple, both directions): what the call's metrics are made of."""
    name = "release_lateness_call_packets"
    keys = rec.call_keys
    if isinstance(keys, str):
        if any(v is not None for v in rec.gtlogs.values()):
            return _check(name, None, f"not measured: the call's packets cannot be told apart: {keys}")
        return _lateness(rec, name, "call packets", None)  # no log: _lateness says what that means for the backend
    return _lateness(rec, name, "call packets", lambda direction, k: np.isin(k, keys[direction]))


def release_lateness_all_packets(rec: RecordedRun) -> dict[str, Any]:
    """Every packet the bottleneck forwarded (cross traffic too): the link the whole run went through."""
    return _lateness(rec, "release_lateness_all_packets", "packets", None)


def _windows(samples: list[CpuSample], load: Callable[[CpuSample], float],
             window_s: float) -> list[tuple[float, float, float]]:
    """(start, end, mean load) of every run of consecutive samples that spans at least window_s (each starting at a
    sample), or one for all of them when together they span less."""
    out: list[tuple[float, float, float]] = []
    for i in range(len(samples)):
        spent, seconds = 0.0, 0.0
        for s in samples[i:]:
            spent += load(s) * s.dt
            seconds += s.dt
            if seconds >= window_s - WINDOW_SLACK_S:
                break
        if seconds < window_s - WINDOW_SLACK_S and out:
            break  # the last samples are inside the windows already judged
        out.append((samples[i].t - samples[i].dt, samples[i].t - samples[i].dt + seconds, spent / seconds))
        if seconds < window_s - WINDOW_SLACK_S:
            break
    return out


def cpu_windows_not_saturated(rec: RecordedRun) -> dict[str, Any]:
    """The CPU's busy share over every window of cpu_window_s within the call (cpu.jsonl's samples, one a second):
    the host's CPUs, or for a run pinned to a set of CPUs (manifest cpu_set) its own processes over those CPUs."""
    name, b = "cpu_windows_not_saturated", rec.bounds
    log = rec.cpu
    if log is None:
        return _check(name, None, "not measured: the run has no cpu.jsonl")
    cpus = log.header.get("cpus") or (rec.run.manifest.get("host") or {}).get("cpus")
    cpu_set = rec.run.manifest.get("cpu_set")
    pinned = isinstance(cpu_set, list) and bool(cpu_set)
    if not pinned and not (isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0):
        return _check(name, None, "not measured: neither cpu.jsonl's header nor the manifest says how many CPUs the "
                                  "host has")
    inside = [s for s in log.samples
              if s.t - s.dt >= rec.t0 - WINDOW_SLACK_S and s.t <= rec.t0 + rec.duration_s + WINDOW_SLACK_S]
    if not inside:
        return _check(name, None, "not measured: cpu.jsonl holds no sample within the call")
    if pinned:
        assert isinstance(cpu_set, list)
        whose = f"the run's own processes on its CPUs {','.join(str(c) for c in cpu_set)}"
        windows = _windows(inside, lambda s: sum(s.groups.values()) / len(cpu_set), b.cpu_window_s)
    else:
        assert isinstance(cpus, int)
        whose = f"the host's {cpus} CPUs"
        windows = _windows(inside, lambda s: s.host["busy"] / cpus, b.cpu_window_s)
    over = [w for w in windows if w[2] > b.cpu_max_busy_fraction]
    start, end, share = max(windows, key=lambda w: w[2])
    detail = (f"{whose}: the busiest {end - start:.0f} s window of the call "
              f"({start - rec.t0:.0f}-{end - rec.t0:.0f} s) {100 * share:.0f}% busy, {len(over)} of {len(windows)} "
              f"windows over the bound ({100 * b.cpu_max_busy_fraction:g}% over any {b.cpu_window_s:g} s)")
    if over:
        detail += ": the bottleneck's timing and the encoders are suspect there"
    return _check(name, not over, detail)


def schedule_applied(rec: RecordedRun) -> dict[str, Any] | None:
    """The harness's schedule_applied again, from events.jsonl and the scenario as configured (schedule_check.py);
    None when no step was due."""
    scen = rec.run.configured_scenario
    return None if scen is None else schedule_check.schedule_applied(rec.run.events, scen,
                                                                     rec.bounds.step_max_late_ms)


def pauses_took_effect(rec: RecordedRun) -> dict[str, Any] | None:
    """Every pause the calls scheduled took effect in the browsers and on the wire (pause_check.py); None when no call
    schedules one."""
    b = rec.bounds
    return pause_check.pauses_took_effect(rec.run, rec.packets, rec.t0, b.pause_max_apply_ms, b.pause_max_wire_ms,
                                          b.pause_max_rate_kbps)


def field_trials_took_effect(rec: RecordedRun) -> dict[str, Any] | None:
    """Every GCC field trial of the registry (harness/gcc-trials.json) that the run's calls set: evidence from the
    sending side's RTC event log (eventlog-a.log: the first call's forward sender) that it took effect
    (eventlog/trials.py); a trial without it, or set with another group than the registry's, fails the run. None when
    no call sets a registry trial."""
    name = "field_trials_took_effect"
    registry = eventlog_trials.load_registry()
    calls = rec.run.scenario_doc.get("calls") or []
    named: dict[str, str] = {}
    try:
        for call in calls:
            for key, group in eventlog_trials.parse_field_trials(str(call.get("field_trials") or "")):
                if key in registry:
                    named[key] = group
    except ValueError as e:
        return _check(name, False, str(e))
    if not named:
        return None
    path = rec.run.file("eventlog-a.log")
    if not path.exists():
        return _check(name, False, f"not shown: {', '.join(named)}: the run has no eventlog-a.log to show it from")
    try:
        log = eventlog_parser.read(path)
    except eventlog_parser.EventLogError as e:
        return _check(name, False, f"not shown: {', '.join(named)}: {e}")
    ok, parts = True, []
    for key, group in named.items():
        trial = registry[key]
        if group != trial.group:
            ok = False
            parts.append(f"{trial.name} ({key}): not shown: group {group!r} is not the registry's {trial.group!r}, "
                         "whose evidence is defined")
            continue
        seen = eventlog_trials.evidence(log, trial)
        ok &= seen["shown"]
        parts.append(f"{trial.name} ({key}/{group}): {'shown' if seen['shown'] else 'not shown'}: {seen['seen']}")
    return _check(name, ok, "; ".join(parts) + " (from eventlog-a.log; docs/gcc-trials.md)")


# Chrome reports a camera track's frameRate as a float; the fake camera's is its clip's (or call.fps when lower).
CAMERA_FPS_TOLERANCE = 0.5


def camera_frame_rate(rec: RecordedRun) -> dict[str, Any] | None:
    """Each sending page's camera delivered the frame rate its call asked for: the `page_media` event's camera track
    `frameRate` (Chrome's getSettings) against the call's `fps`, within CAMERA_FPS_TOLERANCE. A clip slower than
    `call.fps` (a 30 fps clip for a 60 fps call) fails it. None when no page reported a camera rate."""
    calls = [c for c in rec.run.scenario_doc.get("calls") or [] if isinstance(c, dict)]
    if not calls:
        return None
    asked = {c.get("id"): c.get("fps") for c in calls}
    parts, ok = [], True
    for e in rec.run.events:
        rate = ((e.get("page") or {}).get("video") or {}).get("frameRate") if e.get("event") == "page_media" else None
        want = asked.get(e.get("call", calls[0].get("id")))
        if not isinstance(rate, (int, float)) or not isinstance(want, (int, float)):
            continue
        good = abs(rate - want) <= CAMERA_FPS_TOLERANCE
        ok &= good
        parts.append(f"{e.get('call', calls[0].get('id'))} side {e.get('side')}: {rate:g} fps (asked {want:g})")
    if not parts:
        return None
    return _check("camera_frame_rate", ok, "; ".join(parts) + " (the camera track's frameRate, page_media events)")


CHECKS: list[Callable[[RecordedRun], dict[str, Any] | None]] = [
    release_lateness_call_packets, release_lateness_all_packets, cpu_windows_not_saturated, schedule_applied,
    field_trials_took_effect, camera_frame_rate, pauses_took_effect]
NAMES = tuple(check.__name__ for check in CHECKS)  # a check is named as its function


def analyzer_checks(rec: RecordedRun) -> list[dict[str, Any]]:
    """Each check's verdict; a check with nothing to judge (no step due) makes none."""
    return [c for c in (check(rec) for check in CHECKS) if c is not None]


def combine(manifest_validity: dict[str, Any] | None, own: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's validity: the manifest's (harness/validity.js) with the analyzer's checks `own` in place of any
    earlier ones of the same name. Valid only when the harness said so and no check failed; a check whose ok is None
    was not measured and does not make the run invalid."""
    validity = manifest_validity or {"valid": None, "checks": [], "note": "no validity in the manifest"}
    names = {c["name"] for c in own}
    checks = [c for c in validity.get("checks") or [] if isinstance(c, dict) and c.get("name") not in names] + own
    harness_valid = validity.get("valid")
    valid: bool | None = None if harness_valid is None and not any(c.get("ok") is False for c in checks) else \
        harness_valid is not False and all(c.get("ok") is not False for c in checks)
    return dict(validity, checks=checks, valid=valid)
