#!/usr/bin/env python3
"""Reads the bottleneck's ground-truth log (docs/bottleneck-log.md) and nanosecond pcaps, for the benchmark and the
by-hand checks. Standard library only, so it runs on a fresh machine.

  gtlog.py lateness LOG                      release lateness (release_ns - due_ns) of forwarded packets, events
  gtlog.py spacing PCAP --dst IP --kbit K    departure spacing error of a saturated link: gap - frame time at K
  gtlog.py path A.pcap B.pcap [--log LOG]    received wire rate at b, one-way and queuing delay, log agreement
  gtlog.py ecn PCAP [--dst IP]               ECN codepoints seen, IPv4 header checksums that do not verify
  gtlog.py codel LOG [--target-ms --interval-ms]  time to CoDel's first drop, spacing of the next ones
  gtlog.py order PCAP                        reordering of an iperf3 UDP flow (its packet counter)
  gtlog.py windows PCAP [--window-s S]       received wire rate per window
Each prints one JSON object.
"""
import argparse
import json
import struct
import sys

RECORD = struct.Struct("<QQQQQQHHBBBBII")
RECORD_FIELDS = ("arrival_ns", "dequeue_ns", "tx_end_ns", "due_ns", "release_ns", "key", "ip_len", "ip_id",
                 "event", "band", "ecn_in", "ip_proto", "queue_packets", "queue_bytes")
EVENTS = {0: "forwarded", 1: "forwarded_ce", 2: "dropped_tail", 3: "dropped_aqm", 4: "dropped_loss",
          5: "dropped_shutdown"}
ETHERNET_HEADER_BYTES = 14


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def read_gtlog(path):
    """Returns (header dict, list of record dicts); a trailing fragment shorter than a record is ignored."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"RTCGTLG1":
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


def ipv4_packets(path, src=None, dst=None):
    """(t_ns, frame_len, key, ip_id) of the IPv4 frames of a pcap, filtered by addresses."""
    out = []
    for t_ns, frame_len, frame in read_pcap(path):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        ip_len = struct.unpack_from(">H", ip, 2)[0]
        s, d = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        if (src and s != src) or (dst and d != dst):
            continue
        payload = ip[ihl:ip_len][:64]
        out.append((t_ns, frame_len, fnv1a64(payload), struct.unpack_from(">H", ip, 4)[0]))
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
    late = [r["release_ns"] - r["due_ns"] for r in records if r["event"] in (0, 1)]
    forwarded_udp = sum(1 for r in records if r["event"] in (0, 1) and r["ip_proto"] == 17)
    aqm_drops_of_ect = sum(1 for r in records if r["event"] == 3 and r["ecn_in"] in (1, 2))
    return {"records": len(records), "trailing_fragment_bytes": fragment, "events": events,
            "forwarded_udp": forwarded_udp, "aqm_drops_of_ect": aqm_drops_of_ect,
            "lateness": percentiles_us(late), "direction": header.get("direction")}


def cmd_spacing(args):
    pkts = ipv4_packets(args.pcap, dst=args.dst)
    skip_ns = int(args.skip_s * 1e9)
    t_first = pkts[0][0] if pkts else 0
    errors = []
    for (t0, _, _, _), (t1, len1, _, _) in zip(pkts, pkts[1:]):
        if t0 - t_first < skip_ns:
            continue
        frame_time_ns = len1 * 8 * 1e9 / (args.kbit * 1000)
        errors.append(abs(t1 - t0 - frame_time_ns))
    return {"packets": len(pkts), "spacing_error": percentiles_us(errors)}


def cmd_path(args):
    sent = ipv4_packets(args.a_pcap, src=args.src, dst=args.dst)
    received = ipv4_packets(args.b_pcap, src=args.src, dst=args.dst)
    out = {"sent": len(sent), "received": len(received)}
    if len(received) >= 2:
        # A saturated link: frames after the first arrive back to back at the link rate.
        bits = sum(f for _, f, _, _ in received[1:]) * 8
        out["received_wire_kbit"] = round(bits / ((received[-1][0] - received[0][0]) / 1e9) / 1000, 2)
    sent_at = {k: t for t, _, k, _ in sent}
    owd = {k: t - sent_at[k] for t, _, k, _ in received if k in sent_at}
    if owd:
        lo = min(owd.values())
        out["one_way_delay_ms"] = {"min": round(lo / 1e6, 3), "max": round(max(owd.values()) / 1e6, 3)}
        out["queuing_delay_max_ms"] = round((max(owd.values()) - lo) / 1e6, 3)
        # Queuing delay after the first skip_s seconds (an AQM's steady state), in microseconds.
        start = received[0][0] + int(args.skip_s * 1e9)
        out["queuing_delay_after_skip"] = percentiles_us([owd[k] - lo for t, _, k, _ in received
                                                          if k in owd and t >= start])
    if args.log:
        _, records, _ = read_gtlog(args.log)
        # Forwarded per the log but missing at b, dropped per the log but present at b.
        fwd = {r["key"]: r for r in records if r["event"] in (0, 1)}
        dropped = {r["key"] for r in records if r["event"] >= 2}
        out["log_forwarded_missing_at_b"] = sum(1 for k in fwd if k in sent_at and k not in owd)
        out["log_dropped_present_at_b"] = sum(1 for k in dropped if k in owd)
        # Capture one-way delay minus the log's account (due - arrival): lateness plus the veth hops.
        diffs = [owd[k] - (r["due_ns"] - r["arrival_ns"]) for k, r in fwd.items() if k in owd]
        out["owd_minus_log_due"] = percentiles_us(diffs)
        diffs = [owd[k] - (r["release_ns"] - r["arrival_ns"]) for k, r in fwd.items() if k in owd]
        out["owd_minus_log_release"] = percentiles_us(diffs)
    return out


def cmd_codel(args):
    """CoDel on real packets (RFC 8289, Linux codel_impl.h), from a fifo-ordered CoDel log: the first AQM drop comes
    `interval` after the first dequeue above `target` with more than one MTU left queued, the next ones on the
    schedule drop_next += interval/sqrt(count); each happens at the first dequeue at or after its scheduled time."""
    import bisect
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
    inversions = sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
    return {"packets": len(seqs), "reordered": inversions}


def cmd_windows(args):
    """Received wire rate at b (kbit/s) in consecutive windows of --window-s, from --t0-ns or the first packet."""
    pkts = ipv4_packets(args.pcap, dst=args.dst)
    if not pkts:
        return {"windows_kbit": []}
    t0, w = args.t0_ns or pkts[0][0], int(args.window_s * 1e9)
    sums = {}
    for t, f, _, _ in pkts:
        if t >= t0:
            sums[(t - t0) // w] = sums.get((t - t0) // w, 0) + f
    last = max(sums)
    return {"windows_kbit": [round(sums.get(i, 0) * 8 / args.window_s / 1000, 1) for i in range(last)]}


def ipv4_header_checksum_ok(ip):
    ihl = (ip[0] & 0x0F) * 4
    total = sum(struct.unpack_from(f">{ihl // 2}H", ip, 0))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def cmd_ecn(args):
    """ECN codepoints of the IPv4 packets to --dst in a capture, and whether their header checksums are valid."""
    counts = {"not_ect": 0, "ect1": 0, "ect0": 0, "ce": 0}
    names = ["not_ect", "ect1", "ect0", "ce"]
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
    p = sub.add_parser("spacing")
    p.add_argument("pcap")
    p.add_argument("--dst", required=True)
    p.add_argument("--kbit", type=float, required=True)
    p.add_argument("--skip-s", type=float, default=1.0, help="ignore the first seconds (queue filling)")
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
