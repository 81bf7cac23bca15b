"""ECN end to end (docs/ecn.md): per flow, the ECN codepoints sent (capture at the sender) and received (capture at
the receiver) and the CE ratio; the CE marks the bottleneck made, from its ground-truth log, joined packet by packet
to the captures so that the two accounts can be compared; and the rate meters' action log
(bottleneck-<direction>.actions.jsonl, docs/bottleneck-log.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

# The two ECN bits of the IP TOS byte (RFC 3168 section 5).
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
CODEPOINT_NAMES = {NOT_ECT: "not_ect", ECT1: "ect1", ECT0: "ect0", CE: "ce"}


def codepoints(ecn: np.ndarray) -> dict[str, int]:
    """How many packets carry each codepoint (values other than 0-3, e.g. 255 "not observed", are not counted)."""
    counts = np.bincount(ecn[ecn <= 3].astype(np.int64), minlength=4)
    return {name: int(counts[cp]) for cp, name in CODEPOINT_NAMES.items()}


def ecn_account(ecn_sent: np.ndarray, ecn_sent_delivered: np.ndarray, ecn_received: np.ndarray) -> dict[str, Any]:
    """One flow's ECN account from its departures' codepoints (`ecn_sent`, the sending capture) and, for its
    delivered departures, the codepoint sent and received (`ecn_sent_delivered`, `ecn_received`, aligned).

    ce_ratio: of the delivered packets sent ECN-capable (ECT(0) or ECT(1)), the share that arrived CE (each is a
    mark made on the path). None when no ECN-capable packet was delivered."""
    ect = (ecn_sent_delivered == ECT0) | (ecn_sent_delivered == ECT1)
    marked = ect & (ecn_received == CE)
    n_ect = int(ect.sum())
    return {"sent": codepoints(ecn_sent), "received": codepoints(ecn_received),
            "ect_delivered": n_ect, "ce_marked_on_path": int(marked.sum()),
            "ce_ratio": (float(marked.sum()) / n_ect) if n_ect else None}


def log_vs_capture(ecn_in: np.ndarray, event: np.ndarray, ecn_sent: np.ndarray, ecn_received: np.ndarray,
                   flow: np.ndarray) -> dict[str, Any]:
    """The bottleneck's CE marks (log records joined to delivered departures, aligned arrays: the log's ECN bits on
    arrival and event, the captures' codepoints sent and received, the table's flow id) against the receiving
    capture, packet by packet. A packet counts as marked by the bottleneck when the log says forwarded_ce (event 1)
    and it arrived ECN-capable but not CE; as marked on the path when the captures show it sent ECT and received
    CE. They agree when both say the same of every packet."""
    logged = (event == 1) & (ecn_in != CE) & (ecn_in != NOT_ECT)
    seen = ((ecn_sent == ECT0) | (ecn_sent == ECT1)) & (ecn_received == CE)
    by_flow: dict[int, dict[str, int]] = {}
    for f in np.unique(flow[logged | seen]):
        m = flow == f
        by_flow[int(f)] = {"bottleneck_ce_marks": int((logged & m).sum()), "ce_received": int((seen & m).sum()),
                           "disagreements": int(((logged != seen) & m).sum())}
    return {"packets": int(event.size), "bottleneck_ce_marks": int(logged.sum()), "ce_received": int(seen.sum()),
            "logged_not_received_ce": int((logged & ~seen).sum()),
            "received_ce_not_logged": int((seen & ~logged).sum()),
            "by_flow": by_flow}


# --- The meters' action log --------------------------------------------------------------------------------------

ACTION_EVENTS = ("window", "start", "end")


def read_actions(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The records of an action log, in file order; a line that is not a JSON object with `t`, `meter`, `action`
    and `event` is skipped and named in `problems` (a killed writer may leave half a line at the end)."""
    out: list[dict[str, Any]] = []
    with path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                problems.append(f"{path.name} line {n}: not JSON, skipped")
                continue
            if (not isinstance(r, dict) or r.get("event") not in ACTION_EVENTS
                    or not {"t", "meter", "action"} <= r.keys()):
                problems.append(f"{path.name} line {n}: not an action record, skipped")
                continue
            out.append(r)
    return out


def flow_label(flow: dict[str, Any] | None) -> str:
    """"10.0.1.2:5201 > 10.0.2.2:40000/6", or "class" for a meter of a whole class."""
    if not flow:
        return "class"
    return f"{flow['src']}:{flow['sport']} > {flow['dst']}:{flow['dport']}/{flow['proto']}"


def summarise_actions(records: list[dict[str, Any]], t0_s: float) -> list[dict[str, Any]]:
    """Per meter and flow: holds started and their total time, windows over the limit, packets marked CE and
    demoted, and the CE fraction's mean over the windows (ce_fraction); times relative to `t0_s`."""
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    for r in records:
        key = (int(r["meter"]), flow_label(r.get("flow")))
        g = groups.setdefault(key, {"meter": key[0], "action": r["action"], "flow": key[1], "holds": 0, "held_s": 0.0,
                                    "windows": 0, "windows_over_limit": 0, "ce_marked": 0, "demoted": 0,
                                    "fractions": [], "first_action_s": None})
        if r["event"] == "start":
            g["holds"] += 1
            g["held_s"] += float(r["until"]) - float(r["t"])
            if g["first_action_s"] is None:
                g["first_action_s"] = float(r["t"]) - t0_s
        elif r["event"] == "window":
            g["windows"] += 1
            g["windows_over_limit"] += int(r["rate_kbit"] > r["limit_kbit"])
            g["ce_marked"] += int(r["ce_marked"])
            g["demoted"] += int(r["demoted"])
            g["fractions"].append(float(r["fraction"]))
    out = []
    for g in groups.values():
        fr = g.pop("fractions")
        g["mean_fraction"] = float(np.mean(fr)) if fr and g["action"] != "demote" else None
        out.append(g)
    return sorted(out, key=lambda g: (g["meter"], g["flow"]))


def meter_actions(run_dir: Path, t0_s: float, problems: list[str]) -> dict[str, Any] | None:
    """The action logs of a run (bottleneck-<direction>.actions.jsonl), as the dashboard draws them: per direction,
    a summary row per meter and flow, and series with times in seconds since `t0_s` (the call's start): the metered
    rate and the fraction at each window end, and each hold as [start, end]. None when the run has no action log."""
    out: dict[str, Any] = {}
    for direction in ("forward", "reverse"):
        path = run_dir / f"bottleneck-{direction}.actions.jsonl"
        if not path.exists():
            continue
        records = read_actions(path, problems)
        series: dict[str, dict[str, Any]] = {}
        for r in records:
            label = f"meter {r['meter']} ({r['action']}) {flow_label(r.get('flow'))}"
            s = series.setdefault(label, {"meter": int(r["meter"]), "action": r["action"],
                                          "flow": flow_label(r.get("flow")),
                                          "t_s": [], "rate_kbit": [], "limit_kbit": None, "fraction": [], "holds": []})
            t = float(r["t"]) - t0_s
            if r["event"] == "window":
                s["t_s"].append(t)
                s["rate_kbit"].append(float(r["rate_kbit"]))
                s["fraction"].append(float(r["fraction"]))
                s["limit_kbit"] = float(r["limit_kbit"])
            elif r["event"] == "start":
                s["holds"].append([t, float(r["until"]) - t0_s])
        out[direction] = {"file": path.name, "records": len(records), "summary": summarise_actions(records, t0_s),
                          "series": list(series.values())}
    return out or None
