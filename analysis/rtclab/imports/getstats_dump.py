"""`rtclab import webrtc-internals FILE` and `rtclab import rtcstats FILE`: a field call's getStats dump made into a run
directory marked imported, which `rtclab analyze`, `rtclab dashboard`, `rtclab compare` and `rtclab export` read as
they read a lab run (docs/export.md, "Importing getStats dumps").

Each peer connection of the dump that carried RTP becomes a call: its samples are written as the browser's
getstats-<side>.jsonl, exactly as the harness writes a lab call's, beside a manifest.json marked `imported` (the
source, its layout, the peer connection; `captures` and `network_ground_truth` null, and `no_captures`: every section
a lab run has from its captures, its bottleneck and its pages, each with the reason it is missing). The analyzer then
makes metrics.json, report.txt and dashboard.html as for a lab run: the getStats timeline and summaries are its own,
and each capture section is null (metrics.json `imported.no_captures` says why). With one such peer connection OUT is
its run directory; with several, OUT holds one run directory per call (c1, c2, ... in the dump's order) and
imported.json lists them."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import __version__ as RTCLAB_VERSION
from . import rtcstats, webrtc_internals
from .output import prepare_out, sha256
from .statsdump import Dump, DumpError, PeerConnection, jsonl_lines

READERS: dict[str, Callable[[Path], Dump]] = {"webrtc-internals": webrtc_internals.read, "rtcstats": rtcstats.read}
INDEX_FILE = "imported.json"
# What a lab run has from its captures, its bottleneck's logs and its pages, none of which a getStats dump has
# (docs/metrics.md names each section).
NO_CAPTURES = {
    "flows": "per-flow delay, loss, jitter and rates need the two captures",
    "fairness": "fairness at the bottleneck needs capture-b",
    "rfc8867": "RFC 8867's metrics need capture-b",
    "multiflow": "per-call shares of the bottleneck need the captures",
    "bottleneck_queue": "the bottleneck's queue needs its statistics log",
    "ground_truth": "the network's ground truth needs the bottleneck's log",
    "frames": "what the viewer saw needs the receiving page's per-frame record",
    "chrome_ecn": "ECN on the wire needs the captures",
    "congestion_controller": "GCC's internals need the RTC event log (rtclab import eventlog)",
    "cpu": "where the CPU went needs the lab's cpu.jsonl",
    "capacity": "the bottleneck's capacity and propagation delay need a scenario: a field call's network is unknown",
}


@dataclass
class ImportedCall:
    call_id: str
    run_dir: Path
    peer_connection: str
    samples: int
    metrics: dict[str, Any]


def manifest(source: dict[str, Any], dump: Dump, pc: PeerConnection, call_id: str, side: str,
             run_id: str) -> dict[str, Any]:
    """The imported run's manifest.json: a format 3 manifest with one call, its timings the first and last sample,
    no scenario, no captures, and `imported` saying where it came from."""
    return {
        "format_version": 3, "rtclab_version": RTCLAB_VERSION, "id": run_id, "status": "complete", "error": None,
        "imported": dict(source, layout=dump.layout, peer_connection=pc.id, side=side, samples=len(pc.samples),
                         user_agent=dump.user_agent, origin=dump.origin, notes=pc.notes, captures=None,
                         network_ground_truth=None, no_captures=NO_CAPTURES),
        "timings": {"call_start": pc.samples[0][0], "call_end": pc.samples[-1][0]},
        "captures": None,
        "validity": {"valid": None, "checks": [{
            "name": "imported", "ok": None,
            "detail": "a field call's getStats, imported: no scenario and no lab measurement to check against"}]},
        "calls": [{"id": call_id, "start_s": 0, "stop_s": None, "getstats": {side: f"getstats-{side}.jsonl"},
                   "peer_connection": pc.id}],
    }


def _write_run(run_dir: Path, doc: dict[str, Any], pc: PeerConnection, side: str) -> dict[str, Any]:
    """manifest.json and getstats-<side>.jsonl, then the analyzer's metrics.json, report.txt and dashboard.html."""
    from .. import dashboard
    from ..analyze import analyze
    from ..report import render
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(json.dumps(doc, indent=1) + "\n")
    (run_dir / f"getstats-{side}.jsonl").write_text("\n".join(jsonl_lines(pc, side)) + "\n")
    m, table = analyze(run_dir, run_tshark=False)
    (run_dir / "report.txt").write_text(render(m))
    dashboard.write(run_dir, m, table)
    return m


def import_dump(kind: str, source: Path, out: Path, side: str = "a") -> list[ImportedCall]:
    """Makes OUT from the dump (kind: webrtc-internals or rtcstats); the browser that saved it becomes `side` (a, the
    caller whose sending is the forward direction, or b)."""
    dump = READERS[kind](source)
    usable = [pc for pc in dump.peer_connections if pc.samples and pc.rtp_streams()]
    if not usable:
        seen = ", ".join(f"{pc.id} ({len(pc.samples)} samples)" for pc in dump.peer_connections) or "none"
        raise DumpError(f"{source}: no peer connection with RTP streams in its getStats (peer connections: {seen}): "
                        "nothing to import")
    prepare_out(out, DumpError)
    info = {"kind": kind, "source": source.name, "sha256": sha256(source), "bytes": source.stat().st_size,
            "imported_by": f"rtclab {RTCLAB_VERSION}",
            "imported_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    calls = []
    for i, pc in enumerate(usable):
        call_id = f"c{i + 1}"
        run_dir = out if len(usable) == 1 else out / call_id
        run_id = out.name if len(usable) == 1 else f"{out.name}-{call_id}"
        doc = manifest(info, dump, pc, call_id, side, run_id)
        calls.append(ImportedCall(call_id, run_dir, pc.id, len(pc.samples), _write_run(run_dir, doc, pc, side)))
    if len(usable) > 1:
        skipped = [pc.id for pc in dump.peer_connections if pc not in usable]
        (out / INDEX_FILE).write_text(json.dumps(dict(info, layout=dump.layout, calls=[
            {"id": c.call_id, "run_dir": c.run_dir.name, "peer_connection": c.peer_connection, "samples": c.samples}
            for c in calls], without_rtp=skipped), indent=1) + "\n")
    return calls
