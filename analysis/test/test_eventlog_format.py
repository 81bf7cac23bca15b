"""The event log's generated format code is what generate.sh makes from the committed .proto files today (grpcio-
tools' protoc, pinned in requirements.lock): a .proto edited without regenerating fails here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EVENTLOG = Path(__file__).resolve().parents[1] / "rtclab" / "eventlog"
GENERATED = ["rtc_event_log2_pb2.py", "rtc_event_log2_pb2.pyi", "rtc_event_log_pb2.py", "rtc_event_log_pb2.pyi"]


def test_generated_code_is_current(tmp_path):
    for proto in ("rtc_event_log2.proto", "rtc_event_log.proto"):
        shutil.copy(EVENTLOG / proto, tmp_path / proto)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.",
                    "rtc_event_log2.proto", "rtc_event_log.proto"], cwd=tmp_path, check=True)
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (EVENTLOG / name).read_bytes(), f"{name}: run eventlog/generate.sh"
