"""The tests' shared helpers (hand-built captures and run directories) live in analysis/test-support, as every part
of rtclab keeps them beside its test/ folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test-support"))
