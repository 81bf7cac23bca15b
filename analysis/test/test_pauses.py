"""A call's scheduled pauses (calls[].pauses, RFC 8867 5.8) in the analysis of hand-built runs: the validity check
pauses_took_effect (rtclab.pause_check) passing a pause that took effect in the browser and on the wire, and failing,
with the reason, one whose call kept sending, one that resumed late on the wire, one the browser never applied; and
the time to regain the fair share after the resume against the rate the test's own packets give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rtclab import validity
from rtclab.analyze import analyze
from runbuild import MS, T0_NS, A, B, Run
from runbuild import scenario as scenario_doc

VIDEO, AUDIO = 0x1111, 0x2222
PAUSE = (2.0, 5.0)
CAPACITY_KBIT = 500


def call_doc(pauses: list[tuple[float, float]]) -> dict[str, Any]:
    return {"id": "c1", "direction": "forward", "audio": True, "start_s": 0, "stop_s": None,
            "tracks": [{"id": "v1"}], "pauses": [{"at_s": a, "resume_s": r} for a, r in pauses]}


MANIFEST_CALLS = [{"id": "c1", "selected_pairs": {"a": {"local": {"address": A, "port": 50000},
                                                      "remote": {"address": B, "port": 50001}}},
                   "tracks": {"a": [{"id": "v1", "ssrcs": [VIDEO]}, {"id": "audio", "ssrcs": [AUDIO]}]}}]


def event(name: str, at_s: float, late_ms: float) -> dict[str, Any]:
    """A call_pause or call_resume event as harness/run.js writes it once side a's setParameters resolved."""
    return {"t": T0_NS / 1e9 + at_s + late_ms / 1000, "event": name, "call": "c1", "pause": 0, "at_s": at_s,
            "side": "a", "late_ms": late_ms}


def write_run(d: Path, *, stop_s: float = 2.02, video_again_s: float = 5.1, audio_in_pause: bool = False,
              events: list[dict[str, Any]] | None = None) -> Run:
    """8 s; video (1000-byte payloads) and audio (200) every 20 ms from a, each arriving 30 ms later, none sent from
    stop_s to the resume (but audio when audio_in_pause), video again from video_again_s, audio from 5.05 s."""
    run = Run()
    seq = 0
    for i in range(400):
        t_s = i * 0.02
        paused = stop_s <= t_s < PAUSE[1]
        for ssrc, size, again in ((VIDEO, 1000, video_again_s), (AUDIO, 200, 5.05)):
            if (paused and not (ssrc == AUDIO and audio_in_pause)) or PAUSE[1] <= t_s < again:
                continue
            t = T0_NS + int(t_s * 1e9)
            run.rtp(t, [t + 30 * MS], seq=seq, ts=seq * 900, ssrc=ssrc, size=size)
            seq += 1
    d.mkdir()
    scen = dict(scenario_doc(8, {"rate": {"kbit": CAPACITY_KBIT}}), calls=[call_doc([PAUSE])])
    run.write(d, scen, manifest_extra={"calls": MANIFEST_CALLS})
    evs = events if events is not None else [event("call_pause", PAUSE[0], 12.0), event("call_resume", PAUSE[1], 9.0)]
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    return run


def check(m: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in m["validity"]["checks"] if c["name"] == "pauses_took_effect")


def test_a_pause_that_took_effect_is_valid_and_its_regain_is_measured(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r")
    m, _ = analyze(tmp_path / "r", run_tshark=False)
    c = check(m)
    assert c["ok"] is True, c
    # The last packets before the pause left at 2.00 s; video again 100 ms after the resume; nothing in the pause.
    assert "last RTP sent 0 ms after 2 s, 0.0 kbit/s in the pause, v1 again 100 ms after 5 s" in c["detail"]
    assert m["validity"]["valid"] is True
    # The flow's window 5 (5-6 s), from the test's own packets: link-layer bits arriving in it.
    bits = sum(len(p.frame) * 8 for p in run.packets if 5e9 <= p.arrivals[0] - T0_NS < 6e9)  # Ethernet frames
    assert bits >= 0.8 * CAPACITY_KBIT * 1000, "the design: window 5 already reaches 0.8 x the capacity"
    rfc = m["rfc8867"]
    assert rfc["flows"][0]["rate_bps"][5] == pytest.approx(bits)
    # One call alone: its fair share is the capacity; regained at the end of window 5, 1 s after the resume.
    assert rfc["scheduled_pauses"] == [{"call": "c1", "at_s": 2.0, "resume_s": 5.0, "regain_fair_share_s": 1.0,
                                        "fair_share_bps": CAPACITY_KBIT * 1000.0, "not_measured": None}]
    assert rfc["summary"]["regain_fair_share_s"] == 1.0


def test_a_call_that_kept_sending_in_its_pause_is_invalid(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", audio_in_pause=True)
    m, _ = analyze(tmp_path / "r", run_tshark=False)
    c = check(m)
    # Judged from the pause's application (2 s + 12 ms) + 500 ms to the resume: the audio packets sent then, each
    # 200 + 12 RTP + 8 UDP + 20 IP + 14 Ethernet bytes.
    quiet_from = 2.0 + 0.012 + 0.5
    n = sum(1 for p in run.packets if quiet_from <= (p.t_send - T0_NS) / 1e9 < 5.0)
    assert all(len(p.frame) == 254 for p in run.packets if quiet_from <= (p.t_send - T0_NS) / 1e9 < 5.0)
    kbit_s = n * 254 * 8 / (5.0 - quiet_from) / 1000
    assert c["ok"] is False and f"the call sent {kbit_s:.1f} kbit/s of RTP ({n} packets)" in c["detail"]
    assert "it did not pause" in c["detail"] and m["validity"]["valid"] is False


def test_a_late_resume_on_the_wire_or_a_pause_the_browser_never_applied_is_invalid(tmp_path: Path) -> None:
    write_run(tmp_path / "late", video_again_s=5.6)  # the bound: applied 9 ms late + 500 ms on the wire
    c = check(analyze(tmp_path / "late", run_tshark=False)[0])
    assert c["ok"] is False
    assert "call c1's pause 2-5 s: v1 did not resume by 5.51 s (first at 5.60 s): the resume did not take effect" \
        in c["detail"]
    write_run(tmp_path / "none", events=[event("call_pause", PAUSE[0], 700.0)])
    c = check(analyze(tmp_path / "none", run_tshark=False)[0])
    assert c["ok"] is False
    assert "call c1's pause at 2 s on side a was applied 700 ms late (bound 500 ms)" in c["detail"]
    assert "call c1's resume at 5 s on side a: no call_resume event says the browser applied it" in c["detail"]


def test_the_pause_bounds_are_read_from_the_harness_file() -> None:
    b = validity.load_bounds()
    assert (b.pause_max_apply_ms, b.pause_max_wire_ms, b.pause_max_rate_kbps) == (500, 500, 5)


def test_a_run_without_pauses_has_no_such_check(tmp_path: Path) -> None:
    d = tmp_path / "r"
    write_run(d)
    doc = json.loads((d / "manifest.json").read_text())
    doc["scenario"]["calls"][0]["pauses"] = []
    (d / "manifest.json").write_text(json.dumps(doc))
    m, _ = analyze(d, run_tshark=False)
    assert all(c["name"] != "pauses_took_effect" for c in m["validity"]["checks"])
    assert m["rfc8867"]["scheduled_pauses"] == [] and m["rfc8867"]["summary"]["regain_fair_share_s"] is None
