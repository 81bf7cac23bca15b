"""The validity check `pauses_took_effect`: every pause a call's scenario scheduled (calls[].pauses, RFC 8867 5.8) took
effect in the browsers and on the wire, within bounds derived from the harness's timing (docs/harness.md, "Validity
checks"; the bounds `pause` of harness/validity-bounds.json):

- in the browsers: each sending side's call_pause and call_resume event (harness/run.js: its setParameters resolved)
  exists, no more than `max_apply_ms` after the scheduled time (the harness's timer, the DevTools round trip and
  setParameters);
- on the wire (capture a, the caller's media; a callee's pause is judged by its events only): from the pause's
  application in the browser plus `max_wire_ms` (the frame being encoded, the pacer's queue) to the resume, the
  call's RTP (video and audio) sent at most `max_rate_kbps`, below any media Chrome sends; and each video track's
  first RTP packet after the resume left a no later than the resume's application plus `max_wire_ms`.

A run whose calls schedule no pause makes no such check; a pause that cannot be judged on the wire (no packet table,
the call's 5-tuple unknown) is not measured (ok None) unless its events already fail it."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import multiflow
from .fairness import ETHERNET_HEADER_BYTES
from .packets import CLS_RTP, FORWARD
from .rundir import RunDir

NAME = "pauses_took_effect"


def _late_ms(events: list[dict[str, Any]], name: str, call: str, k: int, side: str) -> float | None:
    e = next((e for e in events if e.get("event") == name and e.get("call") == call and e.get("pause") == k
              and e.get("side") == side), None)
    late = None if e is None else e.get("late_ms")
    return float(late) if isinstance(late, (int, float)) and not isinstance(late, bool) else None


def _wire(c: multiflow.Call, k: int, packets: dict[str, np.ndarray], t0: float, apply_s: tuple[float, float],
          max_wire_s: float, max_rate_bps: float) -> tuple[list[str], str]:
    """(problems, what was seen) of pause k of call c on capture a: apply_s = when the browser had applied the pause
    and the resume (s since t0)."""
    at, resume = c.pauses[k]
    assert c.five_tuple is not None
    src, sport, dst, dport = c.five_tuple
    rows = np.flatnonzero((packets["direction"] == FORWARD) & (packets["ip_src"] == src) & (packets["sport"] == sport)
                          & (packets["ip_dst"] == dst) & (packets["dport"] == dport) & (packets["cls"] == CLS_RTP)
                          & (packets["t_send_ns"] >= 0))
    t = packets["t_send_ns"][rows] / 1e9 - t0
    bits = (packets["ip_len"][rows].astype(np.int64) + ETHERNET_HEADER_BYTES) * 8
    problems: list[str] = []
    label = f"call {c.id}'s pause {at:g}-{resume:g} s"
    quiet_from = apply_s[0] + max_wire_s
    before = t[(t >= at) & (t < resume)]
    stopped = f"last RTP sent {1000 * (before.max() - at):.0f} ms after {at:g} s" if before.size else \
        f"no RTP sent from {at:g} s"
    if quiet_from >= resume:
        problems.append(f"{label}: applied too late to judge (quiet from {quiet_from:.2f} s, after the resume)")
        rate = None
    else:
        inside = (t >= quiet_from) & (t < resume)
        rate = float(bits[inside].sum()) / (resume - quiet_from)
        if rate > max_rate_bps:
            problems.append(f"{label}: the call sent {rate / 1000:.1f} kbit/s of RTP ({int(inside.sum())} packets) "
                            f"from {quiet_from:.2f} s to the resume (bound {max_rate_bps / 1000:g} kbit/s): "
                            "it did not pause")
    nxt = c.pauses[k + 1][0] if k + 1 < len(c.pauses) else np.inf
    video = [tr for tr in c.tracks if tr.kind == "video"]
    known = [tr for tr in video if tr.ssrcs]
    starts: list[str] = []
    selections = ([(tr.id, packets["ssrc"][rows] == tr.ssrcs[0]) for tr in known] if known and len(known) == len(video)
                  else [("its RTP (video SSRCs not recorded)", np.ones(rows.size, dtype=bool))])
    for name, sel in selections:
        after = t[sel & (t >= resume) & (t < nxt)]
        due = apply_s[1] + max_wire_s
        if not after.size or after.min() > due:
            seen = f"first at {after.min():.2f} s" if after.size else "none before the next pause or the end"
            problems.append(f"{label}: {name} did not resume by {due:.2f} s ({seen}): the resume did not take effect")
        else:
            starts.append(f"{name} again {1000 * (after.min() - resume):.0f} ms after {resume:g} s")
    rate_text = "" if rate is None else f", {rate / 1000:.1f} kbit/s in the pause"
    return problems, f"{label}: {stopped}{rate_text}, {', '.join(starts) or 'no resume seen'}"


def pauses_took_effect(run: RunDir, packets: dict[str, np.ndarray] | None, t0: float, max_apply_ms: float,
                       max_wire_ms: float, max_rate_kbps: float) -> dict[str, Any] | None:
    """{"name", "ok", "detail"}; None when no call schedules a pause. `packets`: the packet table's columns
    (direction, ip_src, sport, ip_dst, dport, cls, ssrc, t_send_ns, ip_len), None without one; t0: call start, epoch
    s."""
    calls = [c for c in multiflow.calls(run) if c.pauses]
    if not calls:
        return None
    events = run.events
    problems: list[str] = []
    unmeasured: list[str] = []
    seen: list[str] = []
    furthest = 0.0
    for c in calls:
        sides = ["a"] if c.direction == "forward" else ["a", "b"]
        for k, (at, resume) in enumerate(c.pauses):
            late: dict[tuple[str, str], float] = {}
            for name, due in (("call_pause", at), ("call_resume", resume)):
                for side in sides:
                    x = _late_ms(events, name, c.id, k, side)
                    what = f"call {c.id}'s {'pause' if name == 'call_pause' else 'resume'} at {due:g} s on side {side}"
                    if x is None:
                        problems.append(f"{what}: no {name} event says the browser applied it")
                    elif x > max_apply_ms:
                        problems.append(f"{what} was applied {x:.0f} ms late (bound {max_apply_ms:g} ms)")
                    else:
                        furthest = max(furthest, x)
                    late[(name, side)] = max_apply_ms if x is None else x
            if packets is None or c.five_tuple is None:
                why = "no packet table" if packets is None else "its 5-tuple is unknown (no selected pair recorded)"
                unmeasured.append(f"call {c.id}'s pause {at:g}-{resume:g} s on the wire: {why}")
                continue
            apply_s = (at + late[("call_pause", "a")] / 1000, resume + late[("call_resume", "a")] / 1000)
            wire_problems, wire_seen = _wire(c, k, packets, t0, apply_s, max_wire_ms / 1000, max_rate_kbps * 1000)
            problems += wire_problems
            seen.append(wire_seen)
    bounds = f"bounds: applied {max_apply_ms:g} ms, on the wire {max_wire_ms:g} ms after, {max_rate_kbps:g} kbit/s"
    if problems:
        return {"name": NAME, "ok": False, "detail": f"{'; '.join(problems)} ({bounds})"}
    if unmeasured:
        return {"name": NAME, "ok": None, "detail": f"not measured: {'; '.join(unmeasured)}"}
    return {"name": NAME, "ok": True, "detail": f"{'; '.join(seen)}; applied in the browsers at most {furthest:.0f} ms "
                                                f"late ({bounds})"}
