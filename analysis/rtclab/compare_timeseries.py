"""`rtclab compare`'s getStats panels: the runs' browser-side series on one time axis, one panel per quantity, one
line per run, so that an imported field call (rtclab import webrtc-internals|rtcstats) and a lab run are read side by
side (docs/export.md, "Comparing a field call with a lab run"). Each run's series are those of its forward video
stream (the video SSRC with the most samples) as metrics.json getstats.directions.forward.series holds them; a run
without a series for a panel is named under the panel with the reason, not drawn as zeros. A table gives each run's
getStats summaries of that stream."""

from __future__ import annotations

from typing import Any

from .dashboard_traces import line_trace

# (series prefix in metrics.json getstats.directions.forward.series, title, y-axis title, scale)
PANELS = (
    ("sent_bitrate_bps", "Video sent rate (getStats at the sender, a)", "Mbit/s", 1e-6),
    ("target_bitrate_bps", "Video target bitrate (the encoder's, a)", "Mbit/s", 1e-6),
    ("available_outgoing_bitrate_bps", "Available outgoing bitrate (GCC's estimate, a)", "Mbit/s", 1e-6),
    ("received_bitrate_bps", "Video received rate (getStats at the receiver, b)", "Mbit/s", 1e-6),
    ("rtt_ms", "Video RTCP round-trip time (a)", "ms", 1.0),
    ("received_fps", "Received frames per second (b)", "frames/s", 1.0),
    ("frame_height", "Received frame height (b)", "px", 1.0),
)
RUN_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
# What each missing series needs (the sides' getStats as docs/metrics.md describes them)
NEEDS = {"sent_bitrate_bps": "the sender's (a) getStats", "target_bitrate_bps": "the sender's (a) getStats",
         "available_outgoing_bitrate_bps": "the sender's (a) selected candidate pair",
         "received_bitrate_bps": "the receiver's (b) getStats", "rtt_ms": "the sender's (a) remote-inbound-rtp RTT",
         "received_fps": "the receiver's (b) getStats", "frame_height": "the receiver's (b) getStats"}


def forward_series(m: dict[str, Any]) -> dict[str, list]:
    return (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {}).get("series") or {}


def video_ssrc(m: dict[str, Any]) -> str | None:
    """The forward video stream's SSRC (as the series keys spell it): the one with the most samples."""
    counts: dict[str, int] = {}
    for key, pts in forward_series(m).items():
        parts = key.split(":")
        if len(parts) == 3 and parts[1] == "video":
            counts[parts[2]] = counts.get(parts[2], 0) + len(pts or [])
    return max(counts, key=lambda s: counts[s]) if counts else None


def _series_of(m: dict[str, Any], prefix: str) -> list | None:
    series = forward_series(m)
    if prefix == "available_outgoing_bitrate_bps":
        return series.get(prefix) or None
    ssrc = video_ssrc(m)
    return (series.get(f"{prefix}:video:{ssrc}") or None) if ssrc is not None else None


def _why_missing(m: dict[str, Any], prefix: str) -> str:
    if m.get("getstats") is None:
        return "no getStats in this run"
    if video_ssrc(m) is None and prefix != "available_outgoing_bitrate_bps":
        return "no forward video stream in its getStats"
    imp = m.get("imported")
    if imp and prefix in ("received_bitrate_bps", "received_fps", "frame_height") and imp.get("side") == "a":
        return "an imported dump of the sending browser (a) holds no receiver's view"
    return f"no samples: it needs {NEEDS[prefix]}"


def figures(runs: list[tuple[str, dict[str, Any]]]) -> tuple[list[tuple[str, dict]], list[str]]:
    """One figure per panel with any run's series, one line per run; and a sentence per run and panel left out."""
    figs: list[tuple[str, dict]] = []
    notes: list[str] = []
    for prefix, title, ytitle, scale in PANELS:
        traces = []
        for i, (label, m) in enumerate(runs):
            pts = _series_of(m, prefix)
            if pts:
                traces.append(line_trace(label, pts, scale, line={"color": RUN_COLOURS[i % len(RUN_COLOURS)]}))
            else:
                notes.append(f"{title}: {label}: {_why_missing(m, prefix)}")
        if traces:
            figs.append((f"gs_{prefix}", {"data": traces, "layout": {
                "title": {"text": title}, "height": 320, "margin": {"l": 60, "r": 20, "t": 40, "b": 45},
                "xaxis": {"title": {"text": "time since call start (s)"}}, "yaxis": {"title": {"text": ytitle}},
                "legend": {"orientation": "h", "y": -0.25}}}))
    return figs, notes


def _video_stream(m: dict[str, Any]) -> dict[str, Any]:
    ssrc = video_ssrc(m)
    streams = (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {}).get("streams") or []
    return next((s for s in streams if str(s.get("ssrc")) == ssrc), {}) if ssrc is not None else {}


def table(runs: list[tuple[str, dict[str, Any]]]) -> str:
    """Each run's getStats summaries of its forward video stream (means over the call; '-' where it has none)."""
    head = ["run", "kind", "sent Mb/s", "target", "received", "avail. out", "RTT ms", "fps", "height"]
    fmt = lambda x, s=1.0, d=2: "-" if x is None else f"{x * s:.{d}f}"
    mean = lambda d, k: (d.get(k) or {}).get("mean")
    body = []
    for label, m in runs:
        s = _video_stream(m)
        fwd = (((m.get("getstats") or {}).get("directions") or {}).get("forward") or {})
        body.append([label, "imported" if m.get("imported") else "lab", fmt(mean(s, "sent_bitrate_bps"), 1e-6, 3),
                     fmt(mean(s, "target_bitrate_bps"), 1e-6, 3), fmt(mean(s, "received_bitrate_bps"), 1e-6, 3),
                     fmt(mean(fwd, "available_outgoing_bitrate_bps"), 1e-6, 3), fmt(mean(s, "rtt_ms"), 1, 1),
                     fmt(mean(s, "received_fps"), 1, 1), fmt(mean(s, "frame_height"), 1, 0)])
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda c: "  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(c, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(b) for b in body)]) + "\n"
