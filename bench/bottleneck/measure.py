#!/usr/bin/env python3
"""Measurements for the bottleneck's trial and benchmark, from nanosecond pcaps and the ground-truth log.

Standard library only, so that it runs anywhere the scripts run.
  measure.py owd A.pcap B.pcap [--dport N] [--proto P] [--skip-s S]   rate at b, one-way and queuing delay (packet key match)
  measure.py logcheck LOG A.pcap B.pcap --delay-ms D       the log against the captures (docs/bottleneck-log.md)
  measure.py lateness LOG [--skip-s S]                     release lateness = release_ns - due_ns
  measure.py spacing B.pcap --kbit R [--dport N] [--skip-s S]  departure spacing error of a saturated link
  measure.py accounting LOG A.pcap [--dport N]             packets that left a but never reached the log
  measure.py ce PCAP                                       ECN codepoints; CE packets with a bad IP checksum
  measure.py gtlog-summary LOG                             record counts by event, trailing fragment
"""
import argparse
import json
import struct
import sys

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
EVENTS = {0: "forwarded", 1: "forwarded_ce", 2: "dropped_tail", 3: "dropped_aqm", 4: "dropped_loss", 5: "dropped_shutdown"}


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def read_pcap(path):
    """Yields (ts_ns, frame bytes) from a pcap with nanosecond timestamps (magic a1b23c4d)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B23C4D:
        endian, scale = "<", 1
    elif magic == 0xA1B2C3D4:
        endian, scale = "<", 1000
    else:
        raise SystemExit(f"{path}: not a little-endian pcap")
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        yield sec * 1_000_000_000 + frac * scale, data[off:off + incl]
        off += incl


def ipv4_packets(path, dport=None, with_key=True):
    """Yields dicts for IPv4 frames: ts_ns, key (None unless with_key), ip_len, ip_id, proto, dport."""
    for ts, frame in read_pcap(path):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        ip_len = struct.unpack(">H", ip[2:4])[0]
        proto = ip[9]
        payload = ip[ihl:min(ip_len, len(ip))]
        port = struct.unpack(">H", payload[2:4])[0] if proto in (6, 17) and len(payload) >= 4 else None
        if dport is not None and port != dport:
            continue
        # The key covers min(64, payload length) bytes; the capture must hold them (snap length >= 14+60+64).
        n = min(64, ip_len - ihl)
        yield {"ts": ts, "key": fnv1a64(payload[:n]) if with_key else None, "ip_len": ip_len, "ip_id": struct.unpack(">H", ip[4:6])[0],
               "proto": proto, "dport": port}


def read_gtlog(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"RTCGTLG1":
        raise SystemExit(f"{path}: not a ground-truth log")
    n = struct.unpack("<I", data[8:12])[0]
    header = json.loads(data[12:12 + n])
    size = header["record_size"]
    body = data[12 + n:]
    records = []
    for off in range(0, len(body) - size + 1, size):
        (arrival, dequeue, tx_end, due, release, key, ip_len, ip_id, event, band, ecn_in, proto, qp, qb) = struct.unpack(
            "<QQQQQQHHBBBBII", body[off:off + 64])
        records.append({"arrival": arrival, "dequeue": dequeue, "tx_end": tx_end, "due": due, "release": release,
                        "key": key, "ip_len": ip_len, "ip_id": ip_id, "event": event, "band": band, "ecn_in": ecn_in,
                        "proto": proto, "queue_packets": qp, "queue_bytes": qb})
    return header, records, len(body) % size


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round((len(v) - 1) * p)))]


def match(a_pkts, b_pkts):
    """Pairs packets seen at a and b by (key, ip_id), first occurrence each."""
    at_a = {}
    for p in a_pkts:
        at_a.setdefault((p["key"], p["ip_id"]), p)
    pairs = []
    for p in b_pkts:
        q = at_a.get((p["key"], p["ip_id"]))
        if q is not None:
            pairs.append((q, p))
    return at_a, pairs


def cmd_owd(args):
    a_all = list(ipv4_packets(args.a, args.dport))
    b_all = list(ipv4_packets(args.b, args.dport))
    a = [p for p in a_all if args.proto is None or p["proto"] == args.proto]
    b = [p for p in b_all if args.proto is None or p["proto"] == args.proto]
    if not a or not b:
        raise SystemExit("no matching packets in the captures")
    # The base of the queuing delay: the least-delayed packet of the whole capture (an empty queue).
    _, pairs_all = match(a_all, b_all)
    base_ms = min((pb["ts"] - pa["ts"]) / 1e6 for pa, pb in pairs_all)
    t0 = a[0]["ts"] + int(args.skip_s * 1e9)
    _, pairs = match(a, b)
    owd = [(pb["ts"] - pa["ts"]) / 1e6 for pa, pb in pairs if pa["ts"] >= t0]
    b_window = [p for p in b if p["ts"] >= t0]
    span_s = (b_window[-1]["ts"] - b_window[0]["ts"]) / 1e9
    # Link-layer bits of all but the first packet over the span between the first and the last arrival.
    bits = sum((p["ip_len"] + 14) * 8 for p in b_window[1:])
    out = {"packets_a": len(a), "packets_b": len(b), "matched": len(pairs),
           "rate_at_b_bit_s": bits / span_s if span_s > 0 else None,
           "owd_ms": {"base": base_ms, "min": min(owd), "p50": pct(owd, 0.5), "max": max(owd)},
           "max_queuing_delay_ms": max(owd) - base_ms}
    print(json.dumps(out))


def cmd_logcheck(args):
    header, records, frag = read_gtlog(args.log)
    a = list(ipv4_packets(args.a))
    b = list(ipv4_packets(args.b))
    at_a, pairs = match(a, b)
    at_b = {(p["key"], p["ip_id"]): p for p in b}
    delay_ns = args.delay_ms * 1e6
    dropped_seen, forwarded_missing, diffs = 0, 0, []
    for r in records:
        k = (r["key"], r["ip_id"])
        if r["event"] >= 2:
            if k in at_b:
                dropped_seen += 1
        else:
            pa, pb = at_a.get(k), at_b.get(k)
            if pb is None:
                forwarded_missing += 1
                continue
            if pa is None:
                continue
            owd = pb["ts"] - pa["ts"]
            model = (r["dequeue"] - r["arrival"]) + (r["tx_end"] - r["dequeue"]) + delay_ns
            diffs.append((owd - model) / 1e6)
    absd = [abs(d) for d in diffs]
    out = {"records": len(records), "trailing_fragment_bytes": frag,
           "dropped_but_seen_at_b": dropped_seen, "forwarded_but_missing_at_b": forwarded_missing,
           "owd_minus_model_ms": {"p50": pct(diffs, 0.5), "p99": pct(diffs, 0.99), "max_abs": max(absd) if absd else None},
           "within_0_2_ms": sum(1 for d in absd if d <= 0.2), "compared": len(diffs)}
    print(json.dumps(out))


def cmd_lateness(args):
    _, records, _ = read_gtlog(args.log)
    fwd = [r for r in records if r["event"] in (0, 1)]
    if not fwd:
        raise SystemExit("no forwarded packets in the log")
    t0 = fwd[0]["arrival"] + int(args.skip_s * 1e9)
    late = [(r["release"] - r["due"]) / 1e3 for r in fwd if r["arrival"] >= t0]
    print(json.dumps({"packets": len(late), "lateness_us": {"p50": pct(late, 0.5), "p99": pct(late, 0.99),
                      "p99.9": pct(late, 0.999), "max": max(late), "min": min(late)}}))


def cmd_spacing(args):
    """Gap between consecutive departures minus the packet's transmission time at the link rate. Only gaps of a
    backlogged link count: gaps longer than 3x the transmission time are idle periods and skipped."""
    b = list(ipv4_packets(args.b, args.dport, with_key=False))
    t0 = b[0]["ts"] + int(args.skip_s * 1e9)
    t1 = b[-1]["ts"] - int(args.skip_s * 1e9)
    errs = []
    for prev, cur in zip(b, b[1:]):
        if prev["ts"] < t0 or cur["ts"] > t1:
            continue
        tx_ns = (cur["ip_len"] + 14) * 8 * 1e9 / (args.kbit * 1000)
        gap = cur["ts"] - prev["ts"]
        if gap > 3 * tx_ns:
            continue
        errs.append((gap - tx_ns) / 1e3)
    absd = [abs(e) for e in errs]
    span = (b[-1]["ts"] - b[0]["ts"]) / 1e9
    print(json.dumps({"gaps": len(errs), "packets_per_s": len(b) / span if span > 0 else None,
                      "abs_error_us": {"p50": pct(absd, 0.5), "p99": pct(absd, 0.99), "p99.9": pct(absd, 0.999),
                                       "max": max(absd) if absd else None}}))


def cmd_accounting(args):
    """Packets that left a (to the given port) but are neither in the log nor at b: lost outside the model."""
    _, records, _ = read_gtlog(args.log)
    logged = {(r["key"], r["ip_id"]) for r in records}
    a = list(ipv4_packets(args.a, args.dport))
    missing = sum(1 for p in a if (p["key"], p["ip_id"]) not in logged)
    print(json.dumps({"packets_a": len(a), "records": len(records), "not_in_log": missing}))


def ipv4_checksum_ok(header: bytes) -> bool:
    total = sum(struct.unpack(">%dH" % (len(header) // 2), header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def cmd_ce(args):
    """ECN codepoints of the IPv4 packets in a capture, and whether every CE packet's header checksum is valid."""
    counts, ce_bad = {0: 0, 1: 0, 2: 0, 3: 0}, 0
    for _ts, frame in read_pcap(args.pcap):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        ecn = ip[1] & 3
        counts[ecn] += 1
        if ecn == 3 and not ipv4_checksum_ok(ip[:ihl]):
            ce_bad += 1
    print(json.dumps({"not_ect": counts[0], "ect1": counts[1], "ect0": counts[2], "ce": counts[3], "ce_bad_checksum": ce_bad}))


def cmd_summary(args):
    header, records, frag = read_gtlog(args.log)
    counts = {}
    for r in records:
        counts[EVENTS.get(r["event"], str(r["event"]))] = counts.get(EVENTS.get(r["event"], str(r["event"])), 0) + 1
    print(json.dumps({"header": header, "records": len(records), "events": counts, "trailing_fragment_bytes": frag}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("owd"); p.add_argument("a"); p.add_argument("b"); p.add_argument("--dport", type=int)
    p.add_argument("--proto", type=int, help="only this IP protocol (17: the UDP data, not iperf3's TCP control)")
    p.add_argument("--skip-s", type=float, default=0.0); p.set_defaults(fn=cmd_owd)
    p = sub.add_parser("logcheck"); p.add_argument("log"); p.add_argument("a"); p.add_argument("b")
    p.add_argument("--delay-ms", type=float, required=True); p.set_defaults(fn=cmd_logcheck)
    p = sub.add_parser("lateness"); p.add_argument("log"); p.add_argument("--skip-s", type=float, default=0.0)
    p.set_defaults(fn=cmd_lateness)
    p = sub.add_parser("spacing"); p.add_argument("b"); p.add_argument("--kbit", type=float, required=True)
    p.add_argument("--dport", type=int); p.add_argument("--skip-s", type=float, default=0.0); p.set_defaults(fn=cmd_spacing)
    p = sub.add_parser("accounting"); p.add_argument("log"); p.add_argument("a"); p.add_argument("--dport", type=int)
    p.set_defaults(fn=cmd_accounting)
    p = sub.add_parser("ce"); p.add_argument("pcap"); p.set_defaults(fn=cmd_ce)
    p = sub.add_parser("gtlog-summary"); p.add_argument("log"); p.set_defaults(fn=cmd_summary)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
