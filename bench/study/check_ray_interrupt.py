"""Interrupting a Ray study (not a timed test; about 3 minutes of real calls): a local two-node cluster (two
`ray start`, as in analysis/test/test_study_executors.py), a study of 2 points x 1 repetition with
`--ray` (30 s calls), SIGINT to the driver once both runs are in their calls. Expected: the driver asks the nodes
to stop the harnesses (SIGTERM), their runs end incomplete ("interrupted by SIGTERM") and are gathered, exit 130,
both attempts' end records say interrupted, no namespace left, then the same command makes the interrupted
repetitions again as attempt 2.

    flock /tmp/rtclab-realcalls.lock .venv/bin/python bench/study/check_ray_interrupt.py

Prints what it saw; exit 0 when all of the above held."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis" / "test"))

from test_study_executors import RAY, STUDY, cluster_pids, free_port, kill_pids, namespaces  # noqa: E402 (after the sys.path insert)

from rtclab_study.ray_executor import NODE_RUNS, study_key  # noqa: E402 (after the sys.path insert)


def start_cluster(temp_dir: Path) -> str:
    env_extra = ["--resources", '{"rtclab_slot": 1}', "--num-cpus", "1", "--object-store-memory", "100000000",
                 "--disable-usage-stats"]
    port = free_port()
    subprocess.run([str(RAY), "start", "--head", "--port", str(port), "--temp-dir", str(temp_dir),
                    "--include-dashboard", "false", "--ray-client-server-port", str(free_port()),
                    "--dashboard-agent-listen-port", str(free_port()), *env_extra], check=True, capture_output=True)
    subprocess.run([str(RAY), "start", "--address", f"127.0.0.1:{port}", "--node-manager-port", str(free_port()),
                    "--object-manager-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
                    *env_extra], check=True, capture_output=True)
    return f"127.0.0.1:{port}"


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="rtclab-ray-interrupt-"))
    temp_dir = Path("/tmp") / f"rtclab-ray-int-{work.name[-6:]}"
    f = work / "s.yaml"
    # 30 s calls: the stop lands well inside them (an 8 s call may end by itself before it arrives).
    f.write_text(STUDY.format(name="ray-interrupt", root=ROOT).replace("duration_s: 8", "duration_s: 30"))
    out = work / "study"
    node_runs = ROOT / NODE_RUNS / study_key(out)
    ok = True
    try:
        address = start_cluster(temp_dir)
        cmd = [sys.executable, "-m", "rtclab_study", "run", str(f), "--out", str(out), "--ray", address]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        t0 = time.monotonic()
        while True:
            in_call = [n for n in node_runs.glob("*/1-1") if '"call_start"' in
                       ((n / "events.jsonl").read_text() if (n / "events.jsonl").exists() else "")]
            if len(in_call) == 2 or time.monotonic() - t0 > 150 or proc.poll() is not None:
                break
            time.sleep(0.5)
        print(f"{len(in_call)} run(s) in their call after {time.monotonic() - t0:.0f} s; SIGINT to the driver")
        t1 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
        print(f"driver exit {proc.returncode} after {time.monotonic() - t1:.1f} s")
        ok &= proc.returncode == 130
        ends = [json.loads(x) for x in (out / "attempts.jsonl").read_text().splitlines()]
        ends = [e for e in ends if e["event"] == "end"]
        print("end records:", [(e["point"], e["attempt"], e["interrupted"], e.get("error")) for e in ends])
        ok &= len(ends) == 2 and all(e["interrupted"] for e in ends)
        ids: list[Any] = []
        t2 = time.monotonic()
        for run in node_runs.glob("*/1-1"):
            while not (run.parent / "1-1.exit").exists() and time.monotonic() - t2 < 60:
                time.sleep(1)
            doc = json.loads((run / "manifest.json").read_text())
            ids.append(doc["id"])
            print(f"on the node: {run} status {doc['status']} ({doc.get('error')}), harness exit "
                  f"{(run.parent / '1-1.exit').read_text().strip() if (run.parent / '1-1.exit').exists() else '?'}")
        for run in out.glob("runs/*/1-1"):
            m = json.loads((run / "manifest.json").read_text()) if (run / "manifest.json").exists() else {}
            print(f"gathered: {run.relative_to(out)}: {sorted(p.name for p in run.iterdir())}, "
                  f"status {m.get('status')}")
            stopped = m.get("status") == "incomplete" and "SIGTERM" in str(m.get("error"))
            ok &= stopped or m.get("status") == "complete"  # stopped, or its call had ended before the stop
        left = [i for i in ids if i in namespaces()]
        print(f"namespaces left by the interrupted runs: {left or 'none'}")
        ok &= not left and len(ids) == 2
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
        again = sorted(p.name for p in out.glob("runs/*/1-2"))
        print(f"resumed: exit {r.returncode}; attempt 2 of {len(again)} point(s)")
        ok &= r.returncode in (0, 3) and len(again) >= 1
        if not ok:
            print(err[-3000:], r.stderr[-3000:])
    finally:
        kill_pids(cluster_pids(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)
        shutil.rmtree(node_runs, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
