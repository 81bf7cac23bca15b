"""The run directory as the analyzer reads it: the manifest's format version, its scenario (validated against
scenarios/schema.json, typed view, `python -m rtclab.scenario`), and `rtclab dashboard` rebuilding from the outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import inprocess
from rtclab import rundir
from rtclab.scenario import ScenarioError, to_json, view
from runbuild import MS, T0_NS, Run, scenario

ROOT = Path(__file__).resolve().parents[2]


def rtclab(*args: str) -> subprocess.CompletedProcess:
    """`rtclab ARGS...` in this process (test-support/inprocess.py); the refusal of a newer format starts the real
    command."""
    return inprocess.rtclab(*args)


def small_run(path: Path, **manifest_extra) -> None:
    run = Run()
    for i in range(150):
        t = T0_NS + i * 10 * MS
        run.rtp(t, [t + 20 * MS], seq=i, ts=i * 900)
    run.write(path, scenario(1.6, {"delay_ms": 20, "rate": {"kbit": 5000}}), manifest_extra=manifest_extra)


@pytest.mark.parametrize("version", [None, 1, 2, 3])
def test_format_versions_1_to_3_are_read(tmp_path, version):
    small_run(tmp_path, **({} if version is None else {"format_version": version}))
    r = rtclab("analyze", str(tmp_path), "--no-tshark", "--no-dashboard", "-q")
    assert r.returncode == 0, r.stderr
    assert rundir.load(tmp_path).format_version == (version or 1)


def test_a_newer_format_is_refused_naming_the_file_and_versions(tmp_path):
    small_run(tmp_path, format_version=4)
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(tmp_path), "--no-tshark", "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{tmp_path / 'manifest.json'}: format_version 4" in r.stderr and "reads 1, 2, 3" in r.stderr


def test_an_invalid_scenario_is_named_and_not_used(tmp_path):
    small_run(tmp_path)
    m = json.loads((tmp_path / "manifest.json").read_text())
    m["scenario"]["network"]["forward"]["delay_ms"] = -5
    (tmp_path / "manifest.json").write_text(json.dumps(m))
    r = rtclab("analyze", str(tmp_path), "--no-tshark", "--no-dashboard", "-q")
    assert r.returncode == 0
    assert "scenario field network.forward.delay_ms: -5 is less than the minimum of 0" in r.stdout
    out = json.loads((tmp_path / "metrics.json").read_text())
    video = next(f for f in out["flows"] if f["kind"] == "video")
    assert out["scenario"] is None and out["capacity_bps"] is None
    assert video["queuing_delay_ms"]["mean"] is None and video["queuing_delay_vs_min_owd_ms"]["mean"] is not None


def test_typed_view_of_a_normalised_scenario():
    doc = scenario(30, {"delay_ms": 12.5, "jitter_ms": 2, "loss_percent": 1, "qdisc": {"kind": "codel"},
                        "delay_schedule": [{"at_s": 12, "delay_ms": 40}],
                        "rate": {"schedule": [{"at_s": 10, "kbit": 500}, {"at_s": 0, "kbit": 2000}]}},
                   {"delay_ms": 7, "rate": {"kbit": 3000}},
                   cross=[{"flows": 3, "start_s": 5, "stop_s": 20, "direction": "reverse", "dscp": 10}])
    s = view(doc)
    assert to_json(s) == {
        "duration_s": 30,
        "forward": {"delay_ms": 12.5, "delay_schedule": [[12, 40]], "jitter_ms": 2, "loss_percent": 1,
                    "rate": {"schedule": [[0, 2000], [10, 500]]}, "qdisc_kind": "codel"},
        "reverse": {"delay_ms": 7, "delay_schedule": [], "jitter_ms": 0, "loss_percent": 0,
                    "rate": {"schedule": [[0, 3000]]}, "qdisc_kind": "fifo"},
        "hops": [],
        "cross_traffic": [{"kind": "tcp", "direction": "reverse", "flows": 3, "start_s": 5, "stop_s": 20,
                           "congestion_control": "cubic", "dscp": 10}],
        "first_call_delay_ms": None, "call_paths": []}
    assert s.round_trip_propagation_ms == 19.5
    # Time-weighted mean capacity over [5, 15): half at 2000 kbit/s, half at 500.
    assert s.forward.mean_capacity_bps(5, 15) == pytest.approx(1_250_000.0)


def test_scenario_command_prints_the_view_or_names_the_bad_field(tmp_path):
    good = tmp_path / "good.json"
    doc = scenario(10, {"delay_ms": 30, "rate": {"trace": "traces/lte.txt"}})
    good.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "rtclab.scenario", str(good)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == to_json(view(doc))
    assert json.loads(r.stdout)["forward"]["rate"] == {"trace": "traces/lte.txt", "trace_offset_ms": 0}  # absent: 0
    doc["cross_traffic"] = [{"kind": "tcp", "flows": 0}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    # Several files: a line each, in order, up to the first invalid one, which is named.
    r = subprocess.run([sys.executable, "-m", "rtclab.scenario", str(good), str(bad), str(good)], capture_output=True,
                       text=True)
    assert r.returncode == 2 and f"{bad}: " in r.stderr and "cross_traffic.0.flows" in r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [to_json(view(json.loads(good.read_text())))]
    with pytest.raises(ScenarioError, match="network.forward.rate"):
        view({"network": {"forward": {"rate": {"kbit": 5, "trace": "x"}}}})


def test_every_scenario_file_of_the_repository_validates():
    import yaml
    files = [ROOT / "scenarios" / "default.yaml", *sorted((ROOT / "scenarios" / "examples").glob("*.yaml"))]
    for f in files:
        view(yaml.safe_load(f.read_text()))


def test_dashboard_is_rebuilt_without_reading_the_captures(tmp_path):
    small_run(tmp_path)
    r = rtclab("analyze", str(tmp_path), "--no-tshark", "-q")
    assert r.returncode == 0, r.stderr
    before = (tmp_path / "dashboard.html").read_text()
    for p in (tmp_path / "capture-a.pcap", tmp_path / "capture-b.pcap", tmp_path / "dashboard.html"):
        p.unlink()
    r = rtclab("dashboard", str(tmp_path))
    assert r.returncode == 0, r.stderr
    after = (tmp_path / "dashboard.html").read_text()
    assert after == before  # the same page: the per-packet charts came from packets.parquet
    assert '"id":"owd"' in after and '"id":"cdf"' in after
    (tmp_path / "metrics.json").unlink()
    r = rtclab("dashboard", str(tmp_path))
    assert r.returncode == 2 and "metrics.json missing" in r.stderr


def test_the_ground_truth_events_are_the_emulators_own():
    """rundir.GTLOG_EVENTS names every `event` the bottleneck writes (netem/bottleneck/src/packet.rs `enum Event`), so
    a new drop kind cannot reach the analyzer as a bare number."""
    import re
    source = (ROOT / "netem/bottleneck/src/packet.rs").read_text()
    body = re.search(r"pub enum Event \{(.*?)\n\}", source, re.S).group(1)
    rust = {int(v): name for name, v in re.findall(r"^\s*(\w+) = (\d+),", body, re.M)}
    snake = {v: re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower()for v, n in rust.items()}
    assert set(snake) == set(rundir.GTLOG_EVENTS)
    for value, name in snake.items():
        assert rundir.GTLOG_EVENTS[value].replace("_", "") == name.replace("_", ""), (value, name)
