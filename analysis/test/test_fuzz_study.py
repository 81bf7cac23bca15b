"""Study files, generated and mutated (hypothesis): a valid study built from scenario fields and values, then a
field set to any JSON value, removed, or an unknown one added. Every one is either accepted (loaded, its points
checked by the scenario model) or refused with a StudyError whose every problem is a sentence; never another
exception. The command line answers refused ones with exit status 2 before anything runs."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import inprocess
from rtclab_study import spec

ROOT = Path(__file__).resolve().parents[2]

json_values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
                           | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=6)

axis = st.sampled_from([
    {"path": "network.forward.qdisc.kind", "values": ["fifo", "codel", "pie"]},
    {"path": "network.forward.rate.kbit", "values": [500, 1000, 2000]},
    {"path": "duration_s", "values": [10, 20]},
    {"path": "network.forward.delay_ms", "values": [5, 25, 50], "name": "delay"},
])
study = st.builds(lambda axes, reps, seed: {"name": "fuzz", "base": str(ROOT / "scenarios" / "examples" / "codel.yaml"),
                                            "axes": axes, "repetitions": reps, "seed": seed},
                  st.lists(axis, min_size=1, max_size=2, unique_by=lambda a: a["path"]),
                  st.integers(1, 5), st.integers(0, 99))


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, prefix + (i,))
    return out


def mutate(doc: dict[str, Any], mutations: list[tuple[int, str, Any]]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for pick, how, value in mutations:
        every = [p for p in paths(doc) if p]
        at = every[pick % len(every)]
        parent: Any = doc
        for k in at[:-1]:
            parent = parent[k]
        key = at[-1]
        if how == "set":
            parent[key] = value
        elif how == "delete":
            del parent[key]
        elif isinstance(parent[key], dict):
            parent[key]["unknown_field"] = value
        if not doc:
            break
    return doc


mutated = st.tuples(study,
                    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["set", "delete", "add"]), json_values),
                                    max_size=2)).map(lambda t: mutate(*t))


# No deadline: a timing this test does not claim (test_fuzz_rundir.py says why).
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated)
def test_study_files_are_accepted_or_refused_with_sentences(tmp_path: Path, doc: dict[str, Any]) -> None:
    file = tmp_path / "study.yaml"
    file.write_text(json.dumps(doc))
    try:
        loaded = spec.load(file)
        spec.check_points(loaded)
    except spec.StudyError as e:
        assert e.args and str(e).strip(), "a refusal says why"
        return
    assert all(pt.scenario for pt in loaded.points), "accepted points carry their normalised scenario"


def test_the_command_line_refuses_bad_study_files_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    bad = [{"name": "x", "base": str(ROOT / "scenarios" / "default.yaml"),
            "axes": [{"path": "network.forward.qdisc.target_ms", "values": [-1]}]},
           {"name": "x", "base": str(ROOT / "scenarios" / "default.yaml"),
            "axes": [{"path": "network.sideways", "values": [1]}]},
           {"name": "x", "base": str(ROOT / "scenarios" / "default.yaml"), "repetitions": "many"},
           {"name": "x", "base": "/nonexistent.yaml"}, [1, 2, 3]]
    for i, doc in enumerate(bad):
        file = tmp_path / f"s{i}.yaml"
        file.write_text(json.dumps(doc))
        out = tmp_path / f"out{i}"
        # The first through `python -m rtclab_study` itself, the others through its entry point in this process
        # (test-support/inprocess.py), where an exception escaping main fails the test as a traceback would.
        args = ["run", str(file), "--out", str(out)]
        r = (subprocess.run([sys.executable, "-m", "rtclab_study", *args], capture_output=True, text=True, timeout=120)
             if i == 0 else inprocess.rtclab_study(*args))
        assert r.returncode == 2, (doc, r.stdout, r.stderr)
        assert "Traceback" not in r.stdout + r.stderr and r.stderr.strip(), (doc, r.stderr)
        assert not (out / "runs").exists(), "nothing ran"
