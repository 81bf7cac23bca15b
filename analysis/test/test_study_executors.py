"""The study executors (docs/studies.md, Executors): the CPU split of --parallel and its refusals, the Ray nodes'
set-up check; then, with real calls (marker real_calls, root, about 3 minutes):

- `--parallel 2`: two 6 s calls at once, each pinned to its own CPU, their CPU sets recorded in the manifests and
  the cpu_set_not_saturated check present;
- `--ray`: a local two-node Ray cluster started here with two `ray start` commands (a head and a worker on this
  machine, their own ports and temp dir: the commands a user runs on two machines, so the driver, the custom
  resource and the nodes' raylets are all real), a study of 2 points x 1 repetition of 6 s calls; the worker node
  is killed (its raylet, SIGKILL) while its run is in its call, and that attempt must be logged as lost and made
  again elsewhere under a new attempt number; the gathered study must have a serial run's structure (the same
  study.json keys and points, the same run files, metrics.json keys and video flows), and the manifests name their
  nodes.

On 2 cores these calls come out invalid (CPU saturated): the tests assert on structure and accounting, not on
validity. Every Ray process the test started is ended by its id at the end, even on failure."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from rtclab.study import metric_rows
from rtclab_study.__main__ import main as study_main
from rtclab_study.executors import ExecutorError, Job, _Running, fmt_cpus, split_cpus
from rtclab_study.packed import CPU_SET_TARGET, PackedExecutor, cpus_needed, measured_costs, run_cost
from rtclab_study.ray_executor import NODE_RUNS, SMALL_FILES, check_node, checkout_id, repo_commit, study_key

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).parent / "ray"

# 120 s to connect (call.connect_timeout_s, 20 s by default): beside the other load-tolerant tests on 2 vCPUs a 6 s
# call's pages loaded 19 s after its network was up and its video reached b 5 s after that, so with 20 s the run was
# incomplete, an outcome of the load that these tests of structure and accounting do not measure.
STUDY = """\
name: {name}
description: two 6 s calls, fifo and codel
base: {root}/scenarios/examples/fifo.yaml
points:
  - name: fifo
    set: {{duration_s: 6, call.connect_timeout_s: 120}}
  - name: codel
    base: {root}/scenarios/examples/codel.yaml
    set: {{duration_s: 6, call.connect_timeout_s: 120}}
repetitions: 1
max_attempts: 1
shuffle: false
"""

real = [pytest.mark.real_calls,
        pytest.mark.skipif(os.geteuid() != 0, reason="real calls need root (network namespaces, tc, captures)"),
        pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]


def study_file(tmp_path: Path, name: str) -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(STUDY.format(name=name, root=ROOT))
    return f


def run_study(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    # --allow-dirty: these tests are about the executors, and run from a developer's tree as it is
    return subprocess.run([sys.executable, "-m", "rtclab_study", "run", *args, "--allow-dirty"], capture_output=True,
                          text=True, timeout=timeout_s, cwd=ROOT)


def log_records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


# --- without calls --------------------------------------------------------------------------------------------------

def test_cpu_split_in_groups_of_consecutive_cpus() -> None:
    assert split_cpus([0, 1], 2) == [[0], [1]]
    assert split_cpus([0, 1], 1) == [[0, 1]]
    assert split_cpus([3, 0, 1, 2, 4], 2) == [[0, 1, 2], [3, 4]]
    groups = split_cpus(list(range(16)), 5)
    assert [len(g) for g in groups] == [4, 3, 3, 3, 3]
    assert sorted(c for g in groups for c in g) == list(range(16))
    with pytest.raises(ExecutorError, match="at most --parallel 2"):
        split_cpus([0, 1], 3)
    with pytest.raises(ExecutorError, match="at least 1"):
        split_cpus([0, 1], 0)
    assert fmt_cpus([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert fmt_cpus([4]) == "4"


def write_cost(run_dir: Path, p95_cores: Any) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.json").write_text(json.dumps({"cpu": {"run": {"p95_cores": p95_cores}}}))


def test_packed_cpus_follow_the_measured_cost() -> None:
    assert CPU_SET_TARGET == 0.8
    assert cpus_needed(None, 4) == 4  # not measured yet: alone
    assert cpus_needed(0.3, 4) == 1 and cpus_needed(0.8, 4) == 1 and cpus_needed(0.81, 4) == 2
    assert cpus_needed(2.5, 4) == 4 and cpus_needed(9.0, 4) == 4  # never more than the machine
    assert cpus_needed(0.0, 4) == 1  # a run needs one CPU of its own at least


def test_packed_costs_are_each_points_highest_measured(tmp_path: Path) -> None:
    write_cost(tmp_path / "runs" / "a" / "1-1", 0.4)
    write_cost(tmp_path / "runs" / "a" / "2-1", 0.7)
    write_cost(tmp_path / "runs" / "b" / "1-1", "0.9")  # not a number: not a measurement
    write_cost(tmp_path / "runs" / "b" / "2-1", True)
    (tmp_path / "runs" / "c" / "1-1").mkdir(parents=True)  # not analysed
    assert measured_costs(tmp_path) == {"a": 0.7}
    assert run_cost(tmp_path / "runs" / "c" / "1-1") is None


def test_packed_costs_from_a_pilot_count_as_the_studys_own(tmp_path: Path) -> None:
    pilot, out = tmp_path / "pilot", tmp_path / "out"
    (pilot / "plan.json").parent.mkdir()
    (pilot / "plan.json").write_text("{}")
    write_cost(pilot / "runs" / "a" / "1-1", 0.5)
    write_cost(pilot / "runs" / "b" / "1-1", 0.6)
    write_cost(out / "runs" / "b" / "1-1", 0.9)  # the study's own run measured more: the highest counts
    ex = PackedExecutor(out, cpus=[0, 1], costs_from=[pilot])
    assert ex.costs == {"a": 0.5, "b": 0.9}
    assert ex.placement("a") == [0] and ex.placement("b") == []  # b needs 2 CPUs: alone
    assert f"costs measured in {pilot}" in ex.name
    with pytest.raises(ExecutorError, match="not a study directory"):
        PackedExecutor(out, cpus=[0, 1], costs_from=[tmp_path / "nowhere"])


def test_packed_placement_shares_cpus_by_cost_and_in_plan_order(tmp_path: Path) -> None:
    write_cost(tmp_path / "runs" / "cheap" / "1-1", 0.5)   # 1 CPU
    write_cost(tmp_path / "runs" / "mid" / "1-1", 1.5)     # 2 CPUs
    write_cost(tmp_path / "runs" / "costly" / "1-1", 3.5)  # every CPU: alone
    ex = PackedExecutor(tmp_path, cpus=[0, 1, 2, 3])
    assert ex.name.startswith("packed on CPUs 0-3")
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def running(point: str, cpus: list[int] | None) -> None:  # a run in its call, as start() books it
        job = Job(point, 1, 1, tmp_path / "s.json", tmp_path / point, tmp_path / f"{point}.log")
        procs.append(subprocess.Popen(["true"]))
        logs.append((tmp_path / f"{point}.log").open("ab"))
        ex.running.append(_Running(job, procs[-1], logs[-1], 0.0, cpus))

    try:
        assert ex.placement("costly") == [] and ex.placement("new") == []  # alone, unpinned
        assert ex.placement("cheap") == [0] and ex.placement("mid") == [0, 1]
        running("cheap", [0])
        assert ex.placement("costly") is None and ex.placement("new") is None  # they wait for the machine
        assert ex.placement("mid") == [1, 2] and ex.placement("cheap") == [1]
        running("mid", [1, 2])
        assert ex.placement("cheap") == [3] and ex.placement("mid") is None
        assert ex.has_room("cheap") and not ex.has_room("mid")
        ex.running.clear()
        running("new", None)  # a run alone holds every CPU
        assert ex.placement("cheap") is None
    finally:
        for f in logs:
            f.close()
        for p in procs:
            p.wait()


def test_bad_executor_options_exit_2_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = study_file(tmp_path, "bad-options")
    cpus = len(os.sched_getaffinity(0))
    for args, says in [(["--parallel", str(cpus + 1)], f"at most --parallel {cpus}"),
                       (["--parallel", "x"], "must be a number of runs or auto, not 'x'"),
                       (["--gather-captures"], "--gather-captures is for --ray"),
                       (["--ray", "127.0.0.1:1"], "no Ray head answers there"),
                       (["--ray", "127.0.0.1:1", "--no-analyze"], "needs --gather-captures"),
                       (["--parallel", "1", "--ray", "auto"], "not allowed with argument"),
                       (["--parallel", "2", "--costs-from", str(tmp_path)], "--costs-from is for --parallel auto"),
                       (["--parallel", "auto", "--costs-from", str(tmp_path)], "not a study directory"),
                       (["--stop-after", "0m"], "must be longer than 0"),
                       (["--stop-after", "soon"], "must be a duration such as 45m")]:
        out = tmp_path / "out"
        try:
            code = study_main(["run", str(f), "--out", str(out), *args])
        except SystemExit as e:  # argparse
            code = int(e.code or 0)
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert says in err, (args, err)
        assert not (out / "attempts.jsonl").exists()


def test_a_node_at_another_commit_or_without_rtclab_is_refused(tmp_path: Path) -> None:
    commit = repo_commit(ROOT)
    assert commit is not None and len(commit) == 40
    other = "0" * 40
    problem = check_node(ROOT, other)
    assert problem is not None and f"is at commit {commit}, the driver at {other}" in problem
    problem = check_node(tmp_path, commit)
    assert problem is not None and "holds no rtclab repository" in problem
    assert check_node(ROOT, other, checkout_id(tmp_path)) is not None
    if os.geteuid() == 0 and shutil.which("node"):
        assert check_node(ROOT, commit) is None
        # The driver's own checkout (a node on the driver's machine) shares its files: its commit is not compared.
        assert check_node(ROOT, other, checkout_id(ROOT)) is None


# --- --parallel 2, real calls ---------------------------------------------------------------------------------------

# --parallel 2 with real calls: analysis/test/test_study_e2e.py resumes its interrupted study with it.


# --- --ray on a local two-node cluster, real calls ------------------------------------------------------------------

def worker_port_ranges() -> tuple[tuple[int, int], tuple[int, int]]:
    """Each node's worker ports, above the kernel's ephemeral range: free_port() can never hand one of them out
    (a CI run once failed with an object manager port drawn inside a node's worker range)."""
    high = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1])
    first = high + 1 if high + 400 < 65536 else 1024 + 400  # else: below any usual ephemeral range
    return (first, first + 199), (first + 200, first + 399)


_ports_given: set[int] = set()


def free_port() -> int:
    """A port free now, distinct from every other one this test handed out."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def cluster_pids(temp_dir: Path, gcs_port: int | None = None) -> list[int]:
    """Every process of the test's cluster: those naming its temp dir or (with gcs_port) its head's address, and
    their descendants (the workers). The head's Ray client server names only the address, and `ray start` leaves it
    an orphan: matched by the temp dir alone, it outlived every run of this test."""
    address = f":{gcs_port}\0".encode() if gcs_port else None
    parent: dict[int, int] = {}
    ours: set[int] = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes()
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parent[int(d.name)] = ppid
        if str(temp_dir).encode() in cmdline or (address and b"ray" in cmdline and address in cmdline):
            ours.add(int(d.name))
    grew = True
    while grew:
        more = {p for p, pp in parent.items() if pp in ours} - ours
        grew = bool(more)
        ours |= more
    return sorted(ours - {os.getpid()})


def kill_pids(pids: list[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGTERM:
            time.sleep(3)


@pytest.fixture
def ray_cluster(tmp_path: Path) -> Iterator[dict[str, Any]]:
    if not RAY.exists():
        pytest.fail(f"{RAY} is missing: scripts/setup.sh installs ray from requirements.lock")
    temp_dir = Path("/tmp") / f"rtclab-ray-test-{os.getpid()}"  # short: Ray's socket paths must fit in 107 bytes
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_health_check_period_ms": "1000",
           "RAY_health_check_failure_threshold": "3", "RAY_health_check_timeout_ms": "1000"}
    port = free_port()
    worker_nm_port = free_port()
    (head_lo, head_hi), (worker_lo, worker_hi) = worker_port_ranges()
    common = ["--resources", '{"rtclab_slot": 1}', "--num-cpus", "1", "--object-store-memory", "100000000",
              "--disable-usage-stats"]
    head = [str(RAY), "start", "--head", "--port", str(port), "--temp-dir", str(temp_dir),
            "--include-dashboard", "false", "--ray-client-server-port", str(free_port()),
            "--dashboard-agent-listen-port", str(free_port()), "--min-worker-port", str(head_lo), "--max-worker-port",
            str(head_hi), *common]
    worker = [str(RAY), "start", "--address", f"127.0.0.1:{port}", "--node-manager-port", str(worker_nm_port),
              "--object-manager-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
              "--min-worker-port", str(worker_lo), "--max-worker-port", str(worker_hi), *common]
    try:
        for cmd in (head, worker):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
            assert r.returncode == 0, f"{' '.join(cmd)}: {r.stderr[-2000:]}"
        yield {"address": f"127.0.0.1:{port}", "temp_dir": temp_dir, "worker_nm_port": worker_nm_port, "env": env}
    finally:
        kill_pids(cluster_pids(temp_dir, port))
        shutil.rmtree(temp_dir, ignore_errors=True)


def raylet_pid(temp_dir: Path, node_manager_port: int) -> int:
    for p in cluster_pids(temp_dir):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd[0].endswith(b"/raylet") and f"--node_manager_port={node_manager_port}".encode() in cmd:
            return p
    raise AssertionError(f"no raylet with node manager port {node_manager_port}")


def worker_node_id(cluster: dict[str, Any]) -> str:
    code = ("import json, ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
            "print(json.dumps([[n['NodeID'], n['NodeManagerPort']] for n in ray.nodes() if n['Alive']]))"
            % cluster["address"])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=cluster["env"])
    assert r.returncode == 0, r.stderr[-2000:]
    return next(nid for nid, nm in json.loads(r.stdout.strip().splitlines()[-1]) if nm == cluster["worker_nm_port"])


def run_files(run_dir: Path) -> set[str]:
    return {p.name for p in run_dir.iterdir()}


@pytest.mark.real_calls
@pytest.mark.load_tolerant  # structure and accounting, not validity (see above)
@pytest.mark.skipif(os.geteuid() != 0, reason="real calls need root (network namespaces, tc, captures)")
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_ray_two_nodes_gathered_like_a_serial_run_and_a_lost_node_rerun(tmp_path: Path,
                                                                       ray_cluster: dict[str, Any]) -> None:
    worker_id = worker_node_id(ray_cluster)
    out = tmp_path / "ray"
    f = study_file(tmp_path, "exec-ray")
    proc = subprocess.Popen([sys.executable, "-m", "rtclab_study", "run", str(f), "--out", str(out), "--allow-dirty",
                             "--ray", ray_cluster["address"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)
    node_runs = ROOT / NODE_RUNS / study_key(out)
    victim: dict[str, Any] | None = None
    try:
        # The worker's run, once it is in its call: its node notes where it runs before it starts.
        t0 = time.monotonic()
        while victim is None:
            assert proc.poll() is None, f"the study ended before the worker's run was in its call: {proc.communicate()}"
            assert time.monotonic() - t0 < 150, "the worker node never started a run in its call"
            for note in node_runs.glob("*/1-1.node.json"):
                n = json.loads(note.read_text())
                events = Path(n["run_dir"]) / "events.jsonl"
                if n["node_id"] == worker_id and events.exists() and '"call_start"' in events.read_text():
                    victim = n
            time.sleep(0.5)
        os.kill(raylet_pid(ray_cluster["temp_dir"], ray_cluster["worker_nm_port"]), signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=240)
        check_ray_study(tmp_path, f, out, victim, worker_id, proc.returncode, stderr)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(120)
        if victim is not None:
            wait_for_orphan(victim)
        shutil.rmtree(node_runs, ignore_errors=True)


def wait_for_orphan(victim: dict[str, Any]) -> str:
    """The killed node's harness was detached from its Ray worker: it finishes its call and tears its network down
    by itself. Returns its run id once it has exited."""
    run_dir = Path(victim["run_dir"])
    exited = run_dir.parent / f"{run_dir.name}.exit"  # written by its shell once the harness is gone
    t0 = time.monotonic()
    while not exited.exists() and time.monotonic() - t0 < 90:
        time.sleep(1)
    return str(json.loads((run_dir / "manifest.json").read_text())["id"])


def check_ray_study(tmp_path: Path, f: Path, out: Path, victim: dict[str, Any], worker_id: str, code: int,
                    stderr: str) -> None:
    assert code in (0, 3), stderr
    lost_point = Path(victim["run_dir"]).parent.name
    other_point = "codel" if lost_point == "fifo" else "fifo"

    recs = log_records(out)
    ends = {(x["point"], x["attempt"]): x for x in recs if x["event"] == "end"}
    lost = ends[(lost_point, 1)]
    assert lost["interrupted"] is True and "lost with its Ray node" in lost["error"], lost
    again = ends[(lost_point, 2)]
    assert again["node"]["node_id"] != worker_id, "re-run elsewhere"
    assert (other_point, 2) not in ends
    doc = json.loads((out / "study.json").read_text())
    statuses = {(x["point"], x["attempt"]): x["status"] for x in doc["runs"]}
    assert statuses[(lost_point, 1)] == "interrupted"
    assert statuses[(lost_point, 2)] in ("valid", "invalid") and statuses[(other_point, 1)] in ("valid", "invalid")

    orphan_id = wait_for_orphan(victim)

    # A serial run of the same study's first point (one call: the test command's time): the gathered study, its
    # points, runs and run directories have the structure of the serial one.
    one_point = tmp_path / "exec-serial.yaml"
    one_point.write_text(f.read_text().split("  - name: codel")[0]
                         + "repetitions: 1\nmax_attempts: 1\nshuffle: false\n")
    serial = tmp_path / "serial"
    r = run_study(str(one_point), "--out", str(serial))
    assert r.returncode in (0, 3), r.stderr
    sdoc = json.loads((serial / "study.json").read_text())
    assert set(doc) == set(sdoc)
    assert [p["name"] for p in doc["points"]] == ["fifo", "codel"] and [p["name"] for p in sdoc["points"]] == ["fifo"]
    assert all(set(p) == set(sdoc["points"][0]) for p in doc["points"])
    optional = {"excluded_because"}  # present when the run is not used (invalid on this host, or lost)
    assert {k for r in doc["runs"] for k in r} - optional == {k for r in sdoc["runs"] for k in r} - optional
    for point, attempt in ((lost_point, 2), (other_point, 1)):
        got = out / "runs" / point / f"1-{attempt}"
        ref = serial / "runs" / "fifo" / "1-1"
        assert run_files(got) == set(SMALL_FILES) & run_files(ref), (point, run_files(got))
        assert (out / "runs" / point / f"1-{attempt}.log").stat().st_size > 0
        gm, sm = (json.loads((d / "metrics.json").read_text()) for d in (got, ref))
        assert set(gm) == set(sm)
        for labels in (metric_rows.flow_labels(gm["flows"]), metric_rows.flow_labels(sm["flows"])):
            assert {"forward:video", "reverse:video"} <= set(labels)
        manifest = json.loads((got / "manifest.json").read_text())
        assert manifest["executor"]["kind"] == "ray" and manifest["executor"]["captures_on_node"] is True
        assert Path(manifest["executor"]["run_dir"], "capture-a.pcap").exists(), "captures stay on the node"
        assert manifest["id"] not in namespaces()
    assert orphan_id not in namespaces()


class ClockedExecutor:
    """One attempt at a time, each ending at once (exit 1, nothing recorded) and moving the runner's clock an hour
    on, as a real attempt's hour would."""
    slots, name = 1, "clocked (test)"

    def __init__(self) -> None:
        self.runner: Any = None
        self.in_flight: list[Job] = []

    def has_room(self, point: str) -> bool:
        return not self.in_flight

    def start(self, job: Job, lock_fd: int) -> dict[str, Any]:
        self.in_flight.append(job)
        return {}

    def wait(self, timeout_s: float) -> list[tuple[Job, dict[str, Any]]]:
        done = [(j, {"exit_code": 1, "wall_s": 0.1}) for j in self.in_flight]
        self.in_flight.clear()
        self.runner.progress.started -= 3600
        return done

    def forward(self, signum: int) -> None:
        pass

    def close(self) -> None:
        pass


def test_stop_after_starts_no_run_once_spent_and_the_same_command_goes_on(tmp_path: Path) -> None:
    from rtclab_study import plan as planmod
    from rtclab_study import spec
    from rtclab_study.runner import EXIT_PAUSED, EXIT_SOME_MISSING, StudyRunner
    plan = planmod.make(spec.load(study_file(tmp_path, "sliced")))
    out, stream = tmp_path / "out", io.StringIO()
    ex = ClockedExecutor()
    ex.runner = StudyRunner(plan, out, ex, stream=stream, stop_after_s=1800)  # type: ignore[arg-type]
    assert ex.runner.run() == EXIT_PAUSED
    starts = [r["point"] for r in log_records(out) if r["event"] == "start"]
    assert starts == ["fifo"]  # started within the budget; codel was not
    assert "--stop-after 30m00s spent: 1 run(s) still to run" in stream.getvalue()
    assert not (out / "study.json").exists()
    ex.runner = StudyRunner(plan, out, ex, stream=stream)  # type: ignore[arg-type]
    assert ex.runner.run() == EXIT_SOME_MISSING  # no budget: the rest ran (failed here, so no valid run)
    assert [r["point"] for r in log_records(out) if r["event"] == "start"] == ["fifo", "codel"]
