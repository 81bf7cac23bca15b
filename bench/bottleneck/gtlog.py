#!/usr/bin/env python3
"""Reads the bottleneck's ground-truth log (docs/bottleneck-log.md) and nanosecond pcaps, for the benchmark and the
checks in bench/bottleneck/. Standard library only, so it runs on a fresh machine. Each command prints one JSON object.

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

Packets are joined between the captures and the log by (packet key, IP identification). Percentiles are nearest
rank: the value at index min(n - 1, floor(q * n)) of the sorted values.
"""
import argparse
import bisect
import json
import struct
import sys

MAGIC = b"RTCGTLG1"
RECORD = struct.Struct("<QQQQQQHHBBBBII")
RECORD_FIELDS = ("arrival_ns", "dequeue_ns", "tx_end_ns", "due_ns", "release_ns", "key", "ip_len", "ip_id",
                 "event", "band", "ecn_in", "ip_proto", "queue_packets", "queue_bytes")
EVENTS = {0: "forwarded", 1: "forwarded_ce", 2: "dropped_tail", 3: "dropped_aqm", 4: "dropped_loss",
          5: "dropped_shutdown"}
FORWARDED = (0, 1)
ETHERNET_HEADER_BYTES = 14


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_gtlog(path):
    """Returns (header dict, list of record dicts, trailing fragment bytes); a trailing fragment shorter than a record
    (a killed run) is ignored."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != MAGIC:
        raise SystemExit(f"{path}: not a ground-truth log (magic {blob[:8]!r})")
    (n,) = struct.unpack_from("<I", blob, 8)
    header = json.loads(blob[12:12 + n].decode("utf-8"))
    size = header.get("record_size", 64)
    body = blob[12 + n:]
    records = [dict(zip(RECORD_FIELDS, RECORD.unpack_from(body, off)))
               for off in range(0, len(body) - size + 1, size)]
    return header, records, len(body) % size


def read_pcap(path):
    """Yields (t_ns, frame_len, frame bytes) from a pcap with nanosecond (a1b23c4d) or microsecond timestamps."""
    with open(path, "rb") as f:
        blob = f.read()
    magic = struct.unpack_from("<I", blob, 0)[0]
    if magic == 0xA1B23C4D:
        scale = 1
    elif magic == 0xA1B2C3D4:
        scale = 1000
    else:
        raise SystemExit(f"{path}: not a little-endian pcap (magic {magic:#x})")
    off = 24
    while off + 16 <= len(blob):
        sec, frac, incl, orig = struct.unpack_from("<IIII", blob, off)
        off += 16
        yield sec * 1_000_000_000 + frac * scale, orig, blob[off:off + incl]
        off += incl


def ipv4_packets(path, src=None, dst=None, dport=None, with_key=True):
    """Dicts (t, frame_len, ip_len, ip_id, proto, dport, key) of a pcap's IPv4 frames, filtered by addresses and
    destination port. The key covers min(64, payload length) bytes: the capture's snap length must hold them."""
    out = []
    for t_ns, frame_len, frame in read_pcap(path):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        if (src and ".".join(map(str, ip[12:16])) != src) or (dst and ".".join(map(str, ip[16:20])) != dst):
            continue
        ihl = (ip[0] & 0x0F) * 4
        ip_len = struct.unpack_from(">H", ip, 2)[0]
        proto = ip[9]
        payload = ip[ihl:ip_len]
        port = struct.unpack_from(">H", payload, 2)[0] if proto in (6, 17) and len(payload) >= 4 else None
        if dport is not None and port != dport:
            continue
        out.append({"t": t_ns, "frame_len": frame_len, "ip_len": ip_len, "ip_id": struct.unpack_from(">H", ip, 4)[0],
                    "proto": proto, "dport": port, "key": fnv1a64(payload[:64]) if with_key else None})
    return out


def percentiles_us(values_ns):
    if not values_ns:
        return {"n": 0}
    v = sorted(values_ns)

    def p(q):
        return round(v[min(len(v) - 1, int(q * len(v)))] / 1000, 1)

    return {"n": len(v), "p50_us": p(0.50), "p99_us": p(0.99), "p99_9_us": p(0.999),
            "max_us": round(v[-1] / 1000, 1), "min_us": round(v[0] / 1000, 1)}


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
    return {"packets": len(pkts), "packets_per_s": round(len(pkts) / span_s, 1), "spacing_error": percentiles_us(errors)}


def cmd_path(args):
    sent = ipv4_packets(args.a_pcap, src=args.src, dst=args.dst)
    received = ipv4_packets(args.b_pcap, src=args.src, dst=args.dst)
    out = {"sent": len(sent), "received": len(received)}
    if len(received) >= 2:
        # A saturated link: the frames after the first arrive back to back at the link rate.
        bits = sum(p["frame_len"] for p in received[1:]) * 8
        out["received_wire_kbit"] = round(bits / ((received[-1]["t"] - received[0]["t"]) / 1e9) / 1000, 2)
    sent_at = {}
    for p in sent:
        sent_at.setdefault((p["key"], p["ip_id"]), p["t"])
    owd = {}
    for p in received:
        k = (p["key"], p["ip_id"])
        if k in sent_at and k not in owd:
            owd[k] = (p["t"], p["t"] - sent_at[k])
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
        logged = {(r["key"], r["ip_id"]): r for r in records}
        fwd = {k: r for k, r in logged.items() if r["event"] in FORWARDED}
        # Lost outside the model: left a but never reached the bottleneck, or forwarded by it but missing at b.
        out["sent_not_in_log"] = sum(1 for k in sent_at if k not in logged)
        out["log_forwarded_missing_at_b"] = sum(1 for k in fwd if k in sent_at and k not in owd)
        out["log_dropped_present_at_b"] = sum(1 for k, r in logged.items() if r["event"] >= 2 and k in owd)
        # Capture one-way delay minus the log's account: due - arrival = sojourn + transmission + delay (+ jitter),
        # so the difference is the release lateness plus the veth hops; release - arrival leaves only the hops.
        diffs = [owd[k][1] - (r["due_ns"] - r["arrival_ns"]) for k, r in fwd.items() if k in owd]
        out["owd_minus_log_due"] = percentiles_us(diffs)
        out["owd_minus_log_due"]["within_0_2_ms"] = sum(1 for d in diffs if abs(d) <= 200_000)
        out["owd_minus_log_release"] = percentiles_us(
            [owd[k][1] - (r["release_ns"] - r["arrival_ns"]) for k, r in fwd.items() if k in owd])
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
    out = {"dequeue_spacing_p50_ms": round(spacing[len(spacing) // 2] / 1e6, 3),
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
