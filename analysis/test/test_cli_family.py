"""One command family: `rtclab call` and `rtclab net` start the repository's Node programs (the harness and netem)
from any directory, with their own arguments, output and exit status. Neither test places a call or builds a network:
a scenario with a bad field is refused before anything is set up, and `net plan` only prints the commands."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def rtclab(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rtclab.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_rtclab_call_is_the_harness_and_keeps_its_exit_status(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("network:\n  forward:\n    qdisc: {kind: fifo, limit_ms: -3}\n")
    r = rtclab("call", "--scenario", "bad.yaml", "--out", "run", cwd=tmp_path)  # paths relative to the user's directory
    assert r.returncode == 2, r.stdout + r.stderr
    assert "network.forward.qdisc.limit_ms: must be > 0" in r.stdout + r.stderr
    assert not (tmp_path / "run").exists()


def test_rtclab_net_plan_prints_the_commands_without_running_them(tmp_path):
    r = rtclab("net", "plan", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "# topology" in r.stdout and "ip netns add" in r.stdout


def test_rtclab_clean_is_the_harness_clean_and_refuses_a_bad_id_before_touching_anything(tmp_path):
    r = rtclab("clean", "NOT-AN-ID", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert 'run id must be 6 characters [a-z0-9] (got "NOT-AN-ID")' in r.stderr
    h = rtclab("clean", "--help", cwd=tmp_path)
    assert h.returncode == 0 and "browser profiles" in h.stdout
