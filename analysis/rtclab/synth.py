"""Synthetic run directories with a known network model, for tests, demos and the benchmark: RTP video and audio
(SSRC, sequence numbers, timestamps, the transport-wide-cc header extension), RTCP, and TCP cross traffic, through a
forward path with a propagation delay, a sawtooth queue, random loss, duplicates and late (reordered) packets.
Everything is vectorised with numpy so ten million packets take seconds. The truth it returns is what it did."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

A_IP, B_IP = 0x0A000102, 0x0A000202  # 10.0.1.2, 10.0.2.2
VIDEO_SSRC, AUDIO_SSRC, RTCP_A_SSRC, RTCP_B_SSRC = 0x11223344, 0x55667788, 0x11223344, 0x0BADCAFE
VIDEO_PT, AUDIO_PT = 96, 111
TWCC_EXT_ID = 3
HEADER_BYTES = 66  # Ethernet 14 + IPv4 20 + the longest transport header written here (UDP 8 + RTP 12 + ext 12)


@dataclass
class SynthConfig:
    duration_s: float = 20.0
    video_pps: float = 250.0
    video_ip_bytes: int = 1200
    audio_pps: float = 50.0
    audio_ip_bytes: int = 160
    rtcp_pps: float = 5.0
    tcp_flows: int = 1
    tcp_pps: float = 400.0  # each flow's data packets per second
    tcp_start_s: float = 5.0
    tcp_stop_s: float | None = 15.0
    forward_delay_ms: float = 25.0
    reverse_delay_ms: float = 25.0
    queue_peak_ms: float = 40.0  # sawtooth queuing delay 0 .. peak
    queue_period_s: float = 4.0
    loss: float = 0.01
    duplicate: float = 0.002
    reorder: float = 0.005
    reorder_extra_ms: float = 4.0
    ce_mark: float = 0.0
    capacity_kbit: float = 5000.0
    snaplen: int = 256
    start_epoch_s: float = 1_700_000_000.0
    seed: int = 1
    call: bool = True  # False: a run without a call (scenario `calls: []`): the TCP flows alone, no getStats
    cpu: bool = True  # write cpu.jsonl, the harness's per-process CPU accounting (made-up loads, docs/run-directory.md)
    frames: bool = False  # write frames-b.jsonl, the receiving page's per-frame record (write_frames)
    receiver_delay_ms: tuple[float, float] = (10.0, 20.0)  # last packet of a frame to its display, uniform
    stall_s: tuple[float, float] | None = None  # frames whose first packet leaves in [from, to) are never shown


@dataclass
class Truth:
    """What the model did to each forward packet, in send order."""
    t_send_ns: np.ndarray
    t_recv_ns: np.ndarray  # -1 when lost
    lost: np.ndarray
    duplicated: np.ndarray
    kind: np.ndarray  # 0 video, 1 audio, 2 rtcp, 3 tcp
    ip_len: np.ndarray
    extra: dict = field(default_factory=dict)


def _flow_times(rng: np.random.Generator, pps: float, start_s: float, stop_s: float) -> np.ndarray:
    n = max(int((stop_s - start_s) * pps), 0)
    t = start_s + (np.arange(n) + 0.5) / pps
    return t + rng.uniform(-0.2, 0.2, n) / pps


def _put(buf: np.ndarray, offsets: np.ndarray, at: int, values: np.ndarray, width: int) -> None:
    """Writes big-endian integers `values` of `width` bytes at offsets + at."""
    v = values.astype(np.uint64)
    for i in range(width):
        buf[offsets + at + i] = ((v >> np.uint64(8 * (width - 1 - i))) & np.uint64(0xFF)).astype(np.uint8)


def write_pcap(path: Path, ts_ns: np.ndarray, hdr: np.ndarray, frame_len: np.ndarray, snaplen: int) -> None:
    """Writes a nanosecond pcap: record i holds header bytes hdr[i] then zeros, cut at snaplen."""
    n = len(ts_ns)
    incl = np.minimum(frame_len, snaplen).astype(np.int64)
    rec_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(16 + incl, out=rec_off[1:])
    buf = np.zeros(24 + int(rec_off[-1]), dtype=np.uint8)
    head = np.array([0xA1B23C4D, 0x00040002, 0, 0, snaplen, 1], dtype="<u4").view(np.uint8)
    head = np.concatenate([head[:4], np.array([2, 0, 4, 0], np.uint8), np.zeros(8, np.uint8), head[16:]])
    buf[:24] = head
    off = 24 + rec_off[:-1]
    rec = np.empty((n, 4), dtype="<u4")
    rec[:, 0] = ts_ns // 1_000_000_000
    rec[:, 1] = ts_ns % 1_000_000_000
    rec[:, 2] = incl
    rec[:, 3] = frame_len
    rec_bytes = rec.view(np.uint8).reshape(n, 16)
    idx = off[:, None] + np.arange(16)
    buf[idx] = rec_bytes
    w = min(HEADER_BYTES, int(incl.min()) if n else HEADER_BYTES)
    cols = np.arange(w)
    buf[off[:, None] + 16 + cols] = hdr[:, :w]
    # Records shorter than the header template keep only their captured part; longer headers beyond w are rare.
    if w < HEADER_BYTES:
        for i in np.flatnonzero(incl > w):
            m = min(int(incl[i]), HEADER_BYTES)
            buf[off[i] + 16 + w: off[i] + 16 + m] = hdr[i, w:m]
    buf.tofile(path)


def _headers(p: dict[str, np.ndarray], ttl: int) -> np.ndarray:
    """Builds Ethernet + IPv4 + UDP/RTP/RTCP or TCP headers for packets described column-wise in p."""
    n = len(p["ip_len"])
    h = np.zeros((n, HEADER_BYTES), dtype=np.uint8)
    flat = h.reshape(-1)
    base = np.arange(n, dtype=np.int64) * HEADER_BYTES
    h[:, 12], h[:, 13] = 0x08, 0x00
    h[:, 14] = 0x45
    h[:, 15] = p["tos"]
    _put(flat, base, 16, p["ip_len"], 2)
    _put(flat, base, 18, p["ip_id"], 2)
    h[:, 20] = 0x40
    h[:, 22] = ttl
    h[:, 23] = p["proto"]
    _put(flat, base, 26, p["src"], 4)
    _put(flat, base, 30, p["dst"], 4)
    _put(flat, base, 34, p["sport"], 2)
    _put(flat, base, 36, p["dport"], 2)
    udp = p["proto"] == 17
    tcp = ~udp
    ub, tb = base[udp], base[tcp]
    _put(flat, ub, 38, p["ip_len"][udp] - 20, 2)
    # RTP (kind 0, 1) with a one-byte-header extension block: abs-send-time (id 2) and transport-wide-cc (id 3).
    rtp = udp & (p["kind"] <= 1)
    rb = base[rtp]
    flat[rb + 42] = 0x90
    flat[rb + 43] = (p["pt"][rtp] | (p["marker"][rtp] << 7)).astype(np.uint8)
    _put(flat, rb, 44, p["seq"][rtp], 2)
    _put(flat, rb, 46, p["rtp_ts"][rtp], 4)
    _put(flat, rb, 50, p["ssrc"][rtp], 4)
    flat[rb + 54], flat[rb + 55], flat[rb + 56], flat[rb + 57] = 0xBE, 0xDE, 0, 2
    flat[rb + 58] = 0x22
    _put(flat, rb, 59, p["rtp_ts"][rtp] & 0xFFFFFF, 3)
    flat[rb + 62] = (TWCC_EXT_ID << 4) | 1
    _put(flat, rb, 63, p["twcc"][rtp], 2)
    # RTCP (kind 2): a sender report (200) from a, a receiver report (201) from b.
    rtcp = udp & (p["kind"] == 2)
    cb = base[rtcp]
    flat[cb + 42] = 0x80
    flat[cb + 43] = p["pt"][rtcp]
    _put(flat, cb, 44, (p["ip_len"][rtcp] - 28) // 4 - 1, 2)
    _put(flat, cb, 46, p["ssrc"][rtcp], 4)
    _put(flat, cb, 50, p["seq"][rtcp], 4)  # distinct bytes per report (NTP timestamp position)
    # TCP: sequence and acknowledgement numbers, data offset 5 words, ACK (+PSH for data).
    _put(flat, tb, 38, p["tcp_seq"][tcp], 4)
    _put(flat, tb, 42, p["tcp_ack"][tcp], 4)
    flat[tb + 46] = 0x50
    flat[tb + 47] = np.where(p["ip_len"][tcp] > 52, 0x18, 0x10).astype(np.uint8)
    _put(flat, tb, 48, np.full(len(tb), 502), 2)
    return h


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    keys = parts[0].keys()
    return {k: np.concatenate([p[k] for p in parts]) for k in keys}


def _packets(n: int, **cols) -> dict[str, np.ndarray]:
    defaults = dict(kind=0, src=A_IP, dst=B_IP, proto=17, sport=50000, dport=50001, ip_len=100, tos=0, pt=0, marker=0,
                    seq=0, rtp_ts=0, ssrc=0, twcc=0, tcp_seq=0, tcp_ack=0, t=0.0)
    out = {}
    for k, v in defaults.items():
        val = cols.get(k, v)
        dtype = np.float64 if k == "t" else np.int64
        out[k] = np.broadcast_to(np.asarray(val, dtype=dtype), (n,)).copy()
    return out


def generate(cfg: SynthConfig) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], Truth]:
    """Builds the forward and reverse packet sets (columns) with send times, and the forward arrivals."""
    rng = np.random.default_rng(cfg.seed)
    d = cfg.duration_s
    fwd_parts = []
    rev_parts = []
    if cfg.call:
        t = _flow_times(rng, cfg.video_pps, 0, d)
        n = len(t)
        frames = (t * 30).astype(np.int64)  # 30 fps: packets of one frame share a timestamp
        fwd_parts.append(_packets(n, kind=0, pt=VIDEO_PT, seq=np.arange(n) % 65536, rtp_ts=(frames * 3000) % 2**32,
                                  ssrc=VIDEO_SSRC, ip_len=cfg.video_ip_bytes, t=t,
                                  marker=np.r_[frames[1:] != frames[:-1], True].astype(np.int64)))
        t = _flow_times(rng, cfg.audio_pps, 0, d)
        n = len(t)
        fwd_parts.append(_packets(n, kind=1, pt=AUDIO_PT, seq=(np.arange(n) + 1000) % 65536,
                                  rtp_ts=(np.arange(n) * 960) % 2**32, ssrc=AUDIO_SSRC, ip_len=cfg.audio_ip_bytes, t=t))
        t = _flow_times(rng, cfg.rtcp_pps, 0, d)
        fwd_parts.append(_packets(len(t), kind=2, pt=200, ssrc=RTCP_A_SSRC, seq=np.arange(len(t)), ip_len=80, t=t))
        t = _flow_times(rng, cfg.rtcp_pps, 0, d)
        rev_parts.append(_packets(len(t), kind=2, pt=201, ssrc=RTCP_B_SSRC, seq=np.arange(len(t)), ip_len=80, t=t,
                                  src=B_IP, dst=A_IP, sport=50001, dport=50000))
    stop = d if cfg.tcp_stop_s is None else min(cfg.tcp_stop_s, d)
    for f in range(cfg.tcp_flows):
        t = _flow_times(rng, cfg.tcp_pps, cfg.tcp_start_s, stop)
        if len(t) >= 2:  # data from the schedule's start to its stop exactly (the phases follow the data: phases.py)
            t[0], t[-1] = cfg.tcp_start_s, stop
        n = len(t)
        fwd_parts.append(_packets(n, kind=3, proto=6, sport=40000 + f, dport=5201, ip_len=1500, t=t,
                                  tcp_seq=(1000 + np.arange(n) * 1448) % 2**32, tcp_ack=1))
        ta = t[1::2] + 0.0001
        rev_parts.append(_packets(len(ta), kind=3, proto=6, src=B_IP, dst=A_IP, sport=5201, dport=40000 + f,
                                  ip_len=52, t=ta, tcp_seq=1, tcp_ack=(1000 + np.arange(len(ta)) * 2896) % 2**32))
    fwd = _concat(fwd_parts)
    rev = _concat(rev_parts)
    for p in (fwd, rev):
        order = np.argsort(p["t"], kind="stable")
        for k in p:
            p[k] = p[k][order]
        p["ip_id"] = np.arange(len(p["t"])) % 65536
    fwd["t"] = np.maximum(fwd["t"], 0.0)
    rtp = fwd["kind"] <= 1
    fwd["twcc"][rtp] = np.arange(int(rtp.sum())) % 65536
    n = len(fwd["t"])
    # Forward path: propagation + transmission at capacity + sawtooth queue; loss, late packets, duplicates.
    tx_s = (fwd["ip_len"] + 14) * 8 / (cfg.capacity_kbit * 1000)
    queue_s = cfg.queue_peak_ms / 1000 * ((fwd["t"] % cfg.queue_period_s) / cfg.queue_period_s)
    owd_s = cfg.forward_delay_ms / 1000 + tx_s + queue_s
    late = rng.random(n) < cfg.reorder
    owd_s = owd_s + late * (cfg.reorder_extra_ms / 1000)
    lost = rng.random(n) < cfg.loss
    dup = (rng.random(n) < cfg.duplicate) & ~lost
    t0 = int(cfg.start_epoch_s * 1e9)
    fwd["t_ns"] = t0 + np.round(fwd["t"] * 1e9).astype(np.int64)
    fwd["owd_ns"] = np.round(owd_s * 1e9).astype(np.int64)
    rev["t_ns"] = t0 + np.round(rev["t"] * 1e9).astype(np.int64)
    rev["owd_ns"] = np.full(len(rev["t"]), int(cfg.reverse_delay_ms * 1e6), dtype=np.int64) + \
        rng.integers(0, 200_000, len(rev["t"]))
    ce = (rng.random(n) < cfg.ce_mark) & ~lost
    truth = Truth(t_send_ns=fwd["t_ns"], t_recv_ns=np.where(lost, -1, fwd["t_ns"] + fwd["owd_ns"]), lost=lost,
                  duplicated=dup, kind=fwd["kind"], ip_len=fwd["ip_len"], extra={"late": late, "ce": ce})
    return fwd, rev, truth


def _write_capture(path: Path, sends: dict, send_ttl: int,
                   arrivals: list[tuple[dict, np.ndarray, np.ndarray, np.ndarray]],
                   snaplen: int) -> None:
    """One side's capture: its own departures, and arrivals given as (packets, rows, arrival times, tos)."""
    hdrs = [_headers(sends, send_ttl)]
    ts = [sends["t_ns"]]
    lens = [sends["ip_len"] + 14]
    for pk, rows, t_arr, tos in arrivals:
        sub = {k: v[rows] for k, v in pk.items()}
        sub["tos"] = tos
        hdrs.append(_headers(sub, send_ttl - 1))
        ts.append(t_arr)
        lens.append(sub["ip_len"] + 14)
    all_ts = np.concatenate(ts)
    order = np.argsort(all_ts, kind="stable")
    write_pcap(path, all_ts[order], np.concatenate(hdrs)[order], np.concatenate(lens)[order], snaplen)


def write_run(run_dir: Path, cfg: SynthConfig, with_getstats: bool = True) -> Truth:
    """Writes capture-a.pcap, capture-b.pcap, manifest.json, events.jsonl, getstats-{a,b}.jsonl and cpu.jsonl."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fwd, rev, truth = generate(cfg)
    ok = np.flatnonzero(~truth.lost)
    dup = np.flatnonzero(truth.duplicated)
    fwd_rows = np.concatenate([ok, dup])
    fwd_t = np.concatenate([fwd["t_ns"][ok] + fwd["owd_ns"][ok], fwd["t_ns"][dup] + fwd["owd_ns"][dup] + 50_000])
    tos = fwd["tos"][fwd_rows] | np.where(truth.extra["ce"][fwd_rows], 3, 0)
    rev_all = np.arange(len(rev["t"]))
    _write_capture(run_dir / "capture-a.pcap", fwd, 64,
                   [(rev, rev_all, rev["t_ns"] + rev["owd_ns"], rev["tos"])], cfg.snaplen)
    _write_capture(run_dir / "capture-b.pcap", rev, 64, [(fwd, fwd_rows, fwd_t, tos)], cfg.snaplen)
    t0 = cfg.start_epoch_s
    cross: list[dict[str, Any]] = []
    if cfg.tcp_flows:
        cross = [{"kind": "tcp", "flows": cfg.tcp_flows, "congestion_control": "cubic", "direction": "forward",
                  "start_s": cfg.tcp_start_s, "stop_s": cfg.tcp_stop_s, "dscp": 0}]
    manifest = {
        "rtclab_version": "0.1.0", "id": run_dir.name, "status": "complete", "error": None,
        "scenario": {
            "name": "synthetic", "duration_s": cfg.duration_s, "backend": "userspace",
            "network": {"forward": {"delay_ms": cfg.forward_delay_ms, "jitter_ms": 0, "loss_percent": cfg.loss * 100,
                                    "rate": {"kbit": cfg.capacity_kbit}, "qdisc": {"kind": "fifo"}},
                        "reverse": {"delay_ms": cfg.reverse_delay_ms, "jitter_ms": 0, "loss_percent": 0,
                                    "rate": None, "qdisc": {"kind": "fifo"}}},
            "cross_traffic": cross,
            **({} if cfg.call else {"calls": []}),
        },
        "scenario_file": None,
        "backend": {"requested": "userspace", "used": "synthetic", "reason": "generated by rtclab.synth"},
        "topology": {"data": {"a": "10.0.1.2", "b": "10.0.2.2", "r_a": "10.0.1.1", "r_b": "10.0.2.1"},
                     "cross_traffic": [{"n": n, "port": 5201 + n, "server_host": "b", "client_host": "a"}
                                       for n in range(len(cross))]},
        "host": {"hostname": "synthetic", "cpus": SYNTH_CPUS},
        "timings": {"started": t0 - 2, "call_start": t0, "call_end": t0 + cfg.duration_s,
                    "ended": t0 + cfg.duration_s + 1},
        "validity": {"valid": True, "checks": [{"name": "synthetic", "ok": True, "detail": "generated run"}]},
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    events = [{"t": t0, "event": "call_connected"} if cfg.call else {"t": t0, "event": "call_start", "calls": 0}]
    for c in cross:
        events.append({"t": t0 + c["start_s"], "event": "cross_traffic_started", "flows": c["flows"]})
        if c["stop_s"] is not None:
            events.append({"t": t0 + c["stop_s"], "event": "cross_traffic_stopped", "flows": c["flows"]})
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if with_getstats and cfg.call:
        _write_getstats(run_dir, cfg, fwd, truth)
    if cfg.cpu:
        write_cpu(run_dir / "cpu.jsonl", cfg)
    if cfg.frames and cfg.call:
        truth.extra["frames"] = write_frames(run_dir / "frames-b.jsonl", cfg, fwd, truth)
    return truth


def write_frames(path: Path, cfg: SynthConfig, fwd: dict, truth: Truth) -> dict[str, np.ndarray]:
    """frames-b.jsonl as the receiving page writes it (docs/run-directory.md), for the model's video: frame k (the
    packets with RTP timestamp 3000 k) was captured at k / 30 s and is shown when every packet of it arrived and its
    first packet did not leave within `stall_s`, at its last packet's arrival + a receiver delay drawn from
    `receiver_delay_ms`, and never before the previous frame shown + 1 ms (a renderer shows frames in order). No
    stamp (the clip has no stamp_version). Returns the truth per shown frame: rtp_ts, capture, first send, last
    arrival and display (epoch ms)."""
    rng = np.random.default_rng([cfg.seed, 0xF4])
    video = np.flatnonzero(fwd["kind"] == 0)
    ts = fwd["rtp_ts"][video].astype(np.int64)
    send_ms = fwd["t_ns"][video] / 1e6
    recv_ms = np.where(truth.t_recv_ns[video] >= 0, truth.t_recv_ns[video] / 1e6, np.nan)
    t0_ms = cfg.start_epoch_s * 1000.0
    rows: list[tuple[int, float, float, float]] = []  # rtp_ts, capture, first send, last arrival
    for k in np.unique(ts):  # timestamps grow with k over a call this short: no wrap
        sel = ts == k
        first, last = float(send_ms[sel].min()), float(np.max(recv_ms[sel]))
        stalled = cfg.stall_s is not None and t0_ms + cfg.stall_s[0] * 1000 <= first < t0_ms + cfg.stall_s[1] * 1000
        if not np.isnan(last) and not stalled:
            rows.append((int(k), t0_ms + k / 3000 / 30 * 1000.0, first, last))
    display = []
    prev = -np.inf
    for _, _, _, last in rows:
        prev = max(last + float(rng.uniform(*cfg.receiver_delay_ms)), prev + 1.0)
        display.append(prev)
    header = {"kind": "header", "t": cfg.start_epoch_s, "side": "b", "read_every": 0, "time_origin_ms": t0_ms - 1000,
              "clip": {"width": 1280, "height": 720, "fps": 30, "frames": 150}}
    lines = [header] + [{"kind": "frame", "presented_frames": i + 1, "presentation_ms": round(d, 3),
                         "expected_display_ms": round(d, 3), "capture_ms": round(c, 3), "receive_ms": round(last, 3),
                         "rtp_timestamp": k, "read": False, "clip_index": None}
                        for i, ((k, c, _, last), d) in enumerate(zip(rows, display))]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return {"rtp_ts": np.array([r[0] for r in rows], np.int64), "capture_ms": np.array([r[1] for r in rows]),
            "first_send_ms": np.array([r[2] for r in rows]), "last_recv_ms": np.array([r[3] for r in rows]),
            "display_ms": np.array([round(d, 3) for d in display])}


SYNTH_CPUS = 2
SYNTH_CPU_START_S = -2.0  # the accounting starts with the harness, before the call, and ends after it (teardown)
SYNTH_CPU_END_S = 1.0


def write_cpu(path: Path, cfg: SynthConfig) -> None:
    """cpu.jsonl as the harness writes it: a header, a process line per process, a sample each second from 2 s
    before the call to 1 s after it. The loads are made up (each group's own level with noise, the browsers' only
    while the call runs, iperf3's only while the cross traffic does), from their own random stream so the packets
    stay what they were."""
    rng = np.random.default_rng([cfg.seed, 0xC9])
    t0 = cfg.start_epoch_s
    levels = {"harness/node": 0.03, "harness/other": 0.005, "bottleneck/forward": 0.04, "bottleneck/reverse": 0.02,
              "capture/a": 0.02, "capture/b": 0.02}
    if cfg.call:
        levels |= {f"chromium-{k}/{role}": load for k in "ab" for role, load in
                   (("browser", 0.08), ("renderer", 0.35), ("gpu", 0.05), ("network", 0.03), ("zygote", 0.0))}
    if cfg.tcp_flows:
        levels |= {"iperf3/client": 0.02 * cfg.tcp_flows, "iperf3/server": 0.015 * cfg.tcp_flows}
    pids = {g: 1000 + i for i, g in enumerate(levels)}
    lines: list[dict[str, Any]] = [{"kind": "header", "t": t0 + SYNTH_CPU_START_S, "interval_s": 1.0,
                                    "cpus": SYNTH_CPUS, "clock_ticks_per_s": 100, "harness_pid": pids["harness/node"]}]
    lines += [{"kind": "process", "t": t0 + SYNTH_CPU_START_S, "pid": pid, "ppid": pids["harness/node"], "group": g,
               "comm": g.split("/")[0], "cmd": g} for g, pid in pids.items()]
    stop = cfg.duration_s if cfg.tcp_stop_s is None else cfg.tcp_stop_s
    for i in range(1, int(cfg.duration_s - SYNTH_CPU_START_S + SYNTH_CPU_END_S) + 1):
        t = SYNTH_CPU_START_S + i  # end of the interval, s since call start
        groups = {}
        for g, load in levels.items():
            on = (not g.startswith("chromium-") or 0 < t <= cfg.duration_s) and \
                (not g.startswith("iperf3/") or cfg.tcp_start_s < t <= stop)
            cores = round(float(load * rng.uniform(0.5, 1.5)), 4) if on else 0.0
            if cores > 0:
                groups[g] = cores
        irq, softirq = round(float(rng.uniform(0.0, 0.01)), 4), round(float(rng.uniform(0.01, 0.05)), 4)
        busy = round(min(sum(groups.values()) + float(rng.uniform(0.05, 0.2)) + irq + softirq, SYNTH_CPUS), 4)
        system = round(busy * 0.3, 4)
        lines.append({"kind": "sample", "t": t0 + t, "dt": 1.0,
                      "host": {"busy": busy, "user": round(busy - system - irq - softirq, 4), "system": system,
                               "irq": irq, "softirq": softirq, "steal": 0.0},
                      "groups": groups, "procs": {str(pids[g]): v for g, v in groups.items()}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _write_getstats(run_dir: Path, cfg: SynthConfig, fwd: dict, truth: Truth) -> None:
    """getStats samples consistent with the model: cumulative counters of what was sent and received each second."""
    t0 = cfg.start_epoch_s
    video = fwd["kind"] == 0
    lines_a, lines_b = [], []
    rtt_base = (cfg.forward_delay_ms + cfg.reverse_delay_ms) / 1000
    for s in range(1, int(cfg.duration_s) + 1):
        t_ns = int((t0 + s) * 1e9)
        sent = video & (fwd["t_ns"] < t_ns)
        recv = sent & (truth.t_recv_ns >= 0) & (truth.t_recv_ns < t_ns)
        n_sent = int(sent.sum())
        bytes_sent = int((fwd["ip_len"][sent] - 40).sum())
        q_s = cfg.queue_peak_ms / 1000 * ((s % cfg.queue_period_s) / cfg.queue_period_s)
        ts_ms = (t0 + s) * 1000
        rep_a = [
            {"id": "OTvideo", "type": "outbound-rtp", "timestamp": ts_ms, "kind": "video", "ssrc": VIDEO_SSRC,
             "packetsSent": n_sent, "bytesSent": bytes_sent, "targetBitrate": 1.5e6, "framesPerSecond": 30,
             "frameWidth": 1280, "frameHeight": 720, "qualityLimitationReason": "none", "nackCount": 0,
             "pliCount": 0, "codecId": "COT96"},
            {"id": "RIvideo", "type": "remote-inbound-rtp", "timestamp": ts_ms, "kind": "video", "ssrc": VIDEO_SSRC,
             "roundTripTime": rtt_base + q_s, "roundTripTimeMeasurements": s, "totalRoundTripTime": s * rtt_base,
             "packetsLost": int((sent & truth.lost).sum()), "fractionLost": 0.0},
            {"id": "CP1", "type": "candidate-pair", "timestamp": ts_ms, "state": "succeeded", "nominated": True,
             "availableOutgoingBitrate": 1.8e6, "currentRoundTripTime": rtt_base + q_s},
            {"id": "COT96", "type": "codec", "timestamp": ts_ms, "payloadType": VIDEO_PT, "mimeType": "video/VP8",
             "clockRate": 90000},
            {"id": "COT111", "type": "codec", "timestamp": ts_ms, "payloadType": AUDIO_PT, "mimeType": "audio/opus",
             "clockRate": 48000},
            {"id": "OTaudio", "type": "outbound-rtp", "timestamp": ts_ms, "kind": "audio", "ssrc": AUDIO_SSRC,
             "packetsSent": int(((fwd["kind"] == 1) & (fwd["t_ns"] < t_ns)).sum()), "bytesSent": 0},
        ]
        uniq_recv = int(recv.sum())
        rep_b = [
            {"id": "ITvideo", "type": "inbound-rtp", "timestamp": ts_ms, "kind": "video", "ssrc": VIDEO_SSRC,
             "packetsReceived": uniq_recv, "packetsLost": n_sent - uniq_recv,
             "bytesReceived": int((fwd["ip_len"][recv] - 40).sum()),
             "jitter": 0.001, "framesPerSecond": 30, "frameWidth": 1280, "frameHeight": 720, "freezeCount": 0,
             "totalFreezesDuration": 0, "jitterBufferDelay": 0.05 * s * 30, "jitterBufferEmittedCount": s * 30,
             "nackCount": 0, "pliCount": 0, "framesDecoded": s * 30},
        ]
        lines_a.append({"t": t0 + s, "side": "a", "report": rep_a})
        lines_b.append({"t": t0 + s, "side": "b", "report": rep_b})
    (run_dir / "getstats-a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines_a))
    (run_dir / "getstats-b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines_b))
