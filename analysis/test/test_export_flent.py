"""`rtclab export flent RUN` (rtclab/exports/flent.py, docs/export.md "Flent"): the file loads with Flent's own reader
(flent.resultset, the flent package requirements.lock pins) and its series are the run's: the call's receive rate
is metrics.json's RFC 8867 rate per window, its queuing delay the per-packet values whose mean metrics.json gives,
the TCP streams' rates what packets.parquet's arrivals give when binned here, independently."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from flent.resultset import ResultSet

from rtclab import cli, synth


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("flent")
    run = tmp / "run"
    synth.write_run(run, synth.SynthConfig(duration_s=12.0, tcp_flows=2, tcp_start_s=3.0, tcp_stop_s=9.0, seed=5))
    assert run_cli("analyze", str(run), "-q", "--no-tshark", "--no-dashboard")[0] == 0
    out = tmp / "run.flent.gz"
    code, stdout, err = run_cli("export", "flent", str(run), "--out", str(out))
    assert code == 0 and "tcp_nup" in stdout, err
    return run, out


def arrivals_per_window(run: Path, src: str, dst: str, t0_s: float, w: float, n: int) -> np.ndarray:
    """Link-layer bits per second received at b of one 5-tuple, in windows [t0 + k w, t0 + (k + 1) w): read from
    packets.parquet here, without the analyzer's code."""
    t = pq.read_table(run / "packets.parquet").to_pydict()
    m = json.loads((run / "metrics.json").read_text())
    ids = {f["id"] for f in m["flows"] if f["src"] == src and f["dst"] == dst}
    bits = np.zeros(n)
    for flow, status, t_recv, ip_len in zip(t["flow"], t["status"], t["t_recv_ns"], t["ip_len"]):
        if flow in ids and status in ("delivered", "unmatched") and t_recv is not None:
            k = int(np.floor((t_recv / 1e9 - t0_s) / w))
            if 0 <= k < n:
                bits[k] += (ip_len + 14) * 8
    return bits / w


def test_flent_loads_the_file_with_the_runs_metadata(exported: tuple[Path, Path]) -> None:
    run, out = exported
    m = json.loads((run / "metrics.json").read_text())
    rs = ResultSet.load_file(str(out))
    meta = rs.meta()
    tcp = [c for c in m["fairness"]["all"]["connections"] if c["role"] == "tcp"]
    assert meta["NAME"] == "tcp_nup" and meta["TEST_PARAMETERS"]["upload_streams"] == str(len(tcp)) == "2"
    assert meta["TITLE"].endswith(m["run"]["id"]) and meta["LENGTH"] == m["run"]["duration_s"]
    assert abs(rs.t0 - m["run"]["call_start"]) < 1e-6 and meta["STEP_SIZE"] == m["rfc8867"]["window_s"]
    assert len(rs.x_values) == m["rfc8867"]["windows"]
    names = set(rs.series_names)
    call = m["rfc8867"]["flows"][0]["name"]
    assert {f"WebRTC send rate::{call}", f"WebRTC receive rate::{call}", f"WebRTC queuing delay::{call}",
            "TCP upload::1", "TCP upload::2", "TCP upload sum"} <= names
    assert f"WebRTC RTT::{call}" in names and meta["RTCLAB_MISSING_SERIES"] == {}
    assert all(meta["SERIES_META"][n]["UNITS"] for n in names)


def test_flents_own_command_opens_the_file_as_its_test_and_summarises_every_series(exported: tuple[Path, Path]) -> None:
    """`flent -i FILE -f summary`: Flent loads the file, evaluates its test's configuration with the file's test
    parameters (tcp_nup: upload_streams) and summarises each series."""
    _, out = exported
    r = subprocess.run([sys.executable, "-m", "flent", "-i", str(out), "-f", "summary"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Summary of tcp_nup test run" in r.stdout
    for name in ResultSet.load_file(str(out)).series_names:
        line = next(x for x in r.stdout.splitlines() if x.strip().startswith(name + " "))
        assert "No data" not in line, line


def test_the_rtt_is_the_senders_getstats_series_and_missing_without_it(exported: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    run, out = exported
    m = json.loads((run / "metrics.json").read_text())
    rs = ResultSet.load_file(str(out))
    call = m["rfc8867"]["flows"][0]["name"]
    ssrc = next(f["ssrc"] for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video")
    want = m["getstats"]["directions"]["forward"]["series"][f"rtt_ms:video:{ssrc}"]
    raw = list(rs.raw_series(f"WebRTC RTT::{call}"))
    assert len(raw) == len(want) > 5
    assert [v for _, v in raw] == [v for _, v in want] and [x for x, _ in raw] == pytest.approx([t for t, _ in want])
    # A window's result: the mean of the samples in it.
    w = m["rfc8867"]["window_s"]
    for k, got in enumerate(rs.series(f"WebRTC RTT::{call}")):
        inside = [v for t, v in want if k * w <= t < (k + 1) * w]
        assert got == (pytest.approx(sum(inside) / len(inside)) if inside else None)
    # Without getStats the series is left out and the metadata says why: no line of zeros.
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("packets.parquet", "metrics.json"):
        (copy / name).write_bytes((run / name).read_bytes())
    m["getstats"]["directions"]["forward"]["series"] = {}
    (copy / "metrics.json").write_text(json.dumps(m))
    assert run_cli("export", "flent", str(copy), "--out", str(tmp_path / "x.flent.gz"))[0] == 0
    meta = ResultSet.load_file(str(tmp_path / "x.flent.gz")).meta()
    assert f"WebRTC RTT::{call}" not in meta["SERIES_META"]
    assert f"no rtt_ms series for SSRC {ssrc}" in meta["RTCLAB_MISSING_SERIES"][f"WebRTC RTT::{call}"]


def test_the_calls_receive_rate_is_the_analyzers_rfc8867_rate(exported: tuple[Path, Path]) -> None:
    run, out = exported
    m = json.loads((run / "metrics.json").read_text())
    rs = ResultSet.load_file(str(out))
    flow = m["rfc8867"]["flows"][0]
    got = np.array(rs.series(f"WebRTC receive rate::{flow['name']}")) * 1e6
    assert got == pytest.approx(np.array(flow["rate_bps"]), rel=1e-12)
    # What Flent plots: the raw values, on its time axis (seconds since T0) at the windows' centres.
    raw = list(rs.raw_series(f"WebRTC receive rate::{flow['name']}"))
    w = m["rfc8867"]["window_s"]
    assert [x for x, _ in raw] == pytest.approx([(k + 0.5) * w for k in range(len(got))], abs=1e-6)
    sent = np.array(rs.series(f"WebRTC send rate::{flow['name']}"))
    assert sent.sum() >= got.sum() / 1e6 > 0  # 1 % loss on the way


def test_the_queuing_delay_is_every_delivered_packets_own(exported: tuple[Path, Path]) -> None:
    run, out = exported
    m = json.loads((run / "metrics.json").read_text())
    rs = ResultSet.load_file(str(out))
    flow = m["rfc8867"]["flows"][0]
    raw = np.array([v for _, v in rs.raw_series(f"WebRTC queuing delay::{flow['name']}")])
    assert raw.mean() == pytest.approx(flow["queuing_delay_ms"]["mean"], rel=1e-9)
    assert np.percentile(raw, 95) == pytest.approx(flow["queuing_delay_ms"]["p95"], rel=1e-9)
    # A window's result is the mean of the packets sent in it; every window of this call has some.
    res = rs.series(f"WebRTC queuing delay::{flow['name']}")
    assert all(v is not None for v in res) and min(res) >= raw.min() and max(res) <= raw.max()


def test_the_tcp_streams_rates_are_their_arrivals(exported: tuple[Path, Path]) -> None:
    run, out = exported
    m = json.loads((run / "metrics.json").read_text())
    rs = ResultSet.load_file(str(out))
    tcp = [c for c in m["fairness"]["all"]["connections"] if c["role"] == "tcp"]
    w, n = m["rfc8867"]["window_s"], m["rfc8867"]["windows"]
    total = np.zeros(n)
    for i, c in enumerate(tcp, start=1):
        want = arrivals_per_window(run, c["src"], c["dst"], rs.t0, w, n)
        got = np.array(rs.series(f"TCP upload::{i}")) * 1e6
        assert got == pytest.approx(want, rel=1e-9, abs=1e-6)
        assert got[:2].sum() == 0 and got[4:8].min() > 0  # the streams run from 3 s to 9 s
        total += want
    assert np.array(rs.series("TCP upload sum")) * 1e6 == pytest.approx(total, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("case", ["not analysed", "bad name"])
def test_what_cannot_be_exported_exits_2_naming_the_problem(exported: tuple[Path, Path], tmp_path: Path,
                                                            case: str) -> None:
    run, _ = exported
    target, out = run, tmp_path / "x.flent.gz"
    if case == "not analysed":
        target = tmp_path / "r"
        target.mkdir()
    else:
        out = tmp_path / "x.json.gz"
    code, _, err = run_cli("export", "flent", str(target), "--out", str(out))
    want = "metrics.json missing" if case == "not analysed" else "ends in .flent.gz"
    assert code == 2 and want in err and not out.exists()
