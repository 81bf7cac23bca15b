"""The fast path against independent decoders and logs: pyshark (Wireshark's dissectors) field by field, tshark's
RTP stream analysis for jitter and loss, and the bottleneck's ground-truth log for delay and drops."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from pcapbuild import Pcap, fnv1a64, ipv4_frame, rtcp_rr, rtp, tcp, udp
from rtclab import _core, crosscheck, rundir, synth
from rtclab.analyze import analyze

A, B = "10.0.1.2", "10.0.2.2"


def small_capture(path: Path) -> list[dict]:
    """RTP with and without the transport-wide-cc extension, RTCP, STUN, DTLS, TCP, ECN bits; returns what was
    written."""
    cap = Pcap(snaplen=200)
    written = []
    stun = struct.pack("!HHI12s", 0x0001, 0, 0x2112A442, b"0123456789ab")
    dtls = bytes([23, 0xFE, 0xFD]) + b"\0" * 8 + b"\x00\x10" + b"x" * 16  # type, version, epoch+seq, length
    for i in range(12):
        kind = ["rtp", "rtp_noext", "rtcp", "stun", "dtls", "tcp"][i % 6]
        tos = [0, 1, 2, 3][i % 4]
        if kind == "rtp":
            tr, proto = udp(50000, 50001,
                            rtp(96, 100 + i, 3000 * i, 0xCAFE0000 + i, 300, twcc=60000 + i, marker=i % 2 == 0)), 17
        elif kind == "rtp_noext":
            tr, proto = udp(50000, 50001, rtp(111, 7 + i, 960 * i, 0xBEEF, 80)), 17
        elif kind == "rtcp":
            tr, proto = udp(50000, 50001, rtcp_rr(0x1234 + i, i)), 17
        elif kind == "stun":
            tr, proto = udp(50000, 50001, stun), 17
        elif kind == "dtls":
            tr, proto = udp(50000, 50001, dtls), 17
        else:
            tr, proto = tcp(40000 + i, 5201, 1000 * i, 7, 500), 6
        frame = ipv4_frame(A, B, proto, tr, ip_id=900 + i, tos=tos)
        cap.add(1_700_000_000_000_000_000 + i * 1_000_123, frame)
        written.append({"kind": kind, "ip_id": 900 + i, "ecn": tos & 3, "ip_len": len(frame) - 14,
                        "key": fnv1a64(frame[34:34 + 64])})
    cap.write(path)
    return written


def test_fast_decoder_agrees_with_pyshark(tmp_path):
    import pyshark
    path = tmp_path / "small.pcap"
    written = small_capture(path)
    fast = _core.read_pcap(str(path), 3)
    assert fast["error"] is None and len(fast["ts_ns"]) == len(written)
    cap = pyshark.FileCapture(str(path), override_prefs={"rtp.heuristic_rtp": "TRUE"})
    try:
        pkts = list(cap)
    finally:
        cap.close()
    assert len(pkts) == len(written)
    cls_names = {1: "rtp", 2: "rtcp", 3: "stun", 4: "dtls", 5: "tcp"}
    for i, (p, w) in enumerate(zip(pkts, written)):
        layers = [layer.layer_name for layer in p.layers]
        assert int(p.ip.id, 16) == fast["ip_id"][i] == w["ip_id"]
        assert int(p.ip.dsfield_ecn) == fast["tos"][i] & 3
        assert int(p.ip.len) == fast["ip_len"][i]
        assert int(p.frame_info.time_epoch.replace(".", "")[:19]) == fast["ts_ns"][i]
        assert fast["key"][i] == w["key"]
        assert cls_names[int(fast["cls"][i])] in layers, (i, layers, fast["cls"][i])
        if "rtp" in layers:
            assert int(p.rtp.ssrc, 16) == fast["ssrc"][i]
            assert int(p.rtp.seq) == fast["rtp_seq"][i]
            assert int(p.rtp.timestamp) == fast["rtp_ts"][i]
            assert int(p.rtp.p_type) == fast["rtp_pt"][i]
            assert (p.rtp.marker in ("1", "True")) == bool(fast["rtp_marker"][i])
            ids = p.rtp.get_field("ext_rfc5285_id")
            if ids is None:
                assert fast["twcc_seq"][i] == -1
            else:
                data = dict(zip([int(x.show) for x in ids.all_fields],
                                [x.show for x in p.rtp.get_field("ext_rfc5285_data").all_fields]))
                assert int(data[3].replace(":", ""), 16) == fast["twcc_seq"][i]
        if "rtcp" in layers:
            assert int(p.rtcp.senderssrc, 16) == fast["ssrc"][i]
        if "tcp" in layers:
            assert int(p.tcp.seq_raw) == fast["tcp_seq"][i]
            assert int(p.tcp.srcport) == fast["sport"][i]
            assert int(p.tcp.len) == fast["payload_len"][i]


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("synth")
    synth.write_run(run, synth.SynthConfig(duration_s=10.0, loss=0.02, duplicate=0.0, reorder=0.01))
    m, table = analyze(run, run_tshark=True)
    return run, m, table


def test_jitter_and_loss_agree_with_tshark_rtp_streams(synthetic_run):
    run, m, _ = synthetic_run
    checks = [c for c in m["crosschecks"] if c["name"].startswith("jitter_vs_tshark")]
    assert len(checks) == 2 and all(c["ok"] for c in checks), checks
    for c in checks:
        ours, ts = c["values"]["ours"], c["values"]["tshark"]
        # Without duplicates both RFC 3550 recurrences see the same packets in the same order: the maxima agree to
        # tshark's printed precision. tshark averages only over packets without the marker bit, so means differ a
        # little.
        assert ours["max"] == pytest.approx(ts["max_jitter_ms"], abs=0.0015)
        assert ours["mean"] == pytest.approx(ts["mean_jitter_ms"], rel=0.01)


def test_a_jitter_disagreement_is_a_warning_with_the_numbers(synthetic_run):
    run, m, table = synthetic_run
    flows = json.loads(json.dumps(m["flows"]))
    video = next(f for f in flows if f["kind"] == "video" and f["direction"] == "forward")
    video["jitter_ms"]["max_tshark_rule"] += 1.0
    checks = crosscheck.tshark_jitter(crosscheck.RunDir(path=run,
                                                        manifest=json.loads((run / "manifest.json").read_text())),
                                      flows, table, {96: 90000.0, 111: 48000.0}, {96: "VP8", 111: "opus"})
    bad = [c for c in checks if c["ok"] is False]
    assert len(bad) == 1 and "tshark" in bad[0]["detail"] and str(video["ssrc"]) in bad[0]["detail"]


def write_gtlog(path: Path, records: list[tuple]) -> None:
    header = json.dumps({"version": 1, "direction": "forward", "record_size": 64, "clock": "CLOCK_REALTIME",
                         "config": {}}).encode()
    body = b"".join(struct.pack("<QQQQQQHHBBBBII", *r) for r in records)
    path.write_bytes(b"RTCGTLG1" + struct.pack("<I", len(header)) + header + body + b"\x01\x02\x03")  # + a torn record


def gt_records(table) -> list[tuple]:
    """A log consistent with the captures: each forward departure reaches r 10 us after leaving a and is released
    15 us before it reaches b; lost packets are logged as tail drops. Keys come from the test's own FNV."""
    c = table.cols
    recs = []
    fwd = [i for i in range(len(table)) if c["direction"][i] == 0 and c["t_send_ns"][i] >= 0]
    for i in fwd:
        arrival = int(c["t_send_ns"][i]) + 10_000
        delivered = c["status"][i] == 0
        event = 0 if delivered else 2
        release = int(c["t_recv_ns"][i]) - 15_000 if delivered else arrival + 1000
        recs.append((arrival, arrival, release, release, release, 0, int(c["ip_len"][i]), int(c["ip_id"][i]), event,
                     0, 0, int(c["proto"][i]), 0, 0))
    return recs


def test_owd_and_drops_agree_with_the_ground_truth_log(tmp_path):
    run = tmp_path / "gt"
    synth.write_run(run, synth.SynthConfig(duration_s=3.0, duplicate=0.0))
    _, table = analyze(run, run_tshark=False, write=False)
    # Keys: the test's own FNV-1a over the first 64 bytes after the IP header, from the capture's records (read by the
    # run-directory library's record reader, not the Rust decoder).
    keys = {}
    for frame_no, (_, _, frame) in enumerate(rundir.pcap_records(run / "capture-a.pcap"), start=1):
        ip_len = struct.unpack("!H", frame[16:18])[0]
        keys[frame_no] = fnv1a64(frame[34:34 + min(64, ip_len - 20)])
    c = table.cols
    recs = gt_records(table)
    fwd = [i for i in range(len(table)) if c["direction"][i] == 0 and c["t_send_ns"][i] >= 0]
    recs = [r[:5] + (keys[int(c["frame_send"][i])],) + r[6:] for r, i in zip(recs, fwd)]
    write_gtlog(run / "bottleneck-forward.gtlog", recs)
    m, _ = analyze(run, run_tshark=False, write=False)
    check = next(c for c in m["crosschecks"] if c["name"] == "owd_vs_ground_truth")
    assert check["ok"] is True, check
    gt = m["ground_truth"]
    assert gt["joined"] == len(fwd)
    assert gt["owd_minus_time_in_router_ms"]["median"] == pytest.approx(0.025)
    assert any("partial record" in p for p in m["problems"])
    # One packet logged as dropped that arrived anyway: the check must say so.
    first_delivered = next(n for n, i in enumerate(fwd) if c["status"][i] == 0)
    recs[first_delivered] = recs[first_delivered][:8] + (3,) + recs[first_delivered][9:]
    write_gtlog(run / "bottleneck-forward.gtlog", recs)
    m, _ = analyze(run, run_tshark=False, write=False)
    check = next(c for c in m["crosschecks"] if c["name"] == "owd_vs_ground_truth")
    assert check["ok"] is False and m["ground_truth"]["dropped_but_captured_at_b"] == 1


def test_join_ignores_partial_checksums_left_by_transmit_offload(tmp_path):
    """With tx checksum offload on, a's capture holds partial UDP/TCP checksums that the wire never carries."""
    cap_a, cap_b = Pcap(), Pcap()
    t0 = 1_700_000_000_000_000_000
    for i in range(50):
        for proto, tr in ((17, udp(50000, 50001, rtp(96, i, i * 3000, 0xAB, 200, twcc=i))),
                          (6, tcp(40000, 5201, 1 + i * 1000, 1, 1000))):
            wire = ipv4_frame(A, B, proto, tr, ip_id=2 * i + proto)
            partial = bytearray(wire)
            at = 34 + (6 if proto == 17 else 16)
            partial[at:at + 2] = b"\xbe\xef"
            cap_a.add(t0 + i * 10_000_000, bytes(partial))
            if i != 7:
                cap_b.add(t0 + i * 10_000_000 + 30_000_000, wire)
    run = tmp_path / "offload"
    run.mkdir()
    cap_a.write(run / "capture-a.pcap")
    cap_b.write(run / "capture-b.pcap")
    m, _ = analyze(run, run_tshark=False, write=False)
    fwd = {f["kind"]: f for f in m["flows"] if f["direction"] == "forward"}
    for kind in ("video", "tcp"):
        assert fwd[kind]["packets_received"] == 49 and fwd[kind]["packets_lost"] == 1, fwd[kind]
        assert fwd[kind]["owd_ms"]["min"] == pytest.approx(30.0) and fwd[kind]["owd_ms"]["max"] == pytest.approx(30.0)
