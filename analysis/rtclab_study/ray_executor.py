"""The Ray executor (`rtclab study run FILE --ray ADDRESS`): each attempt is a Ray task needing one `rtclab_slot`, a
custom resource every node declares (`ray start ... --resources='{"rtclab_slot": 1}'`), so the scheduler places one
run per node (more with more slots). On its node the task runs the same command as the serial executor, from the
rtclab repository there (which must be at the driver's commit: checked on every node before anything runs, and again
by every task; a node whose checkout is the driver's own, on the driver's machine, shares its files and is not
compared), analyses it there, and returns the run's small files; the driver writes them into the study
directory as the attempt's run directory, and notes the node in its manifest (`executor`). Captures and
packets.parquet stay on the node (its path is in the manifest) unless `--gather-captures`.

A node lost while it runs an attempt (its raylet or machine died): Ray reports the task's failure, the attempt is
logged as interrupted (`lost`), and the runner makes the repetition again, under a new attempt number, wherever a
slot is free. Ray's own task retries are off (max_retries=0): a retry would reuse the attempt's directory."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from .executors import ExecutorError, Job
from .spec import REPO_ROOT

SLOT = "rtclab_slot"
# What a node returns of a run directory; the rest (captures, getStats series, packets.parquet) stays on the node.
SMALL_FILES = ("manifest.json", "metrics.json", "report.txt", "dashboard.html", "events.jsonl",
               "harness.log", "cpu.jsonl")
NODE_RUNS = Path("results") / "ray-runs"  # under the node's repository


class NodeSetupError(Exception):
    """A node that cannot run rtclab as this driver would (another commit, no repository, not root)."""


def repo_commit(repo: Path) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def checkout_id(repo: Path) -> str:
    """This machine and the repository's real path: a node whose checkout is the driver's own (a node started on
    the driver's machine) shares its files, whatever commit other people move it to meanwhile."""
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = socket.gethostname()
    return f"{machine}:{repo.resolve()}"


def check_node(repo: Path, commit: str, driver_checkout: str | None = None) -> str | None:
    """What keeps this machine from running the driver's rtclab, in a sentence; None when nothing does."""
    host = socket.gethostname()
    if not (repo / "harness" / "cli.js").is_file():
        return (f"node {host}: {repo} holds no rtclab repository (harness/cli.js); "
                "clone it there and run scripts/setup.sh")
    here = repo_commit(repo)
    if here != commit and checkout_id(repo) != driver_checkout:
        return (f"node {host}: {repo} is at commit {here or '(not a git checkout)'}, the driver at {commit}: check out "
                f"the same commit on every node (git -C {repo} checkout {commit[:12]}) and run scripts/setup.sh")
    if os.geteuid() != 0:
        return f"node {host}: Ray runs as uid {os.geteuid()}; rtclab needs root: start ray as root on that node"
    if shutil.which("node") is None:
        return f"node {host}: node (>= 20) not found; run scripts/setup.sh there"
    return None


def node_identity() -> dict[str, Any]:
    import ray
    return {"hostname": socket.gethostname(), "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address()}


def check_node_task(repo: str, commit: str, driver_checkout: str) -> dict[str, Any]:
    return {**node_identity(), "problem": check_node(Path(repo), commit, driver_checkout)}


def run_on_node(spec: dict[str, Any]) -> dict[str, Any]:
    """One attempt on this node (a Ray task): the harness with the point's scenario, into a run directory of the
    node's repository; returns the files the driver gathers."""
    repo = Path(spec["repo"])
    problem = check_node(repo, spec["commit"], spec["driver_checkout"])
    if problem:
        raise NodeSetupError(problem)
    me = node_identity()
    run_dir = repo / NODE_RUNS / spec["study_key"] / spec["point"] / spec["name"]
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    scenario = run_dir.parent / f"{spec['name']}.scenario.json"
    scenario.write_text(spec["scenario"])
    # Where this attempt runs, before it starts: a test (or a user) can find it on its node.
    (run_dir.parent / f"{spec['name']}.node.json").write_text(json.dumps({**me, "run_dir": str(run_dir)}))
    log_path = run_dir.parent / f"{spec['name']}.log"
    cmd = [shutil.which("node") or "node", str(repo / "harness" / "cli.js"), "--scenario", str(scenario),
           "--out", str(run_dir), *spec["extra_args"]]
    t0 = time.monotonic()
    pid, code_file = _start_detached(cmd, repo, log_path, run_dir.parent / spec["name"])
    try:
        while _alive(pid):  # short sleeps: Ray's cancel arrives as KeyboardInterrupt between two of them
            time.sleep(0.5)
    except BaseException:
        # The task was cancelled or its worker is stopping: the harness tears its run down, which stays here.
        os.kill(pid, signal.SIGTERM)
        raise
    code = _exit_code(code_file)
    wall_s = time.monotonic() - t0
    names = (sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
             if spec["gather_captures"] else [n for n in SMALL_FILES if (run_dir / n).is_file()])
    return {"exit_code": code, "wall_s": round(wall_s, 3), "node": {**me, "run_dir": str(run_dir)},
            "files": {n: (run_dir / n).read_bytes() for n in names}, "log": log_path.read_bytes(), "command": cmd}


def stop_on_node(repo: str, key: str, names: list[tuple[str, str]]) -> int:
    """A Ray task sent to every node when the study is interrupted: SIGTERM to the harness of each named attempt
    that runs here (SIGINT is ignored by a shell's background job; the harness handles both alike). Returns how
    many it stopped."""
    me = node_identity()["node_id"]
    stopped = 0
    for point, name in names:
        d = Path(repo) / NODE_RUNS / key / point
        try:
            if json.loads((d / f"{name}.node.json").read_text())["node_id"] != me:
                continue
            pid = int((d / f"{name}.pid").read_text())
        except (OSError, ValueError, KeyError):
            continue
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
            stopped += 1
    return stopped


def study_key(out: Path) -> str:
    """The directory of a study's runs under each node's results/ray-runs: named after the study directory and
    the driver's host, so two studies never share it."""
    return f"{out.name}-{hashlib.sha1(f'{socket.gethostname()}:{out}'.encode()).hexdigest()[:8]}"


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """A host:port with nothing listening: said at once (ray.init would keep retrying for minutes)."""
    if address == "auto" or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(f"--ray {address}: expected auto or the head's HOST:PORT (ray start --head prints it)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ExecutorError(f"--ray {address}: no Ray head answers there ({e}); start one with ray start --head "
                            f"--resources='{{\"{SLOT}\": 1}}', or check the address") from None


def _start_detached(cmd: list[str], repo: Path, log_path: Path, stem: Path) -> tuple[int, Path]:
    """Starts the harness outside this Ray worker's process tree (setsid -f: its parent is init): a worker that dies
    with its raylet kills its children (Ray's kill_child_processes_on_worker_exit) with SIGKILL, which would leave
    the run's namespaces behind; a detached harness finishes its call and tears it down by itself. Returns the
    harness's pid and the file its exit status is written to."""
    pid_file, code_file = stem.with_suffix(".pid"), stem.with_suffix(".exit")
    for f in (pid_file, code_file):
        f.unlink(missing_ok=True)
    # The harness runs in the background of a shell that waits for it: SIGINT is ignored in a non-interactive
    # shell's background jobs, so a stop is sent as SIGTERM, which the harness handles the same way.
    # (`cd` on its own: `cd X && node ... &` would background a subshell, and $! would not be the harness.)
    script = (f"cd {shlex.quote(str(repo))} || exit 1; "
              f"{shlex.join(cmd)} </dev/null >>{shlex.quote(str(log_path))} 2>&1 & "
              f"echo $! > {shlex.quote(str(pid_file))}; wait $!; echo $? > {shlex.quote(str(code_file))}.tmp; "
              f"mv {shlex.quote(str(code_file))}.tmp {shlex.quote(str(code_file))}")
    subprocess.run(["setsid", "-f", "bash", "-c", script], check=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the harness did not start within 30 s ({' '.join(cmd[:2])})")
        time.sleep(0.05)
    return int(pid_file.read_text()), code_file


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _exit_code(code_file: Path, wait_s: float = 10.0) -> int | None:
    """The harness's exit status, written by its shell once it is gone."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            return int(code_file.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


class RayExecutor:
    """Attempts as Ray tasks needing one rtclab_slot each; as many at once as the cluster has slots."""

    def __init__(self, address: str, out: Path, repo: Path = REPO_ROOT, extra_args: list[str] | None = None,
                 gather_captures: bool = False):
        _probe(address)
        try:
            import ray
        except ImportError as e:
            raise ExecutorError("--ray needs the ray package: "
                                "run scripts/setup.sh (it installs requirements.lock)") from e
        self.ray = ray
        commit = repo_commit(REPO_ROOT)
        if commit is None:
            raise ExecutorError(f"--ray: {REPO_ROOT} is not a git checkout, so the nodes' rtclab cannot be checked "
                                f"against it")
        self.commit = commit
        self.repo = repo
        self.extra_args = extra_args or []
        self.gather_captures = gather_captures
        self.study_key = study_key(out)
        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ExecutorError(f"--ray {address}: cannot connect to a Ray cluster: {e}") from None
        self.address = address
        self.slots = self._slots()
        if self.slots < 1:
            ray.shutdown()
            raise ExecutorError(f"--ray {address}: no node of this cluster has the {SLOT} resource; start every node "
                                f"with ray start ... --resources='{{\"{SLOT}\": 1}}' (docs/studies.md, Executors)")
        self._check_nodes()
        self._run = ray.remote(run_on_node).options(resources={SLOT: 1}, num_cpus=0, max_retries=0)
        self.name = f"ray {address} ({self.slots} {SLOT}(s))"
        self.running: dict[Any, tuple[Job, float]] = {}  # ObjectRef -> job, submitted at
        self._slots_checked = time.monotonic()
        self._stop_pending = False
        self._stops: list[Any] = []  # the stop tasks sent (kept: their results are not needed)

    def _slots(self) -> int:
        return int(self.ray.cluster_resources().get(SLOT, 0))

    def _check_nodes(self) -> None:
        """Every node with a slot is at the driver's commit, as root, with rtclab set up: asked before anything runs."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        check = self.ray.remote(check_node_task)
        nodes = [n for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(SLOT, 0) > 0]
        refs = [check.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(str(self.repo), self.commit, checkout_id(REPO_ROOT)) for n in nodes]
        try:
            answers = self.ray.get(refs, timeout=120)
        except self.ray.exceptions.GetTimeoutError:
            self.ray.shutdown()
            raise ExecutorError("--ray: the nodes did not answer the set-up check within 120 s") from None
        problems = [a["problem"] for a in answers if a["problem"]]
        if problems:
            self.ray.shutdown()
            raise ExecutorError("--ray: " + "; ".join(problems))

    def has_room(self, point: str) -> bool:
        return len(self.running) < self.slots

    def start(self, job: Job, lock_fd: int) -> dict[str, Any]:
        spec = {"repo": str(self.repo), "commit": self.commit, "driver_checkout": checkout_id(REPO_ROOT),
                "study_key": self.study_key, "point": job.point,
                "name": job.run_dir.name, "scenario": job.scenario.read_text(), "extra_args": self.extra_args,
                "gather_captures": self.gather_captures}
        ref = self._run.remote(spec)
        self.running[ref] = (job, time.monotonic())
        return {"ray_task": ref.task_id().hex()}

    def wait(self, timeout_s: float) -> list[tuple[Job, dict[str, Any]]]:
        if self._stop_pending:
            self._stop_pending = False
            self._send_stop()
        if not self.running:
            return []
        ready, _ = self.ray.wait(list(self.running), num_returns=len(self.running), timeout=timeout_s)
        ended = []
        for ref in ready:
            job, t0 = self.running.pop(ref)
            ended.append((job, self._gather(ref, job, t0)))
        if time.monotonic() - self._slots_checked > 10:
            self._slots_checked = time.monotonic()
            if self.running and self._slots() < 1:
                raise ExecutorError(f"--ray {self.address}: no node with a {SLOT} is left in the cluster; the "
                                    f"attempts still queued cannot run (resume once nodes are back)")
        return ended

    def _gather(self, ref: Any, job: Job, t0: float) -> dict[str, Any]:
        exc = self.ray.exceptions
        wall_s = round(time.monotonic() - t0, 3)
        try:
            res: dict[str, Any] = self.ray.get(ref)
        except exc.TaskCancelledError:
            return {"exit_code": None, "wall_s": wall_s, "error": "the Ray task was cancelled; what it recorded "
                    "stays on its node"}
        except exc.RayTaskError as e:
            if isinstance(e.cause, NodeSetupError):
                raise ExecutorError(f"--ray: {e.cause}") from None
            return {"exit_code": None, "wall_s": wall_s, "error": f"the task failed on its node: {e.cause!r}"}
        except exc.RayError as e:  # the worker or its node died: the attempt is made again elsewhere
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return {"exit_code": None, "wall_s": wall_s, "lost": True,
                    "error": f"lost with its Ray node ({type(e).__name__}: {first})"}
        for name, data in res["files"].items():
            path = job.run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        job.log_path.write_bytes(res["log"])
        self._note_node(job.run_dir, res["node"], sorted(res["files"]))
        return {"exit_code": res["exit_code"], "wall_s": res["wall_s"], "node": res["node"]}

    def _note_node(self, run_dir: Path, node: dict[str, Any], gathered: list[str]) -> None:
        mpath = run_dir / "manifest.json"
        try:
            manifest = json.loads(mpath.read_text())
        except (OSError, ValueError):
            return  # no manifest: the attempt is incomplete, and the end record names the node
        manifest["executor"] = {"kind": "ray", **node, "gathered": gathered,
                                "captures_on_node": not self.gather_captures}
        tmp = mpath.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2))
        tmp.replace(mpath)

    def forward(self, signum: int) -> None:
        # Called from a signal handler, maybe inside a Ray call: the stop is sent by the next wait().
        self._stop_pending = True

    def _send_stop(self) -> None:
        """Asks every node to stop the harnesses of this study's running attempts (stop_on_node); their tasks then
        end as usual and return what the runs recorded."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        names = [(job.point, job.run_dir.name) for job, _ in self.running.values()]
        stop = self.ray.remote(stop_on_node)
        for n in self.ray.nodes():
            if n.get("Alive") and n.get("Resources", {}).get(SLOT, 0) > 0:
                self._stops.append(stop.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
                    n["NodeID"], soft=False)).remote(str(self.repo), self.study_key, names))

    def close(self) -> None:
        """On an error: the attempts still running are stopped (their runs stay on their nodes) before the driver
        leaves the cluster."""
        if self.running:
            self._send_stop()
            refs = list(self.running)
            self.ray.wait(refs, num_returns=len(refs), timeout=120)
            self.running.clear()
        self.ray.shutdown()
