"""`python -m rtclab.export` (what the Node tests read through): hand-built captures and a ground-truth log, and the
JSON it prints checked against the values written."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import inprocess
from pcapbuild import Pcap, fnv1a64, ipv4_frame, rtp, tcp, udp
from runbuild import write_gtlog

A, B = "10.0.1.2", "10.0.2.2"
T0 = 1_795_434_397_204_485_121  # epoch ns beyond 2**53: must come out exact
MS = 1_000_000


def export(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python -m rtclab.export ARGS...` in this process (test-support/inprocess.py); unreadable input's test starts
    the real command, as the Node tests do."""
    return inprocess.rtclab_export(*args, stdin=stdin)


def export_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtclab.export", *args], capture_output=True, text=True, timeout=60)


def doc(*args: str, stdin: str = ""):
    r = export(*args, stdin=stdin)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def with_checksum(frame: bytes) -> bytes:
    """The frame with a correct IPv4 header checksum (pcapbuild leaves it 0)."""
    words = struct.unpack("!10H", frame[14:34])
    total = sum(words[:5]) + sum(words[6:])
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return frame[:24] + struct.pack("!H", ~total & 0xFFFF) + frame[26:]


def frames() -> list[bytes]:
    """a -> b: an RTP packet larger than the snap length (ECT(0), DSCP 46), a TCP segment, a UDP datagram that b never
    sees, another RTP packet; b -> a: one RTP packet."""
    return [
        with_checksum(ipv4_frame(A, B, 17, udp(50000, 50001, rtp(96, 7, 9000, 0xCAFE, 400)), ip_id=1, tos=46 << 2 | 2)),
        with_checksum(ipv4_frame(A, B, 6, tcp(40000, 5201, 1000, 7, 100), ip_id=2)),
        ipv4_frame(A, B, 17, udp(40001, 5301, b"x" * 50), ip_id=3),  # checksum left 0: does not verify
        with_checksum(ipv4_frame(A, B, 17, udp(50000, 50001, rtp(96, 8, 9900, 0xCAFE, 100)), ip_id=4)),
        with_checksum(ipv4_frame(B, A, 17, udp(50001, 50000, rtp(111, 3, 960, 0xBEEF, 60)), ip_id=5)),
    ]


def write_run(tmp: Path) -> tuple[Path, Path, Path, list[bytes]]:
    f = frames()
    cap_a, cap_b = Pcap(snaplen=256), Pcap(snaplen=256)
    # a -> b departures at 0, 10, 20, 30 ms with one-way delays 25, 26, (lost), 28 ms; b -> a at 15 ms, 30 ms later.
    for i, owd in zip((0, 1, 2, 3), (25, 26, None, 28)):
        cap_a.add(T0 + i * 10 * MS, f[i])
        if owd is not None:
            cap_b.add(T0 + i * 10 * MS + owd * MS, f[i])
    cap_b.add(T0 + 15 * MS, f[4])
    cap_a.add(T0 + 45 * MS, f[4])
    pa, pb, log = tmp / "capture-a.pcap", tmp / "capture-b.pcap", tmp / "bottleneck-forward.gtlog"
    cap_a.write(pa)
    cap_b.write(pb)
    # The log holds the forward packets in a different order than a sent them (the join goes by key, not position):
    # the lost one (a tail drop) first.
    recs = []
    for i, event in ((2, 2), (0, 0), (1, 0), (3, 1)):
        ip_len, ip_id = struct.unpack("!HH", f[i][16:20])
        t = T0 + i * 10 * MS + 1000
        recs.append({"arrival_ns": t, "dequeue_ns": t + 5, "tx_end_ns": 0 if event == 2 else t + 10,
                     "due_ns": 0 if event == 2 else t + 20, "release_ns": t + 30, "key": fnv1a64(f[i][34:34 + 64]),
                     "ip_len": ip_len, "ip_id": ip_id, "event": event})
    write_gtlog(log, recs, {"version": 1, "direction": "forward", "record_size": 64, "config": {"delay_ms": 25}})
    return pa, pb, log, f


def test_packets_columns_hold_what_was_written(tmp_path):
    pa, _, _, f = write_run(tmp_path)
    d = doc("packets", str(pa))
    assert (d["records"], d["non_ipv4"], d["error"]) == (5, 0, None)
    c = d["columns"]
    assert c["t_ns"] == [str(T0), str(T0 + 10 * MS), str(T0 + 20 * MS), str(T0 + 30 * MS), str(T0 + 45 * MS)]
    assert c["frame_len"] == [len(x) for x in f]  # the wire length, not the 256 bytes captured of the first
    assert c["frame_len"][0] == 14 + 20 + 8 + 12 + 400
    assert c["ip_len"] == [len(x) - 14 for x in f]
    assert c["ip_id"] == [1, 2, 3, 4, 5]
    assert c["proto"] == [17, 6, 17, 17, 17]
    assert c["src"] == [A, A, A, A, B] and c["dst"] == [B, B, B, B, A]
    assert c["dscp"] == [46, 0, 0, 0, 0] and c["ecn"] == [2, 0, 0, 0, 0]
    assert c["sport"] == [50000, 40000, 40001, 50000, 50001]
    assert c["dport"] == [50001, 5201, 5301, 50001, 50000]
    assert c["cls"] == ["rtp", "tcp", "udp", "rtp", "rtp"]
    assert c["rtp_ssrc"] == [0xCAFE, -1, -1, 0xCAFE, 0xBEEF]
    assert c["rtp_seq"] == [7, -1, -1, 8, 3]
    assert c["rtp_pt"] == [96, -1, -1, 96, 111]
    assert c["ip_checksum_ok"] == [True, True, False, True, True]


def test_gtlog_records_in_file_order(tmp_path):
    _, _, log, f = write_run(tmp_path)
    d = doc("gtlog", str(log))
    assert d["header"]["direction"] == "forward" and d["trailing_bytes"] == 0
    c = d["columns"]
    assert c["ip_id"] == [3, 1, 2, 4]
    assert c["event"] == [2, 0, 0, 1]
    assert c["event_name"] == ["dropped_tail", "forwarded", "forwarded", "forwarded_ce"]
    assert c["arrival_ns"][1] == str(T0 + 1000) and c["tx_end_ns"][0] == "0"
    assert c["key"][1] == str(fnv1a64(f[0][34:34 + 64]))
    assert c["ip_proto"] == [17, 17, 17, 17]


def test_join_gives_fates_delays_and_log_records(tmp_path):
    pa, pb, log, _ = write_run(tmp_path)
    c = doc("join", str(pa), str(pb), "--gtlog", str(log))["columns"]
    # Forward departures in send order, then the reverse one.
    assert c["direction"] == ["forward"] * 4 + ["reverse"]
    assert c["ip_id"] == [1, 2, 3, 4, 5]
    assert c["status"] == ["delivered", "delivered", "lost", "delivered", "delivered"]
    assert c["owd_ns"] == [25 * MS, 26 * MS, None, 28 * MS, 30 * MS]
    assert c["t_send_ns"][0] == str(T0) and c["t_recv_ns"][0] == str(T0 + 25 * MS)
    assert c["t_recv_ns"][2] is None
    assert c["ecn_send"][0] == 2 and c["ecn_recv"][0] == 2 and c["ecn_recv"][2] is None
    assert c["dscp"][0] == 46
    # Record numbers in each file: b's first record is the reverse packet (15 ms).
    assert c["frame_send"] == [1, 2, 3, 4, 1] and c["frame_recv"] == [2, 3, None, 4, 5]
    # Each forward departure's record in the log (file order: ip_id 3, 1, 2, 4); reverse packets are not in it.
    assert c["gt"] == [1, 2, 0, 3, None]


def test_join_without_log_has_no_log_column(tmp_path):
    pa, pb, _, _ = write_run(tmp_path)
    c = doc("join", str(pa), str(pb))["columns"]
    assert "gt" not in c and c["status"][2] == "lost"


def test_unreadable_input_exits_2_naming_the_file(tmp_path):
    r = export_process("packets", str(tmp_path / "nope.pcap"))
    assert r.returncode == 2 and "nope.pcap" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "x.gtlog"
    bad.write_bytes(b"NOTALOG!" + b"\0" * 20)
    r = export("gtlog", str(bad))
    assert r.returncode == 2 and "x.gtlog" in r.stderr
