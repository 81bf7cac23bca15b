"""What the two getStats dump readers give (webrtc_internals.py, rtcstats.py): each peer connection of a dump with
its getStats as samples in time order, each sample a list of standard RTCStats objects, as a lab run's
getstats-<side>.jsonl holds them (docs/run-directory.md); and the error that names what is wrong with a dump."""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RTP_TYPES = ("outbound-rtp", "inbound-rtp")


class DumpError(Exception):
    """A dump that cannot be imported: the message names the file and what is wrong with it."""


Sample = tuple[float, list[dict[str, Any]]]  # (Unix seconds of the getStats call, its stats objects)


@dataclass
class PeerConnection:
    id: str  # the dump's own name for it (webrtc-internals' "<pid>-<lid>", rtcstats' "PC_0", ...)
    samples: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the reader had to assume or leave out, in words

    def rtp_streams(self) -> int:
        """How many RTP streams (outbound-rtp or inbound-rtp SSRCs) its samples hold."""
        return len({(o.get("type"), o.get("ssrc")) for _, objs in self.samples for o in objs
                    if o.get("type") in RTP_TYPES and isinstance(o.get("ssrc"), int)})


@dataclass
class Dump:
    layout: str  # which layout of the format the file has, in words (docs/export.md names them)
    peer_connections: list[PeerConnection]
    user_agent: str | None = None
    origin: str | None = None  # the page that made the calls, when the dump names it


def read_text(path: Path) -> str:
    """The file's text, gunzipped when it is gzip (both formats are often stored compressed)."""
    if not path.is_file():
        raise DumpError(f"{path}: no such file")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise DumpError(f"{path}: a gzip file that cannot be unpacked ({e}): is it cut short?") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DumpError(f"{path}: not UTF-8 text (byte {e.start}): not a getStats dump") from None


def json_error(path: Path, text: str, e: json.JSONDecodeError, what: str) -> DumpError:
    """A JSON error said as what it means: a document that stops before its end is a truncated file."""
    # Python's decoder names an unclosed string at its start; any other truncation at the text's end.
    if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
        return DumpError(f"{path}: {what} ends at byte {len(text.encode('utf-8'))} in the middle of its JSON "
                         f"({e.msg}): the file is truncated (an interrupted download or copy?)")
    return DumpError(f"{path}: {what} is not valid JSON at line {e.lineno} column {e.colno}: {e.msg}")


def number(v: Any) -> float | None:
    """A finite number, or None (booleans are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def jsonl_lines(pc: PeerConnection, side: str) -> list[str]:
    """getstats-<side>.jsonl's lines for one peer connection: {"t", "side", "report"} per sample, as the harness
    writes them."""
    return [json.dumps({"t": round(t, 6), "side": side, "report": objs}, separators=(",", ":"))
            for t, objs in pc.samples]
