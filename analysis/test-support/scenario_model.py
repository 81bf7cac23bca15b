"""The scenario model's verdicts for the tests from one `node` process serving the whole session
(scenarios/test-support/check-points-serve.js: check-points.js's own checkOne on each item), in place of the node
that rtclab_study.spec starts for every check: the model's imports and its schema's compilation cost about 0.4
CPU-seconds a start, and the fast tier's pytest suite made 67 (29 CPU-seconds; docs/contributing.md). conftest.py
puts it in place for every test (`served`); the product's own process stays tested where a command runs as a process
(test_study.py's dry run of the example study) and against this server (test_study.py, the same verdicts)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

from rtclab_study import spec

ROOT = Path(__file__).resolve().parents[2]
SERVE_JS = ROOT / "scenarios" / "test-support" / "check-points-serve.js"
# The product's function, before `served` replaces it.
product_verdicts = spec.scenario_model_verdicts


class Server:
    """One `node check-points-serve.js`, started at the first request (and again if it has exited)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.stderr = tempfile.TemporaryFile(mode="w+")

    def verdicts(self, items: list[dict[str, Any]], node: str = "node",
                 timeout_s: float = 120) -> list[dict[str, Any]]:
        if node != "node":  # another executable asked for: the product's own process, as it would run
            return product_verdicts(items, node, timeout_s)
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(["node", str(SERVE_JS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.stderr, text=True, cwd=ROOT)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(items) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.stderr.seek(0)
            raise spec.ScenarioModelError(f"the tests' scenario model server ended (exit {self.proc.wait()}): "
                                          f"{self.stderr.read().strip()}")
        verdicts: list[dict[str, Any]] = json.loads(line)
        return verdicts

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.stderr.close()


@contextlib.contextmanager
def served() -> Iterator[Server]:
    """spec.scenario_model_verdicts answered by one Server while inside."""
    server = Server()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(spec, "scenario_model_verdicts", server.verdicts)
        try:
            yield server
        finally:
            server.close()
