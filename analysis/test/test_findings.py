"""`rtclab findings` (rtclab.findings, studies/findings.yaml) on small study directories made with the study writers
(rtclab_study's spec and plan, rtclab.study.studydir's layout) and runs whose metrics.json hold chosen values, so
that every mean, interval and verdict can be computed here by hand: a range claim that agrees, one that deviates, one
that straddles, a point with INVALID attempts and one repetition only, a point whose INVALID runs were accepted, a
trend (a regression slope over every run, against an ordinary least-squares fit over the runs' own values), a
backend-like difference between two studies and a difference between two points of one study (open bands), natural
bounds (intervals clipped at 0 and 1), per-run measures (a DSCP flow, a cross-traffic item's flow found by its port, a
priority share, RFC 8867's rate against a target the encoder can reach), a selector that matches nothing, a study not
given (not run, with its Ray command), unreadable manifests named on the page, and the Markdown and HTML output."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rtclab import findings, verdicts
from rtclab.study import aggregate as agg
from rtclab.study import archive, provenance, studydir
from rtclab_study import plan as planmod
from rtclab_study import spec

REPO = Path(__file__).resolve().parents[2]
T975 = {2: (2 * 0.975 - 1) * math.sqrt(2 / (4 * 0.975 * 0.025))}  # Student t(0.975, 2), closed form


def t975_df4() -> float:
    a = 4 * 0.975 * 0.025
    q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
    return 2 * math.sqrt(q - 1)


T975[4] = t975_df4()
CHROMIUM, COMMIT = "Chromium 999.0.1", "0123456789abcdef0123456789abcdef01234567"


def metrics(queue_ms: float, loss: float, prio_bps: float = 0.0, share: float | None = None, jain: float = 1.0,
            rfc: dict[str, Any] | None = None) -> dict[str, Any]:
    """A minimal metrics.json: one forward video flow; the TCP flows of two cross-traffic items, the first sent with
    DSCP 46, each to its item's iperf3 port (a TCP flow's `dscp` in the flow table is its SYN's: 0, as iperf3 sets
    the DSCP after it); the priority shares, the bottleneck's Jain index and an `rfc8867` section."""
    m: dict[str, Any] = {
        "run": {"id": "r", "duration_s": 10.0, "call_start": 0.0},
        "scenario": {"cross_traffic": [{"direction": "forward", "flows": 1, "dscp": 46},
                                       {"direction": "forward", "flows": 1, "dscp": 0}]},
        "phases": [{"name": "all", "start_s": 0.0, "end_s": 10.0, "cross_traffic": False}],
        "flows": [{"id": 0, "direction": "forward", "kind": "video", "protocol": "udp", "ssrc": 1, "dscp": 0,
                   "dst": "10.0.2.2:40000", "packets_sent": 100, "queuing_delay_ms": {"mean": queue_ms},
                   "loss_ratio_bytes": loss, "phases": {}},
                  {"id": 1, "direction": "forward", "kind": "tcp", "protocol": "tcp", "ssrc": None, "dscp": 0,
                   "dst": "10.0.2.2:5300", "packets_sent": 50, "throughput_bps": {"mean": prio_bps},
                   "loss_ratio": loss, "phases": {}},
                  {"id": 2, "direction": "forward", "kind": "tcp", "protocol": "tcp", "ssrc": None, "dscp": 0,
                   "dst": "10.0.2.2:5301", "packets_sent": 60, "throughput_bps": {"mean": prio_bps / 2},
                   "loss_ratio": loss, "phases": {}},
                  # iperf3's control connection of item 0: the same port, a few packets
                  {"id": 3, "direction": "forward", "kind": "tcp", "protocol": "tcp", "ssrc": None, "dscp": 0,
                   "dst": "10.0.2.2:5300", "packets_sent": 3, "throughput_bps": {"mean": 1000.0},
                   "loss_ratio": 0.0, "phases": {}}],
        "fairness": {"all": {"connections": [], "jain_index": jain}},
    }
    if share is not None:
        m["multiflow"] = {"shares": {"flows": [{"call": "c1", "track": "v1", "priority": "low", "asked_share": 0.2,
                                                "achieved_share": 1 - share},
                                               {"call": "c1", "track": "v2", "priority": "high", "asked_share": 0.8,
                                                "achieved_share": share}]}}
    if rfc is not None:
        m["rfc8867"] = rfc
    return m


# The runs' manifests place cross-traffic item 0 (DSCP 46) on port 5300 and item 1 on 5301 (topology.cross_traffic),
# not on iperf3's 5201 + n: the port must come from the manifest.
TOPOLOGY = {"cross_traffic": [{"n": 0, "port": 5300}, {"n": 1, "port": 5301}]}


def make_study(tmp: Path, name: str, runs: dict[str, list[list[tuple[str, dict[str, Any]]]]],
               accept: frozenset[str] = frozenset(), sets: dict[str, str] | None = None) -> Path:
    """A study directory: plan.json from a study file with these points (3 repetitions, 2 attempts), then each
    point's repetitions' attempts as run directories (outcome 'valid' or 'invalid', and the metrics.json the attempt
    holds), then study.json through the aggregation itself."""
    f = tmp / f"{name}.yaml"
    f.write_text(f"name: {name}\nbase: {{duration_s: 10}}\nrepetitions: 3\nmax_attempts: 2\npoints:\n"
                 + "".join(f"  - {{name: {p}, set: {{{(sets or {}).get(p, 'duration_s: 10')}}}}}\n" for p in runs))
    out = tmp / name
    planmod.write(planmod.make(spec.load(f)), out)
    for point, reps in runs.items():
        for rep, attempts in enumerate(reps, start=1):
            for attempt, (outcome, m) in enumerate(attempts, start=1):
                d = studydir.attempt_dir(out, point, rep, attempt)
                d.mkdir(parents=True)
                checks = [{"name": "host_cpu_not_saturated", "ok": outcome == "valid", "detail": "97% busy"}]
                (d / "manifest.json").write_text(json.dumps({
                    "status": "complete", "id": d.name, "git_commit": COMMIT,
                    "versions": {"chromium": CHROMIUM}, "backend": {"used": "userspace"}, "topology": TOPOLOGY,
                    "validity": {"valid": outcome == "valid", "checks": checks}}))
                (d / "metrics.json").write_text(json.dumps(metrics(**m)))
    agg.aggregate(out, analyse_missing=False, accept_invalid=accept)
    return out


def ok(**m: Any) -> list[tuple[str, dict[str, Any]]]:
    return [("valid", m)]


def bad(**m: Any) -> tuple[str, dict[str, Any]]:
    return ("invalid", m)


TARGETS = [1e6, 2.5e6, 2.5e6, None]  # an RFC 8867 run's target per 1 s window (None: the flow inactive)
CAP = 1.5e6  # its call's encoder maximum (max_bitrate_kbps 1500)


def rfc_section(third_rate: float) -> dict[str, Any]:
    """metrics.json's rfc8867 section of one flow named after its call: 0.95 and 1.55 Mbit/s, then `third_rate`,
    then a window without a target; the summary's raw ratio as rfcmetrics computes it (rate / target over the
    windows with a target)."""
    rates = [0.95e6, 1.55e6, third_rate, 1e5]
    raw = sum(r for r, t in zip(rates, TARGETS) if t) / sum(t for t in TARGETS if t)
    return {"flows": [{"name": "c1", "rate_bps": rates, "target_bps": TARGETS}],
            "summary": {"rate_to_target_ratio": raw}}


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("findings")
    q = {"loss": 0.0}
    out = {
        "range": make_study(tmp, "t-range", {
            "agree": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=14, **q)],
            "deviate": [ok(queue_ms=100, **q), ok(queue_ms=102, **q), ok(queue_ms=104, **q)],
            "straddle": [ok(queue_ms=40, **q), ok(queue_ms=50, **q), ok(queue_ms=60, **q)],
            # one valid repetition; the other two exhausted their two attempts, INVALID both times
            "one": [ok(queue_ms=5, **q), [bad(queue_ms=7, **q), bad(queue_ms=8, **q)],
                    [bad(queue_ms=9, **q), bad(queue_ms=9, **q)]]}),
        "accepted": make_study(tmp, "t-accepted", {
            "p": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), [bad(queue_ms=30, **q), bad(queue_ms=14, **q)]]},
            accept=frozenset({"host_cpu_not_saturated"})),
        "trend": make_study(tmp, "t-trend", {
            "target-5": [ok(queue_ms=5, **q), ok(queue_ms=6, **q), ok(queue_ms=7, **q)],
            "target-50": [ok(queue_ms=20, **q), ok(queue_ms=21, **q), ok(queue_ms=22, **q)]},
            sets={"target-5": "duration_s: 5", "target-50": "duration_s: 50"}),
        # three points, n = 3, 2 and 1 (two repetitions of the last without a valid run), x on a log scale
        "sweep": make_study(tmp, "t-sweep", {
            "target-5": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=11, **q)],
            "target-25": [ok(queue_ms=7, **q), ok(queue_ms=9, **q), [bad(queue_ms=1, **q), bad(queue_ms=1, **q)]],
            "target-100": [ok(queue_ms=4, **q), [bad(queue_ms=1, **q), bad(queue_ms=1, **q)],
                           [bad(queue_ms=1, **q), bad(queue_ms=1, **q)]]},
            sets={"target-5": "duration_s: 5", "target-25": "duration_s: 25", "target-100": "duration_s: 100"}),
        "a": make_study(tmp, "t-a", {"x": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=14, **q)]}),
        "b": make_study(tmp, "t-b", {"x": [ok(queue_ms=11, **q), ok(queue_ms=13, **q), ok(queue_ms=15, **q)]}),
        "perrun": make_study(tmp, "t-perrun", {
            "marking": [ok(queue_ms=1, loss=0.0, prio_bps=1.9e6, share=0.78, rfc=rfc_section(1.4e6)),
                        ok(queue_ms=1, loss=0.0, prio_bps=2.0e6, share=0.80, rfc=rfc_section(1.5e6)),
                        ok(queue_ms=1, loss=0.0, prio_bps=2.1e6, share=0.82, rfc=rfc_section(1.6e6))]}),
        # intervals that cross a natural bound: a loss ratio's 0, Jain's index's 1
        "bounds": make_study(tmp, "t-bounds", {
            "loss": [ok(queue_ms=1, loss=0.0), ok(queue_ms=1, loss=0.0), ok(queue_ms=1, loss=0.003)],
            "jain": [ok(queue_ms=1, loss=0.0, jain=0.98), ok(queue_ms=1, loss=0.0, jain=0.99),
                     ok(queue_ms=1, loss=0.0, jain=1.0)]}),
    }
    # the point's scenario as the study ran it: one call whose video encoder is capped at 1.5 Mbit/s
    (out["perrun"] / "points" / "marking" / "scenario.json").write_text(json.dumps({"calls": [
        {"id": "c1", "max_bitrate_kbps": 1500, "tracks": [{"id": "v1", "max_bitrate_kbps": None}]}]}))
    return out


QUEUE = {"flow": "forward:video", "phase": "all", "metric": "queuing_delay_ms_mean"}
LOSS = {"flow": "forward:video", "phase": "all", "metric": "loss_ratio_bytes"}
WHY = {"band_why": "a test's band"}
CLAIMS = {"rule": {"min_n": 2}, "claims": [
    {"id": "range", "source": "S", "says": "short queues", "studies": ["t-range"], "study_file": "s/r.yaml",
     "kind": "range", "points": ["*"], "measure": QUEUE, "range": [0, 50], "unit": "ms", **WHY},
    {"id": "accepted", "source": "S", "says": "short queues", "studies": ["t-accepted"], "study_file": "s/a.yaml",
     "kind": "range", "points": ["p"], "measure": QUEUE, "range": [0, 50], **WHY},
    {"id": "trend", "source": "S", "says": "grows", "studies": ["t-trend-full", "t-trend"], "study_file": "s/t.yaml",
     "kind": "trend", "direction": "increasing", "points": ["target-*"], "measure": QUEUE,
     "x": {"param": "duration_s"}},
    {"id": "trend-down", "source": "S", "says": "falls", "studies": ["t-trend"], "study_file": "s/t.yaml",
     "kind": "trend", "direction": "decreasing", "points": ["target-*"], "measure": QUEUE,
     "x": {"param": "duration_s", "scale": "linear"}},
    {"id": "backends", "source": "S", "says": "same", "studies": ["t-a"], "against": ["t-b"], "study_file": "s/a.yaml",
     "against_file": "s/b.yaml", "kind": "difference", "points": ["*"], "measure": QUEUE, "range": [-10, 10], **WHY},
    {"id": "prio-rate", "source": "S", "says": "held", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"],
     "measure": {"cross_traffic": {"dscp": 46}, "phase": "all", "metric": "throughput_bps"},
     "range": [1.6e6, 2.4e6], **WHY},
    {"id": "share", "source": "S", "says": "split", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"], "measure": {"share": "c1/v2"}, "range": [0.7, 0.9], **WHY},
    {"id": "sweep", "source": "S", "says": "falls", "studies": ["t-sweep"], "study_file": "s/w.yaml",
     "kind": "trend", "direction": "decreasing", "points": ["target-*"], "measure": QUEUE,
     "x": {"param": "duration_s", "scale": "log"}},
    {"id": "pair-up", "source": "S", "says": "more", "studies": ["t-range"], "study_file": "s/r.yaml",
     "kind": "difference", "pairs": [["agree", "deviate"], ["agree", "absent"]], "measure": QUEUE,
     "range": [0, None], **WHY},
    {"id": "pair-down", "source": "S", "says": "less", "studies": ["t-range"], "study_file": "s/r.yaml",
     "kind": "difference", "pairs": [["agree", "deviate"]], "measure": QUEUE, "range": [None, 0], **WHY},
    {"id": "prio-where", "source": "S", "says": "held", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"],
     "measure": {"where": {"direction": "forward", "dscp": 46}, "phase": "all", "metric": "throughput_bps"},
     "range": [1.6e6, 2.4e6], **WHY},
    {"id": "no-phase", "source": "S", "says": "x", "studies": ["t-range"], "study_file": "s/r.yaml",
     "kind": "range", "points": ["agree"], "measure": {**QUEUE, "phase": "cross_traffic"}, "range": [0, 50], **WHY},
    {"id": "loss-bounds", "source": "S", "says": "little loss", "studies": ["t-bounds"], "study_file": "s/b.yaml",
     "kind": "range", "points": ["loss"], "measure": LOSS, "range": [0, 0.01], **WHY},
    {"id": "jain-bounds", "source": "S", "says": "fair", "studies": ["t-bounds"], "study_file": "s/b.yaml",
     "kind": "range", "points": ["jain"], "measure": {"flow": "bottleneck", "phase": "all", "metric": "jain_index"},
     "range": [0.9, 1.0], **WHY},
    {"id": "reachable", "source": "S", "says": "converges", "studies": ["t-perrun"], "study_file": "s/p.yaml",
     "kind": "range", "points": ["marking"], "measure": {"rfc8867": "rate_to_reachable_target"},
     "beside": {"label": "raw", "measure": {"flow": "rfc8867", "phase": "all", "metric": "rate_to_target_ratio"}},
     "range": [0.8, 1.2], **WHY},
    {"id": "missing", "source": "S", "says": "x", "studies": ["t-never"], "study_file": "studies/x-quick.yaml",
     "ray": True, "kind": "range", "points": ["*"], "measure": QUEUE, "range": [0, 1], **WHY},
]}


@pytest.fixture(scope="module")
def page(studies: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("page")
    claims = tmp / "claims.yaml"
    claims.write_text(json.dumps(CLAIMS))  # YAML is a superset of JSON
    md, htm = tmp / "findings.md", tmp / "findings.html"
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", *map(str, studies.values()), "--claims",
                        str(claims), "--out", str(md), "--html", str(htm)], capture_output=True, text=True, cwd=tmp)
    assert r.returncode == 0, r.stderr
    _, found, _ = findings.findings(list(studies.values()), claims)
    return {"md": md.read_text(), "html": htm.read_text(), "found": {f.claim["id"]: f for f in found},
            "stdout": r.stdout}


def ci(values: list[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    hw = T975[n - 1] * sd / math.sqrt(n)
    return mean, mean - hw, mean + hw


def test_range_verdicts_against_hand_computed_intervals(page: dict[str, Any]) -> None:
    f = page["found"]["range"]
    rows = {r.point: r for r in f.rows}
    # agree: 12 ± t(2) 2 / sqrt 3 = [7.03, 16.97] inside [0, 50]; deviate: [95.03, 108.97] outside; straddle:
    # 50 ± t(2) 10 / sqrt 3 = [25.2, 74.8] across 50.
    for point, values, verdict in (("agree", [10, 12, 14], "agrees"), ("deviate", [100, 102, 104], "deviates"),
                                   ("straddle", [40, 50, 60], "inconclusive")):
        mean, lo, hi = ci(values)
        assert rows[point].value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi),
                                     "n": 3}
        assert rows[point].verdict == verdict
    # one valid run, four INVALID attempts, two repetitions without a valid run: counted, no interval, inconclusive.
    one = rows["one"]
    assert one.value == {"mean": 5.0, "lo": None, "hi": None, "n": 1}
    assert (one.a["attempts"], one.a["invalid_attempts"], one.a["missing"]) == (5, 4, 2)
    assert one.verdict == "inconclusive" and "n = 1" in one.why
    assert f.verdict == "deviates"  # any point deviating makes the claim deviate


def test_accepted_invalid_runs_are_counted_and_never_evidence(page: dict[str, Any]) -> None:
    r = page["found"]["accepted"].rows[0]
    # aggregate --accept-invalid used repetition 3's last attempt (14 ms): 10, 12, 14 would agree, but it is INVALID.
    assert r.a["invalid_used"] == 1 and r.a["invalid_attempts"] == 2 and r.a["stat"]["n"] == 3
    assert r.verdict == "inconclusive" and "INVALID" in r.why
    assert page["found"]["accepted"].verdict == "inconclusive"


def ols_over_runs(xy: list[tuple[float, float]]) -> tuple[float, float, int]:
    """The textbook least-squares slope of y on x over every run's own (x, y) and its standard error (N - 2 df)."""
    n = len(xy)
    mx, my = sum(x for x, _ in xy) / n, sum(y for _, y in xy) / n
    sxx = sum((x - mx) ** 2 for x, _ in xy)
    b = sum((x - mx) * (y - my) for x, y in xy) / sxx
    a = my - b * mx
    s2 = sum((y - a - b * x) ** 2 for x, y in xy) / (n - 2)
    return b, math.sqrt(s2 / sxx), n - 2


def test_trend_is_the_slope_of_a_fit_over_every_run(page: dict[str, Any]) -> None:
    # two points of 3 runs: 5, 6, 7 at x = 5 and 20, 21, 22 at x = 50; slope 15 / 45, df 4.
    f = page["found"]["trend"]
    assert f.study is not None and f.study.name == "t-trend"  # the first study name given wins, then the next
    b, se, df = ols_over_runs([(5, 5), (5, 6), (5, 7), (50, 20), (50, 21), (50, 22)])
    assert df == 4 and b == pytest.approx(1 / 3)
    assert f.fit is not None and f.fit["slope"] == pytest.approx(b) and f.fit["df"] == 4
    assert f.fit["ci95_half_width"] == pytest.approx(T975[4] * se)
    assert f.verdict == "agrees" and f"slope {b:.4g} per unit of duration_s" in f.note
    assert [(r.point, r.x) for r in f.rows] == [("target-5", 5.0), ("target-50", 50.0)]
    assert page["found"]["trend-down"].verdict == "deviates"


def test_trend_uses_every_point_on_a_log_scale_with_unequal_n(page: dict[str, Any]) -> None:
    # 10, 12, 11 at 5; 7, 9 at 25; 4 at 100 (n = 3, 2, 1): the same slope and interval as a least-squares fit over
    # the six runs' own values against log10 x, computed here from the runs, not from the points' statistics.
    f = page["found"]["sweep"]
    runs = [(5, 10), (5, 12), (5, 11), (25, 7), (25, 9), (100, 4)]
    b, se, df = ols_over_runs([(math.log10(x), y) for x, y in runs])
    from rtclab.study.tdist import t_quantile
    hw = t_quantile(0.975, df) * se
    assert f.fit is not None and (f.fit["n_runs"], f.fit["n_points"], f.fit["df"]) == (6, 3, 4)
    assert f.fit["slope"] == pytest.approx(b) and f.fit["ci95_half_width"] == pytest.approx(hw)
    assert b + hw < 0 and f.verdict == "agrees"  # falling, its interval wholly below 0
    assert "per decade of duration_s" in f.note and "over 6 runs at 3 points (4 df)" in f.note
    # last - first alone would ignore target-25; the fit does not: moving it moves the slope
    assert ols_over_runs([(math.log10(x), y + (5 if x == 25 else 0)) for x, y in runs])[0] != pytest.approx(b)


def test_the_decision_rules_one_function_per_kind() -> None:
    unit, nonneg = verdicts.UNIT_INTERVAL, verdicts.NON_NEGATIVE
    # range: clipped to the natural bounds before it is judged
    assert verdicts.decide_range(-0.001, 0.003, (0, 0.01), unit) == "agrees"
    assert verdicts.decide_range(-0.001, 0.003, (0, 0.01)) == "inconclusive"  # unbounded: it straddles 0
    assert verdicts.decide_range(0.95, 1.02, (0.9, 1.0), unit) == "agrees"
    assert verdicts.decide_range(0.85, 1.02, (0.9, 1.0), unit) == "inconclusive"
    assert verdicts.decide_range(1.1, 1.3, (0.9, 1.0), nonneg) == "deviates"
    assert verdicts.decide_range(None, 1.0, (0, 1)) == "inconclusive"
    assert verdicts.clip(-0.2, 1.4, unit) == (0.0, 1.0, True) and verdicts.clip(0.1, 0.2, unit) == (0.1, 0.2, False)
    assert verdicts.clip(1.2, 1.4, unit) == (1.0, 1.0, True)  # wholly past a bound: onto it
    # difference: open ends
    assert verdicts.decide_difference(0.5, 2.0, (0, None)) == "agrees"
    assert verdicts.decide_difference(-0.5, 2.0, (0, None)) == "inconclusive"
    assert verdicts.decide_difference(-2.0, -0.5, (0, None)) == "deviates"
    assert verdicts.decide_difference(-2.0, -0.5, (None, 0)) == "agrees"
    assert verdicts.decide_difference(-0.05, 0.05, (-0.1, 0.1)) == "agrees"
    # trend: the slope's interval against the direction
    assert verdicts.decide_trend(0.1, 0.3, "increasing") == "agrees"
    assert verdicts.decide_trend(0.1, 0.3, "decreasing") == "deviates"
    assert verdicts.decide_trend(-0.1, 0.3, "decreasing") == "inconclusive"
    assert verdicts.decide_trend(None, None, "increasing") == "inconclusive"
    # a claim's own rule
    claim = {"kind": "range", "range": [0, 0.01], "measure": {"flow": "forward:video", "metric": "loss_ratio_bytes"}}
    assert verdicts.decide(claim, -0.001, 0.003) == "agrees"


def test_natural_bounds_clip_the_interval_on_the_page(page: dict[str, Any]) -> None:
    # loss 0, 0, 0.003: 0.001 ± t(2) 0.00173 / sqrt 3 reaches below 0; clipped to [0, hi], inside [0, 0.01]
    r = page["found"]["loss-bounds"].rows[0]
    mean, lo, hi = ci([0.0, 0.0, 0.003])
    assert lo < 0 and r.clipped and r.value == {"mean": pytest.approx(mean), "lo": 0.0, "hi": pytest.approx(hi),
                                                 "n": 3}
    assert r.verdict == "agrees"
    # Jain's index 0.98, 0.99, 1.0: the interval's top passes 1, clipped to 1, inside [0.9, 1]
    r = page["found"]["jain-bounds"].rows[0]
    mean, lo, hi = ci([0.98, 0.99, 1.0])
    assert hi > 1 and r.clipped and r.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": 1.0,
                                                "n": 3}
    assert r.verdict == "agrees"
    assert f"| jain | all | {mean:.4g} | [{lo:.4g}, 1] (clipped) | 3 |" in page["md"]
    assert verdicts.RULES["bounds"] in page["md"] and "Natural bounds of the measure: [0, 1]." in page["md"]


def test_a_difference_between_two_points_of_one_study(page: dict[str, Any]) -> None:
    # deviate - agree = 90; sd 2, n 3 each: Welch df 4, half-width t(4) sqrt(8/3); above 0 agrees, below 0 deviates.
    f = page["found"]["pair-up"]
    hw = T975[4] * math.sqrt(8 / 3)
    assert [r.point for r in f.rows] == ["deviate - agree"]  # the pair the study lacks is skipped
    assert f.rows[0].value == {"mean": pytest.approx(90.0), "lo": pytest.approx(90 - hw), "hi": pytest.approx(90 + hw),
                               "n": None}
    assert f.verdict == "agrees" and page["found"]["pair-down"].verdict == "deviates"
    assert "| deviate - agree | all | 12 | 102 | 90 |" in page["md"]
    assert "B - A >= 0" in page["md"] and "B - A <= 0" in page["md"]


def test_difference_of_two_studies(page: dict[str, Any]) -> None:
    # B - A = 1; sd 2 and n 3 each: se = sqrt(8/3), df 4: 1 ± 4.53 inside [-10, 10].
    r = page["found"]["backends"].rows[0]
    hw = T975[4] * math.sqrt(8 / 3)
    assert r.value == {"mean": pytest.approx(1.0), "lo": pytest.approx(1 - hw), "hi": pytest.approx(1 + hw),
                       "n": None}
    assert r.verdict == "agrees" and page["found"]["backends"].verdict == "agrees"


def test_per_run_measures_cross_traffic_flow_and_priority_share(page: dict[str, Any]) -> None:
    # the busiest flow to item 0's port (5300, from the manifest), not its control connection nor item 1's flow
    rate = page["found"]["prio-rate"].rows[0]
    mean, lo, hi = ci([1.9e6, 2.0e6, 2.1e6])
    assert rate.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi), "n": 3}
    assert rate.verdict == "agrees"  # 2e6 ± t(2) 1e5 / sqrt 3 = [1.75, 2.25] Mbit/s, inside [1.6, 2.4]
    share = page["found"]["share"].rows[0]
    mean, lo, hi = ci([0.78, 0.80, 0.82])
    assert share.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi), "n": 3}
    assert share.verdict == "agrees"


def test_rate_to_reachable_target_lowers_the_target_to_the_encoders_cap(page: dict[str, Any]) -> None:
    # Per run: rates 0.95, 1.55, x, 0.1 Mbit/s against targets 1, 2.5, 2.5 Mbit/s and none; the encoder's cap
    # 1.5 Mbit/s. Raw: (0.95 + 1.55 + x) / 6; reachable: (0.95 + 1.55 + x) / (1 + 1.5 + 1.5).
    r = page["found"]["reachable"].rows[0]
    adjusted = [(2.5e6 + x) / 4e6 for x in (1.4e6, 1.5e6, 1.6e6)]
    raw = [(2.5e6 + x) / 6e6 for x in (1.4e6, 1.5e6, 1.6e6)]
    mean, lo, hi = ci(adjusted)
    assert r.a["values"] == pytest.approx(adjusted)
    assert r.value == {"mean": pytest.approx(mean), "lo": pytest.approx(lo), "hi": pytest.approx(hi), "n": 3}
    assert r.verdict == "agrees"  # 1.0 ± 0.12: the flow at its cap is at its target
    assert r.beside is not None and r.beside["a"]["stat"]["mean"] == pytest.approx(sum(raw) / 3)  # raw: 0.67
    rmean, rlo, rhi = ci(raw)
    assert f"| {mean:.4g} | [{lo:.4g}, {hi:.4g}] | 3 | 0 INVALID of 3 attempts | {rmean:.4g} [{rlo:.4g}, {rhi:.4g}] " \
        "| agrees |" in page["md"]
    # the definition alone: a second call, each flow capped by its own call; a call without a cap: no value
    rfc = {"flows": [{"name": "c1", "rate_bps": [1e6, 1e6], "target_bps": [2e6, 2e6]},
                     {"name": "c2", "rate_bps": [5e5, None], "target_bps": [2e6, None]}]}
    assert findings.rate_to_reachable_target(rfc, {"c1": 1e6, "c2": 2e6}) == pytest.approx((1.0 + 0.25) / 2)
    assert findings.rate_to_reachable_target(rfc, {"c1": 1e6, "c2": None}) is None
    assert findings.encoder_caps({"calls": [{"id": "c1", "max_bitrate_kbps": 1500, "tracks": [
        {"id": "v1", "max_bitrate_kbps": None}, {"id": "v2", "max_bitrate_kbps": 500}]}]}) == {"c1": 2e6}


def test_a_measure_that_matches_nothing_is_named_never_a_value(page: dict[str, Any],
                                                                 studies: dict[str, Path]) -> None:
    # The thesis' old selector: a TCP flow's dscp in the flow table is its SYN's (0), so dscp 46 matches nothing.
    r = page["found"]["prio-where"].rows[0]
    assert r.value is None and r.verdict == "inconclusive"
    assert r.why == "the measure matches nothing: the measure found no value in any of the 3 run(s) read"
    # a phase the point does not have (no cross traffic there)
    r = page["found"]["no-phase"].rows[0]
    assert r.verdict == "inconclusive" and r.why == "the measure matches nothing: forward:video has no phase " \
        "cross_traffic"
    read = {s.name: s for s in (findings.read_study(d) for d in studies.values())}
    claims = {c["id"]: c for c in CLAIMS["claims"]}
    assert findings.unmatched_selectors(claims["prio-where"], read) == [
        "t-perrun marking: the measure found no value in any of the 3 run(s) read"]
    assert findings.unmatched_selectors(claims["no-phase"], read) == ["t-range agree: forward:video has no phase "
                                                                      "cross_traffic"]
    assert findings.unmatched_selectors(claims["prio-rate"], read) == []
    # a point pattern or a pair the study does not have
    assert findings.unmatched_selectors({**claims["range"], "points": ["nothing-*"]}, read) == [
        "t-range: no point matches nothing-*"]
    assert findings.unmatched_selectors(claims["pair-up"], read) == ["t-range: no pair of points agree / absent"]
    # ... which a quick variant (a later name in `studies`) may lack, as long as one pair is there
    assert findings.unmatched_selectors({**claims["pair-up"], "studies": ["t-full", "t-range"]}, read) == []


def test_every_shipped_claim_matches_something_in_the_archived_studies() -> None:
    """A claim whose selector (points, pairs, flow, phase, per-run selector) matches nothing in an archived study it
    reads fails here, naming it: such a claim would otherwise read "no value" for ever."""
    doc = findings.load_claims(findings.DEFAULT_CLAIMS)
    read = {s.name: s for s in (findings.read_study(d) for d in archive.study_dirs())}
    problems = {c["id"]: p for c in doc["claims"] if (p := findings.unmatched_selectors(c, read))}
    assert problems == {}


def test_unreadable_manifests_are_counted_and_named_on_the_page(tmp_path: Path) -> None:
    out = make_study(tmp_path, "t-manifest", {"p": [ok(queue_ms=1, loss=0.0), ok(queue_ms=2, loss=0.0)]})
    (studydir.attempt_dir(out, "p", 1, 1) / "manifest.json").write_text("{not json")
    (studydir.attempt_dir(out, "p", 2, 1) / "manifest.json").unlink()
    s = findings.read_study(out)
    assert s.prov.runs_without_manifest == 2
    text = "\n".join(provenance.markdown(s.name, "x", s.prov, 2, 0, []))
    assert "2 without a readable manifest.json (runs/p/1-1: Expecting property name enclosed in double quotes" in text
    assert "runs/p/2-1: No such file or directory): the lines below leave them out" in text
    assert str(tmp_path) not in text.split("- command:")[0]  # the reasons name no machine path


def test_a_study_not_given_is_not_run_with_its_commands(page: dict[str, Any]) -> None:
    f = page["found"]["missing"]
    assert f.verdict == "not run" and f.rows == []
    md = page["md"]
    assert "    rtclab study run studies/x-quick.yaml" in md
    assert "    rtclab study run studies/x-quick.yaml --ray HEAD:6379" in md
    assert re.search(r"^missing +not run$", page["stdout"], re.M)


def test_the_markdown_page(page: dict[str, Any], studies: dict[str, Path]) -> None:
    md = page["md"]
    counts = {v: sum(1 for f in page["found"].values() if f.verdict == v)
              for v in ("agrees", "deviates", "inconclusive", "not run")}
    assert (f"{len(CLAIMS['claims'])} claims: {counts['agrees']} agree, {counts['deviates']} deviate, "
            f"{counts['inconclusive']} inconclusive, {counts['not run']} not run.") in md
    for rule in verdicts.RULES.values():  # the rule is written on the page
        assert rule in md
    # no why entry in these claims: each deviation says it is not studied yet, and the top names them all
    deviations = [i for i, f in page["found"].items() if f.verdict == "deviates"]
    assert deviations and f"Of the {len(deviations)} deviations, 0 have a why" in md
    assert f"not studied yet: {', '.join(deviations)}." in md
    for i in deviations:
        assert "\nWhy: not studied yet: no entry" in md.split(f"\n### {i}\n", 1)[1].split("\n### ", 1)[0]
    mean, lo, hi = ci([10, 12, 14])
    assert f"| agree | all | {mean:.4g} | [{lo:.4g}, {hi:.4g}] | 3 | 0 INVALID of 3 attempts | agrees |" in md
    assert "| one | all | 5 | - | 1 | 4 INVALID of 5 attempts, 2 rep. without a valid run | inconclusive (n = 1 < 2" \
        in md
    # every study given, with its Chromium, commit, backend and the command that makes it again (provenance: the
    # details in test_provenance.py)
    for d in studies.values():
        block = md.split(f"### `{d.name}`\n", 1)[1].split("\n### ", 1)[0]
        assert f"read from `{d}`" in block and CHROMIUM in block and COMMIT[:12] in block and "userspace" in block
        assert f"- command: `rtclab study run {d.parent / d.name}.yaml && " in block
        assert f"&& rtclab study archive results/studies/{d.name}`" in block
    accepted = md.split(f"### `{studies['accepted'].name}`\n", 1)[1].split("\n### ", 1)[0]
    assert "--accept-invalid host_cpu_not_saturated" in accepted and "runs used 3 (1 INVALID among them)" in accepted


def test_the_html_dashboard(page: dict[str, Any]) -> None:
    text = page["html"]
    payload = re.search(r'<script id="figures" type="application/json">(.*?)</script>', text, re.S)
    assert payload
    figs = json.loads(payload.group(1).replace("<\\/", "</"))
    ids = [f["id"] for f in figs]
    with_values = [i for i, f in enumerate(page["found"].values()) if any(r.value for r in f.rows)]
    assert ids == [f"claim-{i}" for i in with_values]
    bars = figs[0]["fig"]["data"][0]
    assert bars["x"] == ["agree", "deviate", "straddle", "one"]
    assert bars["y"] == pytest.approx([12, 102, 50, 5])
    assert figs[0]["fig"]["layout"]["shapes"][0]["y0"] == 0 and figs[0]["fig"]["layout"]["shapes"][0]["y1"] == 50
    assert "inconclusive" in text and "not run" in text and "<script>" in text and "http" not in \
        re.sub(r"<script>.*?</script>", "", text, flags=re.S).split("<h2>The page</h2>")[0]


def test_the_shipped_claims_file_is_valid_and_names_existing_study_files() -> None:
    doc = findings.load_claims(findings.DEFAULT_CLAIMS)
    ids = [c["id"] for c in doc["claims"]]
    assert len(ids) == len(set(ids))
    for c in doc["claims"]:
        for f in (c["study_file"], c.get("against_file")):
            if f:
                assert (REPO / f).exists(), (c["id"], f)
    # the reference studies' statements (issue 30: Carlucci 2016 (a), (b), (c) in the statistic the paper used) and
    # every RFC 8867 case built (studies/rfc8867/README.md) have a claim
    for needed in ("c16a-loss-droptail", "c16a-loss-aqm", "c16a-loss-codel-most", "c16a-median-queuing-delay",
                   "c16a-p95-queuing-delay", "c16a-utilisation", "c16b-codel-loss", "c16b-codel-utilisation",
                   "c16b-codel-queuing-delay", "c16b-pie-loss-large-targets", "c16b-pie-delay-smallest-near-default",
                   "c16c-fair-share", "c16c-droptail-queuing-delay", "c16c-droptail-loss", "c16c-aqm-loss",
                   "c16c-codel-loss-grows", "c16c-pie-loss-grows", "c16c-fq_codel-loss-grows", "c16c-sfq-least-loss",
                   "coupled-priority-split", "thesis-ecn-marking-rate", "rfc8867-5.1", "rfc8867-5.2", "rfc8867-5.3",
                   "rfc8867-5.4", "rfc8867-5.6", "rfc8867-6.1", "rfc8867-6.1-coupled", "rfc8867-6.2-rate",
                   "backends-fair-share", "backends-queuing-delay"):
        assert needed in ids
    by_id = {c["id"]: c for c in doc["claims"]}
    # a percentile claim judges a percentile; comparisons are differences; a claim about TCP reads the TCP phase
    assert by_id["c16a-p95-queuing-delay"]["measure"]["metric"] == "queuing_delay_ms_p95"
    assert by_id["c16a-median-queuing-delay"]["measure"]["metric"] == "queuing_delay_ms_p50"
    assert by_id["rfc8867-5.3"]["pairs"] == [["reference", "congested-feedback"]]
    assert by_id["rfc8867-6.1"]["points"] == ["uncoupled"] and by_id["rfc8867-6.1-coupled"]["points"] == ["coupled"]
    for c in doc["claims"]:
        # (RFC 8867's own metrics count the TCP flows in each window's fair share: no phase to pick)
        rfc = "rfc8867" in c["measure"] or c["measure"].get("flow") == "rfc8867"
        if ("TCP" in c["says"] or "CUBIC" in c["says"]) and not rfc:
            assert c["measure"].get("phase") == "cross_traffic", c["id"]
        # every pair exists in the claim's full study (its study file's quick_of, or the file itself)
        f = REPO / c["study_file"]
        full = (yaml.safe_load(f.read_text()) or {}).get("quick_of")
        st = spec.load(f.parent / full["file"] if full else f)
        assert st.name == c["studies"][0], c["id"]
        points = {p.name for p in st.points}
        for a, b in c.get("pairs") or []:
            assert a in points and b in points, (c["id"], a, b)
    _, found, _ = findings.findings([], findings.DEFAULT_CLAIMS)
    assert {f.verdict for f in found} == {"not run"}


def test_a_bad_claims_file_exits_2(tmp_path: Path) -> None:
    bad_file = tmp_path / "c.yaml"
    bad_file.write_text("claims:\n  - {id: x, kind: guess}\n")
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", "--claims", str(bad_file), "--out",
                        str(tmp_path / "f.md")], capture_output=True, text=True)
    assert r.returncode == 2 and "x: no source" in r.stderr and "kind must be one of" in r.stderr
    bad_file.write_text(json.dumps({"claims": [
        {"id": "r", "source": "S", "says": "s", "studies": ["a"], "study_file": "f", "kind": "range", "points": ["*"],
         "measure": QUEUE, "range": [0, 1]},
        {"id": "t", "source": "S", "says": "s", "studies": ["a"], "study_file": "f", "kind": "trend",
         "direction": "increasing", "points": ["*"], "measure": QUEUE},
        {"id": "d", "source": "S", "says": "s", "studies": ["a"], "study_file": "f", "kind": "difference",
         "pairs": [["a", "b"]], "measure": {"share": "c1/v1", "flow": "x"}, "range": [None, None], **WHY}]}))
    with pytest.raises(findings.FindingsError) as e:
        findings.load_claims(bad_file)
    assert "r: no band_why" in str(e.value) and "t: a trend claim needs x" in str(e.value)
    assert "d: the measure needs exactly one of" in str(e.value) and "d: a difference claim needs range" in str(e.value)
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", str(tmp_path), "--out",
                        str(tmp_path / "f.md")], capture_output=True, text=True)
    assert r.returncode == 2 and "no plan.json" in r.stderr
