"""Runs without a call (scenario `calls: []`, docs/run-directory.md): the network, captures and cross traffic alone.
Synthetic run directories (rtclab.synth) for the analyzer and a study of such runs; one real run (`real_calls`)
through the harness, its TCP rates and CE marks checked against tshark's reading of the capture at b."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import inprocess
from measures import measure, measure_run_timing
from rtclab import synth
from rtclab.study import studydir
from rtclab_study import plan as planmod
from rtclab_study import spec

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ecn_table", ROOT / "studies" / "thesis" / "ecn_table.py")
assert _spec and _spec.loader
ecn_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ecn_table)
CALL_SECTIONS = ("getstats", "multiflow", "chrome_ecn", "congestion_controller")


def analyse(run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtclab.cli", "analyze", str(run_dir), *extra],
                          capture_output=True, text=True, timeout=300)


def processes_left(run_dir: Path, run_id: str) -> list[str]:
    """The run's processes still alive: every process its cpu.jsonl recorded (pid and command name, so that a pid taken
    since by another process does not count; a zombie has exited), and any whose arguments name the run. Other runs'
    processes (a study's, another test's iperf3) are not this run's leftovers."""
    left = []
    for line in (run_dir / "cpu.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") != "process":
            continue
        try:
            stat = Path(f"/proc/{rec['pid']}/stat").read_text()
        except OSError:
            continue
        comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split(" ")[0]
        if comm == rec.get("comm") and state != "Z" and rec["pid"] != os.getpid():
            left.append(f"{rec['group']} {comm} (pid {rec['pid']}, state {state})")
    args = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return left + [a for a in args if run_id in a]


def nocall_config(seed: int = 1, **kw: Any) -> synth.SynthConfig:
    base: dict[str, Any] = dict(call=False, duration_s=10.0, tcp_flows=2, tcp_start_s=0.0, tcp_stop_s=None, seed=seed)
    return synth.SynthConfig(**{**base, **kw})


def test_a_run_without_a_call_is_analysed_without_call_sections(tmp_path: Path) -> None:
    d = tmp_path / "run"
    truth = synth.write_run(d, nocall_config())
    r = analyse(d, "--no-tshark")
    assert r.returncode == 0, r.stderr
    m = json.loads((d / "metrics.json").read_text())
    for key in CALL_SECTIONS:
        assert key not in m, key  # absent, not empty
    assert m["run"]["calls"] == 0
    assert m["inputs"]["getstats"] is None
    assert not any("getStats" in g for g in m["gaps"]), m["gaps"]
    skipped = [c for c in m["crosschecks"] if c["name"] == "getstats_and_rtp"]
    assert len(skipped) == 1 and skipped[0]["ok"] is None and "no call in this run" in skipped[0]["detail"]
    # Every forward flow is TCP, and its packet counts are the model's.
    fwd = [f for f in m["flows"] if f["direction"] == "forward"]
    assert {f["kind"] for f in fwd} == {"tcp"} and len(fwd) == 2
    assert sum(f["packets_sent"] for f in fwd) == truth.t_send_ns.size
    assert sum(f["packets_lost"] for f in fwd) == int(truth.lost.sum())
    # The fairness competitors are the two TCP flows, nothing of a call.
    roles = [c["role"] for c in m["fairness"]["all"]["connections"]]
    assert roles == ["tcp", "tcp"]
    text = (d / "report.txt").read_text()
    assert "no call in this run" in text
    assert "video" not in text
    assert "competitors: the scenario's forward TCP flows" in text
    assert "no call in this run" in (d / "dashboard.html").read_text()


def test_a_study_of_runs_without_a_call_aggregates_reports_and_renders(tmp_path: Path) -> None:
    """The flows it aggregates are the TCP flows and the bottleneck, per phase; no controller:a pseudo-flow."""
    f = tmp_path / "s.yaml"
    f.write_text("name: nocall-study\nbase:\n  duration_s: 10\n  calls: []\n  cross_traffic:\n"
                 "    - {kind: tcp, flows: 2, start_s: 2}\nrepetitions: 2\n"
                 "points:\n  - {name: p1, set: {}}\n  - {name: p2, set: {network.forward.delay_ms: 30}}\n")
    out = tmp_path / "out"
    planmod.write(planmod.make(spec.load(f)), out)
    seed = 40
    for point in ("p1", "p2"):
        for rep in (1, 2):
            seed += 1
            d = studydir.attempt_dir(out, point, rep, 1)
            synth.write_run(d, nocall_config(seed, tcp_start_s=2.0))
            r = inprocess.rtclab("analyze", str(d), "-q", "--no-tshark", "--no-dashboard")
            assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "aggregate", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "forward:tcp over the whole run" in r.stdout
    doc = json.loads((out / "study.json").read_text())
    for point in doc["points"]:
        assert point["n_runs"] == 2
        assert set(point["flows"]) == {"forward:tcp", "forward:tcp:2", "bottleneck", "cpu"}  # cpu: the runs' cpu.jsonl
        # No browser in a run without a call: no value (not 0 cores), in none of its runs.
        assert point["flows"]["cpu"]["all"]["cpu_chromium_a_cores"] == {
            "mean": None, "sd": None, "ci95_low": None, "ci95_high": None, "ci95_half_width": None, "n": 0}
        # Per phase: the whole run, before the cross traffic (no competitor) and during it.
        assert {"all", "before_cross_traffic", "cross_traffic"} <= set(point["flows"]["forward:tcp"])
        assert point["flows"]["bottleneck"]["cross_traffic"]["jain_index"]["n"] == 2
    table = pq.read_table(out / "study.parquet").to_pydict()
    assert "controller:a" not in set(table["flow"])
    # The study's numbers are the runs' own: the forward TCP flow's mean throughput over the whole run.
    got = doc["points"][0]["flows"]["forward:tcp"]["all"]["throughput_bps"]["mean"]
    runs = [json.loads((out / p / "metrics.json").read_text()) for p in doc["points"][0]["runs_used"]]
    busiest = [max((x for x in m["flows"] if x["direction"] == "forward" and x["kind"] == "tcp"),
                   key=lambda x: x["packets_sent"]) for m in runs]
    assert got == pytest.approx(float(np.mean([b["throughput_bps"]["mean"] for b in busiest])))
    rep = inprocess.rtclab("study", "report", str(out))
    assert rep.returncode == 0, rep.stderr
    assert "forward:tcp" in rep.stdout
    page = (out / "dashboard.html").read_text()
    assert "no call in this study" in page and "Received rate of the busiest forward TCP flow" in page
    assert "bars-queuing_delay_ms_mean" in page and "bars-tq_ms_mean" not in page


# ---- one real run without a call ---------------------------------------------------------------------------------

REAL_SCENARIO = """name: nocall-e2e
description: "two CUBIC flows, both ECN-capable, one of them DSCP 46, through CoDel with ECN at 8 Mbit/s; no call"
duration_s: 12
backend: userspace
network:
  forward:
    delay_ms: 10
    rate: { kbit: 8000 }
    qdisc: { kind: codel, target_ms: 5, interval_ms: 100, ecn: true }
  reverse:
    delay_ms: 10
calls: []
cross_traffic:
  - { kind: tcp, flows: 1, congestion_control: cubic, dscp: 46, ecn: true }
  - { kind: tcp, flows: 1, congestion_control: cubic, dscp: 0, ecn: true }
"""


def _tshark_forward_tcp(capture: Path) -> dict[int, dict[str, Any]]:
    """Per forward TCP connection (by client port) at capture-b, as tshark reads it: arrival times, frame lengths
    (link-layer bytes) and the ECN field of each packet."""
    r = subprocess.run(["tshark", "-r", str(capture), "-Y", "tcp && ip.src == 10.0.1.2 && ip.dst == 10.0.2.2",
                        "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "tcp.dstport",
                        "-e", "frame.len", "-e", "ip.dsfield.ecn"], capture_output=True, text=True, timeout=120,
                       check=True)
    flows: dict[int, dict[str, Any]] = {}
    for line in r.stdout.splitlines():
        t, sport, dport, length, ecn = line.split("\t")
        f = flows.setdefault(int(sport), {"dport": int(dport), "t": [], "len": [], "ce": 0})
        f["t"].append(float(t))
        f["len"].append(int(length))
        f["ce"] += int(ecn, 0) == 3
    return flows


def watch_namespaces(out: Path, done: threading.Event, seen: set[str], seen_chromium: list[str]) -> None:
    """Every process in the run's namespaces a and b while the run goes (until done), its program name into seen and
    any browser's command line into seen_chromium: a browser of a call runs there."""
    run_id = None
    while not done.is_set():
        try:
            run_id = run_id or json.loads((out / "manifest.json").read_text())["id"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
            continue
        for side in ("a", "b"):
            pids = subprocess.run(["ip", "netns", "pids", f"rtclab-{run_id}-{side}"], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                seen.add(args.split(" ", 1)[0].rsplit("/", 1)[-1])
                if "chrom" in args.lower():
                    seen_chromium.append(args)
        time.sleep(0.2)


def check_the_tcp_flows_against_tshark(out: Path) -> tuple[list[dict], dict[int, dict]]:
    """The run's metrics.json against tshark's reading of capture-b: no call section, the two iperf3 flows' rates
    and CE marks, the link filled, CE seen. Returns the forward TCP flows to the iperf3 servers and tshark's data
    connections by source port."""
    m = json.loads((out / "metrics.json").read_text())
    for key in CALL_SECTIONS:
        assert key not in m
    ours = [f for f in m["flows"] if f["direction"] == "forward" and f["protocol"] == "tcp"
            and f["dst"].endswith((":5201", ":5202"))]
    wire = _tshark_forward_tcp(out / "capture-b.pcap")
    data = {port: f for port, f in wire.items() if sum(f["len"]) > 1e6}  # iperf3's data connections, not control
    assert len(data) == 2, {p: sum(f["len"]) for p, f in wire.items()}
    for port, w in data.items():
        f = next(x for x in ours if int(x["src"].rsplit(":", 1)[1]) == port)
        tt = np.array(w["t"])
        # metrics.md: received link-layer bytes after the first over the arrivals' span.
        rate_bps = sum(w["len"][1:]) * 8 / (tt.max() - tt.min())
        assert f["throughput_bps"]["mean"] == pytest.approx(rate_bps, rel=0.01), (port, f["throughput_bps"], rate_bps)
        assert f["ecn"]["received"]["ce"] == pytest.approx(w["ce"], abs=3), (port, f["ecn"], w["ce"])
        assert f["ecn"]["ect_delivered"] > 0
    # Both flows share the 8 Mbit/s link: together they fill most of it.
    measure("nocall.real.tcp_sum_mbps",
            sum(f["throughput_bps"]["mean"] for f in ours if int(f["src"].rsplit(":", 1)[1]) in data) / 1e6, 3)
    assert sum(f["throughput_bps"]["mean"] for f in ours if int(f["src"].rsplit(":", 1)[1]) in data) > 0.7 * 8e6
    # CoDel with ECN marks instead of dropping: the flows saw CE, and the ground-truth log agrees with the capture.
    assert sum(w["ce"] for w in data.values()) > 0
    assert m["ground_truth"] is not None
    return ours, data


@pytest.mark.real_calls
def test_a_real_run_without_a_call(tmp_path: Path) -> None:
    """A 12 s run of two ECN-capable CUBIC flows through CoDel with ECN, no call: valid, no Chromium started, its
    TCP rates and CE marks as tshark reads them from capture-b, nothing left behind."""
    if shutil.which("tshark") is None:
        pytest.fail("tshark is needed (scripts/setup.sh installs it)")
    scenario = tmp_path / "nocall.yaml"
    scenario.write_text(REAL_SCENARIO)
    out = tmp_path / "run"
    seen_chromium: list[str] = []
    seen: set[str] = set()  # every program seen in the namespaces: the watch saw the run (iperf3 among them)
    done = threading.Event()

    watcher = threading.Thread(target=watch_namespaces, args=(out, done, seen, seen_chromium), daemon=True)
    watcher.start()
    t = time.monotonic()
    r = subprocess.run(["node", str(ROOT / "harness" / "cli.js"), "--scenario", str(scenario), "--out", str(out)],
                       capture_output=True, text=True, timeout=180, cwd=ROOT, env={**os.environ})
    done.set()
    watcher.join()
    wall_s = time.monotonic() - t
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete", r.stderr
    measure_run_timing("nocall.real", out)
    # Valid, or invalid by nothing but a release the host held back past the bound (a stall of the VM: the check is
    # right to fail the run, and it is not what this test is about; one run in many here had a 20.6 ms release).
    failed = {c["name"] for c in manifest["validity"]["checks"] if c["ok"] is False}
    assert failed <= {"bottleneck_lateness_bounded"}, json.dumps(manifest["validity"], indent=1)
    assert r.returncode == (0 if not failed else 3), r.stderr
    names = {c["name"] for c in manifest["validity"]["checks"]}
    assert {"host_cpu_not_saturated", "captures_complete", "bottleneck_alive", "cross_traffic_ran"} <= names
    assert not names & {"call_connected_in_time", "ice_pair_on_data_path", "video_decoded_a", "cpu_limited_a",
                        "event_log_complete", "dscp_marked"}
    assert manifest["calls"] == [] and manifest["scenario"]["calls"] == []
    assert manifest["versions"]["chromium"] is None
    assert seen_chromium == [], seen_chromium
    assert "iperf3" in seen, seen
    assert not list(out.glob("getstats-*")) and not list(out.glob("browser-*")) and not list(out.glob("eventlog-*"))
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    starts = [e for e in events if e["event"] == "call_start"]
    assert len(starts) == 1 and starts[0]["calls"] == 0
    assert [e for e in events if e["event"] == "call_end"][0]["calls"] == 0
    assert "no call in this run" in r.stdout + r.stderr  # the analyzer's report, printed by the CLI

    ours, data = check_the_tcp_flows_against_tshark(out)
    # The thesis' table (studies/thesis/ecn_table.py) from a study of this one run: item 0 (DSCP 46) is the priority
    # flow, item 1 the best effort.
    (tmp_path / "study.json").write_text(json.dumps({"points": [{"name": "p", "runs_used": ["run"]}], "runs": []}))
    [row] = ecn_table.table(tmp_path)
    prio = next(x for x in ours if x["dst"].endswith(":5201") and int(x["src"].rsplit(":", 1)[1]) in data)
    assert row["prio_rate_mean_kbit"] == pytest.approx(prio["throughput_bps"]["windows"]["0.15s"]["mean"] / 1e3)
    assert row["prio_ce_ratio"] == prio["ecn"]["ce_ratio"]
    assert "| p | 1 |" in ecn_table.markdown([row])
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"rtclab-{manifest['id']}-" not in left
    assert processes_left(out, manifest["id"]) == []
    print(f"no-call run: {wall_s:.1f} s wall, host CPU {manifest['host_cpu_busy_fraction'] * 100:.0f}%")


@pytest.mark.real_calls
@pytest.mark.load_tolerant  # exit code, status, what was kept and left; its duration bound is the 3 s before SIGINT
def test_an_interrupted_run_without_a_call_keeps_what_it_recorded(tmp_path: Path) -> None:
    """SIGINT 3 s into the measured period: exit 1, status incomplete, the captures kept and analysable, nothing left
    behind."""
    scenario = tmp_path / "nocall.yaml"
    scenario.write_text(REAL_SCENARIO.replace("duration_s: 12", "duration_s: 60"))
    out = tmp_path / "run"
    child = subprocess.Popen(["node", str(ROOT / "harness" / "cli.js"), "--scenario", str(scenario), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        events = out / "events.jsonl"
        if events.exists() and '"event":"call_start"' in events.read_text():
            break
        time.sleep(0.1)
    time.sleep(3)
    child.send_signal(2)
    output, _ = child.communicate(timeout=60)
    assert child.returncode == 1, output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "incomplete" and "SIGINT" in manifest["error"]
    assert (out / "capture-b.pcap").stat().st_size > 100_000
    r = analyse(out, "-q", "--no-dashboard")
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "metrics.json").read_text())
    measure("nocall.interrupted.duration_s", m["run"].get("duration_s"), 3)
    assert m["run"]["calls"] == 0 and 2 < m["run"]["duration_s"] < 10
    assert any(f["protocol"] == "tcp" and f["packets_received"] > 100 for f in m["flows"])
    assert f"rtclab-{manifest['id']}-" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                             text=True).stdout
    assert processes_left(out, manifest["id"]) == []
