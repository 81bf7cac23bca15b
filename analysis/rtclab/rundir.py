"""The run-directory library (docs/run-directory.md): the one place where rtclab reads what a run recorded. The
manifest (with its format version and its scenario, validated), events and getStats lines (JSON lines), the two
captures (the Rust decoder's columns, or raw records for tools that need the bytes), the bottleneck's ground-truth
log, its queue counters (userspace stats or the kernel's qdisc samples) and iperf3's summaries. Every reader
tolerates a missing or damaged file: it records a problem and returns what it could read. The benchmarks' scripts
import these readers too."""

from __future__ import annotations

import ipaddress
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from . import _core, steps
from .scenario import Scenario, ScenarioError, view

DEFAULT_A = "10.0.1.2"
DEFAULT_B = "10.0.2.2"
FORWARD_DEV = "r-eth1"  # the router's interface towards b: where the forward bottleneck sits (kernel backend)

# manifest.json's format_version: absent is 1 (runs before the field existed); 2 adds the field itself; 3 adds
# `calls` (several calls, their tracks' SSRCs, selected pairs and DSCP marking; docs/run-directory.md).
MANIFEST_FORMAT_VERSIONS = (1, 2, 3)


class RunDirError(Exception):
    """A run directory this analyzer must not read (a manifest from a newer format)."""


@dataclass
class RunDir:
    path: Path
    manifest: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what is missing or damaged, in words for the report
    # The manifest's scenario, validated, with each capacity and delay step where the run applied it (steps.as_applied:
    # its measured time, in older runs its scheduled one); None when absent or invalid.
    scenario: Scenario | None = None
    configured_scenario: Scenario | None = None  # the same as the scenario says it, every step at its scheduled time

    @property
    def scenario_doc(self) -> dict[str, Any]:
        doc = self.manifest.get("scenario")
        return doc if isinstance(doc, dict) else {}

    @property
    def format_version(self) -> int:
        return manifest_format_version(self.manifest, self.path / "manifest.json")

    @property
    def addr_a(self) -> str:
        return ((self.manifest.get("topology") or {}).get("data") or {}).get("a") or DEFAULT_A

    @property
    def addr_b(self) -> str:
        return ((self.manifest.get("topology") or {}).get("data") or {}).get("b") or DEFAULT_B

    @property
    def cross_traffic_ports(self) -> list[int] | None:
        """Each cross-traffic item's iperf3 server port (manifest topology.cross_traffic), None in older runs."""
        items = (self.manifest.get("topology") or {}).get("cross_traffic")
        if not isinstance(items, list):
            return None
        return [int(i["port"]) for i in sorted(items, key=lambda i: int(i["n"]))]

    @property
    def has_calls(self) -> bool:
        """False for a run without a call (scenario `calls: []`): no browsers, no getStats, no event logs."""
        calls = self.scenario_doc.get("calls")
        return not (isinstance(calls, list) and not calls)

    @property
    def call_start_s(self) -> float | None:
        """Epoch seconds of t = 0 for the scenario's schedules."""
        t = (self.manifest.get("timings") or {}).get("call_start")
        return float(t) if isinstance(t, (int, float)) and t > 0 else None

    @property
    def call_end_s(self) -> float | None:
        t = (self.manifest.get("timings") or {}).get("call_end")
        return float(t) if isinstance(t, (int, float)) and t > 0 else None

    def file(self, name: str) -> Path:
        return self.path / name


def ip_to_int(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def int_to_ip(value: int) -> str:
    return str(ipaddress.IPv4Address(int(value)))


def manifest_format_version(manifest: dict[str, Any], path: Path) -> int:
    """The manifest's format_version (1 when absent); RunDirError for one this analyzer does not know."""
    version = manifest.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version not in MANIFEST_FORMAT_VERSIONS:
        known = ", ".join(str(v) for v in MANIFEST_FORMAT_VERSIONS)
        raise RunDirError(f"{path}: format_version {version!r} is not one this analyzer reads (it reads {known}); "
                          f"update rtclab to analyse this run")
    return version


def read_jsonl(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """Reads a JSON-lines file; a damaged line (an interrupted write) is skipped and reported."""
    out: list[dict[str, Any]] = []
    bad = 0
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(value, dict):
                out.append(value)
    if bad:
        problems.append(f"{path.name}: {bad} damaged line(s) skipped (interrupted write?)")
    return out


def load(path: Path) -> RunDir:
    """Reads manifest.json (its format version checked, its scenario validated) and events.jsonl."""
    run = RunDir(path=path)
    mpath = path / "manifest.json"
    if not mpath.exists():
        run.problems.append("manifest.json missing: addresses, capacity and phases use defaults; validity unknown")
    else:
        try:
            doc = json.loads(mpath.read_text())
            run.manifest = doc if isinstance(doc, dict) else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            run.problems.append(f"manifest.json unreadable ({e}): addresses, capacity and phases use defaults")
    manifest_format_version(run.manifest, mpath)
    if "scenario" in run.manifest:
        try:
            run.scenario = view(run.manifest["scenario"])
        except ScenarioError as e:
            run.problems.append(f"manifest.json: {e}: the scenario is not used (no capacity, propagation delay, "
                                f"cross-traffic phases or competitors)")
    elif run.manifest:
        run.problems.append("manifest.json holds no scenario: no capacity, propagation delay or cross-traffic phases")
    status = run.manifest.get("status")
    if status and status != "complete":
        why = run.manifest.get("error") or "no reason recorded"
        run.problems.append(f"run status is '{status}' ({why}): metrics cover the part that was recorded")
    epath = path / "events.jsonl"
    if epath.exists():
        run.events = read_jsonl(epath, run.problems)
    if run.scenario is not None:
        run.configured_scenario = run.scenario
        run.scenario = steps.as_applied(run.scenario, run.events, run.call_start_s)
    return run


@dataclass
class FramesFile:
    """A receiving page's per-frame record, frames-<side>.jsonl (docs/run-directory.md): its header (sampling, the
    page's clock, the clip it read), one dict per presented frame in order, the records the page dropped, and one
    dict per frame the video track delivered (read in a worker; empty in a run from before)."""
    header: dict[str, Any]
    frames: list[dict[str, Any]]
    dropped: int
    track_frames: list[dict[str, Any]] = field(default_factory=list)


def read_frames(run: RunDir, side: str) -> FramesFile | None:
    """frames-<side>.jsonl, or None when the run has none (a side that received no video, an older run)."""
    path = run.file(f"frames-{side}.jsonl")
    if not path.exists():
        return None
    lines = read_jsonl(path, run.problems)
    header = next((x for x in lines if x.get("kind") == "header"), {})
    frames = [x for x in lines if x.get("kind") == "frame"]
    dropped = sum(int(x.get("frames") or 0) for x in lines if x.get("kind") == "dropped")
    track = [x for x in lines if x.get("kind") == "track_frame"]
    return FramesFile(header=header, frames=frames, dropped=dropped, track_frames=track)


# --- Captures ---------------------------------------------------------------------------------------------------

class CaptureError(Exception):
    """A capture that cannot be read at all."""


@dataclass
class Capture:
    path: Path
    cols: dict[str, np.ndarray]  # one column per field of the IPv4 packets (analysis/core/src/pcap.rs)
    records: int  # every record, IPv4 or not
    error: str | None  # why reading stopped early, None when the file was read to its end
    non_ipv4: int = 0  # records that are no IPv4 packet (ARP, IPv6, ...): never joined
    span_ns: tuple[int, int] | None = None  # first and last record time of any kind

    @property
    def packets(self) -> int:
        return len(self.cols["ts_ns"])


CAPTURE_DTYPES = {"frame": np.uint32, "ts_ns": np.int64, "ip_src": np.uint32, "ip_dst": np.uint32, "proto": np.uint8,
                  "ip_len": np.uint16, "ip_id": np.uint16, "tos": np.uint8, "sport": np.uint16, "dport": np.uint16,
                  "key": np.uint64, "join_key": np.uint64, "key_complete": np.bool_, "cls": np.uint8,
                  "ssrc": np.uint32, "rtp_seq": np.uint16, "rtp_ts": np.uint32, "rtp_pt": np.uint8,
                  "rtp_marker": np.bool_, "twcc_seq": np.int32, "rtp_payload_len": np.int32, "tcp_seq": np.uint32,
                  "tcp_flags": np.uint8, "payload_len": np.uint32}


def read_capture(path: Path, twcc_ext_id: int = 3) -> Capture:
    """A pcap decoded into columns by the Rust core (memory-mapped, about 1.4 M packets/s)."""
    if not path.exists():
        raise CaptureError(f"{path.name} missing")
    try:
        d = _core.read_pcap(str(path), twcc_ext_id)
    except ValueError as e:
        raise CaptureError(f"{path.name}: {e}") from None
    records = int(d.pop("records"))
    error = d.pop("error")
    non_ipv4 = int(d.pop("non_ipv4"))
    span = d.pop("span_ns")
    for k in ("linktype", "nanosecond", "snaplen"):
        d.pop(k)
    return Capture(path=path, cols=d, records=records, error=error, non_ipv4=non_ipv4,
                   span_ns=(int(span[0]), int(span[1])) if span is not None else None)


def empty_capture(path: Path) -> Capture:
    """A capture with no packets, standing in for one that could not be read."""
    return Capture(path=path, cols={k: np.zeros(0, dtype=v) for k, v in CAPTURE_DTYPES.items()}, records=0, error=None)


def pcap_records(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(time ns, original frame length, captured bytes) of each record of a pcap, for tools that need the raw bytes
    (the benchmarks' checks); the analysis itself reads columns with read_capture."""
    with path.open("rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise CaptureError(f"{path.name}: not a pcap file ({len(head)} bytes)")
        magic = struct.unpack("<I", head[:4])[0]
        endian = {0xA1B23C4D: "<", 0xA1B2C3D4: "<", 0x4D3CB2A1: ">", 0xD4C3B2A1: ">"}.get(magic)
        if endian is None:
            raise CaptureError(f"{path.name}: not a pcap file (magic {magic:#010x})")
        scale = 1 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 1000
        rec = struct.Struct(endian + "IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, orig = rec.unpack(h)
            data = f.read(incl)
            if len(data) < incl:
                return
            yield sec * 1_000_000_000 + frac * scale, orig, data


def join_keys(key: np.ndarray, ip_id: np.ndarray) -> np.ndarray:
    """The packet join key (defined once, in analysis/core/src/join.rs `mix_ip_id`): a payload hash mixed with the
    IPv4 identification."""
    return _core.join_key_mix(np.ascontiguousarray(key, dtype=np.uint64), np.ascontiguousarray(ip_id, dtype=np.uint16))


def packet_key(ip_payload: bytes) -> int:
    """FNV-1a 64 over the first 64 bytes after the IPv4 header (docs/bottleneck-log.md)."""
    return int(_core.fnv1a64(ip_payload[:_core.KEY_BYTES]))


# --- The ground-truth log (docs/bottleneck-log.md) ----------------------------------------------------------------

GTLOG_MAGIC = b"RTCGTLG1"
GTLOG_DTYPE = np.dtype([("arrival_ns", "<u8"), ("dequeue_ns", "<u8"), ("tx_end_ns", "<u8"), ("due_ns", "<u8"),
                        ("release_ns", "<u8"), ("key", "<u8"), ("ip_len", "<u2"), ("ip_id", "<u2"), ("event", "u1"),
                        ("band", "u1"), ("ecn_in", "u1"), ("ip_proto", "u1"), ("queue_packets", "<u4"),
                        ("queue_bytes", "<u4")])
# the emulator's own names (netem/bottleneck/src/packet.rs `Event`)
GTLOG_EVENTS = {0: "forwarded", 1: "forwarded_ce", 2: "dropped_tail", 3: "dropped_aqm", 4: "dropped_loss",
                5: "dropped_shutdown", 6: "dropped_outage", 7: "dropped_gemodel"}
GTLOG_FORWARDED = (0, 1)


class GroundTruthLog:
    """header (the JSON of the file), records (a numpy structured array), trailing_bytes (a partial last record of
    a killed writer, ignored)."""

    def __init__(self, header: dict[str, Any], records: np.ndarray, trailing_bytes: int) -> None:
        self.header = header
        self.records = records
        self.trailing_bytes = trailing_bytes


def read_gtlog(path: Path) -> GroundTruthLog:
    """Raises ValueError (naming the file) for something that is not a ground-truth log of this layout."""
    data = path.read_bytes()
    if data[:8] != GTLOG_MAGIC or len(data) < 12:
        raise ValueError(f"{path.name}: not a ground-truth log (magic {data[:8]!r})")
    n = struct.unpack("<I", data[8:12])[0]
    try:
        header = json.loads(data[12:12 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path.name}: header unreadable ({e})") from None
    body = memoryview(data)[12 + n:]
    size = int(header.get("record_size", GTLOG_DTYPE.itemsize))
    if size != GTLOG_DTYPE.itemsize:
        raise ValueError(f"{path.name}: record size {size}, this analyzer reads {GTLOG_DTYPE.itemsize}")
    whole = len(body) // size * size
    return GroundTruthLog(header, np.frombuffer(body[:whole], dtype=GTLOG_DTYPE), len(body) - whole)


# --- The bottleneck's queue counters -----------------------------------------------------------------------------

@dataclass
class QueueSample:
    t: float  # epoch seconds
    queue_bytes: float
    queue_packets: float | None  # None when the sample does not say (not 0: an empty queue is a number it reports)
    rate_kbit: float | None  # the link rate the emulator reported with the sample (userspace backend)


def _count_left_out(run: RunDir, name: str, left_out: int, needed: str) -> None:
    if left_out:
        run.problems.append(f"{name}: {left_out} sample(s) without {needed} left out of the queue")


def queue_samples(run: RunDir) -> tuple[str | None, list[QueueSample]]:
    """The forward bottleneck's queue over time: (source file, samples). `bottleneck-forward.stats.jsonl`
    (userspace backend) or the root qdisc of r-eth1 in `qdisc-stats.jsonl` (kernel backend, `tc -s -j qdisc`)."""
    path = run.file("bottleneck-forward.stats.jsonl")
    out: list[QueueSample] = []
    if path.exists():
        lines = read_jsonl(path, run.problems)
        for r in lines:
            if isinstance(r.get("t"), (int, float)) and isinstance(r.get("queue_bytes"), (int, float)):
                rate = r.get("rate_kbit")
                packets = r.get("queue_packets")
                out.append(QueueSample(float(r["t"]), float(r["queue_bytes"]),
                                       float(packets) if isinstance(packets, (int, float)) else None,
                                       float(rate) if isinstance(rate, (int, float)) else None))
        _count_left_out(run, path.name, len(lines) - len(out), "t or queue_bytes")
        return path.name, out
    path = run.file("qdisc-stats.jsonl")
    if path.exists():
        lines = [r for r in read_jsonl(path, run.problems)
                 if any(isinstance(q, dict) and q.get("dev") == FORWARD_DEV for q in r.get("qdiscs") or [])]
        for r in lines:
            qdiscs = [q for q in r["qdiscs"] if isinstance(q, dict) and q.get("dev") == FORWARD_DEV]
            if not isinstance(r.get("t"), (int, float)):
                continue
            # The root qdisc's backlog counts its children's; fall back to the largest one when no root is marked.
            root = next((q for q in qdiscs if q.get("root")), None) or \
                max(qdiscs, key=lambda q: q["backlog"] if isinstance(q.get("backlog"), (int, float)) else -1)
            backlog, qlen = root.get("backlog"), root.get("qlen")
            if not isinstance(backlog, (int, float)):
                continue  # a queue of unknown size, not an empty one
            out.append(QueueSample(float(r["t"]), float(backlog),
                                   float(qlen) if isinstance(qlen, (int, float)) else None, None))
        _count_left_out(run, path.name, len(lines) - len(out), f"t or {FORWARD_DEV}'s backlog")
        return path.name, out
    return None, out


# --- Cross traffic ---------------------------------------------------------------------------------------------

def iperf3_summaries(run: RunDir) -> list[dict[str, Any]]:
    """Per cross-traffic client: mean throughput and mean RTT as iperf3 measured them (TCP's own view)."""
    out = []
    for p in sorted(run.path.glob("iperf3-*.json")):
        try:
            doc = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            run.problems.append(f"{p.name} unreadable: cross-traffic RTT from iperf3 missing")
            continue
        end = doc.get("end") or {}
        streams = end.get("streams") or []
        rtts = [s["sender"]["mean_rtt"] for s in streams if isinstance(s.get("sender"), dict)
                and "mean_rtt" in s["sender"]]
        sent = (end.get("sum_sent") or {}).get("bits_per_second")
        out.append({
            "file": p.name,
            "throughput_bps": sent,
            "mean_rtt_ms": (sum(rtts) / len(rtts) / 1000.0) if rtts else None,
            "retransmits": (end.get("sum_sent") or {}).get("retransmits"),
        })
    return out


# --- Per-process CPU accounting (cpu.jsonl, docs/run-directory.md) ------------------------------------------------

CPU_HOST_KINDS = ("busy", "user", "system", "irq", "softirq", "steal")


@dataclass
class CpuSample:
    t: float  # epoch seconds, the end of the interval
    dt: float  # the interval's length, seconds
    host: dict[str, float]  # CPU_HOST_KINDS in cores (CPU-seconds per second); busy is always there
    groups: dict[str, float]  # cores per `<component>/<role>`; a group that used nothing is absent
    procs: dict[int, float]  # cores per pid


@dataclass
class CpuLog:
    header: dict[str, Any]  # the file's first line (empty when it has none)
    processes: dict[int, dict[str, Any]]  # pid -> its last `process` line (the harness regroups a late-named browser)
    samples: list[CpuSample]


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if np.isfinite(x) else None


def _cpu_sample(r: dict[str, Any]) -> CpuSample | None:
    """A `sample` line, or None when a field it needs is not a number."""
    t, dt, host = _number(r.get("t")), _number(r.get("dt")), r.get("host")
    groups, procs = r.get("groups") or {}, r.get("procs") or {}
    if t is None or dt is None or dt <= 0 or not isinstance(host, dict) or _number(host.get("busy")) is None \
            or not isinstance(groups, dict) or not isinstance(procs, dict):
        return None
    g = {str(k): _number(v) for k, v in groups.items()}
    try:
        p = {int(k): _number(v) for k, v in procs.items()}
    except ValueError:
        return None
    if any(v is None for v in g.values()) or any(v is None for v in p.values()):
        return None
    return CpuSample(t, dt, {k: v for k in CPU_HOST_KINDS if (v := _number(host.get(k))) is not None},
                     {k: v for k, v in g.items() if v is not None}, {k: v for k, v in p.items() if v is not None})


def read_cpu(run: RunDir) -> CpuLog | None:
    """cpu.jsonl: the harness's per-process CPU accounting; None when the run has none (runs from before it). A cut
    last line is skipped by read_jsonl; a line whose fields are not what the format says is skipped and named."""
    path = run.file("cpu.jsonl")
    if not path.exists():
        return None
    header: dict[str, Any] = {}
    processes: dict[int, dict[str, Any]] = {}
    samples: list[CpuSample] = []
    bad = 0
    for r in read_jsonl(path, run.problems):
        kind = r.get("kind")
        if kind == "header":
            header = header or r
        elif kind == "process":
            pid, group = r.get("pid"), r.get("group")
            if isinstance(pid, int) and not isinstance(pid, bool) and isinstance(group, str):
                processes[pid] = r
            else:
                bad += 1
        elif kind == "sample":
            s = _cpu_sample(r)
            if s is None:
                bad += 1
            else:
                samples.append(s)
        # Other kinds: a newer harness's additions, not this analyzer's to read.
    if bad:
        run.problems.append(f"{path.name}: {bad} line(s) with missing or non-numeric fields skipped")
    samples.sort(key=lambda s: s.t)
    return CpuLog(header, processes, samples)
