"""The type check runs inside the test command: mypy over the analyzer and the test helpers, with the settings of
[tool.mypy] in pyproject.toml (which files, which libraries have no types)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_type_error():
    # The timeout only keeps a hang from holding the test command: mypy without its cache (a fresh clone, or after an
    # edit to a module many import) checks the whole analyzer, beside the other tests, and may take minutes on a busy
    # 2-vCPU machine.
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"mypy found type errors:\n{r.stdout}{r.stderr}"
