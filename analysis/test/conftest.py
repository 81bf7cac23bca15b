"""The tests' shared helpers (hand-built captures and run directories) live in analysis/test-support, as every part
of rtclab keeps them beside its test/ folder. Two fixtures live here: the real default call that several real-call
tests read, and one process of the scenario model that answers every study check of the session. Every metrics.json a
test's analysis writes is checked against its schema (RTCLAB_CHECK_METRICS)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test-support"))
# Every metrics.json the tests' analyses write (in this process and in the commands they start) is checked against
# analysis/rtclab/metrics.schema.json first (rtclab/metrics_schema.py): a field the schema does not list fails them.
os.environ.setdefault("RTCLAB_CHECK_METRICS", "1")

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CALL_S = 20


@pytest.fixture(scope="session", autouse=True)
def scenario_model_served() -> Iterator[None]:
    """Every study check of the session (rtclab_study.spec.scenario_model_verdicts) answered by one node process of
    the scenario model (test-support/scenario_model.py), not a node start of 0.4 CPU-seconds per study."""
    import scenario_model
    with scenario_model.served():
        yield


@pytest.fixture(scope="session")
def default_call_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real call of scenarios/default.yaml (DEFAULT_CALL_S seconds, not analysed) with Chrome's own
    webrtc-internals dumps saved (--webrtc-internals), shared by the real-call tests that only read it (the event
    logs' join, the frames' record and join, the dumps' import): one call of the test command's time instead of one
    per test. Each test analyses it itself; the analysis rewrites only its own outputs. Under scripts/test.sh it is the
    22 s call harness/test/call.e2e.test.js placed earlier in the same real tier, with the same options
    (RTCLAB_TEST_SHARED_RUNS), when that call completed: one call fewer again."""
    if os.geteuid() != 0 or shutil.which("node") is None:
        pytest.skip("real calls need root and node")
    shared = _shared_default_call()
    if shared is not None:
        return shared
    run = tmp_path_factory.mktemp("default-call") / "run"
    proc = subprocess.run(["node", str(ROOT / "harness" / "cli.js"), "--duration", str(DEFAULT_CALL_S),
                           "--webrtc-internals", "--out", str(run), "--no-analyze"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    manifest = json.loads((run / "manifest.json").read_text()) if (run / "manifest.json").exists() else {}
    assert manifest.get("status") == "complete", proc.stdout[-4000:] + proc.stderr[-4000:]
    return run


def _shared_default_call() -> Path | None:
    """The default call the Node end-to-end test left in RTCLAB_TEST_SHARED_RUNS (scripts/test.sh: the same scenario
    and options, its duration apart), if it completed; None otherwise (the fixture places its own)."""
    shared = os.environ.get("RTCLAB_TEST_SHARED_RUNS")
    run = Path(shared) / "default-call" if shared else None
    if run is None or not (run / "manifest.json").exists():
        return None
    manifest = json.loads((run / "manifest.json").read_text())
    return run if manifest.get("status") == "complete" else None
