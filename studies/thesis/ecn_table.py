"""The table of Arreaza Govea's thesis (TU Delft 2019) for the ECN experiments, from a study directory of
studies/thesis/ecn-marking(-quick).yaml: per point, over its valid runs (mean of the runs' values), the priority
flow's rate (mean and sd over 0.15 s windows), one-way delay (mean, p90, p95, p99), loss and jitter; the best-effort
TCP flows' mean rate and iperf3's mean RTT; and what the meter did. Definitions in docs/ecn.md "The thesis' table".

    .venv/bin/python studies/thesis/ecn_table.py results/studies/thesis-ecn-marking-quick [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

PRIORITY_DSCP = 46


BASE_PORT = 5201  # cross-traffic item n listens on BASE_PORT + n (netem/cross.js)


def _tcp_forward(m: dict[str, Any], dscp: int) -> tuple[list[dict[str, Any]], set[int]]:
    """The forward TCP flows of the cross-traffic items sent with this DSCP, busiest first (iperf3's control
    connection is the smallest), found by their server port: a flow's `dscp` in metrics.json is its first packet's,
    and iperf3 sets the DSCP after its SYN. Also the items' indices."""
    items = {n for n, item in enumerate((m.get("scenario") or {}).get("cross_traffic") or [])
             if item.get("dscp", 0) == dscp}
    ports = {str(BASE_PORT + n) for n in items}
    out = [f for f in m["flows"] if f["direction"] == "forward" and f["protocol"] == "tcp"
           and f["dst"].rsplit(":", 1)[1] in ports]
    return sorted(out, key=lambda f: -f["packets_sent"]), items


def jitter_ms(run_dir: Path, flow_id: int) -> float | None:
    """Mean |OWD(i) - OWD(i-1)| over the flow's consecutive delivered packets in send order (the instantaneous
    one-way delay variation, RFC 3393's IPDV between neighbours, without RFC 3550's smoothing), in ms."""
    path = run_dir / "packets.parquet"
    if not path.exists():
        return None
    t = pq.read_table(path, columns=["flow", "t_send_ns", "owd_ns"], filters=[("flow", "=", flow_id)])
    send = t.column("t_send_ns").to_numpy()
    owd = t.column("owd_ns").to_numpy()
    keep = (owd >= 0) & (send >= 0)
    owd = owd[keep][np.argsort(send[keep], kind="stable")]
    return float(np.abs(np.diff(owd)).mean() / 1e6) if owd.size > 1 else None


def run_row(run_dir: Path) -> dict[str, Any]:
    """The table's numbers for one run."""
    m = json.loads((run_dir / "metrics.json").read_text())
    prio, _ = _tcp_forward(m, PRIORITY_DSCP)
    be_all, be_items = _tcp_forward(m, 0)
    be = be_all[:5]
    if not prio:
        raise ValueError(f"{run_dir}: no forward TCP flow of a cross-traffic item with DSCP {PRIORITY_DSCP}")
    p = prio[0]
    w = p["throughput_bps"]["windows"]["0.15s"]
    owd = p["owd_ms"]
    # iperf3's own RTT of the best-effort items (those sent with DSCP 0).
    be_files = {f"iperf3-{n}.json" for n in be_items}
    be_rtt = [x["mean_rtt_ms"] for x in m.get("cross_traffic") or [] if x["file"] in be_files
              and x["mean_rtt_ms"] is not None]
    actions = (((m.get("ground_truth") or {}).get("meter_actions") or {}).get("forward") or {}).get("summary") or []
    mine = [a for a in actions if a["windows"] > 0 and a["flow"] != "class"]
    act = max(mine, key=lambda a: a["windows"]) if mine else None
    return {
        "prio_rate_mean_kbit": w["mean"] / 1e3 if w["mean"] is not None else None,
        "prio_rate_sd_kbit": w["sd"] / 1e3 if w["sd"] is not None else None,
        "prio_owd_mean_ms": owd["mean"], "prio_owd_p90_ms": owd["p90"], "prio_owd_p95_ms": owd["p95"],
        "prio_owd_p99_ms": owd["p99"],
        "prio_loss_percent": p["loss_ratio"] * 100 if p["loss_ratio"] is not None else None,
        "prio_jitter_ms": jitter_ms(run_dir, int(p["id"])),
        "prio_ce_ratio": (p.get("ecn") or {}).get("ce_ratio"),
        "be_rate_mean_kbit": float(np.mean([f["throughput_bps"]["mean"] for f in be])) / 1e3 if be else None,
        "be_rtt_mean_ms": float(np.mean(be_rtt)) if be_rtt else None,
        "meter_ce_marked": act["ce_marked"] if act else None,
        "meter_demoted": act["demoted"] if act else None,
        "meter_holds": act["holds"] if act else None,
        "meter_mean_fraction": act["mean_fraction"] if act else None,
    }


COLUMNS = [("prio_rate_mean_kbit", "prio rate mean kbit/s", "{:.0f}"), ("prio_rate_sd_kbit", "sd (0.15 s)", "{:.0f}"),
           ("prio_owd_mean_ms", "OWD mean ms", "{:.1f}"), ("prio_owd_p90_ms", "p90", "{:.1f}"),
           ("prio_owd_p95_ms", "p95", "{:.1f}"), ("prio_owd_p99_ms", "p99", "{:.1f}"),
           ("prio_loss_percent", "loss %", "{:.2f}"), ("prio_jitter_ms", "jitter ms", "{:.2f}"),
           ("prio_ce_ratio", "CE ratio", "{:.3f}"), ("be_rate_mean_kbit", "BE rate mean kbit/s", "{:.0f}"),
           ("be_rtt_mean_ms", "BE RTT ms", "{:.1f}"), ("meter_ce_marked", "meter CE marks", "{:.0f}"),
           ("meter_demoted", "demoted pkts", "{:.0f}"), ("meter_holds", "holds", "{:.0f}")]


def table(study_dir: Path, every_attempt: bool = False) -> list[dict[str, Any]]:
    """One row per point: the mean over its valid runs of each column, and the runs it used. `every_attempt`: one
    row per attempt instead, valid or not (analysed ones only), with its status: what was measured on a loaded host."""
    study = json.loads((study_dir / "study.json").read_text())
    out = []
    if every_attempt:
        for r in study["runs"]:
            d = study_dir / r["dir"]  # an absolute dir stays itself
            if not (d / "metrics.json").exists():
                continue
            failed = ", ".join(c.split(":")[0] for c in r.get("failed_checks") or [])
            label = f"{r['point']} ({r['status']}{': ' + failed if failed else ''})"
            out.append({"point": label, "runs": 1, **run_row(d)})
        return out
    for point in study["points"]:
        rows = [run_row(study_dir / d) for d in point["runs_used"]]
        row: dict[str, Any] = {"point": point["name"], "runs": len(rows)}
        for key, _, _ in COLUMNS:
            vals = [r[key] for r in rows if r[key] is not None]
            row[key] = float(np.mean(vals)) if vals else None
        out.append(row)
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    head = "| point | runs | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for r in rows:
        cells = [fmt.format(r[k]) if r[k] is not None else "-" for k, _, fmt in COLUMNS]
        lines.append(f"| {r['point']} | {r['runs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study_dir", type=Path)
    ap.add_argument("--json", action="store_true", help="the rows as JSON instead of a Markdown table")
    ap.add_argument("--every-attempt", action="store_true",
                    help="one row per analysed attempt, valid or not, with its status "
                         "(instead of the valid runs' means)")
    a = ap.parse_args(argv)
    if not (a.study_dir / "study.json").exists():
        print(f"ecn_table: {a.study_dir}/study.json missing: run or aggregate the study first", file=sys.stderr)
        return 2
    rows = table(a.study_dir, a.every_attempt)
    print(json.dumps(rows, indent=1) if a.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
