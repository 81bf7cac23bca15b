"""bench/clips: how the natural clip changes a call against the default testsrc2 clip on the same link, from the run
directories bench/clips/run.sh wrote (named testsrc2-<i> and natural-<i>).

    .venv/bin/python bench/clips/compare.py /tmp/clips-bench [--json]

Per measure: each clip's mean over its VALID runs with their range, and the ratio natural / testsrc2 of the means
with its spread (the smallest and largest ratio of one natural run to one testsrc2 run). An invalid run is left out
and named with the checks it failed. Every measure is read from the run's metrics.json (docs/metrics.md) but the
QP, which the analyzer does not report: the mean quantiser of the frames the sender encoded over the call, from the
sender's getStats samples (getstats-a.jsonl): the video outbound-rtp's qpSum delta over its framesEncoded delta
between the first and the last sample (VP8's qpSum adds the frame's quantiser index, 0-127).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

CLIPS = ("testsrc2", "natural")


def forward_video_flow(m: dict) -> dict | None:
    flows = [f for f in m.get("flows") or [] if f.get("direction") == "forward" and f.get("kind") == "video"]
    return max(flows, key=lambda f: f.get("packets_received") or 0) if flows else None


def forward_video_stream(m: dict) -> dict | None:
    streams = ((m.get("getstats") or {}).get("directions") or {}).get("forward", {}).get("streams") or []
    return next((s for s in streams if s.get("kind") == "video"), None)


def mean_qp(getstats_file: Path) -> float | None:
    """Mean QP per encoded frame over the call: qpSum / framesEncoded deltas of the video outbound-rtp."""
    points = []
    for line in getstats_file.read_text().splitlines():
        sample = json.loads(line)
        out = [r for r in sample.get("report") or [] if r.get("type") == "outbound-rtp" and r.get("kind") == "video"]
        if len(out) == 1 and isinstance(out[0].get("qpSum"), (int, float)) and out[0].get("framesEncoded"):
            points.append((out[0]["framesEncoded"], out[0]["qpSum"]))
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


def dig(*keys: str) -> Callable[[dict], float | None]:
    def get(d: dict | None) -> float | None:
        for k in keys:
            if not isinstance(d, dict):
                return None
            d = d.get(k)
        return float(d) if isinstance(d, (int, float)) else None
    return get


def bandwidth_limited_share(stream: dict | None) -> float | None:
    durations = (stream or {}).get("quality_limitation_durations_s") or {}
    total = sum(v for v in durations.values() if isinstance(v, (int, float)))
    return durations.get("bandwidth", 0) / total if total else None


# (name, unit, value of a run from its metrics.json and run directory)
MEASURES: list[tuple[str, str, Callable[[dict, Path], float | None]]] = [
    ("video rate (flow throughput)", "kbit/s",
     lambda m, _: _kbit(dig("throughput_bps", "mean")(forward_video_flow(m)))),
    ("encoder target (getStats targetBitrate)", "kbit/s",
     lambda m, _: _kbit(dig("target_bitrate_bps", "mean")(forward_video_stream(m)))),
    ("QP (qpSum / framesEncoded)", "", lambda _, run: mean_qp(run / "getstats-a.jsonl")),
    ("sent frame height", "px", lambda m, _: dig("sent_frame_height", "mean")(forward_video_stream(m))),
    ("sent fps", "fps", lambda m, _: dig("sent_fps", "mean")(forward_video_stream(m))),
    ("bandwidth-limited share", "", lambda m, _: bandwidth_limited_share(forward_video_stream(m))),
    ("PSNR", "dB", lambda m, _: dig("frames", "b", "quality", "psnr_db", "mean")(m)),
    ("SSIM", "", lambda m, _: dig("frames", "b", "quality", "ssim", "mean")(m)),
    ("GCC n_dd", "", lambda m, _: dig("congestion_controller", "sides", "a", "controller", "n_dd")(m)),
    ("GCC over-use events", "",
     lambda m, _: dig("congestion_controller", "sides", "a", "controller", "overuse_events")(m)),
    ("GCC overusing share", "",
     lambda m, _: dig("congestion_controller", "sides", "a", "controller", "detector_state_fraction", "overusing")(m)),
    ("video queuing delay p50", "ms", lambda m, _: dig("queuing_delay_ms", "p50")(forward_video_flow(m))),
    ("video queuing delay p95", "ms", lambda m, _: dig("queuing_delay_ms", "p95")(forward_video_flow(m))),
]


def _kbit(bps: float | None) -> float | None:
    return None if bps is None else bps / 1000


def runs_of(out: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """The valid run directories per clip, and a line for each run left out."""
    valid: dict[str, list[Path]] = {c: [] for c in CLIPS}
    left_out = []
    for clip in CLIPS:
        for run in sorted(out.glob(f"{clip}-*")):
            if not run.is_dir():
                continue
            metrics = run / "metrics.json"
            if not metrics.is_file():
                left_out.append(f"{run.name}: no metrics.json (see {run.name}.log)")
                continue
            v = json.loads(metrics.read_text())["validity"]
            if v["valid"]:
                valid[clip].append(run)
            else:
                failed = [c["name"] for c in v["checks"] if not c["ok"]]
                left_out.append(f"{run.name}: INVALID ({', '.join(failed)})")
    return valid, left_out


def compare(valid: dict[str, list[Path]]) -> list[dict]:
    """One row per measure: each clip's values, mean, range; the ratio of the means and its spread over run pairs."""
    metrics = {run: json.loads((run / "metrics.json").read_text()) for runs in valid.values() for run in runs}
    rows = []
    for name, unit, value in MEASURES:
        row: dict = {"measure": name, "unit": unit}
        for clip in CLIPS:
            values = [value(metrics[run], run) for run in valid[clip]]
            known = [v for v in values if v is not None]
            row[clip] = {"values": values, "mean": statistics.fmean(known) if known else None,
                         "min": min(known, default=None), "max": max(known, default=None)}
        t, n = row["testsrc2"], row["natural"]
        if t["mean"] is None or n["mean"] is None:
            row["ratio"], row["ratio_reason"] = None, "a clip has no value"
        elif t["mean"] == 0:
            row["ratio"], row["ratio_reason"] = None, "testsrc2's mean is 0"
        else:
            tv = [v for v in t["values"] if v is not None]
            pairs = [a / b for a in n["values"] if a is not None for b in tv if b != 0]
            row["ratio"] = n["mean"] / t["mean"]
            # A testsrc2 run with 0 leaves the spread open above (a natural run over it: no finite ratio).
            row["ratio_min"] = min(pairs)
            row["ratio_max"] = None if 0 in tv and any(a for a in n["values"] if a) else max(pairs)
        rows.append(row)
    return rows


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}"


def table(rows: list[dict], valid: dict[str, list[Path]]) -> str:
    lines = [f"| measure | testsrc2 mean (range), {len(valid['testsrc2'])} runs | natural mean (range), "
             f"{len(valid['natural'])} runs | natural / testsrc2 (spread) |", "|---|---|---|---|"]
    for r in rows:
        cells = []
        for clip in CLIPS:
            c = r[clip]
            cells.append(f"{_num(c['mean'])} ({_num(c['min'])} - {_num(c['max'])})")
        if r["ratio"] is None:
            ratio = f"- ({r['ratio_reason']})"
        else:
            top = "unbounded" if r["ratio_max"] is None else f"{r['ratio_max']:.2f}"
            ratio = f"{r['ratio']:.2f} ({r['ratio_min']:.2f} - {top})"
        unit = f", {r['unit']}" if r["unit"] else ""
        lines.append(f"| {r['measure']}{unit} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--json"]
    if len(args) != 1:
        print("usage: compare.py OUT_DIR [--json]", file=sys.stderr)
        return 2
    out = Path(args[0])
    if not out.is_dir():
        print(f"compare.py: {out} is not a directory (bench/clips/run.sh writes one)", file=sys.stderr)
        return 2
    valid, left_out = runs_of(out)
    if not all(valid.values()):
        print(f"compare.py: a clip has no valid run in {out}: " + "; ".join(left_out or ["no runs"]), file=sys.stderr)
        return 1
    rows = compare(valid)
    if "--json" in argv:
        print(json.dumps({"rows": rows, "left_out": left_out}, default=str, indent=1))
    else:
        print(table(rows, valid))
        for line in left_out:
            print(f"left out: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
