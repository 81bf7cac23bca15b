"""Every generated page regenerable from git, with its provenance (docs/studies.md, "Provenance" and "The results
archive"):

- a study refuses a dirty tree (a temporary git repository here: a changed file, an untracked one; an ignored one
  does not count) unless --allow-dirty, and says when a resumed study's earlier runs came from other code;
- a study directory built by the findings tests' writers, with a capture, a packet table and per-frame records beside
  the small files, archived: the archive holds no capture and no machine path, and `rtclab findings` and `rtclab study
  report` give from it what they give from the directory;
- the page's provenance of a study: dates, machine, Chromium, backend, commits (dirty ones named), n per point, the
  true time factor (a quick file's own factor times --quick) and a command from the repository root;
- `rtclab findings --check` passes on the repository's page and archive and names the first changed byte;
- the shipped quick study files' time factors are their durations' ratio to the full files';
- no absolute path of a developer's machine in the repository's docs, bench, studies or README."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_findings import CHROMIUM, CLAIMS, COMMIT, bad, make_study, ok

import inprocess
from rtclab import findings, findings_page
from rtclab.study import archive, provenance, report, studydir
from rtclab_study import __main__ as study_cli
from rtclab_study import plan as planmod
from rtclab_study import runner, spec, tree

REPO = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    (r / ".gitignore").write_text("results/\n")
    (r / "code.py").write_text("x = 1\n")
    (r / "long.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    git(r, "add", ".")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return r


# ---- a study from a committed tree ---------------------------------------------------------------------------------

def test_the_tree_state_counts_changed_and_untracked_files_not_ignored_ones(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    assert tree.state(repo) == tree.TreeState(commit=head, dirty_files=[])
    (repo / "results").mkdir()
    (repo / "results" / "run.json").write_text("{}")  # ignored: the study's own output
    assert not tree.state(repo).dirty and tree.state(repo).label == head
    (repo / "new file.txt").write_text("n")
    (repo / "code.py").write_text("x = 2\n")
    s = tree.state(repo)
    assert s.dirty_files == ["code.py", "new file.txt"] and s.label == head + "-dirty"
    git(repo, "checkout", "code.py")
    git(repo, "mv", "long.txt", "moved.txt")  # a rename (git's "R  moved.txt NUL long.txt"): its new path, once
    assert tree.state(repo).dirty_files == ["moved.txt", "new file.txt"]
    msg = tree.refusal(tree.state(repo))
    assert "moved.txt, new file.txt" in msg and "--allow-dirty" in msg and head[:12] in msg


def test_the_tree_of_no_repository_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(tree.TreeError, match="failed"):
        tree.state(tmp_path)


STUDY = "name: {name}\nbase: {{duration_s: 5}}\nrepetitions: 1\npoints:\n  - {{name: p, set: {{duration_s: 5}}}}\n"


def test_a_study_refuses_a_dirty_tree_naming_its_files(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(STUDY.format(name="dirty"))
    monkeypatch.setattr(study_cli, "REPO", repo)  # the tree the study would run from
    (repo / "code.py").write_text("x = 3\n")
    (repo / "notes.txt").write_text("n")
    out = tmp_path / "out"
    assert study_cli.main(["run", str(f), "--out", str(out)]) == runner.EXIT_BAD_STUDY
    err = capsys.readouterr().err
    assert "code.py, notes.txt" in err and "--allow-dirty" in err and "nothing was run" in err
    assert not (out / "attempts.jsonl").exists() and not (out / "plan.json").exists()
    # the dry run reads no tree: it runs nothing
    assert study_cli.main(["run", str(f), "--out", str(out), "--dry-run"]) == runner.EXIT_OK


def test_a_resumed_study_says_its_earlier_runs_came_from_other_code(tmp_path: Path) -> None:
    out = make_study(tmp_path, "t-resume", {"p": [ok(queue_ms=1, loss=0.0), ok(queue_ms=2, loss=0.0)]})
    reps = studydir.scan(out, ["p"], 3)
    assert runner.earlier_commits(reps) == {COMMIT}
    stream = io.StringIO()
    study = spec.load(tmp_path / "t-resume.yaml")
    r = runner.StudyRunner(planmod.Plan(study, 1.0, []), out, stream=stream,
                           tree_state=tree.TreeState(commit="f" * 40, dirty_files=["a.py"]))
    r._say_code(reps)
    said = stream.getvalue()
    assert "DIRTY tree (--allow-dirty): 1 file(s) differ from ffffffffffff" in said
    assert f"earlier attempts came from other code: {COMMIT[:12]} (this session: ffffffffffff-dirty)" in said
    stream = io.StringIO()
    runner.StudyRunner(planmod.Plan(study, 1.0, []), out, stream=stream,
                       tree_state=tree.TreeState(commit=COMMIT, dirty_files=[]))._say_code(reps)
    assert stream.getvalue() == ""  # the same, clean code: nothing to say


# ---- the archive ---------------------------------------------------------------------------------------------------

HOST = {"hostname": "h", "cpus": 2, "cpu_model": "Test CPU @ 2.0GHz", "memory_gib": 8, "kernel": "6.1.0-t",
        "kernel_hz": 250}
T0 = 1795000000.0  # 2026-11-18 ...


def enrich(out: Path, commits: dict[str, str]) -> None:
    """The manifests as the harness writes them now: host, timings, the commit (per run directory name), and a path
    of this machine; then the big files a run holds beside them."""
    for i, m_path in enumerate(sorted(out.glob("runs/*/*/manifest.json"))):
        m = json.loads(m_path.read_text())
        m["host"] = HOST
        m["timings"] = {"started": T0 + 3600 * i}
        m["git_commit"] = commits.get(m_path.parent.name, COMMIT)
        m["scenario_file"] = str(out / "points" / m_path.parent.parent.name / "scenario.json")
        m_path.write_text(json.dumps(m))
        metrics_path = m_path.parent / "metrics.json"
        metrics = json.loads(metrics_path.read_text())
        metrics["frames"] = {"b": {"freeze_time_ratio": 0.01, "series": {"t_s": list(range(500))}}}
        metrics_path.write_text(json.dumps(metrics, indent=1))
        for big in ("a.pcap", "packets.parquet", "frames-b.jsonl", "getstats-a.jsonl", "gtlog.jsonl"):
            (m_path.parent / big).write_bytes(b"\0" * 4096)


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("archive")
    q = {"loss": 0.0}
    out = make_study(tmp, "t-arch", {
        "a": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), [bad(queue_ms=30, **q), bad(queue_ms=31, **q)]],
        "b": [ok(queue_ms=40, **q, share=0.8), ok(queue_ms=50, **q, share=0.78), ok(queue_ms=60, **q, share=0.82)]})
    enrich(out, {"2-1": COMMIT + "-dirty"})
    into = tmp / "results-archive"
    done = archive.archive(out, into)
    return {"dir": out, "archive": done.dest, "done": done, "tmp": tmp}


def test_the_archive_holds_the_small_files_only(archived: dict[str, Any]) -> None:
    out, arch = archived["dir"], archived["archive"]
    assert arch == archived["tmp"] / "results-archive" / "t-arch"
    held = sorted(str(p.relative_to(arch)) for p in arch.rglob("*") if p.is_file())
    doc = json.loads((out / "study.json").read_text())
    used = [r["dir"] for r in doc["runs"] if r["used"]]
    expected = ["attempts.jsonl", "plan.json", "points/a/scenario.json", "points/b/scenario.json", "study.json"] + \
        [f"{r['dir']}/manifest.json" for r in doc["runs"]] + [f"{d}/metrics.json" for d in used]
    assert held == sorted(x for x in expected if (out / x).exists())
    assert not (out / "attempts.jsonl").exists()  # the writers made no log: nothing invented
    assert len(used) == 5 and len(doc["runs"]) == 7
    assert archived["done"].files == len(held)
    assert archived["done"].bytes == sum((arch / h).stat().st_size for h in held)
    text = "".join((arch / h).read_text() for h in held)
    assert f"{out}/" not in text and f'"{out}"' not in text  # no path of this machine into the study directory
    plan = json.loads((arch / "plan.json").read_text())
    assert plan["study_file"] == str(archived["tmp"] / "t-arch.yaml")  # outside the repository: kept as it is
    m = json.loads((arch / used[0] / "manifest.json").read_text())
    assert m["scenario_file"] == f"points/{used[0].split('/')[1]}/scenario.json"
    assert archive.portable(json.dumps({"a": str(out), "b": f"{out}/runs/x", "c": f"{out}.yaml",
                                        "d": f"{archive.REPO}/studies/s.yaml"}), out) == \
        json.dumps({"a": ".", "b": "runs/x", "c": f"{out}.yaml", "d": "studies/s.yaml"})
    # A study run from another checkout (a worktree) and archived from this one: that checkout's paths go too.
    other = archived["tmp"] / "worktree"
    (other / "results" / "studies" / "s").mkdir(parents=True)
    (other / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    assert archive.portable(json.dumps({"clip": f"{other}/media/default.y4m"}), other / "results" / "studies" / "s") \
        == json.dumps({"clip": "media/default.y4m"})
    # metrics.json without its time series, the rest as it was
    for d in used:
        original = json.loads((out / d / "metrics.json").read_text())
        kept = json.loads((arch / d / "metrics.json").read_text())
        assert kept["frames"] == {"b": {"freeze_time_ratio": 0.01}}
        del original["frames"]["b"]["series"]
        assert kept == original
    # archived again: the same files, the old archive replaced whole
    (arch / "stale.json").write_text("{}")
    archive.archive(out, arch.parent)
    assert not (arch / "stale.json").exists()
    assert archive.study_dirs(arch.parent) == [arch]


def test_findings_and_report_read_the_archive_as_the_directory(archived: dict[str, Any], tmp_path: Path) -> None:
    out, arch = archived["dir"], archived["archive"]
    claims = tmp_path / "claims.yaml"
    doc = {"rule": {"min_n": 2}, "claims": [
        {**CLAIMS["claims"][0], "studies": ["t-arch"]},
        {**CLAIMS["claims"][6], "studies": ["t-arch"], "points": ["b"]}]}
    claims.write_text(json.dumps(doc))
    from_dir, found_dir = findings_page.page_text([out], claims)
    from_arch, found_arch = findings_page.page_text([arch], claims)
    assert [f.verdict for f in found_dir] == [f.verdict for f in found_arch] == ["inconclusive", "agrees"]
    assert [[r.value for r in f.rows] for f in found_dir] == [[r.value for r in f.rows] for f in found_arch]
    assert from_arch != from_dir and from_arch == from_dir.replace(f"{out}`", f"{arch}`")
    loaded_dir, loaded_arch = report.load(out), report.load(arch)
    assert report.render(loaded_arch, None, None) == report.render(loaded_dir, None, None)
    versions_arch, versions_dir = report.chromium_versions(arch, loaded_arch), report.chromium_versions(out, loaded_dir)
    assert versions_arch.found == versions_dir.found == ["999.0.1"]
    assert versions_arch.left_out == versions_dir.left_out == []
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "study", "report", str(arch), "--no-dashboard"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == report.render(loaded_dir, None, None)


def test_a_study_run_again_from_its_own_pilot_is_read_in_the_pilots_place(tmp_path: Path) -> None:
    q = {"loss": 0.0}
    for d in ("pilot", "planned", "other"):
        (tmp_path / d).mkdir()
    pilot = make_study(tmp_path / "pilot", "t-range", {"agree": [ok(queue_ms=40, **q), ok(queue_ms=60, **q)]})
    planned = make_study(tmp_path / "planned", "t-range", {
        "agree": [ok(queue_ms=10, **q), ok(queue_ms=12, **q), ok(queue_ms=14, **q)]})
    other = make_study(tmp_path / "other", "t-range", {"agree": [ok(queue_ms=10, **q), ok(queue_ms=12, **q)]})
    plan = json.loads((planned / "plan.json").read_text())
    pilot_fingerprint = json.loads((pilot / "plan.json").read_text())["fingerprint"]
    plan["repetitions_from"] = {"pilots": [{"study": "t-range", "dir": str(pilot), "fingerprint": pilot_fingerprint}]}
    (planned / "plan.json").write_text(json.dumps(plan))
    claims = tmp_path / "claims.yaml"
    claims.write_text(json.dumps({"rule": {"min_n": 2}, "claims": [CLAIMS["claims"][0]]}))
    for dirs in ([pilot, planned], [planned, pilot]):
        _, found, read = findings.findings(dirs, claims)
        assert [s.dir for s in read if s.pilot_of is None] == [planned]
        assert [(s.dir, s.pilot_of) for s in read if s.pilot_of is not None] == [(pilot, planned)]
        assert found[0].rows[0].value["mean"] == pytest.approx(12.0) and found[0].verdict == "agrees"
    # two of the same name, neither planned from the other: which one is not guessed
    with pytest.raises(findings.FindingsError, match="neither planned from the other: give one of them"):
        findings.findings([pilot, other], claims)


def test_a_study_planned_from_its_own_pilot_is_archived_beside_it(archived: dict[str, Any], tmp_path: Path) -> None:
    """The pilot (t-arch, archived) and the same study run again with repetitions planned from it: two directories,
    and the page reads the planned one."""
    out, pilot = archived["dir"], archived["archive"]
    planned = tmp_path / "planned"
    shutil.copytree(out, planned)
    plan = json.loads((planned / "plan.json").read_text())
    plan["repetitions_from"] = {"file": "studies/plans/t-arch.json", "sha256": "ab" * 32,
                                "pilots": [{"study": "t-arch", "dir": str(pilot), "fingerprint": plan["fingerprint"]}]}
    (planned / "plan.json").write_text(json.dumps(plan))
    assert archive.archive_name(planned) == "t-arch-planned"
    plan["quick_factor"] = 0.5
    (planned / "plan.json").write_text(json.dumps(plan))
    assert archive.archive_name(planned) == "t-arch-planned-quick0.5"
    into = tmp_path / "results-archive"
    shutil.copytree(pilot, into / "t-arch")
    done = archive.archive(planned, into)
    assert done.dest == into / "t-arch-planned-quick0.5" and (into / "t-arch" / "plan.json").exists()
    assert archive.study_dirs(into) == [into / "t-arch", done.dest]
    _, _, read = findings.findings(archive.study_dirs(into), findings.DEFAULT_CLAIMS)
    assert [(s.dir, s.pilot_of) for s in read if s.name == "t-arch"] == [(into / "t-arch", done.dest),
                                                                         (done.dest, None)]
    # the page lists the pilot, for its runs and machine time, and says that no claim reads it
    text, _ = findings_page.page_text(archive.study_dirs(into), findings.DEFAULT_CLAIMS)
    pilot_block = text.split("### `t-arch` (pilot)\n", 1)[1].split("\n### ", 1)[0]
    assert f"- the pilot of `{done.dest}`" in pilot_block and "no claim reads it" in pilot_block
    assert "### `t-arch`\n" in text and "machine time" in pilot_block
    # the planned study's command runs it into a directory of its own, the one its archive is named after
    planned_block = text.split("### `t-arch`\n", 1)[1].split("\n### ", 1)[0]
    assert ("--repetitions-from studies/plans/t-arch.json --out results/studies/t-arch-planned-quick0.5 && "
            "rtclab study archive results/studies/t-arch-planned-quick0.5`") in planned_block


def test_archive_of_what_is_no_aggregated_study_exits_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "rtclab_study", "archive", str(tmp_path), "--into",
                        str(tmp_path / "a")], capture_output=True, text=True)
    assert r.returncode == 2 and "no plan.json" in r.stderr and not (tmp_path / "a").exists()


# ---- the provenance on the page ------------------------------------------------------------------------------------

def test_the_page_prints_each_studys_provenance(archived: dict[str, Any]) -> None:
    arch = archived["archive"]
    text, _ = findings_page.page_text([arch], findings.DEFAULT_CLAIMS)
    block = text.split("### `t-arch`\n", 1)[1]
    used = sorted(r["dir"] for r in json.loads((arch / "study.json").read_text())["runs"] if r["used"])
    # the runs' start times: one hour apart in manifest order; the used ones' first and last
    order = sorted(str(p.parent.relative_to(arch)) for p in arch.glob("runs/*/*/manifest.json"))
    starts = [T0 + 3600 * order.index(d) for d in used]
    first, last = (provenance._utc(t) for t in (min(starts), max(starts)))
    assert f"- runs: {first} to {last} UTC (first and last run's start); n per point: 2 to 3 over 2 points " \
           "(a 2, b 3)" in block
    assert "- machine: Test CPU @ 2.0GHz, 2 cores, 8 GiB, kernel 6.1.0-t (HZ 250)" in block
    assert f"- Chromium: {CHROMIUM}; backend: userspace" in block
    assert "runs/a/2-1" in used and "runs/b/2-1" in used  # repetition 2 of each point: the dirty tree's runs
    assert f"- code: `{COMMIT[:12]}`, `{COMMIT[:12]}-dirty` (the runs came from 2 code states; DIRTY" in block
    assert "- time factor against the full study: 1 (--quick 1)" in block
    assert f"- command: `rtclab study run {archived['tmp'] / 't-arch.yaml'} && rtclab study " \
           "archive results/studies/t-arch` (its study file is outside the repository" in block


def test_a_machine_not_recorded_is_said_so() -> None:
    assert provenance.machine({"host": {"hostname": "h", "cpus": 2}, "versions": {"kernel": "6.1"}}) == \
        "CPU model not recorded, 2 cores, memory not recorded, kernel 6.1 (HZ not recorded)"
    assert provenance.backend({"backend": {"used": "uml", "kernel_hz": 100}}) == \
        "uml (guest kernel not recorded, HZ 100)"
    assert provenance.dates(provenance.Provenance()) == "not recorded"


def test_machine_time_sums_every_ended_attempt_and_prices_the_fixed_count(tmp_path: Path) -> None:
    plan = {"order": [["a", 1], ["a", 2], ["b", 1], ["b", 2]], "points": [{"name": "a"}, {"name": "b"}],
            "repetitions_from": {"study_file_repetitions": 6}}
    ends = [("a", 1, 1, 100.0), ("a", 1, 2, 110.0), ("a", 2, 1, 90.0), ("b", 1, 1, 140.0), ("b", 2, 1, 120.0)]
    lines = []
    for point, rep, attempt, wall in ends:
        lines.append(json.dumps({"event": "start", "point": point, "rep": rep, "attempt": attempt, "t": 0}))
        lines.append(json.dumps({"event": "end", "point": point, "rep": rep, "attempt": attempt, "wall_s": wall}))
    lines.append(json.dumps({"event": "start", "point": "b", "rep": 3, "attempt": 1, "t": 0}))  # never ended
    lines.append("{damaged")
    (tmp_path / "attempts.jsonl").write_text("\n".join(lines) + "\n")
    t = provenance.machine_time(tmp_path, plan)
    assert t == provenance.MachineTime(attempts=5, wall_s=560.0, repetitions=4, fixed_repetitions=12)
    # 560 s over 4 repetitions = 140 s each; the file's 6 x 2 = 12 repetitions at that cost: 1680 s = 28 min
    assert provenance.machine_time_text(t) == (
        "9 min over 5 attempt(s) for 4 planned repetition(s) (each attempt's harness wall time: set-up, call, "
        "teardown and analysis); the study file's fixed count, 12 repetitions, would have taken about 28 min at "
        "this study's 2 min per repetition")
    plan.pop("repetitions_from")
    assert provenance.machine_time(tmp_path, plan).fixed_repetitions is None  # type: ignore[union-attr]
    assert "fixed count" not in provenance.machine_time_text(provenance.machine_time(tmp_path, plan))
    assert provenance.machine_time(tmp_path / "none", plan) is None
    assert provenance.machine_time_text(None) == "not recorded (no attempts.jsonl)"


def test_the_total_machine_time_adds_every_study_and_prices_the_planned_ones_at_their_fixed_counts() -> None:
    planned = provenance.MachineTime(attempts=5, wall_s=560.0, repetitions=4, fixed_repetitions=12)
    fixed = provenance.MachineTime(attempts=3, wall_s=300.0, repetitions=3, fixed_repetitions=None)
    # spent: 560 + 300 = 860 s, 14 min; the planned study's file count: 12 x 560 / 4 = 1680 s in place of its 560,
    # so 860 - 560 + 1680 = 1980 s, 33 min; the unplanned one counts what it took
    assert provenance.machine_time_total_text([planned, fixed, None]) == (
        "14 min over 8 attempt(s) for 7 planned repetition(s) in 2 stud(ies) (1 more without attempts.jsonl: not "
        "recorded, not counted); with every study file's fixed count, about 33 min (the 1 stud(ies) a repetitions "
        "plan set took 9 min, their files' counts priced at each one's own cost per repetition)")
    assert provenance.machine_time_total_text([fixed]) == (
        "5 min over 3 attempt(s) for 3 planned repetition(s) in 1 stud(ies)")
    assert provenance.machine_time_total_text([None]) == "not recorded (no study has attempts.jsonl)"


def test_the_true_time_factor_of_a_quick_file_run_with_quick(tmp_path: Path) -> None:
    (tmp_path / "full.yaml").write_text(STUDY.format(name="full").replace("duration_s: 5", "duration_s: 40"))
    quick = tmp_path / "quick.yaml"
    quick.write_text(STUDY.format(name="quick").replace("base:", "quick_of: {file: full.yaml, time_factor: 0.125}\n"
                                                                 "base:"))
    plan = planmod.make(spec.load(quick), quick_factor=0.5).to_json()
    assert plan["quick_factor"] == 0.5 and plan["time_factor"] == 0.0625
    assert plan["quick_of"] == {"file": str((tmp_path / "full.yaml").resolve()), "time_factor": 0.125}
    p = provenance.Provenance(quick_factor=plan["quick_factor"], quick_of=plan["quick_of"], study_file="s/q.yaml")
    assert provenance.time_factor_text(p) == \
        f"0.0625 (the file's times are x0.125 those of `{(tmp_path / 'full.yaml').resolve()}`; --quick 0.5)"
    assert provenance.command("quick", p, []) == ("rtclab study run s/q.yaml --quick 0.5 && rtclab "
                                                  "study archive results/studies/quick-quick0.5")
    quick.write_text(STUDY.format(name="q").replace("base:", "quick_of: {file: none.yaml, time_factor: 0.5}\nbase:"))
    with pytest.raises(spec.StudyError, match="quick_of.file 'none.yaml': no such study file"):
        spec.load(quick)


def test_the_shipped_quick_files_time_factors_are_their_durations_ratio() -> None:
    quick_files = sorted(REPO.glob("studies/*/*-quick.yaml"))
    declared = 0
    for f in quick_files:
        q = spec.load(f)
        if q.quick_of is None:
            continue
        declared += 1
        full = spec.load(q.quick_of[0])
        default = spec.scenario_schema()["properties"]["duration_s"]["default"]
        full_points = {p.name: p for p in full.points}
        common = [p for p in q.points if p.name in full_points]
        assert common, f"{f}: no point named as in {q.quick_of[0]}"
        for p in common:
            qd = float(p.doc.get("duration_s", default))
            fd = float(full_points[p.name].doc.get("duration_s", default))
            assert qd == pytest.approx(fd * q.quick_of[1], rel=1e-9), (f.name, p.name, qd, fd)
    assert declared >= 14


# ---- --check -------------------------------------------------------------------------------------------------------

def test_the_committed_findings_page_is_what_the_archive_gives() -> None:
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "findings", "--check"], capture_output=True, text=True,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "docs/findings.md is what" in r.stdout


def test_check_names_the_first_changed_byte(archived: dict[str, Any], tmp_path: Path) -> None:
    page, html = tmp_path / "f.md", tmp_path / "f.html"
    base = ["findings", str(archived["archive"]), "--out", str(page)]  # in this process (test-support/inprocess.py)
    assert inprocess.rtclab(*base, "--html", str(html)).returncode == 0
    assert inprocess.rtclab(*base, "--check").returncode == 0
    text = page.read_text()
    lines = text.splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ln.startswith("- machine: "))
    lines[i] = lines[i].replace("2 cores", "3 cores")
    page.write_text("".join(lines))
    r = inprocess.rtclab(*base, "--check")
    col = lines[i].index("3 cores") + 1
    assert r.returncode == 1 and f"line {i + 1}, column {col}:" in r.stderr and "2 cores" in r.stderr
    page.write_text(text + "\n")  # one byte more at the end
    r = inprocess.rtclab(*base, "--check")
    assert r.returncode == 1 and f"line {len(lines) + 1}:" in r.stderr
    page.write_text(text)
    assert findings_page.first_difference(text, text) is None


# ---- no machine path -----------------------------------------------------------------------------------------------

MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[a-z])")


def test_no_absolute_machine_path_in_the_docs_bench_studies_or_readme() -> None:
    files = git(REPO, "ls-files", "docs", "bench", "studies", "README.md", "results-archive").split()
    assert files
    hits = [f"{f}:{n}: {line.strip()}" for f in files if (REPO / f).is_file()
            for n, line in enumerate((REPO / f).read_text(errors="replace").splitlines(), start=1)
            if MACHINE_PATH.search(line)]
    assert hits == [], "absolute paths of a machine (write commands from the repository's root):\n" + "\n".join(hits)


def test_the_pages_a_report_writes_beside_an_archived_study_do_not_dirty_the_tree() -> None:
    def ignored(path: str) -> bool:
        return subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", path]).returncode == 0

    assert ignored("results-archive/s/dashboard.html") and ignored("results-archive/s/compare-with-t.html")
    assert not ignored("results-archive/s/study.json")
