"""Checks the packet-level metrics against independent sources: getStats' packetsLost, tshark's own RTP stream
analysis (`tshark -q -z rtp,streams`), and the bottleneck's ground-truth log. Each check returns a dict with `name`,
`ok` (True, False, or None when it could not run), `detail` (a sentence with the numbers) and `tolerance`."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from . import _core, dualpi2_queues, ecn
from .packets import DELIVERED, FORWARD, LOST, PacketTable, join_key
from .rundir import GTLOG_EVENTS, CaptureError, RunDir, join_keys, pcap_records, read_gtlog
from .stats import percentile

# Tolerances (documented in docs/metrics.md).
LOSS_TOLERANCE_PACKETS = 3
LOSS_TOLERANCE_FRACTION = 0.005  # of packets sent
JITTER_TOLERANCE_MS = 0.05
JITTER_TOLERANCE_FRACTION = 0.01
GTLOG_OWD_TOLERANCE_MS = 2.0  # the veth hops and capture timestamps; the queuing-delay check adds the jitter
TSHARK_MAX_PACKETS = 3_000_000  # about a minute of tshark here: beyond it the check is skipped, with a note

# Chrome's usual payload types, for tshark when getStats names no codec.
_DEFAULT_RTPMAP = {96: ("VP8", 90000), 97: ("rtx", 90000), 98: ("VP9", 90000), 111: ("opus", 48000),
                   63: ("red", 48000), 45: ("AV1", 90000), 102: ("H264", 90000)}


def _ms(value: float | None) -> str:
    """A duration in ms to the microsecond, for messages."""
    return "n/a" if value is None else f"{value:.3f} ms"


def _check(name: str, ok: bool | None, detail: str, tolerance: str, **values: Any) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail, "tolerance": tolerance, "values": values}


def skipped(name: str, why: str) -> dict[str, Any]:
    """A cross-check that does not apply to this run, with the reason."""
    return _check(name, None, why, "")


def getstats_loss(flows: list[dict[str, Any]], gs: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for direction in ("forward", "reverse"):
        streams = {s["ssrc"]: s for s in (gs.get("directions", {}).get(direction, {}).get("streams") or [])}
        for f in flows:
            if f["direction"] != direction or f["ssrc"] not in streams or f["kind"] not in ("video", "audio"):
                continue
            s = streams[f["ssrc"]]
            gs_lost = s.get("packets_lost")
            if gs_lost is None:
                continue
            pcap_lost = f.get("rtp_seq_lost")
            sent = f.get("packets_sent") or 0
            tol = max(LOSS_TOLERANCE_PACKETS, LOSS_TOLERANCE_FRACTION * sent)
            ok = abs(gs_lost - pcap_lost) <= tol if pcap_lost is not None else None
            out.append(_check(
                f"loss_vs_getstats:{direction}:{f['kind']}:{f['ssrc']}", ok,
                f"{direction} {f['kind']} ssrc {f['ssrc']}: pcap lost {pcap_lost} by sequence number "
                f"({f['packets_lost']} by the packet join), getStats packetsLost {gs_lost}",
                f"|difference| <= max({LOSS_TOLERANCE_PACKETS}, {LOSS_TOLERANCE_FRACTION:.1%} of {sent} sent)",
                pcap=pcap_lost, getstats=gs_lost, join=f["packets_lost"]))
    return out


def _sdp_record(ts_ns: int, receiver_ip: str, sender_ip: str, port: int, rtpmap: dict[int, tuple[str, int]]) -> bytes:
    """A SIP 200 OK carrying the SDP of the receiving side, as one pcap record: it tells tshark's RTP analysis each
    dynamic payload type's clock rate, which it needs for jitter (WebRTC signals it out of band)."""
    pts = " ".join(str(p) for p in sorted(rtpmap))
    lines = [f"a=rtpmap:{p} {n}/{r}" for p, (n, r) in sorted(rtpmap.items())]
    sdp = "\r\n".join(["v=0", f"o=- 0 0 IN IP4 {receiver_ip}", "s=-", f"c=IN IP4 {receiver_ip}", "t=0 0",
                       f"m=video {port} RTP/AVP {pts}", *lines]) + "\r\n"
    sip = ("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP " + sender_ip + ":5060;branch=z9hG4bKrtclab\r\n"
           f"From: <sip:a@{sender_ip}>;tag=1\r\nTo: <sip:b@{receiver_ip}>;tag=2\r\nCall-ID: rtclab\r\n"
           f"CSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: {len(sdp)}\r\n\r\n{sdp}").encode()
    udp = struct.pack("!HHHH", 5060, 5060, 8 + len(sip), 0) + sip
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes(int(x) for x in receiver_ip.split(".")), bytes(int(x) for x in sender_ip.split("."))) + udp
    frame = b"\0" * 12 + b"\x08\x00" + ip
    return struct.pack("<IIII", ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, len(frame), len(frame)) + frame


def tshark_rtp_streams(capture: Path, receiver_ip: str, sender_ip: str, ports: set[int],
                       rtpmap: dict[int, tuple[str, int]]) -> list[dict[str, Any]]:
    """Runs `tshark -q -z rtp,streams` on the capture (with an SDP prelude naming the clock rates) and parses its
    table: one dict per stream with src, dst, ssrc, packets, lost, mean/max jitter in ms."""
    first = next(pcap_records(capture), None)
    with capture.open("rb") as f, tempfile.TemporaryDirectory(prefix="rtclab-tshark-") as tmp:
        head = f.read(24)
        if struct.unpack("<I", head[:4])[0] != 0xA1B23C4D or first is None:
            raise RuntimeError("tshark check needs a little-endian nanosecond pcap with packets")
        merged = Path(tmp) / "with-sdp.pcap"
        with merged.open("wb") as out:
            out.write(head)
            for port in sorted(ports):
                out.write(_sdp_record(first[0], receiver_ip, sender_ip, port, rtpmap))
            shutil.copyfileobj(f, out, 1 << 20)  # every record after the header, as it is
        res = subprocess.run(["tshark", "-n", "-r", str(merged), "-o", "rtp.heuristic_rtp:TRUE", "-q",
                              "-z", "rtp,streams"], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"tshark failed: {res.stderr.strip()[:300]}")
    streams = []
    row = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+(.+?)\s+(\d+)\s+"
                     r"(-?\d+)\s+\(.*?\)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)")
    for line in res.stdout.splitlines():
        m = row.match(line)
        if not m:
            continue
        streams.append({"src": f"{m[3]}:{m[4]}", "dst": f"{m[5]}:{m[6]}", "ssrc": int(m[7], 16), "payload": m[8],
                        "packets": int(m[9]), "lost": int(m[10]), "mean_jitter_ms": float(m[15]),
                        "max_jitter_ms": float(m[16])})
    return streams


def tshark_jitter(run: RunDir, flows: list[dict[str, Any]], table: PacketTable | None,
                  clocks: dict[int, float], pt_names: dict[int, str]) -> list[dict[str, Any]]:
    if shutil.which("tshark") is None:
        return [_check("jitter_vs_tshark", None, "tshark not found: jitter cross-check skipped", "")]
    out = []
    for direction, cap_name, rcv_ip, snd_ip in (("forward", "capture-b.pcap", run.addr_b, run.addr_a),
                                                ("reverse", "capture-a.pcap", run.addr_a, run.addr_b)):
        rtp = [f for f in flows if f["direction"] == direction and f["kind"] in ("video", "audio")
               and f["packets_received"] > 1]
        if not rtp:
            continue
        cap = run.file(cap_name)
        if not cap.exists():
            continue
        if table is not None and len(table) > TSHARK_MAX_PACKETS:
            out.append(_check(f"jitter_vs_tshark:{direction}", None,
                              f"{len(table)} packets: more than tshark can dissect in about a minute; skipped", ""))
            continue
        pts = {f["payload_type"] for f in rtp}
        rtpmap = {}
        for pt in pts:
            name, rate = _DEFAULT_RTPMAP.get(pt, ("VP8" if pt not in (111, 63) else "opus", 90000))
            rtpmap[pt] = (pt_names.get(pt, name), int(clocks.get(pt, rate)))
        ports = {int(f["dst"].rsplit(":", 1)[1]) for f in rtp}
        try:
            streams = tshark_rtp_streams(cap, rcv_ip, snd_ip, ports, rtpmap)
        except (RuntimeError, OSError, CaptureError, subprocess.TimeoutExpired) as e:
            out.append(_check(f"jitter_vs_tshark:{direction}", None, f"tshark could not run: {e}", ""))
            continue
        for f in rtp:
            s = next((s for s in streams if s["ssrc"] == f["ssrc"] and s["src"] == f["src"]
                      and s["dst"] == f["dst"]), None)
            name = f"jitter_vs_tshark:{direction}:{f['kind']}:{f['ssrc']}"
            if s is None:
                out.append(_check(name, False,
                                  f"tshark found no RTP stream for ssrc {f['ssrc']} {f['src']} -> {f['dst']}", ""))
                continue
            ours = f["jitter_ms"] or {}
            tol = lambda ref: JITTER_TOLERANCE_MS + JITTER_TOLERANCE_FRACTION * abs(ref)
            # The maxima are the same quantity (the RFC 3550 recurrence over the same arrivals). tshark's "mean" is not
            # a plain mean of J (it skips marker-bit packets and weights by its packet counter), so it is shown only.
            ours_max = ours.get("max_tshark_rule")
            ok = ours_max is not None and abs(ours_max - s["max_jitter_ms"]) <= tol(s["max_jitter_ms"])
            # tshark counts duplicates as received packets, so its "lost" is ours minus the duplicates.
            lost_ok = f.get("rtp_seq_lost") is None or abs(f["rtp_seq_lost"] - f["duplicates"] - s["lost"]) <= max(
                LOSS_TOLERANCE_PACKETS, LOSS_TOLERANCE_FRACTION * f["packets_sent"])
            out.append(_check(
                name, bool(ok and lost_ok),
                f"{direction} {f['kind']} ssrc {f['ssrc']}: jitter mean {ours.get('mean', float('nan')):.3f} ms / "
                f"max {ours.get('max', float('nan')):.3f} ms ({ours_max if ours_max is not None else float('nan'):.3f} "
                f"by tshark's rule), tshark {s['mean_jitter_ms']:.3f} / {s['max_jitter_ms']:.3f} ms; "
                f"lost {f.get('rtp_seq_lost')} by sequence number with {f['duplicates']} duplicates, "
                f"tshark {s['lost']}",
                f"max jitter within {JITTER_TOLERANCE_MS} ms + {JITTER_TOLERANCE_FRACTION:.0%} (means differ by "
                f"definition, shown only); loss as for getStats",
                ours=ours, tshark=s))
    return out


def gtlog_owd(run: RunDir, table: PacketTable | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Joins the forward log to the forward departures (the packet join key on the log's FNV-1a key, occurrence
    order) and compares: drops, one-way delay against the time in the bottleneck, and the queuing delay (one-way
    delay - configured propagation) against the log's time at the bottleneck, sojourn + transmission."""
    path = run.file("bottleneck-forward.gtlog")
    if not path.exists() or table is None:
        return [], None
    try:
        log = read_gtlog(path)
    except (ValueError, OSError) as e:
        return [_check("owd_vs_ground_truth", None, f"ground-truth log unreadable: {e}", "")], None
    if log.trailing_bytes:
        run.problems.append(f"{path.name}: {log.trailing_bytes} trailing bytes of a partial record ignored")
    rec = log.records
    c = table.cols
    dep = np.flatnonzero((c["direction"] == FORWARD) & (c["t_send_ns"] >= 0))
    if dep.size == 0 or rec.size == 0:
        return [_check("owd_vs_ground_truth", None, f"nothing to compare: {dep.size} forward departures in capture-a, "
                       f"{rec.size} records in {path.name}", "")], None
    dep_match, _ = _core.join_keys(join_key(c, dep, "key"), join_keys(rec["key"], rec["ip_id"]))
    has = dep_match >= 0
    rows, gi = dep[has], dep_match[has]
    dropped = rec["event"][gi] >= 2
    status = c["status"][rows]
    agree_drop = int((dropped & (status == LOST)).sum())
    drop_but_delivered = int((dropped & (status == DELIVERED)).sum())
    fwd_but_lost = int((~dropped & (status == LOST)).sum())
    ok_rows = ~dropped & (status == DELIVERED)
    g = gi[ok_rows]
    in_r_ns = rec["release_ns"][g].astype(np.int64) - rec["arrival_ns"][g].astype(np.int64)
    residual_ms = (c["owd_ns"][rows[ok_rows]] - in_r_ns) / 1e6
    p99 = percentile(np.abs(residual_ms), 99)
    ok = (p99 is not None and p99 <= GTLOG_OWD_TOLERANCE_MS and drop_but_delivered == 0 and fwd_but_lost == 0)
    events, event_counts = np.unique(rec["event"], return_counts=True)
    counts = {GTLOG_EVENTS.get(int(e), str(int(e))): int(n) for e, n in zip(events, event_counts)}
    summary: dict[str, Any] = {
        "records": int(rec.size), "departures": int(dep.size), "joined": int(has.sum()), "events": counts,
        "drops_confirmed_by_capture": agree_drop, "dropped_but_captured_at_b": drop_but_delivered,
        "forwarded_but_lost_in_capture": fwd_but_lost,
        "owd_minus_time_in_router_ms": {"median": percentile(residual_ms, 50), "p99_abs": p99}}
    detail = (f"{int(has.sum())} of {dep.size} departures found in the log; capture OWD - time in the bottleneck: "
              f"median {_ms(summary['owd_minus_time_in_router_ms']['median'])}, p99 |.| {_ms(p99)}; "
              f"{drop_but_delivered} logged drops arrived anyway, {fwd_but_lost} logged forwards never arrived")
    checks = [_check("owd_vs_ground_truth", ok, detail,
                     f"p99 |OWD - (release - arrival)| <= {GTLOG_OWD_TOLERANCE_MS} ms and drops agree", **summary)]
    checks += _ce_marks(run, table, rows[ok_rows], rec[g], summary)
    if run.scenario is not None and run.scenario.forward.qdisc_kind == "dualpi2":
        summary["dualpi2_queues"] = dualpi2_queues.analyse(rec)  # every record: the queues' own account
    # Queuing delay from the captures against the log's own time at the bottleneck (sojourn + transmission).
    qd_ns = c["queuing_delay_ns"][rows[ok_rows]]
    if run.scenario is not None and qd_ns.size:
        at_bottleneck_ns = rec["tx_end_ns"][g].astype(np.int64) - rec["arrival_ns"][g].astype(np.int64)
        sojourn_ms = (rec["dequeue_ns"][g].astype(np.int64) - rec["arrival_ns"][g].astype(np.int64)) / 1e6
        diff_ms = (qd_ns - at_bottleneck_ns) / 1e6
        # What separates the two: the configured jitter, the emulator's release lateness (in the log) and the hops.
        late_ms = (rec["release_ns"][g].astype(np.int64) - rec["due_ns"][g].astype(np.int64)) / 1e6
        late99 = percentile(late_ms, 99) or 0.0
        tol = GTLOG_OWD_TOLERANCE_MS + run.scenario.forward.jitter_ms + max(0.0, late99)
        q99 = percentile(np.abs(diff_ms), 99)
        qsum = {"queuing_delay_mean_ms": float(qd_ns.mean() / 1e6), "sojourn_mean_ms": float(sojourn_ms.mean()),
                "at_bottleneck_mean_ms": float(at_bottleneck_ns.mean() / 1e6), "p99_abs_difference_ms": q99,
                "release_lateness_p99_ms": late99, "tolerance_ms": tol}
        summary["queuing_delay"] = qsum
        listed = run.scenario_doc.get("calls")
        own = any(isinstance(x, dict) and x.get("delay_ms") is not None
                  for x in (listed if isinstance(listed, list) else []))
        checks.append(_check(
            "queuing_delay_vs_ground_truth", q99 is not None and q99 <= tol,
            f"forward queuing delay (OWD - {run.scenario.forward.delay_ms:g} ms configured propagation"
            f"{', a call with its own delay: OWD - that delay' if own else ''}) mean "
            f"{_ms(qsum['queuing_delay_mean_ms'])}; the log's sojourn mean {_ms(qsum['sojourn_mean_ms'])}, sojourn + "
            f"transmission mean {_ms(qsum['at_bottleneck_mean_ms'])}; p99 |difference| {_ms(q99)}",
            f"p99 |queuing delay - (tx_end - arrival)| <= {GTLOG_OWD_TOLERANCE_MS} ms + the configured jitter + the "
            f"log's p99 release lateness ({_ms(tol)})", **qsum))
    return checks, summary


def _ce_marks(run: RunDir, table: PacketTable, rows: np.ndarray, rec: np.ndarray,
              summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The bottleneck's CE marks (its log) against the CE codepoints the receiving capture saw, packet by packet
    over the forward packets both delivered and logged (docs/ecn.md); and the meters' action logs. Adds `ecn` and
    `meter_actions` to the ground-truth summary."""
    c = table.cols
    acc = ecn.log_vs_capture(rec["ecn_in"], rec["event"], c["ecn_send"][rows], c["ecn_recv"][rows], c["flow"][rows])
    summary["ecn"] = acc
    summary["meter_actions"] = ecn.meter_actions(run.path, run.call_start_s or 0.0, run.problems)
    if acc["bottleneck_ce_marks"] == 0 and acc["ce_received"] == 0:
        return []
    bad = acc["logged_not_received_ce"] + acc["received_ce_not_logged"]
    detail = (f"{acc['bottleneck_ce_marks']} forward packets marked CE by the bottleneck (log), {acc['ce_received']} "
              f"sent ECN-capable and received CE (captures); {acc['logged_not_received_ce']} logged marks not seen "
              f"at b, {acc['received_ce_not_logged']} CE arrivals the log did not mark")
    return [_check("ce_marks_vs_ground_truth", bad == 0, detail,
                   "every packet: marked in the log <=> ECT at a and CE at b",
                   **{k: v for k, v in acc.items() if k != "by_flow"})]
