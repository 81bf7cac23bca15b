"""What Chrome's L4S path did, verified from the packets (docs/chrome-ecn.md, "The four-step chain"): for every call
with `call.l4s`, its forward media (the RTP packets of the call's 5-tuple, every SSRC) through four joins, each with
its own count and source:

1. ECT(1) on the wire: the media packets by ECN codepoint as they left a (capture-a) and as they arrived at b
   (capture-b).
2. CE set by the bottleneck: the ground-truth log's marks of those packets (userspace backend), else the packets that
   left a ECT(1) and arrived at b CE (the kernel backends, which log nothing).
3. CE reported back: the RFC 8888 feedback (RTCP RTPFB FMT 11) in the sender's RTC event log, each message's packet
   reports for the call's SSRCs that say CE; else the increments of getStats' remote-inbound-rtp
   `packetsReceivedWithCe` at the sender (one sample a second).
4. The sender's reaction: for each feedback message that reported CE, whether the sender's target (getStats'
   `availableOutgoingBitrate`: Chrome 156 logs SCReAM's target only in `ScreamBweUpdates`, which rtclab's event-log
   parser does not read) was lower in the window after it than just before it.

A step whose source is missing has a null source and the reason, never a 0.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from . import rundir
from .chrome_ecn import target_samples  # the sender's target from getStats, as the ECN counters read it
from .ecn import CE, ECT1, codepoints
from .eventlog import parser as eventlog_parser
from .multiflow import Call, calls
from .packets import CLS_RTP, DELIVERED, FORWARD, LOST, UNKNOWN, PacketTable

RTPFB, FMT_CCFB = 205, 11  # RFC 8888 section 3.1: the congestion control feedback's packet type and format
# The target's samples are getStats' (one a second, the harness's interval): a feedback message is followed by the
# next sample within one interval, plus the sampling's own jitter. No shorter window can see the target move.
REACTION_WINDOW_S = 1.5


class CcfbError(ValueError):
    pass


def _missing(reason: str, source: str | None = None) -> dict[str, Any]:
    return {"source": source, "reason": reason}


# --- 1. ECT(1) on the wire ---------------------------------------------------------------------------------------


def media_rows(table: PacketTable, call: Call) -> np.ndarray:
    """The call's forward RTP packets (rows of departures and of arrivals that matched none)."""
    if call.five_tuple is None:
        return np.zeros(0, np.int64)
    c = table.cols
    src, sport, dst, dport = call.five_tuple
    return np.flatnonzero((c["direction"] == FORWARD) & (c["cls"] == CLS_RTP) & (c["ip_src"] == src)
                          & (c["sport"] == sport) & (c["ip_dst"] == dst) & (c["dport"] == dport))


def ect1_on_wire(table: PacketTable, rows: np.ndarray) -> dict[str, Any]:
    """Codepoints of the media packets as they left a (departures) and as they arrived at b (every arrival)."""
    c = table.cols
    status = c["status"][rows]
    sent = rows[(status == DELIVERED) | (status == LOST) | (status == UNKNOWN)]  # UNKNOWN: left a, b's capture off
    arrived = rows[c["t_recv_ns"][rows] >= 0]
    return {"source": "captures", "reason": None, "packets_sent": int(sent.size), "packets_arrived": int(arrived.size),
            "at_a": codepoints(c["ecn_send"][sent]), "at_b": codepoints(c["ecn_recv"][arrived])}


# --- 2. CE set by the bottleneck ---------------------------------------------------------------------------------


def ce_set(table: PacketTable, rows: np.ndarray, ground_truth: dict[str, Any] | None,
           log_exists: bool) -> dict[str, Any]:
    """The bottleneck's CE marks of the media packets: the log's (joined per flow by crosscheck.gtlog_owd), or, with
    no log, the captures' ECT(1) at a and CE at b."""
    c = table.cols
    if log_exists:
        by_flow = ((ground_truth or {}).get("ecn") or {}).get("by_flow")
        if by_flow is None:
            return {**_missing("the ground-truth log could not be joined to the captures (see crosschecks)",
                               "ground_truth_log"), "count": None}
        flows = {int(f) for f in np.unique(c["flow"][rows])}
        count = sum(int(v["bottleneck_ce_marks"]) for f, v in by_flow.items() if int(f) in flows)
        return {"source": "ground_truth_log", "reason": None, "count": count}
    got = rows[c["status"][rows] == DELIVERED]
    count = int(np.count_nonzero((c["ecn_send"][got] == ECT1) & (c["ecn_recv"][got] == CE)))
    return {"source": "captures", "reason": None, "count": count}


# --- 3. CE reported back -----------------------------------------------------------------------------------------


def rtcp_packets(compound: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(packet type, format, what follows the 4-byte header) of each packet of a compound RTCP packet, up to the first
    that is not version 2 or runs past the end."""
    pos = 0
    while pos + 4 <= len(compound):
        length = (struct.unpack_from("!H", compound, pos + 2)[0] + 1) * 4
        if compound[pos] >> 6 != 2 or pos + length > len(compound):
            return
        yield compound[pos + 1], compound[pos] & 0x1F, compound[pos + 4:pos + length]
        pos += length


def parse_ccfb(body: bytes) -> list[tuple[int, int, int]]:
    """(SSRC, packets reported received, of them reported CE) per report block of one RFC 8888 feedback (section
    3.1): after the sender's SSRC, blocks of SSRC, begin_seq, num_reports and one 16-bit metric block per packet
    (R, 2-bit ECN, 13-bit arrival time offset), padded to 32 bits; then the 32-bit report timestamp."""
    if len(body) < 8:
        raise CcfbError(f"RFC 8888 feedback of {len(body) + 4} bytes (12 at least)")
    end = len(body) - 4  # the report timestamp
    pos, out = 4, []
    while pos < end:
        if pos + 8 > end:
            raise CcfbError("RFC 8888 feedback: a report block's header cut short")
        ssrc, _, n = struct.unpack_from("!IHH", body, pos)
        pos += 8
        if pos + 2 * n > end:
            raise CcfbError(f"RFC 8888 feedback: {n} metric blocks do not fit")
        blocks = struct.unpack_from(f"!{n}H", body, pos)
        pos += (2 * n + 3) // 4 * 4
        received = [b for b in blocks if b & 0x8000]
        out.append((ssrc, len(received), sum(1 for b in received if (b >> 13) & 3 == CE)))
    return out


def ccfb_reports(rtcp: list[tuple[int, bytes]], ssrcs: set[int]) -> tuple[list[tuple[int, int, int]], int]:
    """Per RFC 8888 feedback message reporting on `ssrcs`: (log time ms, packets reported received, reported CE);
    and how many feedback messages were unreadable (left out)."""
    out, bad = [], 0
    for time_ms, compound in rtcp:
        for pt, fmt, body in rtcp_packets(compound):
            if pt != RTPFB or fmt != FMT_CCFB:
                continue
            try:
                blocks = [b for b in parse_ccfb(body) if b[0] in ssrcs]
            except CcfbError:
                bad += 1
                continue
            if blocks:
                out.append((time_ms, sum(b[1] for b in blocks), sum(b[2] for b in blocks)))
    return out, bad


def getstats_ce_reports(lines: list[dict[str, Any]], ssrcs: set[int]) -> list[tuple[float, int]]:
    """(time of the previous sample, CE newly reported) for each getStats sample whose remote-inbound-rtp
    `packetsReceivedWithCe`, summed over `ssrcs`, rose: the feedback arrived after the previous sample (the earliest
    it can be placed) and before this one."""
    series = []
    for line in lines:
        report, t = line.get("report"), line.get("t")
        if not isinstance(report, list) or not isinstance(t, (int, float)):
            continue
        ce = [o["packetsReceivedWithCe"] for o in report
              if isinstance(o, dict) and o.get("type") == "remote-inbound-rtp" and o.get("ssrc") in ssrcs
              and isinstance(o.get("packetsReceivedWithCe"), int)]
        series.append((float(t), sum(ce) if ce else None))
    out = []
    for (t1, c1), (_, c2) in zip(series, series[1:]):
        if c1 is not None and c2 is not None and c2 > c1:
            out.append((t1, c2 - c1))
    return out


def _sender_log(run: rundir.RunDir, call_index: int) -> tuple[eventlog_parser.EventLog | None, str | None]:
    """The forward sender's RTC event log, or None with the reason."""
    if call_index != 0:
        return None, "the harness keeps RTC event logs of the first call only"
    path = run.file("eventlog-a.log")
    if not path.exists():
        return None, "no eventlog-a.log (call.event_log off, or Chrome wrote none)"
    try:
        log = eventlog_parser.read(path)
    except eventlog_parser.EventLogError as e:
        return None, f"eventlog-a.log unreadable: {e}"
    if log.utc_offset_ms is None:
        return None, "eventlog-a.log has no begin event with its Unix time"
    return log, None


def ce_reported(log: eventlog_parser.EventLog | None, log_reason: str | None, getstats_lines: list[dict[str, Any]],
                ssrcs: set[int]) -> tuple[dict[str, Any], list[tuple[float, int]]]:
    """Step 3 and the feedback it found as (epoch s, CE reported) per message (or per getStats interval)."""
    reason = log_reason
    if log is not None:
        reports, bad = ccfb_reports(log.incoming_rtcp, ssrcs)
        if reports:
            times = [(t_ms + log.utc_offset_ms) / 1e3 for t_ms, _, _ in reports]  # type: ignore[operator]
            return ({"source": "eventlog", "reason": None, "feedback_messages": len(reports),
                     "packets_reported": sum(r[1] for r in reports), "ce_reported": sum(r[2] for r in reports),
                     "messages_with_ce": sum(1 for r in reports if r[2]), "unreadable_messages": bad},
                    [(t, r[2]) for t, r in zip(times, reports)])
        reason = "eventlog-a.log holds no RFC 8888 feedback on the call's SSRCs"
    if not getstats_lines:
        return _missing(f"{reason}; and no getStats samples at a"), []
    steps = getstats_ce_reports(getstats_lines, ssrcs)
    return ({"source": "getstats", "reason": reason, "feedback_messages": None, "packets_reported": None,
             "ce_reported": sum(n for _, n in steps), "messages_with_ce": len(steps), "unreadable_messages": None},
            steps)


# --- 4. The sender's reaction ------------------------------------------------------------------------------------


def reaction(feedback: list[tuple[float, int]], target: list[tuple[float, float]],
             window_s: float = REACTION_WINDOW_S) -> dict[str, Any]:
    """For each feedback (time, CE reported) with CE: the target's last sample at or before it against its first
    sample in (time, time + window_s]: lower, not lower, or no sample on one side (no_target)."""
    ts = np.array([t for t, _ in target], dtype=np.float64)
    vs = np.array([v for _, v in target], dtype=np.float64)
    lower = not_lower = no_target = 0
    for t, ce in feedback:
        if ce <= 0:
            continue
        before = int(np.searchsorted(ts, t, side="right")) - 1
        after = before + 1
        if before < 0 or after >= ts.size or ts[after] > t + window_s:
            no_target += 1
        elif vs[after] < vs[before]:
            lower += 1
        else:
            not_lower += 1
    return {"source": "getstats", "reason": None, "window_s": window_s,
            "messages_with_ce": lower + not_lower + no_target, "followed_by_lower_target": lower,
            "not_lower": not_lower, "no_target_sample": no_target}


# --- the chain per call ------------------------------------------------------------------------------------------


def l4s_calls(run: rundir.RunDir) -> list[tuple[int, Call]]:
    """(index, call) of the run's calls with `l4s` on (a `calls` item without it takes `call`'s)."""
    doc = run.scenario_doc
    call_doc, calls_doc = doc.get("call"), doc.get("calls")
    shared: dict[str, Any] = call_doc if isinstance(call_doc, dict) else {}
    listed: list[Any] = calls_doc if isinstance(calls_doc, list) else [shared]
    return [(i, c) for i, (c, sc) in enumerate(zip(calls(run), listed))
            if isinstance(sc, dict) and sc.get("l4s", shared.get("l4s"))]


def _read_lines(path: Path) -> list[dict[str, Any]]:
    return rundir.read_jsonl(path, []) if path.exists() else []  # getstats.py reports a missing or damaged file


def chain(run: rundir.RunDir, table: PacketTable | None, ground_truth: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The four steps of every `call.l4s` call (`chrome_ecn.l4s_chain` of metrics.json)."""
    out = []
    for index, call in l4s_calls(run):
        entry: dict[str, Any] = {"call": call.id}
        if table is None or call.five_tuple is None:
            why = "no packet table (captures missing)" if table is None else "the call's 5-tuple is unknown"
            entry |= {"ect1_on_wire": _missing(why), "ce_set_by_bottleneck": _missing(why)}
            ssrcs: set[int] = set()
        else:
            rows = media_rows(table, call)
            ssrcs = {int(s) for s in np.unique(table.cols["ssrc"][rows])}
            entry["ect1_on_wire"] = ect1_on_wire(table, rows)
            entry["ce_set_by_bottleneck"] = ce_set(table, rows, ground_truth,
                                                   run.file("bottleneck-forward.gtlog").exists())
        lines = _read_lines(run.file(call.files.get("a", "getstats-a.jsonl")))
        log, log_reason = _sender_log(run, index)
        entry["ce_reported"], feedback = ce_reported(log, log_reason, lines, ssrcs)
        target = target_samples(lines)
        if entry["ce_reported"]["source"] is None:
            entry["sender_reaction"] = _missing("no reported CE to react to: " + entry["ce_reported"]["reason"])
        elif not target:
            entry["sender_reaction"] = _missing("getStats at a has no availableOutgoingBitrate")
        else:
            entry["sender_reaction"] = reaction(feedback, target)
        out.append(entry)
    return out
