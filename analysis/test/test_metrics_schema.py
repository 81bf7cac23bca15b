"""metrics.json against its schema (analysis/rtclab/metrics.schema.json, the one list of its fields and types): what
the analyzer writes for hand-built and synthetic runs follows it, a call with every section filled and a run without
a call alike; a document with a field of the wrong type, a missing or an unknown field fails, and the message names
the field; with RTCLAB_CHECK_METRICS=1 (conftest.py sets it for every test) analyze() refuses to write a
metrics.json that does not follow it. The real-call tests check their runs' metrics.json too
(test_eventlog_real.py)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import struct
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pcapbuild import fnv1a64
from rtclab import analyze, metrics_schema, rundir, synth
from runbuild import write_gtlog

DATA = Path(__file__).parent / "data"
CALL_SECTIONS = ("rfc8867", "multiflow", "getstats", "frames", "chrome_ecn", "congestion_controller")


def load(run: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return doc


def ground_truth_log(run: Path) -> None:
    """bottleneck-forward.gtlog consistent with the captures: each forward departure logged 10 us after it left a
    and released 15 us before it reached b, the lost ones as tail drops (as test_crosschecks.py builds it)."""
    _, table = analyze.analyze(run, run_tshark=False, write=False)
    keys = {}
    for frame_no, (_, _, frame) in enumerate(rundir.pcap_records(run / "capture-a.pcap"), start=1):
        ip_len = struct.unpack("!H", frame[16:18])[0]
        keys[frame_no] = fnv1a64(frame[34:34 + min(64, ip_len - 20)])
    assert table is not None
    c = table.cols
    records = []
    for i in range(len(table)):
        if c["direction"][i] != 0 or c["t_send_ns"][i] < 0:
            continue
        arrival = int(c["t_send_ns"][i]) + 10_000
        delivered = c["status"][i] == 0
        release = int(c["t_recv_ns"][i]) - 15_000 if delivered else arrival + 1000
        records.append({"arrival_ns": arrival, "dequeue_ns": arrival, "tx_end_ns": release, "due_ns": release,
                        "release_ns": release, "key": keys[int(c["frame_send"][i])], "ip_len": int(c["ip_len"][i]),
                        "ip_id": int(c["ip_id"][i]), "event": 0 if delivered else 2, "ip_proto": int(c["proto"][i])})
    write_gtlog(run / "bottleneck-forward.gtlog", records)


def meter_actions(run: Path, t0: float) -> None:
    """bottleneck-forward.actions.jsonl: one CE-fraction meter on a flow, one demoting meter on its class."""
    flow = {"src": "10.0.1.2", "dst": "10.0.2.2", "proto": 6, "sport": 40000, "dport": 5201}
    lines = [{"t": t0 + 0.15 * k, "t_ns": 0, "meter": 0, "action": "ce_fraction", "flow": flow, "event": "window",
              "rate_kbit": 3000.0, "limit_kbit": 2000.0, "fraction": 0.5, "ce_marked": k, "demoted": 0}
             for k in range(1, 4)]
    lines += [{"t": t0 + 0.1, "t_ns": 0, "meter": 1, "action": "demote", "flow": None, "event": "start",
               "rate_kbit": 5000.0, "limit_kbit": 2000.0, "until": t0 + 2.1},
              {"t": t0 + 2.1, "t_ns": 0, "meter": 1, "action": "demote", "flow": None, "event": "end"}]
    (run / "bottleneck-forward.actions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture(scope="module")
def full_call(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic call with cross traffic, CE marks, the CPU accounting and the receiving page's frames, beside a
    ground-truth log, the meters' action log and a real Chromium RTC event log: every section of metrics.json filled
    (the event log is another call's, so its join finds nothing; its sections are there all the same)."""
    run = tmp_path_factory.mktemp("schema") / "call"
    cfg = synth.SynthConfig(duration_s=6.0, tcp_start_s=2.0, tcp_stop_s=4.0, ce_mark=0.02, frames=True)
    synth.write_run(run, cfg)
    ground_truth_log(run)
    meter_actions(run, cfg.start_epoch_s)
    shutil.copy(DATA / "eventlog-chromium156-a.log", run / "eventlog-a.log")
    analyze.analyze(run, run_tshark=False)
    return run


def test_the_schema_is_a_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(metrics_schema.schema())


def test_a_call_with_every_section_follows_the_schema(full_call: Path) -> None:
    m = load(full_call)
    assert metrics_schema.problems(m) == []
    # The sections the schema describes in depth are filled, not null: the check above looked into each of them.
    for key in (*CALL_SECTIONS, "ground_truth", "cpu", "scenario", "capacity_steps"):
        assert m[key], key
    assert m["ground_truth"]["meter_actions"]["forward"]["summary"]
    assert m["ground_truth"]["queuing_delay"]
    assert m["frames"]["b"]["series"]["t_s"] and m["frames"]["b"]["freezes"]
    assert m["congestion_controller"]["sides"]["a"]["controller"]
    assert len(m["phases"]) == 4 and m["cross_traffic_timing"]
    assert any(f["jitter_ms"] for f in m["flows"]) and any(f["ecn_ce_received"] for f in m["flows"])


def test_a_run_without_a_call_follows_the_schema(tmp_path: Path) -> None:
    run = tmp_path / "nocall"
    synth.write_run(run, synth.SynthConfig(call=False, duration_s=4.0, tcp_flows=2, tcp_start_s=0.0, tcp_stop_s=None))
    analyze.analyze(run, run_tshark=False)
    m = load(run)
    assert m["run"]["calls"] == 0 and not any(key in m for key in CALL_SECTIONS)
    assert metrics_schema.problems(m) == []


def test_runs_with_a_missing_capture_or_getstats_follow_the_schema(tmp_path: Path) -> None:
    """What could not be read is null (inputs.capture_b, the receiving side's rates) and named in gaps."""
    small = tmp_path / "small"
    synth.write_run(small, synth.SynthConfig(duration_s=3.0, tcp_start_s=1.0, tcp_stop_s=2.0))
    for name, removed in (("no-b", ["capture-b.pcap"]), ("no-getstats", ["getstats-a.jsonl", "getstats-b.jsonl"]),
                          ("no-captures", ["capture-a.pcap", "capture-b.pcap"]), ("no-cpu", ["cpu.jsonl"])):
        run = tmp_path / name
        shutil.copytree(small, run)
        for f in removed:
            (run / f).unlink()
        m, _ = analyze.analyze(run, run_tshark=False, write=False)
        assert m["gaps"] or name == "no-cpu", name
        assert metrics_schema.problems(json.loads(json.dumps(m))) == [], name


def test_a_wrong_type_fails_and_the_message_names_the_field(full_call: Path) -> None:
    m = load(full_call)
    cases: list[tuple[str, Any, str]] = [
        ("run.duration_s", "20", "'20' is not of type 'number'"),
        ("flows.0.owd_ms.p50", "12 ms", "is not of type 'number', 'null'"),
        ("flows.0.packets_sent", 1.5, "is not of type 'integer'"),
        ("fairness.all.jain_index", True, "is not of type 'number', 'null'"),
        ("frames.b.joined", None, "is not of type 'integer'"),
    ]
    for dotted, value, message in cases:
        doc = copy.deepcopy(m)
        *parents, last = dotted.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
        field = dotted.replace(".0.", "[0].")
        with pytest.raises(metrics_schema.MetricsSchemaError, match=re.escape(f"field {field}: ")):
            metrics_schema.validate(doc)
        assert any(p.startswith(f"metrics.json field {field}: ") and message in p
                   for p in metrics_schema.problems(doc)), (dotted, metrics_schema.problems(doc))


def test_a_missing_or_unknown_field_and_a_call_section_in_a_run_without_a_call_fail(full_call: Path) -> None:
    m = load(full_call)
    doc = copy.deepcopy(m)
    del doc["run"]["call_start"]
    assert metrics_schema.problems(doc) == ["metrics.json field run: 'call_start' is a required property"]
    doc = copy.deepcopy(m)
    doc["flows"][0]["throughput_kbps"] = 1.0  # a field the schema does not list: add it to the schema first
    assert any("flows[0]" in p and "throughput_kbps" in p for p in metrics_schema.problems(doc))
    doc = copy.deepcopy(m)
    del doc["getstats"]  # a run with a call has every call section
    assert metrics_schema.problems(doc)
    doc = copy.deepcopy(m)
    doc["run"]["calls"] = 0  # ... and a run without one has none
    assert metrics_schema.problems(doc)


def test_analyze_refuses_to_write_a_metrics_json_that_breaks_the_schema(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    synth.write_run(run, synth.SynthConfig(duration_s=2.0, tcp_start_s=0.5, tcp_stop_s=1.5))
    monkeypatch.setenv(metrics_schema.CHECK_ENV, "1")
    monkeypatch.setattr(analyze.queue, "analyse", lambda run, t0: {"source": 1})
    with pytest.raises(metrics_schema.MetricsSchemaError, match="field bottleneck_queue"):
        analyze.analyze(run, run_tshark=False)
    assert not (run / "metrics.json").exists()
    monkeypatch.setenv(metrics_schema.CHECK_ENV, "0")  # unchecked, it writes what it computed
    analyze.analyze(run, run_tshark=False)
    assert load(run)["bottleneck_queue"] == {"source": 1}


def test_the_command_checks_files_against_the_schema(full_call: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert metrics_schema.main([str(full_call / "metrics.json")]) == 0
    bad = load(full_call)
    bad["cpu"]["cpus"] = "two"
    (tmp_path / "metrics.json").write_text(json.dumps(bad))
    assert metrics_schema.main([str(tmp_path / "metrics.json")]) == 1
    assert "field cpu.cpus: 'two' is not of type 'integer', 'null'" in capsys.readouterr().err


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value that is not a dict or a list, in document order."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, path + (k,))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, path + (i,))]
    return [path]


def test_the_fast_validator_gives_jsonschemas_verdict(full_call: Path) -> None:
    """metrics_schema checks with jsonschema-rs and asks jsonschema only for the words: the two must agree on what is
    valid, or a document jsonschema would refuse could pass. Here on the full call and 12 altered copies of it: a
    value of another type at leaves spread over the whole document (a string, an object, a bool, an array), a
    required key removed, an unknown key added."""
    strict = jsonschema.Draft202012Validator(metrics_schema.schema())
    m = load(full_call)
    docs = [m]
    leaves = _leaves(m)
    for k, path in enumerate(leaves[:: max(1, len(leaves) // 8)][:8]):
        doc = json.loads(json.dumps(m))  # a copy (deepcopy takes longer)
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = ["x", {"x": 1}, True, [1, 2]][k % 4]
        docs.append(doc)
    for section in ("run", "frames"):
        doc = copy.deepcopy(m)
        del doc[section]
        docs.append(doc)
    for section in ("ground_truth", "frames"):
        doc = copy.deepcopy(m)
        (doc[section] if isinstance(doc[section], dict) else doc)["not_in_the_schema"] = 1
        docs.append(doc)
    verdicts = [(metrics_schema.is_valid(d), strict.is_valid(d)) for d in docs]
    assert all(fast == slow for fast, slow in verdicts), [i for i, (f, s) in enumerate(verdicts) if f != s]
    assert verdicts[0] == (True, True) and sum(not fast for fast, _ in verdicts) >= 10
