#!/usr/bin/env python3
"""The benchmark's checks on the bottleneck's ground-truth log (docs/bottleneck-log.md) and pcaps, for
bench/bottleneck/. The files are read by the analyzer's run-directory library (rtclab.rundir) and percentiles follow the
analyzer's one rule (rtclab.stats): run it with the repository's .venv/bin/python (a plain python3 falls back to that
environment's packages). Each command prints one JSON object.

  gtlog.py lateness LOG [--skip-s S]          events, trailing fragment, release lateness (release_ns - due_ns)
  gtlog.py spacing B.pcap --kbit K [--dport P] [--skip-s S]
                                              departure spacing error of a backlogged link: |gap - frame time at K|
  gtlog.py path A.pcap B.pcap [--log LOG] [--skip-s S]
                                              rate at b, one-way and queuing delay; with --log: the log against
                                              the captures (drops missing at b, one-way delay = log's account)
  gtlog.py ecn PCAP                           ECN codepoints seen, IPv4 header checksums that do not verify
  gtlog.py codel LOG                          time to CoDel's first drop, lateness of the next ones vs schedule
  gtlog.py order PCAP                         reordering of an iperf3 UDP flow (its packet counter)
  gtlog.py windows PCAP [--window-s S]        received wire rate per window

Packets are joined between the captures and the log by the analyzer's packet join key (the packet key mixed with the
IP identification, matched in occurrence order). Percentiles: linear interpolation between closest ranks
(docs/metrics.md).
"""
import argparse
import bisect
import json
import site
import struct
import sys
from pathlib import Path

try:
    import rtclab  # noqa: F401 (only whether it imports)
except ImportError:  # run by the system python3 (bench/bottleneck/lib.sh): use the repository's environment
    for packages in sorted((Path(__file__).resolve().parents[2] / ".venv" / "lib").glob("python3*/site-packages")):
        site.addsitedir(str(packages))
import numpy as np

from rtclab import rundir
from rtclab.packets import match
from rtclab.stats import percentile

EVENTS = rundir.GTLOG_EVENTS
FORWARDED = rundir.GTLOG_FORWARDED
ETHERNET_HEADER_BYTES = 14


def read_gtlog(path):
    """Returns (header dict, list of record dicts with int fields, trailing fragment bytes), read by rtclab.rundir;
    a trailing fragment shorter than a record (a killed run) is ignored."""
    try:
        log = rundir.read_gtlog(Path(path))
    except ValueError as e:
        raise SystemExit(f"{path}: {e}") from None
    names = log.records.dtype.names
    return log.header, [dict(zip(names, r)) for r in log.records.tolist()], log.trailing_bytes


def read_pcap(path):
    """Yields (t_ns, frame_len, frame bytes) of each record (rtclab.rundir.pcap_records)."""
    try:
        yield from rundir.pcap_records(Path(path))
    except rundir.CaptureError as e:
        raise SystemExit(str(e)) from None


def ipv4_packets(path, src=None, dst=None, dport=None, with_key=True):
    """Dicts (t, frame_len, ip_len, ip_id, proto, dport, key) of a pcap's IPv4 frames, filtered by addresses and
    destination port; `key` is the packet key (rtclab.rundir.packet_key), which needs the capture's snap length to
    hold 64 bytes after the IP header."""
    out = []
    for t_ns, frame_len, frame in read_pcap(path):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        if (src and ".".join(map(str, ip[12:16])) != src) or (dst and ".".join(map(str, ip[16:20])) != dst):
            continue
        ihl = (ip[0] & 0x0F) * 4
        ip_len = int.from_bytes(ip[2:4], "big")
        proto = ip[9]
        payload = ip[ihl:ip_len]
        port = int.from_bytes(payload[2:4], "big") if proto in (6, 17) and len(payload) >= 4 else None
        if dport is not None and port != dport:
            continue
        out.append({"t": t_ns, "frame_len": frame_len, "ip_len": ip_len, "ip_id": int.from_bytes(ip[4:6], "big"),
                    "proto": proto, "dport": port, "key": rundir.packet_key(payload) if with_key else None})
    return out


def join_keys(pkts):
    """The analyzer's packet join key of each packet (or log record): key mixed with the IP identification."""
    return rundir.join_keys(np.array([p["key"] for p in pkts], dtype=np.uint64),
                            np.array([p["ip_id"] for p in pkts], dtype=np.uint16))


def percentiles_us(values_ns):
    if not len(values_ns):
        return {"n": 0}

    def p(q):
        return round(percentile(values_ns, q) / 1000, 1)

    return {"n": len(values_ns), "p50_us": p(50), "p99_us": p(99), "p99_9_us": p(99.9),
            "max_us": round(max(values_ns) / 1000, 1), "min_us": round(min(values_ns) / 1000, 1)}


def cmd_lateness(args):
    header, records, fragment = read_gtlog(args.log)
    events = {}
    for r in records:
        name = EVENTS.get(r["event"], str(r["event"]))
        events[name] = events.get(name, 0) + 1
    fwd = [r for r in records if r["event"] in FORWARDED]
    start = (fwd[0]["arrival_ns"] + int(args.skip_s * 1e9)) if fwd else 0
    late = [r["release_ns"] - r["due_ns"] for r in fwd if r["arrival_ns"] >= start]
    return {"records": len(records), "trailing_fragment_bytes": fragment, "events": events,
            "forwarded_udp": sum(1 for r in fwd if r["ip_proto"] == 17),
            "aqm_drops_of_ect": sum(1 for r in records if r["event"] == 3 and r["ecn_in"] in (1, 2)),
            "lateness": percentiles_us(late), "direction": header.get("direction")}


def cmd_spacing(args):
    """Gap between consecutive departures at b minus the later packet's frame time at the link rate, absolute. Only
    the gaps of a backlogged link count: a gap longer than 3 frame times is an idle period and skipped; so are the
    first and the last --skip-s seconds (queue filling, draining)."""
    pkts = ipv4_packets(args.pcap, dst=args.dst, dport=args.dport, with_key=False)
    if len(pkts) < 2:
        return {"packets": len(pkts), "spacing_error": {"n": 0}}
    t_lo, t_hi = pkts[0]["t"] + int(args.skip_s * 1e9), pkts[-1]["t"] - int(args.skip_s * 1e9)
    errors = []
    for prev, cur in zip(pkts, pkts[1:]):
        if prev["t"] < t_lo or cur["t"] > t_hi:
            continue
        frame_ns = cur["frame_len"] * 8 * 1e9 / (args.kbit * 1000)
        gap = cur["t"] - prev["t"]
        if gap <= 3 * frame_ns:
            errors.append(abs(gap - frame_ns))
    span_s = (pkts[-1]["t"] - pkts[0]["t"]) / 1e9
    return {"packets": len(pkts), "packets_per_s": round(len(pkts) / span_s, 1),
            "spacing_error": percentiles_us(errors)}


def cmd_path(args):
    sent = ipv4_packets(args.a_pcap, src=args.src, dst=args.dst)
    received = ipv4_packets(args.b_pcap, src=args.src, dst=args.dst)
    out = {"sent": len(sent), "received": len(received)}
    if len(received) >= 2:
        # A saturated link: the frames after the first arrive back to back at the link rate.
        bits = sum(p["frame_len"] for p in received[1:]) * 8
        out["received_wire_kbit"] = round(bits / ((received[-1]["t"] - received[0]["t"]) / 1e9) / 1000, 2)
    sent_keys = join_keys(sent)
    sent_match, _ = match(sent_keys, join_keys(received))
    # One-way delay of each delivered departure: (arrival time, delay), by departure index.
    owd = {i: (received[j]["t"], received[j]["t"] - sent[i]["t"]) for i, j in enumerate(sent_match.tolist()) if j >= 0}
    if owd:
        lo = min(d for _, d in owd.values())
        hi = max(d for _, d in owd.values())
        out["one_way_delay_ms"] = {"min": round(lo / 1e6, 3), "max": round(hi / 1e6, 3)}
        out["queuing_delay_max_ms"] = round((hi - lo) / 1e6, 3)
        # Queuing delay (one-way delay - its minimum) after the first skip_s seconds: an AQM's steady state.
        start = received[0]["t"] + int(args.skip_s * 1e9)
        out["queuing_delay_after_skip"] = percentiles_us([d - lo for t, d in owd.values() if t >= start])
    if args.log:
        _, records, _ = read_gtlog(args.log)
        log_match, _ = match(sent_keys, join_keys(records))
        logged = {i: records[g] for i, g in enumerate(log_match.tolist()) if g >= 0}
        # Lost outside the model: left a but never reached the bottleneck, or forwarded by it but missing at b.
        out["sent_not_in_log"] = len(sent) - len(logged)
        out["log_forwarded_missing_at_b"] = sum(1 for i, r in logged.items()
                                                if r["event"] in FORWARDED and i not in owd)
        out["log_dropped_present_at_b"] = sum(1 for i, r in logged.items() if r["event"] >= 2 and i in owd)
        fwd = {i: r for i, r in logged.items() if r["event"] in FORWARDED and i in owd}
        # Capture one-way delay minus the log's account: due - arrival = sojourn + transmission + delay (+ jitter),
        # so the difference is the release lateness plus the veth hops; release - arrival leaves only the hops.
        diffs = [owd[i][1] - (r["due_ns"] - r["arrival_ns"]) for i, r in fwd.items()]
        out["owd_minus_log_due"] = percentiles_us(diffs)
        out["owd_minus_log_due"]["within_0_2_ms"] = sum(1 for d in diffs if abs(d) <= 200_000)
        out["owd_minus_log_release"] = percentiles_us(
            [owd[i][1] - (r["release_ns"] - r["arrival_ns"]) for i, r in fwd.items()])
    return out


def cmd_codel(args):
    """CoDel on real packets (RFC 8289, Linux codel_impl.h), from a fifo-ordered CoDel log: the first AQM drop comes
    `interval` after the first dequeue above `target` with more than one MTU left queued, the next ones on the
    schedule drop_next += interval/sqrt(count); each happens at the first dequeue at or after its scheduled time."""
    _, records, _ = read_gtlog(args.log)
    target_ns, interval_ns, mtu_bytes = args.target_ms * 1e6, args.interval_ms * 1e6, 1514
    queued = [r for r in records if r["dequeue_ns"]]
    dequeued = sorted(queued, key=lambda r: r["dequeue_ns"])
    # Backlog (link-layer bytes) just after a dequeue at t: queued by t, not yet dequeued by t.
    arrivals = sorted((r["arrival_ns"], r["ip_len"] + ETHERNET_HEADER_BYTES) for r in queued)
    arr_t, arr_cum = [a for a, _ in arrivals], [0]
    for _, b in arrivals:
        arr_cum.append(arr_cum[-1] + b)
    deq_t, deq_cum = [r["dequeue_ns"] for r in dequeued], [0]
    for r in dequeued:
        deq_cum.append(deq_cum[-1] + r["ip_len"] + ETHERNET_HEADER_BYTES)

    def backlog_after(t):
        return arr_cum[bisect.bisect_right(arr_t, t)] - deq_cum[bisect.bisect_right(deq_t, t)]

    above = next((r for r in dequeued if r["dequeue_ns"] - r["arrival_ns"] >= target_ns
                  and backlog_after(r["dequeue_ns"]) > mtu_bytes), None)
    drops = [r["dequeue_ns"] for r in dequeued if r["event"] == 3]
    if above is None or not drops:
        return {"error": "no dequeue above target, or no AQM drop"}
    spacing = sorted(b - a for a, b in zip(deq_t, deq_t[1:]) if b > a)
    out = {"dequeue_spacing_p50_ms": round(percentile(spacing, 50) / 1e6, 3),
           "first_drop_after_above_target_ms": round((drops[0] - above["dequeue_ns"]) / 1e6, 3),
           "expected_ms": args.interval_ms, "drops": []}
    scheduled = drops[0] + interval_ns  # count = 1 after the first drop
    for n, d in enumerate(drops[1:args.gaps + 1], start=2):
        out["drops"].append({"n": n, "late_vs_schedule_ms": round((d - scheduled) / 1e6, 3),
                             "gap_ms": round((d - drops[n - 2]) / 1e6, 3)})
        scheduled += interval_ns / n ** 0.5
    return out


def cmd_order(args):
    """Reordering at b of an iperf3 UDP flow: its 32-bit packet counter (UDP payload bytes 8..12) must only grow."""
    seqs = []
    for _, _, frame in read_pcap(args.pcap):
        if len(frame) < 14 + 20 + 8 + 12 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17 or ".".join(map(str, ip[16:20])) != args.dst:
            continue
        udp = ip[ihl:]
        if struct.unpack_from(">H", udp, 2)[0] != args.dport:
            continue
        seqs.append(struct.unpack_from(">I", udp, 8 + 8)[0])
    return {"packets": len(seqs), "reordered": sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)}


def cmd_windows(args):
    """Received wire rate at b (kbit/s) in consecutive windows of --window-s, from --t0-ns or the first packet."""
    pkts = ipv4_packets(args.pcap, dst=args.dst, with_key=False)
    if not pkts:
        return {"windows_kbit": []}
    t0, w = args.t0_ns or pkts[0]["t"], int(args.window_s * 1e9)
    sums = {}
    for p in pkts:
        if p["t"] >= t0:
            i = (p["t"] - t0) // w
            sums[i] = sums.get(i, 0) + p["frame_len"]
    return {"windows_kbit": [round(sums.get(i, 0) * 8 / args.window_s / 1000, 1) for i in range(max(sums))]}


def ipv4_header_checksum_ok(ip):
    ihl = (ip[0] & 0x0F) * 4
    total = sum(struct.unpack_from(f">{ihl // 2}H", ip, 0))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def cmd_ecn(args):
    """ECN codepoints of the IPv4 packets to --dst in a capture, and how many header checksums do not verify."""
    names = ["not_ect", "ect1", "ect0", "ce"]
    counts = dict.fromkeys(names, 0)
    bad_checksum = 0
    for _, _, frame in read_pcap(args.pcap):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        if ".".join(map(str, ip[16:20])) != args.dst:
            continue
        counts[names[ip[1] & 3]] += 1
        bad_checksum += not ipv4_header_checksum_ok(ip)
    return {"ecn": counts, "bad_ip_checksums": bad_checksum}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("lateness")
    p.add_argument("log")
    p.add_argument("--skip-s", type=float, default=0.0, help="only packets arriving after the first seconds")
    p = sub.add_parser("spacing")
    p.add_argument("pcap")
    p.add_argument("--dst", default="10.0.2.2")
    p.add_argument("--dport", type=int)
    p.add_argument("--kbit", type=float, required=True)
    p.add_argument("--skip-s", type=float, default=1.0, help="ignore the first and last seconds")
    p = sub.add_parser("path")
    p.add_argument("a_pcap")
    p.add_argument("b_pcap")
    p.add_argument("--src", default="10.0.1.2")
    p.add_argument("--dst", default="10.0.2.2")
    p.add_argument("--log")
    p.add_argument("--skip-s", type=float, default=3.0, help="queuing delay percentiles only after this")
    p = sub.add_parser("codel")
    p.add_argument("log")
    p.add_argument("--target-ms", type=float, default=5)
    p.add_argument("--interval-ms", type=float, default=100)
    p.add_argument("--gaps", type=int, default=6)
    p = sub.add_parser("order")
    p.add_argument("pcap")
    p.add_argument("--dst", default="10.0.2.2")
    p.add_argument("--dport", type=int, default=5201)
    p = sub.add_parser("windows")
    p.add_argument("pcap")
    p.add_argument("--dst", default="10.0.2.2")
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument("--t0-ns", type=int, default=0)
    p = sub.add_parser("ecn")
    p.add_argument("pcap")
    p.add_argument("--dst", default="10.0.2.2")
    args = ap.parse_args()
    result = {"lateness": cmd_lateness, "spacing": cmd_spacing, "path": cmd_path, "ecn": cmd_ecn,
              "codel": cmd_codel, "order": cmd_order, "windows": cmd_windows}[args.cmd](args)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
