"""`rtclab import eventlog FILE` (rtclab/imports/eventlog.py, docs/eventlog.md "Importing a field call's log"): a real
Chromium's event log (the parser's fixture, analysis/test/data/eventlog-chromium156-a.log) made into a run directory
marked imported, whose controller section is the analyzer's and whose n_dd is what an independent count of the
log's estimates gives over the call window; the report says that every capture-based section has no captures."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from rtclab import cli
from rtclab.eventlog import parser
from rtclab.imports.eventlog import CAPTURE_SECTIONS

REAL_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-a.log"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def count_n_dd(log: parser.EventLog, start_ms: float, end_ms: float) -> int:
    """Delay-based decreases (docs/metrics.md `controller.n_dd`), counted one update at a time: a delay-based update
    inside the window below the previous delay-based estimate and below the loss-based one logged last before it."""
    d, lo = log.delay_based, log.loss_based
    loss = list(zip(lo["time_ms"].tolist(), lo["bitrate_bps"].tolist()))
    n = 0
    for i in range(1, len(d["time_ms"])):
        t, bps, prev = float(d["time_ms"][i]), float(d["bitrate_bps"][i]), float(d["bitrate_bps"][i - 1])
        bound = [b for lt, b in loss if lt < t]
        if start_ms <= t <= end_ms and bps < prev and (not bound or bps < bound[-1]):
            n += 1
    return n


def log_span_ms(log: parser.EventLog) -> tuple[float, float]:
    times = [float(x) for col in (log.outgoing_rtp["time_ms"], log.delay_based["time_ms"], log.loss_based["time_ms"])
             for x in (col[0], col[-1]) if len(col)]
    return min(times), max(times)


def test_the_imported_runs_n_dd_is_the_logs_own_count(tmp_path: Path) -> None:
    out = tmp_path / "field"
    code, stdout, err = run_cli("import", "eventlog", str(REAL_LOG), "--out", str(out))
    assert code == 0, err
    doc = json.loads((out / "imported.json").read_text())
    log = parser.read(REAL_LOG)
    start, end = log_span_ms(log)
    cc = doc["congestion_controller"]
    want = count_n_dd(log, start, end)
    assert want > 0 and cc["n_dd"] == cc["sides"]["a"]["controller"]["n_dd"] == want
    assert doc["imported"]["captures"] is None and doc["imported"]["network_ground_truth"] is None
    w = doc["imported"]["call_window"]
    assert w["start_unix_s"] == pytest.approx((start + log.utc_offset_ms) / 1000)
    assert w["length_s"] == pytest.approx((end - start) / 1000)
    a = cc["sides"]["a"]
    # The estimate over time and the trendline replay, as a lab run's section has them (no join: no capture).
    assert a["series"]["target_bps"] and a["series"]["replay_m_ms"] and a["replay"]["updates"] > 0
    assert "join" not in a and (out / "eventlog-a.log").read_bytes() == REAL_LOG.read_bytes()
    report = (out / "report.txt").read_text()
    assert stdout.startswith(report)
    assert "IMPORTED" in report and f"n_dd {want} delay-based decreases" in report
    assert "trendline replay agrees" in report and "estimate over time" in report
    for what in CAPTURE_SECTIONS.values():
        assert f"{what}: none, this run is imported and has no captures" in report
    # The dashboard: the run dashboard's controller panels, drawn from the section's own series.
    page = (out / "dashboard.html").read_text()
    figures = json.loads(page.split('<script id="figures" type="application/json">', 1)[1].split("</script>", 1)[0])
    target = next(tr for f in figures for tr in f["fig"]["data"] if tr.get("name") == "target (lower of the two)")
    assert target["x"] == pytest.approx([p[0] for p in a["series"]["target_bps"]], abs=5e-4)
    assert target["y"] == pytest.approx([p[1] * 1e-6 for p in a["series"]["target_bps"]])
    assert any("Over-use detector at a" in f["fig"]["layout"]["title"]["text"] for f in figures)
    assert "IMPORTED" in page and "none, this run is imported" in page
    # The exports take lab runs; an imported one is named as such.
    for fmt in ("csv", "flent"):
        code, _, err = run_cli("export", fmt, str(out), "--out", str(tmp_path / f"x.{fmt}.gz"))
        assert code == 2 and "is an imported run" in err


def test_a_given_call_window_narrows_the_counts(tmp_path: Path) -> None:
    log = parser.read(REAL_LOG)
    start, end = log_span_ms(log)
    lo_ms, hi_ms = start + 5000, end - 5000
    to_unix = lambda ms: (ms + log.utc_offset_ms) / 1000
    code, _, err = run_cli("import", "eventlog", str(REAL_LOG), "--out", str(tmp_path / "w"),
                           "--call-start", repr(to_unix(lo_ms)), "--call-end", repr(to_unix(hi_ms)))
    assert code == 0, err
    doc = json.loads((tmp_path / "w" / "imported.json").read_text())
    assert doc["congestion_controller"]["n_dd"] == count_n_dd(log, lo_ms, hi_ms) < count_n_dd(log, start, end)
    assert doc["imported"]["call_window"]["length_s"] == pytest.approx((hi_ms - lo_ms) / 1000)


@pytest.mark.parametrize("case", ["not a log", "truncated to nothing", "no such file", "out not empty",
                                  "end before start"])
def test_what_cannot_be_imported_exits_2_naming_the_problem(tmp_path: Path, case: str) -> None:
    src, out, extra = REAL_LOG, tmp_path / "o", []
    if case == "not a log":
        src = tmp_path / "x.log"
        src.write_text("this is not an RTC event log\n")
    elif case == "truncated to nothing":
        src = tmp_path / "t.log"
        src.write_bytes(REAL_LOG.read_bytes()[:3])
    elif case == "no such file":
        src = tmp_path / "missing.log"
    elif case == "out not empty":
        out.mkdir()
        (out / "keep").write_text("x")
    else:
        extra = ["--call-start", "100", "--call-end", "50"]
    code, _, err = run_cli("import", "eventlog", str(src), "--out", str(out), *extra)
    assert code == 2 and err.startswith("rtclab import eventlog: "), err
    want = {"not a log": str(src), "truncated to nothing": str(src), "no such file": "no such file",
            "out not empty": "not an empty directory", "end before start": "is not after"}[case]
    assert want in err
    if case != "out not empty":
        assert not (out / "imported.json").exists()
