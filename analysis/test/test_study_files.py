"""Every study file the project ships loads, and every point of it is accepted by the scenario model (so `rtclab
study run` would start it), and each quick variant (`*-quick.yaml`) fits in 30 minutes of calls, set-up, teardown and
analysis here (the per-run overhead the runner assumes before it has measured one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtclab_study import runner, spec

ROOT = Path(__file__).resolve().parents[2]
# Every YAML file under studies/ but the findings' claims (studies/findings.yaml, read by `rtclab findings`).
STUDY_FILES = sorted(p for p in (ROOT / "studies").rglob("*.yaml") if p != ROOT / "studies" / "findings.yaml")


def test_the_reference_studies_are_there() -> None:
    names = {p.relative_to(ROOT / "studies").as_posix() for p in STUDY_FILES}
    for expected in ["carlucci2016/a-single-flow.yaml", "carlucci2016/b-codel-target.yaml",
                     "carlucci2016/b-pie-target.yaml",
                     "carlucci2016/c-tcp-10mbps.yaml", "carlucci2016/c-fair-share.yaml", "cdc2014/grid.yaml"]:
        assert expected in names
        assert expected.replace(".yaml", "-quick.yaml") in names or expected == "carlucci2016/c-fair-share.yaml"


@pytest.fixture(scope="module")
def checked() -> dict[Path, tuple[spec.Study | None, spec.StudyError | None]]:
    """Every shipped study loaded and its points put to the scenario model, all in one `node` process
    (spec.check_points_of: one process per file was most of this file's time)."""
    loaded: dict[Path, spec.Study] = {}
    refused: dict[Path, spec.StudyError] = {}
    for f in STUDY_FILES:
        try:
            loaded[f] = spec.load(f)
        except spec.StudyError as e:  # this file's test fails with it; the others still run
            refused[f] = e
    results = dict(zip(loaded, zip(loaded.values(), spec.check_points_of(list(loaded.values())))))
    return {f: results.get(f) or (None, refused[f]) for f in STUDY_FILES}


@pytest.mark.parametrize("file", STUDY_FILES, ids=lambda p: p.relative_to(ROOT / "studies").as_posix())
def test_a_shipped_study_is_accepted_point_by_point(
        file: Path, checked: dict[Path, tuple[spec.Study | None, spec.StudyError | None]]) -> None:
    study, error = checked[file]
    assert study is not None and error is None, str(error)
    assert study.points and all(pt.scenario for pt in study.points)
    if file.name.endswith("-quick.yaml"):
        seconds = sum(pt.scenario["duration_s"] + runner.DEFAULT_OVERHEAD_S for pt in study.points) * study.repetitions
        assert seconds <= 30 * 60, f"{file.name}: about {seconds / 60:.0f} min"
