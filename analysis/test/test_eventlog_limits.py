"""Which estimate set the target (rtclab.eventlog.limits): hand-built event sequences whose limiter at each moment is
known by construction (every rule of limits.py once at least), the times and shares against an independent count,
the REMB reader on hand-made RTCP, a missing estimate shown as missing, and the real Chromium 156 fixture analysed
end to end."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from rtclab import metrics_schema, report
from rtclab.eventlog import analysis, gcc, limits, parser
from rtclab.study import aggregate, catalogue, metric_rows

N, O = parser.NORMAL, parser.OVERUSING  # noqa: E741 one letter each, for the tables below
DATA = Path(__file__).parent / "data"


def remb_packet(bps: int, rr_first: bool = False) -> bytes:
    """A REMB (PSFB, FMT 15) for one SSRC, optionally behind a receiver report with no blocks (a compound packet)."""
    exp = 0
    while bps >> exp >= 1 << 18:
        exp += 1
    mantissa = bps >> exp
    body = struct.pack("!II4sB", 0x1111, 0, b"REMB", 1) + bytes([(exp << 2) | (mantissa >> 16),
                                                                   (mantissa >> 8) & 0xFF, mantissa & 0xFF])
    body += struct.pack("!I", 0x2222)
    packet = struct.pack("!BBH", 0x80 | 15, 206, (4 + len(body)) // 4 - 1) + body
    rr = struct.pack("!BBHI", 0x80, 201, 1, 0x1111)
    return rr + packet if rr_first else packet


def make_log(delay, loss, probes=(), remb=()) -> parser.EventLog:
    """delay: (t, bps, state); loss: (t, bps); probes: successful results (t, bps) or failures (t, None);
    remb: (t, bps)."""
    a = lambda rows, i: np.array([r[i] for r in rows], dtype=np.int64)
    empty = {c: np.zeros(0, np.int64) for c in parser.RTP_COLUMNS}
    probes = list(probes)
    return parser.EventLog(
        version=2, utc_offset_ms=0, outgoing_rtp=empty, incoming_rtp=dict(empty),
        incoming_rtcp=[(t, remb_packet(b, rr_first=k % 2 == 1)) for k, (t, b) in enumerate(remb)], outgoing_rtcp=[],
        delay_based={"time_ms": a(delay, 0), "bitrate_bps": a(delay, 1), "state": a(delay, 2)},
        loss_based={"time_ms": a(loss, 0), "bitrate_bps": a(loss, 1), "fraction_loss": np.zeros(len(loss), np.int64),
                    "total_packets": np.zeros(len(loss), np.int64)},
        probe_clusters={k: np.zeros(0, np.int64) for k in ("time_ms", "id", "bitrate_bps", "min_packets", "min_bytes")},
        probe_results={"time_ms": np.array([t for t, _ in probes], dtype=np.int64),
                       "id": np.arange(len(probes), dtype=np.int64),
                       "bitrate_bps": np.array([b or 0 for _, b in probes], dtype=np.int64),
                       "failure": np.array([-1 if b else 3 for _, b in probes], dtype=np.int64)},
        alr={k: np.zeros(0, np.int64) for k in ("time_ms", "in_alr")})


# The sequence and, by construction, the limiter from each moment to the next (window 1000-6000 ms).
DELAY = [(1100, 300_000, N), (1500, 500_000, N), (2000, 520_000, N), (3000, 400_000, O), (4500, 700_000, N),
         (4800, 705_000, N), (5000, 710_000, N)]
LOSS = [(1000, 300_000), (1500, 500_000), (2400, 520_000), (3001, 400_000), (4500, 700_000), (4800, 705_000),
        (5000, 709_999), (5500, 600_000)]
PROBES = [(1499, 500_000), (4500, 800_000), (5200, None)]
REMB = [(3500, 300_000), (4000, 400_000), (4200, 2_000_000)]
EXPECTED = [
    (1000, 1100, "undetermined"),    # rule 1: a loss-based update, no delay-based one yet
    (1100, 1500, "delay_based"),     # rule 5: L == D, no probe near
    (1500, 2000, "probe"),           # rule 5: D set by the probe result logged 1 ms before it, with its rate
    (2000, 2400, "loss_based"),      # rule 4: D rose, L stayed below it
    (2400, 3000, "delay_based"),
    (3000, 3001, "undetermined"),    # rule 3: D fell at 3000, L followed at 3001 (a tick apart)
    (3001, 3500, "delay_based"),
    (3500, 4000, "receiver_limit"),  # rule 2: REMB below the target
    (4000, 4200, "undetermined"),    # rule 2: REMB equal to the target (within 1 bps)
    (4200, 4500, "delay_based"),     # a REMB above the target does not limit it
    (4500, 4800, "undetermined"),    # rule 5: a probe result at D's time with another rate, detector not overusing
    (4800, 5000, "delay_based"),
    (5000, 5500, "undetermined"),    # rule 6: L 1 bps below D (a rounding step); the failed probe changes nothing
    (5500, 6000, "loss_based"),
]


def sequence() -> parser.EventLog:
    return make_log(DELAY, LOSS, PROBES, REMB)


def test_remb_is_read_from_compound_packets():
    t, bps = limits.remb([(7, remb_packet(300_000)), (9, remb_packet(2_000_000, rr_first=True)),
                          (11, struct.pack("!BBHI", 0x80, 201, 1, 5))])
    # 300000 = 150000 << 1 and 2000000 = 250000 << 3: exact in REMB's 18-bit mantissa
    assert t.tolist() == [7, 9] and bps.tolist() == [300_000, 2_000_000]


def test_every_rule_on_a_sequence_known_by_construction():
    got = limits.bands(limits.steps(sequence()), 1000, 6000)
    assert got == [(float(a), float(b), name) for a, b, name in EXPECTED]


def independent_seconds(expected, lo, hi) -> dict[str, float]:
    """Counts each millisecond of [lo, hi) under the limiter the construction gives it."""
    out = {name: 0 for name in limits.LIMITERS}
    for ms in range(lo, hi):
        name = next(n for a, b, n in expected if a <= ms < b)
        out[name] += 1
    return {k: v / 1000 for k, v in out.items()}


def test_seconds_and_shares_per_phase_against_a_millisecond_count():
    phases = [("all", 0, 7000), ("cross_traffic", 2200, 4100)]
    s = limits.summary(sequence(), 1000, 6000, phases, lambda ms: (ms - 1000) / 1000)
    for name, lo, hi in (("all", 1000, 6000), ("cross_traffic", 2200, 4100)):
        ph = s["phases"][name]
        want = independent_seconds(EXPECTED, lo, hi)
        assert ph["seconds"] == pytest.approx(want, abs=1e-9)
        assert ph["window_s"] == pytest.approx((hi - lo) / 1000)
        assert sum(ph["share"].values()) == pytest.approx(1.0)
        assert ph["share"]["loss_based"] == pytest.approx(want["loss_based"] / ((hi - lo) / 1000))
    # The bands, in s since the call start (1000 ms here), cover the window without gap.
    bands = s["bands"]
    assert bands[0][0] == 0.0 and bands[-1][1] == 5.0
    assert all(x[1] == y[0] for x, y in zip(bands, bands[1:]))
    assert s["remb_messages"] == 3 and "acknowledged_rate" in s["not_determinable"]


def test_an_overusing_update_beside_a_probe_result_is_delay_based():
    # Over-use: delay_based_bwe.cc takes the decrease branch and ignores the probe's rate, even an equal one.
    for probe_bps in (900_000, 400_000):
        log = make_log([(100, 500_000, N), (200, 400_000, O)], [(100, 500_000), (200, 400_000)], [(200, probe_bps)])
        assert limits.bands(limits.steps(log), 100, 300) == [(100.0, 300.0, "delay_based")]


def test_a_missing_estimate_is_missing_not_zero():
    # No delay-based update at all: every moment undetermined, never counted as any estimate's.
    log = make_log([], [(100, 300_000)])
    s = limits.summary(log, 0, 1000, [("all", 0, 1000)], None)
    assert s["phases"]["all"]["seconds"]["undetermined"] == pytest.approx(1.0)
    assert s["phases"]["all"]["share"]["delay_based"] == 0.0
    assert s["bands"] is None and "clock" in s["bands_missing"]
    # An empty window has no share at all: null, not 0.
    empty = limits.summary(log, 500, 500, [("all", 500, 500)], None)
    assert set(empty["phases"]["all"]["share"].values()) == {None}


def test_the_real_chromium_log_end_to_end():
    path = DATA / "eventlog-chromium156-a.log"
    log = parser.read(path)
    first = float(min(log.delay_based["time_ms"][0], log.loss_based["time_ms"][0]))
    call_start_s = (first + log.utc_offset_ms) / 1000 - 0.5  # the call starts half a second before the first event
    call_end_s = call_start_s + 30
    side = analysis.side(path, None, 0, call_start_s, call_end_s, [("all", 0.0, 30.0), ("cross_traffic", 5.0, 12.0)])
    lim = side["limits"]
    window_s = (gcc.log_end_ms(log) + log.utc_offset_ms) / 1000 - call_start_s  # the log ends before the call does
    assert lim["window_s"] == pytest.approx(window_s)
    for name, ph in lim["phases"].items():
        assert sum(ph["share"].values()) == pytest.approx(1.0), name
        assert sum(ph["seconds"].values()) == pytest.approx(ph["window_s"]), name
    assert lim["phases"]["cross_traffic"]["window_s"] == pytest.approx(7.0)
    bands = lim["bands"]
    assert bands[0][0] == 0.0 and bands[-1][1] == pytest.approx(window_s, abs=1e-4)
    assert all(x[1] == y[0] for x, y in zip(bands, bands[1:]))
    assert bands[0][2] == "undetermined"  # no estimate before the first event
    # The bands and the seconds are one account: each limiter's band lengths sum to its seconds.
    for name, seconds in lim["phases"]["all"]["seconds"].items():
        assert sum(b - a for a, b, n in bands if n == name) == pytest.approx(seconds, abs=1e-3), name
    # The side, limits included, is what metrics.schema.json describes.
    side_schema = {"$ref": "#/$defs/eventLogSide", "$defs": metrics_schema.schema()["$defs"]}
    jsonschema.Draft202012Validator(side_schema).validate(json.loads(json.dumps(side)))
    # This log has probes that set the estimate, and no REMB (transport-wide feedback only).
    assert lim["phases"]["all"]["seconds"]["probe"] > 0 and lim["remb_messages"] == 0
    assert lim["phases"]["all"]["seconds"]["receiver_limit"] == 0.0
    # The report names each phase's shares.
    lines = report._controller_lines({"sides": {"a": side}})
    assert any(line.startswith("  target limited by (cross_traffic, 7.0 s): delay-based") for line in lines)


def test_study_rows_carry_each_phase_shares():
    share = {"delay_based": 0.5, "probe": 0.1, "loss_based": 0.3, "receiver_limit": 0.0, "undetermined": None}
    m = {"phases": [{"name": "all", "start_s": 0.0, "end_s": 30.0, "cross_traffic": False},
                    {"name": "cross_traffic", "start_s": 5.0, "end_s": 12.0, "cross_traffic": True}],
         "congestion_controller": {"sides": {"a": {"controller": {"n_dd": 3}, "limits": {"phases": {
             "all": {"share": share}, "cross_traffic": {"share": dict(share, probe=None)}}}}}}}
    rows = [r for r in metric_rows.run_rows(m) if r["flow"] == catalogue.LIMITS_FLOW]
    assert [r["phase"] for r in rows] == ["all", "cross_traffic"]
    assert rows[0]["limited_by_loss_based"] == 0.3 and rows[0]["limited_by_undetermined"] is None
    assert rows[1]["limited_by_probe"] is None and rows[1]["phase_cross_traffic"] is True
    assert aggregate.flow_family(catalogue.LIMITS_FLOW) == "limits"


def test_the_dashboard_draws_the_limiter_under_the_target():
    from rtclab import dashboard_panels
    ser = {"target_bps": [[0.0, 1e6], [2.0, 2e6]], "delay_based_bps": [[0.0, 1e6]], "loss_based_bps": [[0.0, 1e6]]}
    bands = [[0.0, 1.0, "undetermined"], [1.0, 2.0, "delay_based"], [2.0, 3.0, "loss_based"],
             [3.0, 4.0, "delay_based"]]
    m = {"run": {"duration_s": 4.0},
         "congestion_controller": {"sides": {"a": {"series": ser, "limits": {"bands": bands}}}}}
    title, unit, traces = dashboard_panels.controller_panels(m)[0]
    strips = {t["name"]: t for t in traces if t["name"].startswith("target limited by")}
    assert set(strips) == {"target limited by: undetermined", "target limited by: delay_based",
                           "target limited by: loss_based"}
    # One polygon per band, below zero: 6 % of the largest target (2 Mbit/s) high.
    delay = strips["target limited by: delay_based"]
    assert delay["x"] == [1.0, 1.0, 2.0, 2.0, 1.0, None, 3.0, 3.0, 4.0, 4.0, 3.0, None]
    assert min(y for y in delay["y"] if y is not None) == pytest.approx(-0.12) and max(
        y for y in delay["y"] if y is not None) == 0.0
    assert "strip below" in title and unit == "Mbit/s"


def test_the_study_report_shows_each_phase_shares_with_their_ci():
    from rtclab.study import report as study_report
    runs = [0.2, 0.4, 0.6]  # three runs' loss-based share in the phase
    stats = {f"limited_by_{x}": aggregate.summarise(runs if x == "loss_based" else []) for x in catalogue.LIMITERS}
    doc = {"points": [{"name": "p1", "phases": [{"name": "cross_traffic", "start_s": 5.0, "end_s": 12.0}],
                       "flows": {catalogue.LIMITS_FLOW: {"cross_traffic": stats}}}]}
    table = next(t for t in study_report.tables(doc, "cross_traffic") if "target" in t.title)
    assert table.title.startswith("phase cross_traffic (5-12 s of the call): which estimate set")
    assert table.head == ["point", "n", "delay-based", "probe", "loss-based", "receiver (REMB)", "undetermined"]
    # mean 0.4, sd 0.2, half-width t(0.975, 2) x 0.2 / sqrt(3) = 4.302653 x 0.115470 = 0.49683
    assert table.rows[0] == ["p1", "3", "-", "-", "0.4 ±0.4968", "-", "-"]
