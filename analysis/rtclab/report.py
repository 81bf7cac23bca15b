"""The terminal report: a plain-text summary of metrics.json, also saved as report.txt."""

from __future__ import annotations

from typing import Any

from .fairness import headline_fairness
from .phases import OFF_SCHEDULE_S, off_schedule
from .quality import SSIM_DB_CAP
from .report_format import _f, _rate, _table
from .report_paths import hop_lines, propagation_line

MIN_PACKETS_SHOWN = 20  # flows with fewer packets (STUN keepalives, a lone DTLS alert) stay in metrics.json only


def _shown(flow: dict[str, Any]) -> bool:
    """Whether a flow has enough packets for the report's tables (MIN_PACKETS_SHOWN)."""
    return flow["packets_sent"] + flow["packets_received"] + flow.get("unmatched_arrivals", 0) >= MIN_PACKETS_SHOWN


def _late(delay_s: float | None) -> str:
    return "-" if delay_s is None else f"{abs(delay_s):.1f} s {'late' if delay_s >= 0 else 'early'}"


def _off_schedule_lines(m: dict[str, Any]) -> list[str]:
    """One line per cross-traffic item whose data started or stopped more than OFF_SCHEDULE_S off its schedule."""
    items = (m.get("scenario") or {}).get("cross_traffic") or []
    out = []
    for t in off_schedule(m.get("cross_traffic_timing") or []):
        flows = items[t["item"]]["flows"] if t["item"] < len(items) else None
        short = t["item"] < len(items) and items[t["item"]].get("kind") == "tcp_short"
        why = ""
        if (t["start_delay_s"] or 0) > OFF_SCHEDULE_S and short:
            why = ("; likely: the downloads' client starts (python3) and each download opens its connection and asks "
                   "for its size (a round trip) before the server sends")
        elif (t["start_delay_s"] or 0) > OFF_SCHEDULE_S and flows and flows > 1:
            why = (f"; likely: iperf3 connects its {flows} streams one after the other (a round trip each) before its "
                   f"-t clock starts")
        out.append(f"cross traffic off schedule: cross_traffic[{t['item']}]"
                   f"{f' ({flows} flows)' if flows else ''} sent data from {_f(t['first_data_s'])} s to "
                   f"{_f(t['last_data_s'])} s, scheduled {t['scheduled_start_s']:g}-{t['scheduled_stop_s']:g} s "
                   f"(start {_late(t['start_delay_s'])}, stop {_late(t['stop_delay_s'])}){why}; "
                   f"the phases follow the data")
    return out


# A validity check's ok: null when the run's backend cannot measure it ("not measured"; harness/validity.js).
_CHECK_MARK = {True: "ok  ", False: "FAIL", None: "n/m "}


def _backend_kernel(run: dict[str, Any]) -> str:
    """The kernel whose qdiscs ran the network, as the report's first line names it: the uml guest's, its HZ."""
    parts = [f"guest kernel {run['backend_kernel']}"] if run.get("backend_kernel") else []
    if run.get("backend_kernel_hz"):
        parts.append(f"HZ {run['backend_kernel_hz']}")
    return f" ({', '.join(parts)})" if parts else ""


def imported_lines(imp: dict[str, Any] | None) -> list[str]:
    """A run imported from a field call's getStats dump: where it came from, and each section it has not, why."""
    if not imp:
        return []
    out = [f"IMPORTED: a field call's getStats, not a lab run: {imp['kind']} dump {imp['source']} ({imp['layout']}), "
           f"peer connection {imp['peer_connection']}, its browser as side {imp['side']}; no captures, no network "
           "ground truth",
           *(f"  import note: {n}" for n in imp.get("notes") or []),
           "  sections without captures (null or empty below):"]
    return out + [f"    {k}: {why}" for k, why in (imp.get("no_captures") or {}).items()]


def _header_lines(m: dict[str, Any]) -> list[str]:
    """The run, its validity and what the report's numbers rest on: capacity, propagation delay, the
    captures' leftovers, problems, gaps and schedule changes not applied."""
    out: list[str] = []
    run = m["run"]
    out.append(f"rtclab analysis of run {run['id']} ({run.get('scenario') or 'scenario unknown'}), "
               f"status {run.get('status') or 'unknown'}, "
               + (f"{run['duration_s']:.1f} s" if run.get("duration_s") is not None else "duration unknown")
               + f", backend {run.get('backend') or '-'}"
               + _backend_kernel(run))
    v = m.get("validity") or {}
    out.append(f"validity: {'valid' if v.get('valid') else ('INVALID' if v.get('valid') is False else 'unknown')}"
               + "".join(f"\n  {_CHECK_MARK[c.get('ok')]} {c.get('name')}: {c.get('detail', '')}"
                         for c in v.get("checks", [])))
    out += imported_lines(m.get("imported"))
    no_call = run.get("calls") == 0
    if no_call:
        out.append("no call in this run: the network, its captures and the cross traffic alone (no browsers, no "
                   "getStats, no congestion-controller log)")
    if m.get("capacity_bps"):
        trace = m.get("capacity_trace")
        out.append(f"forward capacity: {_rate(m['capacity_bps'])}"
                   + (f" (mean of trace {trace['file']} from {trace['offset_ms']} ms, period {trace['period_ms']} ms)"
                      if trace else ""))
    sc = m.get("scenario") or {}
    if sc:
        out.append(propagation_line(sc, (m.get("multiflow") or {}).get("calls") or []))
    for side in ("a", "b"):
        left = ((m.get("inputs") or {}).get(f"capture_{side}") or {}).get("not_joined") or {}
        if left:
            out.append(f"capture-{side}: {left.get('non_ipv4', 0)} non-IPv4 records, {left.get('other_addresses', 0)} "
                       f"IPv4 packets between other addresses, left out of the join")
    for p in m.get("problems", []):
        out.append(f"problem: {p}")
    for g in m.get("gaps", []):
        out.append(f"gap: {g}")
    out += _off_schedule_lines(m)
    return out


def _flow_table_lines(m: dict[str, Any]) -> list[str]:
    """One table per direction of the flows the report shows."""
    out: list[str] = []
    for direction in ("forward", "reverse"):
        flows = [f for f in m["flows"] if f["direction"] == direction
                 and _shown(f)]
        if not flows:
            continue
        out.append("")
        out.append(f"{direction} flows ({'a -> b' if direction == 'forward' else 'b -> a'}):")
        rows = []
        for f in flows:
            owd, qd = f["owd_ms"], f["queuing_delay_ms"]
            qm = f.get("queuing_delay_vs_min_owd_ms") or {}
            j = f.get("jitter_ms") or {}
            rows.append([
                (f"{f['call']}/{f['track']} " if f.get("call") else "") +
                f"{f['kind']}{' ' + format(f['ssrc'], '08x') if f.get('ssrc') is not None else ''}",
                f"{f['src']}>{f['dst']}", str(f["packets_sent"]), str(f["packets_received"]),
                _f(None if f["loss_ratio"] is None else 100 * f["loss_ratio"], ".2f", "%"),
                _f(owd["p50"]), _f(owd["p95"]), _f(owd["max"]), _f(qd["mean"]), _f(qd["p95"]), _f(qm.get("mean")),
                _f(j.get("mean"), ".2f"), str(f["reordered"]), str(f["duplicates"]),
                _rate((f.get("throughput_bps") or {}).get("mean")),
                _f(None if f.get("utilisation") is None else 100 * f["utilisation"], ".0f", "%"),
            ])
        out += _table(["flow", "path", "sent", "recv", "loss", "owd p50", "p95", "max", "queue mean", "p95",
                       "q-minOWD", "jitter", "reord", "dup", "rate", "U"], rows)
        out.append("  (delays in ms; queue = OWD - configured propagation delay, time at the bottleneck; q-minOWD = "
                   "OWD - the flow's smallest OWD; rate = received link-layer bits/s; U = rate / forward capacity "
                   "over the same span)")
    return out


def _phase_lines(m: dict[str, Any]) -> list[str]:
    """Per phase: the forward video's rate, queue and loss (with a call) and all forward traffic's."""
    out: list[str] = []
    no_call = m["run"].get("calls") == 0
    # A run without a call has no video columns, and its whole run is a phase when the cross traffic has no other.
    phases = [p for p in m.get("phases", []) if p["name"] != "all"]
    if no_call and not phases:
        phases = [p for p in m.get("phases", []) if p["name"] == "all" and (m.get("fairness") or {}).get("all")]
    if phases:
        out.append("")
        out.append("per phase (all forward traffic):" if no_call else "per phase (forward media, all forward traffic):")
        rows = []
        for p in phases:
            fair = m["fairness"].get(p["name"], {})
            video = [f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"
                     and f["phases"].get(p["name"], {}).get("packets_sent")]
            vm = video[0]["phases"][p["name"]] if video else {}
            media = [] if no_call else [_rate((vm.get("throughput_bps") or {}).get("mean")),
                                        _f((vm.get("queuing_delay_ms") or {}).get("mean")),
                                        _f(None if vm.get("loss_ratio") is None
                                           else 100 * vm["loss_ratio"], ".2f", "%")]
            rows.append([p["name"], f"{p['start_s']:g}-{p['end_s']:g} s", *media,
                         _rate(fair.get("received_bps")),
                         _f(None if fair.get("utilisation") is None else 100 * fair["utilisation"], ".0f", "%"),
                         _f(fair.get("jain_index"), ".3f"), str(len(fair.get("connections", [])))])
        media_heads = [] if no_call else ["video rate", "video queue ms", "video loss"]
        out += _table(["phase", "time", *media_heads, "all rate", "U", "Jain", "competitors"], rows)
        phase, fair = headline_fairness(m)
        if fair.get("jain_index") is not None:
            who = "the scenario's forward TCP flows" if no_call else \
                "the call's forward media and the scenario's forward TCP flows"
            out.append(f"  headline Jain's index: {fair['jain_index']:.3f} ({phase}); competitors: {who}")
    return out


def _getstats_lines(m: dict[str, Any]) -> list[str]:
    """The forward streams as getStats saw them, with Tq."""
    out: list[str] = []
    gs = m.get("getstats") or {}
    fwd = (gs.get("directions") or {}).get("forward") or {}
    if fwd.get("streams"):
        out.append("")
        out.append("getStats, forward (a sends, b receives):")
        rows = []
        for s in fwd["streams"]:
            tq = s.get("tq_ms") or {}
            tqm = s.get("tq_vs_min_rtt_ms") or {}
            rows.append([f"{s.get('kind')} {s.get('ssrc'):08x}",
                         _rate((s.get("sent_bitrate_bps") or {}).get("mean")),
                         _rate((s.get("target_bitrate_bps") or {}).get("mean")),
                         _rate((s.get("received_bitrate_bps") or {}).get("mean")),
                         _f((s.get("rtt_ms") or {}).get("mean")), _f(tq.get("mean")), _f(tq.get("p95")),
                         _f(tqm.get("mean")), _f(tqm.get("p95")),
                         _f((s.get("received_fps") or {}).get("mean")),
                         _f((s.get("frame_height") or {}).get("mean"), ".0f"),
                         str(s.get("freeze_count") if s.get("freeze_count") is not None else "-"),
                         str(s.get("packets_lost") if s.get("packets_lost") is not None else "-"),
                         ",".join(k for k in (s.get("quality_limitation") or {}) if k != "none") or "none"])
        out += _table(["stream", "sent", "target", "received", "rtt ms", "Tq mean", "Tq p95", "Tq-minRTT mean",
                       "p95", "fps", "height", "freezes", "lost", "limited by"], rows)
        rttm = gs.get("rttm_ms")
        out.append(f"  (Tq = RTT - RTTm, RTTm = {_f(rttm, 'g')} ms the configured round-trip propagation delay; "
                   f"Tq-minRTT = RTT - the smallest RTT sample)")
        aob = (fwd.get("available_outgoing_bitrate_bps") or {}).get("mean")
        if aob:
            out.append(f"  available outgoing bitrate (congestion controller): mean {_rate(aob)}")
    return out


def render(m: dict[str, Any]) -> str:
    """The terminal report of a run's metrics.json: its header, then each table and section in turn."""
    out: list[str] = _header_lines(m)
    out += _flow_table_lines(m)
    out += _multiflow_lines(m.get("multiflow"))
    out += hop_lines(m.get("hops"))
    out += _ecn_lines(m)
    out += _l4s_lines(m)
    out += _phase_lines(m)
    out += _getstats_lines(m)
    bq = m.get("bottleneck_queue")
    if bq and bq.get("queue_delay_ms", {}).get("mean") is not None:
        out.append(f"forward bottleneck queue ({bq['source']}): mean {_f(bq['queue_delay_ms']['mean'])} ms, "
                   f"max {_f(bq['queue_delay_ms']['max'])} ms at the link rate; max "
                   f"{_f(bq['queue_packets']['max'], '.0f')} packets")
    for c in m.get("cross_traffic", []):
        out.append(f"cross traffic {c['file']}: {_rate(c.get('throughput_bps'))}, "
                   f"mean RTT {_f(c.get('mean_rtt_ms'))} ms")
    out += _short_tcp_lines(m.get("short_tcp"))
    out += _frames_lines(m.get("frames"))
    out += _controller_lines(m.get("congestion_controller"))
    out += _cpu_lines(m.get("cpu"))
    checks = m.get("crosschecks", [])
    if checks:
        out.append("")
        out.append("cross-checks:")
        for c in checks:
            mark = {True: "agree ", False: "WARN  ", None: "skip  "}[c["ok"]]
            out.append(f"  {mark}{c['detail']}" + (f" [tolerance: {c['tolerance']}]" if c.get("tolerance") else ""))
    return "\n".join(out) + "\n"


def _ecn_lines(m: dict[str, Any]) -> list[str]:
    """The ECN codepoints of the forward flows that sent ECN-capable packets (the flows of the flow table), and the
    bottleneck's meter actions (docs/ecn.md)."""
    rows = []
    for f in m.get("flows") or []:
        e = f.get("ecn") or {}
        if f["direction"] != "forward" or not e.get("ect_delivered") or not _shown(f):
            continue
        sent, got = e.get("sent") or {}, e.get("received") or {}
        rows.append([f"{f['kind']} {f['src']}>{f['dst']}",
                     " ".join(f"{k} {v}" for k, v in sent.items() if v),
                     " ".join(f"{k} {v}" for k, v in got.items() if v),
                     str(e.get("ce_marked_on_path")), _f(e.get("ce_ratio"), ".4f")])
    out: list[str] = []
    if rows:
        out += ["", "ECN, forward flows that sent ECN-capable packets (codepoints at a and at b):"]
        out += _table(["flow", "sent", "received", "CE marks", "CE ratio"], rows)
        out.append("  (CE marks: packets sent ECT(0) or ECT(1) that arrived CE; CE ratio: their share of the "
                   "ECN-capable "
                   "packets delivered)")
    actions = (((m.get("ground_truth") or {}).get("meter_actions") or {}).get("forward") or {}).get("summary") or []
    for a in actions:
        if a.get("windows"):
            out.append(f"meter {a.get('flow')}: {a.get('windows')} windows, {a.get('ce_marked')} CE marks, "
                       f"{a.get('demoted')} packets demoted, {a.get('holds')} holds, mean CE fraction "
                       f"{_f(a.get('mean_fraction'), '.3f')}")
    return out


def _l4s_lines(m: dict[str, Any]) -> list[str]:
    """Each call.l4s call's four joins (docs/chrome-ecn.md, "The four-step chain") and a dualpi2 link's two queues."""
    out: list[str] = []
    src = lambda step: step["source"] + (f": {step['reason']}" if step.get("reason") else "")
    for e in (m.get("chrome_ecn") or {}).get("l4s_chain") or []:
        out += ["", f"L4S chain, call {e['call']} (its forward RTP packets, docs/chrome-ecn.md):"]
        w, ce, rep, r = e["ect1_on_wire"], e["ce_set_by_bottleneck"], e["ce_reported"], e["sender_reaction"]
        if w["source"] is None:
            out.append(f"  1. ECT(1) on the wire: missing ({w['reason']})")
        else:
            out.append(f"  1. ECT(1) on the wire (captures): at a {w['at_a']['ect1']} of {w['packets_sent']} sent; "
                       f"at b {w['at_b']['ect1']} ECT(1) and {w['at_b']['ce']} CE of {w['packets_arrived']} arrived")
        out.append(f"  2. CE set by the bottleneck ({ce['source']}): {ce['count']}" if ce.get("count") is not None
                   else f"  2. CE set by the bottleneck: missing ({ce['reason']})")
        if rep["source"] is None:
            out.append(f"  3. CE reported back: missing ({rep['reason']})")
        elif rep["source"] == "eventlog":
            out.append(f"  3. CE reported back (RFC 8888 feedback in the sender's event log): {rep['ce_reported']} "
                       f"packets in {rep['messages_with_ce']} of {rep['feedback_messages']} feedback messages")
        else:
            out.append(f"  3. CE reported back ({src(rep)}): {rep['ce_reported']} packets, "
                       f"in {rep['messages_with_ce']} getStats intervals")
        if r["source"] is None:
            out.append(f"  4. sender's reaction: missing ({r['reason']})")
        else:
            out.append(f"  4. sender's reaction (getStats target, {r['window_s']:g} s window): "
                       f"{r['followed_by_lower_target']} of {r['messages_with_ce']} feedbacks with CE followed by a "
                       f"lower target, {r['not_lower']} not, {r['no_target_sample']} without a target sample")
    queues = (m.get("ground_truth") or {}).get("dualpi2_queues")
    for name, q in sorted((queues or {}).items(), reverse=True):
        d = q["sojourn_ms"]
        out.append(f"dualpi2 {name.upper()} queue (ground-truth log): {q['forwarded']} forwarded, {q['marked_ce']} "
                   f"marked CE, {q['dropped']} dropped; sojourn p50 {_f(d['p50'], '.2f')} ms, "
                   f"p99 {_f(d['p99'], '.2f')} ms")
    return out


def _short_tcp_lines(items: list[dict[str, Any]] | None) -> list[str]:
    """Per tcp_short item: its downloads and their completion times (docs/metrics.md, "Short TCP flows")."""
    out = []
    for e in items or []:
        s = e.get("summary")
        if s is None:
            out.append(f"short TCP flows cross_traffic[{e['item']}]: - ({e.get('error')})")
            continue
        c = s["completion_s"]
        missed = ", ".join(f"{k}: {v}" for k, v in sorted(s["not_completed"].items()))
        out.append(f"short TCP flows cross_traffic[{e['item']}]: {s['downloads']} downloads, {s['completed']} completed"
                   f"{f' (not completed: {missed})' if missed else ''}; completion time p50 {_f(c['p50'], '.3f')} s, "
                   f"p95 {_f(c['p95'], '.3f')} s")
    return out


def _multiflow_lines(mf: dict[str, Any] | None) -> list[str]:
    """Per call and track, and the priority shares (docs/metrics.md, "Several flows"), when there are several video
    tracks."""
    tracks = [(c, t) for c in (mf or {}).get("calls") or [] for t in c["tracks"] if t["kind"] == "video"]
    if len(tracks) < 2:
        return []
    rows = [[f"{c['id']}/{t['id']}", f"{c['start_s']:g}-{c['stop_s']:.1f} s", t["priority"], str(t["dscp"]),
             _rate(t["rate_bps"]), _rate(t["steady_rate_bps"]), _f(t["convergence_s"], ".0f"), _f(t["rate_cv"], ".2f"),
             _f(None if t["loss_ratio"] is None else 100 * t["loss_ratio"], ".2f", "%"), _f(c.get("delay_ms"), "g"),
             _f(t["owd_ms"]["p50"]), _f(t["queuing_delay_ms"]["mean"]), _f(t["queuing_delay_ms"]["p95"]),
             _f(t.get("fps_mean")), _f(t.get("frame_height_median"), ".0f")] for c, t in tracks]
    out = ["", "calls and tracks (forward video):"]
    out += _table(["call/track", "active", "priority", "dscp", "rate", "steady", "converged s", "cv", "loss",
                   "own delay", "owd p50", "queue mean", "p95", "fps", "height"], rows)
    sh = (mf or {}).get("shares") or {}
    if sh.get("flows"):
        out.append(f"priority shares while every video flow is active ({sh['start_s']:.1f}-{sh['end_s']:.1f} s), "
                   f"Jain's index {_f(sh.get('jain_index'), '.3f')}:")
        out += _table(["call/track", "priority", "rate", "asked", "achieved", "achieved/asked"],
                      [[f"{x['call']}/{x['track']}", x["priority"], _rate(x["rate_bps"]), _f(x["asked_share"], ".2f"),
                        _f(x["achieved_share"], ".2f"), _f(x["achieved_over_asked"], ".2f")] for x in sh["flows"]])
    elif sh.get("note"):
        out.append(f"priority shares: {sh['note']}")
    return out


def _controller_lines(cc: dict[str, Any] | None) -> list[str]:
    """GCC at the forward sender, from its RTC event log (docs/metrics.md, "Congestion controller")."""
    a = (cc or {}).get("sides", {}).get("a")
    if not a:
        return []
    ctrl, join, rep = a["controller"], a.get("join") or {}, a.get("replay") or {}
    share = ctrl.get("detector_state_fraction") or {}
    pct = lambda v: "-" if v is None else f"{v * 100:.1f}%"
    lines = [f"congestion controller at a ({a['file']}, format v{a['format_version']}): n_dd {ctrl['n_dd']} "
             f"delay-based decreases, {ctrl['overuse_events']} over-use events in {_f(ctrl['window_s'])} s; detector "
             f"normal {pct(share.get('normal'))}, overusing {pct(share.get('overusing'))}, "
             f"underusing {pct(share.get('underusing'))}; probes {ctrl['probes_succeeded']} ok, "
             f"{ctrl['probes_failed']} failed"]
    if join:
        lines.append(f"  log joined with capture-a: {join['matched']} of {join['logged_rtp']} logged RTP packets "
                     f"({pct(join['join_rate'])}); send to wire median "
                     f"{_f((join.get('send_to_wire_ms') or {}).get('median'), '.2f')} ms")
    if rep.get("update_agreement") is not None:
        wire = (a.get("replay_wire_send_times") or {}).get("update_agreement")
        lines.append(f"  trendline replay agrees with the logged detector state at {rep['agreeing_updates']} of "
                     f"{rep['updates']} updates ({pct(rep['update_agreement'])}; {pct(wire)} with capture send times)")
    lines += _limit_lines(a.get("limits"), pct)
    return lines + _counterfactual_lines(a.get("counterfactual"))


def _counterfactual_lines(cf: dict[str, Any] | None) -> list[str]:
    """The over-use detector replayed with other constants (docs/metrics.md, `counterfactual`): per variant its
    over-use transitions and time overusing over the call, and its transitions per phase."""
    if not cf:
        return []
    head = ("  detector replayed with other constants (a counterfactual on fixed input: the sender would have reacted "
            "differently; it picks field trials to run, not a result)")
    if cf["variants"] is None:
        return [f"{head}: {cf['reason']}"]
    pct = lambda v: "-" if v is None else f"{v * 100:.1f}%"
    phase_names = list(next(iter(cf["variants"].values()))["phases"] or {})  # the phases' order in the run
    rows = []
    for name, v in cf["variants"].items():
        call = v["call"] or {}
        states = call.get("state_s") or {}
        share = {k: x / call["window_s"] for k, x in states.items() if x is not None}  # window_s: the states' sum
        per_phase = [str(((v["phases"] or {}).get(n) or {}).get("overuse_transitions", "-")) for n in phase_names]
        changed = ", ".join(f"{k} {x:g}" for k, x in v["differs_in"].items()) or "(today's)"
        rows.append([name, changed, str(call.get("overuse_transitions", "-")), *per_phase,
                     pct(share.get("overusing")), pct(share.get("underusing")), pct(v["update_agreement"])])
    window = "call" if cf["window"] == "call" else "whole log"
    headers = ["variant", "differs in", f"over-use ({window})", *phase_names, "overusing", "underusing",
               "agrees w/ Chrome"]
    return [head + (f"; phases: {cf['phases_reason']}" if cf["phases_reason"] else "") + ":",
            *("    " + line for line in _table(headers, rows))]


def _limit_lines(lim: dict[str, Any] | None, pct: Any) -> list[str]:
    """Which estimate set the target, per phase (eventlog/limits.py)."""
    if not lim:
        return []
    out = []
    for name, ph in lim["phases"].items():
        sh = ph["share"]
        out.append(f"  target limited by ({name}, {_f(ph['window_s'])} s): delay-based {pct(sh['delay_based'])}, "
                   f"probe {pct(sh['probe'])}, loss-based {pct(sh['loss_based'])}, "
                   f"receiver (REMB) {pct(sh['receiver_limit'])}, undetermined {pct(sh['undetermined'])}")
    return out


CPU_GROUPS_SHOWN = 5


# The groups of frame metrics a poor record withholds (frame_gate.py), as the report names them.
def _freeze_lines(fz: dict[str, Any]) -> list[str]:
    """The freezes as shown and as Chrome counts them, and both beside getStats' own counters (docs/metrics.md,
    "Freezes")."""
    pz = fz.get("pauses") or {}
    rule = "getStats pauseCount" if pz.get("rule") == "getstats_pause_count" else "gaps over 5 s"
    line = (f"  freezes (Chrome's rule) as shown: {fz['count']}, {_f(fz['total_ms'], '.0f')} ms in all; "
            f"pauses {pz.get('count')} ({rule})")
    ac = fz.get("as_chrome")
    if ac:
        line += (f"; as Chrome counts ({ac['put_back_frames']} frames decoded but not presented put back): "
                 f"{ac['count']}, {_f(ac['total_ms'], '.0f')} ms")
    else:
        line += f"; as Chrome counts: missing ({fz.get('as_chrome_missing')})"
    out = [line]
    g = fz.get("getstats")
    if g:
        out.append(f"    {_f(g['start_s'])}-{_f(g['end_s'])} s, as shown / as Chrome counts / getStats: freezes "
                   f"{g['record_freeze_count']} / {_f(g.get('as_chrome_freeze_count'), '.0f')} / "
                   f"{_f(g['freeze_count'], '.0f')}, {_f(g['record_freezes_ms'], '.0f')} / "
                   f"{_f(g.get('as_chrome_freezes_ms'), '.0f')} / {_f(g['freezes_ms'], '.0f')} ms; frames presented / "
                   f"decoded {g.get('presented')} / {_f(g['frames_decoded'], '.0f')}")
    return out


WITHHELD_NAMES = {"delays": "delays (glass-to-glass and its parts)", "freezes": "freezes from the record",
                  "every_frame": "every-frame delay",
                  "quality": "picture quality (PSNR, SSIM)"}


def _frames_lines(fr: dict[str, Any] | None) -> list[str]:
    """What the viewer saw (metrics.json `frames`; docs/metrics.md, "frames"): per receiving side, glass-to-glass
    delay p50/p95 and its three parts, how many frames were read and joined, and the frames lost, repeated or late."""
    out: list[str] = []
    pct = lambda n, d: f"{100 * n / d:.1f} %" if d else "-"
    for side, f in sorted((fr or {}).items()):
        if not f.get("records"):
            continue
        out += ["", f"frames shown at {side} ({f['direction']}, SSRC {f.get('ssrc')}): {f['records']} presented "
                    f"frames recorded, stamp read on {f.get('numbered', 0)} of {f.get('read', 0)} tried "
                    f"({pct(f.get('numbered', 0), f.get('read', 0))}, every {f.get('read_every')}), packets found "
                    f"for {f.get('joined', 0)} ({pct(f.get('joined', 0), f['records'])})"]
        if f.get("presented_frames"):
            read = f.get("presented_read")
            track = (f"the track delivered {f['track_frames']}" if f.get("track_frames") is not None
                     else f"track frames missing: {f.get('track_frames_missing')}")
            dropped = f.get("dropped_video_frames")
            out.append(f"  the compositor presented {f['presented_frames']} frames (skipped "
                       f"{'-' if dropped is None else dropped} decoded ones), {f.get('callbacks_missed')} "
                       f"of them without a record; {track}: stamp read on "
                       f"{'-' if read is None else pct(read, f['presented_frames'])} of the presented frames")
        parts = [("glass-to-glass", "glass_to_glass_ms"), ("sender", "sender_ms"), ("network", "network_ms"),
                 ("receiver", "receiver_ms")]
        cells = [f"{name} {_f((f.get(key) or {}).get('p50'))}/{_f((f.get(key) or {}).get('p95'))}"
                 for name, key in parts]
        out.append(f"  delay p50/p95 ms: {', '.join(cells)}")
        out += _every_frame_lines(f)
        if f.get("sent_frames") is not None:
            out.append(f"  sent but never shown {f.get('never_shown')} of {f.get('sent_frames')}, shown twice "
                       f"{f.get('shown_twice')}, out of order {f.get('out_of_order')}")
        fz = f.get("freezes")
        if fz:
            out += _freeze_lines(fz)
        out.append("  (glass-to-glass = display - capture; sender = capture to the frame's first packet on the "
                   "sender's capture; network = to its last packet on the receiver's; receiver = to display)")
        for group, why in (f.get("withheld") or {}).items():
            out.append(f"  {WITHHELD_NAMES.get(group, group)}: missing, withheld: {why}")
        out += _quality_lines(f.get("quality"))
    return out


def _every_frame_lines(f: dict[str, Any]) -> list[str]:
    """The delay of every frame the camera produced (metrics.json `frames.<side>.every_frame_delay_ms`; docs/metrics.md,
    "Every frame"): its percentiles and what was counted, or why it is missing."""
    ef = f.get("every_frame")
    if not ef:
        return []
    if ef.get("missing"):
        return [f"  every-frame delay: missing: {ef['missing']}"]
    d = f.get("every_frame_delay_ms")
    if d is None:
        return []  # withheld: named with the other withheld metrics
    return [f"  every-frame delay p50/p95/p99 ms: {_f(d.get('p50'))}/{_f(d.get('p95'))}/{_f(d.get('p99'))} over "
            f"{ef['camera_frames']} camera frames at {_f(ef['camera_fps'])} fps ({ef['camera_fps_source']}): "
            f"{ef['shown']} shown ({ef.get('put_back', 0)} of them without a record, put back), {ef['not_shown']} "
            f"waited for a newer one ({ef['never_sent']} never sent), {ef['to_call_end']} counted to the call's end"]


def _quality_lines(q: dict[str, Any] | None) -> list[str]:
    """Picture quality of the sampled frames (metrics.json `frames.<side>.quality`; docs/metrics.md, "quality")."""
    if not q:
        return []
    if q.get("error"):
        return [f"  picture quality: not computed: {q['error']}"]
    if q.get("withheld"):
        return []  # named with the other withheld metrics
    cell = lambda key, fmt: f"{_f(q[key]['mean'], fmt)} (p5 {_f(q[key]['p5'], fmt)})"
    return [f"  picture quality of {q['compared']} sampled frames (1 in {q['sample_every']} shown, "
            f"{q['scaled']} scaled up to {q['reference']['width']}x{q['reference']['height']}): PSNR mean "
            f"{cell('psnr_db', '.2f')} dB, Y {cell('psnr_y_db', '.2f')} dB; SSIM mean {cell('ssim', '.4f')}, "
            f"Y {cell('ssim_y', '.4f')}"] + ([
        f"  SSIM in dB mean {cell('ssim_db', '.2f')} dB (-10 log10(1 - SSIM) per frame; {q['ssim_db_capped']} "
        f"equal to the source shown as {SSIM_DB_CAP:g} dB)"] if q.get("ssim_db") else [])


def _steal_text(steal: dict[str, Any] | None) -> str:
    """The hypervisor's steal over the call and its worst interval (metrics.json from before it has none: nothing)."""
    if not steal or steal.get("mean_cores") is None:
        return ""
    worst = (f" ({steal['max_cores']:.2f} in its worst interval, at {steal['max_at_s']:.0f} s)"
             if steal.get("max_cores") else "")
    return f"; hypervisor steal {steal['mean_cores']:.2f}{worst}"


def _cpu_lines(c: dict[str, Any] | None) -> list[str]:
    """Where the machine's CPU went during the call (cpu.jsonl; docs/metrics.md, "CPU"): the host's busy cores, each
    component of the run, what the run does not account for; then the busiest groups. Nothing for a run without
    cpu.jsonl or without a sample within the call."""
    busy = ((c or {}).get("host_busy") or {}).get("mean_cores")
    if c is None or busy is None:
        return []
    cpus = c.get("cpus")
    pct = lambda cores: f"{100 * cores / cpus:.0f} %" if cpus else "-"  # share of the whole machine
    parts = [f"{name} {e['mean_cores']:.2f}" for name, e in c["components"].items()]
    parts.append(f"outside the run {c['outside_run']['mean_cores']:.2f}")
    lines = ["", f"CPU (mean over the call, {cpus or '?'} cores): host {busy:.2f} cores busy ({pct(busy)}); "
             + ", ".join(parts) + f"; kernel (irq+softirq) {c['kernel_irq_softirq']['mean_cores']:.2f}"
             + _steal_text(c.get("steal"))]
    top = list(c["groups"].items())[:CPU_GROUPS_SHOWN]
    if top:
        lines.append("  busiest groups: " + ", ".join(f"{name} {e['mean_cores']:.2f} ({pct(e['mean_cores'])}, p95 "
                                                     f"{e['p95_cores']:.2f})" for name, e in top))
    lines.append(f"  (cores = CPU-seconds per second; % of the machine's {cpus or '?'} cores; outside the run = host "
                 f"busy - the run's processes: other processes and kernel time charged to none; "
                 f"{c['window']['samples']} samples of cpu.jsonl)")
    return lines
