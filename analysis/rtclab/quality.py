"""Picture quality: PSNR and SSIM of the frames a receiving page sampled (frame-samples-<side>.i420.gz,
client/frames.js) against the clip frame each one shows (its stamp's index, frames-<side>.jsonl), computed by ffmpeg's
`psnr` and `ssim` filters. A received frame smaller than the clip (the encoder scales down under congestion) is scaled
up to the clip's size with bicubic first, as VMAF's practice is (Netflix: the distorted video upsampled to the
reference's resolution) and as libwebrtc's end-to-end analyzer does (the rendered frame scaled to the captured one's
size); the stamp's rows, identical in both by construction, are cropped from both. docs/metrics.md, "quality"."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .rundir import FramesFile
from .stats import distribution

# libwebrtc's frame_analyzer and test support cap PSNR at 48 dB (kPerfectPSNR): equal pictures have an infinite PSNR,
# which a mean cannot hold.
PSNR_CAP_DB = 48.0
# SSIM in dB, -10 log10(1 - SSIM) (ffmpeg's and x264's ssim_db), is infinite for equal pictures (SSIM 1). ffmpeg
# writes SSIM with 6 decimals: the highest value below 1 it can write, 0.999999, is 60 dB, so an SSIM written as 1
# is shown as 60 dB (at least that), which a mean can hold, as PSNR's cap does.
SSIM_DB_CAP = 60.0
# The stamp's strip (client/frame-stamp.js): the top 1/ROWS of the picture (cells in the first row of an 18-row grid).
STAMP_ROWS = 18
# Per-frame rows the analysis writes, per receiving side.
ROWS_FILE = "quality-{side}.jsonl"
SAMPLES_FILE = "frame-samples-{side}.i420.gz"
# Samples compared by one ffmpeg run (its two inputs are written to a temporary directory first: 32 references of
# 1280x720 are 44 MB).
CHUNK = 32


class QualityError(Exception):
    """Quality cannot be computed: what is missing or broken, in a sentence."""


@dataclass
class Sample:
    meta: dict[str, Any]
    width: int
    height: int
    picture: bytes  # tightly packed I420


def i420_bytes(width: int, height: int) -> int:
    return width * height + 2 * ((width + 1) // 2) * ((height + 1) // 2)


def read_samples(path: Path) -> list[Sample]:
    """The samples of a frame-samples file: gzip members, each a JSON line (`width`, `height`, `format`, `bytes`, what
    the page said) and the picture's bytes. A file that ends inside a member, or a member that is not what its line
    says, is an error naming the sample."""
    data = path.read_bytes()
    out: list[Sample] = []
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        try:
            raw = d.decompress(data[pos:])
        except zlib.error as e:
            raise QualityError(f"{path.name}: sample {len(out) + 1} (at byte {pos}) is not gzip data ({e})") from None
        if not d.eof:
            raise QualityError(f"{path.name}: truncated: the file ends inside sample {len(out) + 1} (at byte {pos} of "
                               f"{len(data)}); {len(out)} whole samples before it")
        pos = len(data) - len(d.unused_data)
        eol = raw.find(b"\n")
        try:
            meta = json.loads(raw[:eol]) if eol >= 0 else None
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            raise QualityError(f"{path.name}: sample {len(out) + 1} does not start with a JSON line")
        w, h = meta.get("width"), meta.get("height")
        if meta.get("format") != "I420" or not isinstance(w, int) or not isinstance(h, int) or w <= 0 or h <= 0:
            raise QualityError(f"{path.name}: sample {len(out) + 1} is no I420 picture with a size: {meta}")
        picture = raw[eol + 1:]
        if len(picture) != i420_bytes(w, h) or meta.get("bytes") != len(picture):
            raise QualityError(f"{path.name}: sample {len(out) + 1} holds {len(picture)} bytes, an I420 picture of "
                               f"{w}x{h} is {i420_bytes(w, h)} (its line says {meta.get('bytes')})")
        out.append(Sample(meta, w, h, picture))
    return out


@dataclass
class Clip:
    """A Y4M clip's frames, by offset (Chrome's fake camera reads plain `FRAME` headers, as ffmpeg writes them)."""
    path: Path
    width: int
    height: int
    chroma: str
    frames: int
    header_len: int

    @property
    def frame_bytes(self) -> int:
        return i420_bytes(self.width, self.height)

    def frame(self, index: int) -> bytes:
        if not 0 <= index < self.frames:
            raise QualityError(f"{self.path}: no frame {index} (the clip holds {self.frames})")
        with self.path.open("rb") as f:
            f.seek(self.header_len + index * (6 + self.frame_bytes))
            head = f.read(6)
            body = f.read(self.frame_bytes)
        if head != b"FRAME\n" or len(body) != self.frame_bytes:
            raise QualityError(f"{self.path}: frame {index} is not a plain FRAME of {self.frame_bytes} bytes")
        return body


def open_clip(path: Path) -> Clip:
    if not path.exists():
        raise QualityError(f"the reference clip {path} is missing: the frames are compared with the clip the "
                           "sending camera played (frames header `clip.path`)")
    with path.open("rb") as f:
        line = f.readline(1024)
    words = line.decode("latin-1").split()
    if not words or words[0] != "YUV4MPEG2":
        raise QualityError(f"{path}: not a Y4M clip")
    tags = {w[0]: w[1:] for w in words[1:]}
    width, height, chroma = int(tags.get("W", 0)), int(tags.get("H", 0)), tags.get("C", "420jpeg")
    if not chroma.startswith("420") or width <= 0 or height <= 0:
        raise QualityError(f"{path}: a {width}x{height} C{chroma} clip; only 4:2:0 clips can be compared")
    frames = (path.stat().st_size - len(line)) // (6 + i420_bytes(width, height))
    return Clip(path, width, height, chroma, frames, len(line))


def stamp_rows(height: int) -> int:
    """Rows cropped from the top of both pictures: the stamp's strip (round(H / 18), client/frame-stamp.js cellRect),
    rounded up to even so that 4:2:0 chroma is cropped with it."""
    rows = int(math.floor(height / STAMP_ROWS + 0.5))
    return rows + rows % 2


def _y4m(path: Path, width: int, height: int, chroma: str, pictures: list[bytes]) -> None:
    with path.open("wb") as f:
        f.write(f"YUV4MPEG2 W{width} H{height} F30:1 Ip A1:1 C{chroma}\n".encode())
        for p in pictures:
            f.write(b"FRAME\n")
            f.write(p)


def _stats(path: Path) -> list[dict[str, float]]:
    """ffmpeg's stats_file lines (`n:1 mse_avg:.. psnr_y:..`, `n:1 Y:.. All:.. (dB)`) as numbers."""
    rows = []
    for line in path.read_text().splitlines():
        row: dict[str, float] = {}
        for word in line.split():
            key, sep, value = word.partition(":")
            if sep:
                row[key] = float(value)  # float("inf") for equal pictures
        rows.append(row)
    return rows


def compare(clip: Clip, pictures: list[tuple[int, int, bytes]], references: list[bytes],
            ffmpeg: str = "ffmpeg") -> list[dict[str, Any]]:
    """PSNR and SSIM of each received picture (width, height, I420 bytes) against its reference (a clip-sized I420
    picture), in order: one ffmpeg per received size; the received scaled to the clip's size with bicubic (swscale),
    the stamp's rows cropped from both, then `psnr` and `ssim` on the 4:2:0 planes."""
    if len(pictures) != len(references):
        raise ValueError("one reference per picture")
    if shutil.which(ffmpeg) is None:
        raise QualityError(f"{ffmpeg} is not installed: picture quality needs ffmpeg's psnr and ssim filters")
    W, H = clip.width, clip.height
    crop = stamp_rows(H)
    out: list[dict[str, Any]] = [{} for _ in pictures]
    sizes = sorted({(w, h) for w, h, _ in pictures})
    # Pictures of one size in chunks of CHUNK: one ffmpeg each, with at most CHUNK clip-sized references on disk.
    groups = [(w, h, idx[k:k + CHUNK]) for w, h in sizes
              for idx in [[i for i, (pw, ph, _) in enumerate(pictures) if (pw, ph) == (w, h)]]
              for k in range(0, len(idx), CHUNK)]
    with tempfile.TemporaryDirectory(prefix="rtclab-quality-") as tmp:
        for w, h, idx in groups:
            d = Path(tmp)
            dist, ref, psnr, ssim = d / "dist.y4m", d / "ref.y4m", d / "psnr.log", d / "ssim.log"
            _y4m(dist, w, h, clip.chroma, [pictures[i][2] for i in idx])
            _y4m(ref, W, H, clip.chroma, [references[i] for i in idx])
            graph = (f"[0:v]scale={W}:{H}:flags=bicubic,crop={W}:{H - crop}:0:{crop}[d];"
                     f"[1:v]crop={W}:{H - crop}:0:{crop},split[r1][r2];"
                     f"[d][r1]psnr=stats_file={psnr}[d2];[d2][r2]ssim=stats_file={ssim}")
            proc = subprocess.run([ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(dist), "-i",
                                   str(ref), "-lavfi", graph, "-f", "null", "-"], capture_output=True, text=True)
            if proc.returncode != 0:
                raise QualityError(f"ffmpeg failed comparing {len(idx)} pictures of {w}x{h}: "
                                   f"{proc.stderr.strip()[-500:]}")
            p_rows, s_rows = _stats(psnr), _stats(ssim)
            if len(p_rows) != len(idx) or len(s_rows) != len(idx):
                raise QualityError(f"ffmpeg compared {len(p_rows)}/{len(s_rows)} of {len(idx)} pictures of {w}x{h}")
            for i, p, s in zip(idx, p_rows, s_rows):
                cap = lambda v: min(v, PSNR_CAP_DB)
                out[i] = {"psnr_db": cap(p["psnr_avg"]), "psnr_y_db": cap(p["psnr_y"]), "psnr_u_db": cap(p["psnr_u"]),
                          "psnr_v_db": cap(p["psnr_v"]), "ssim": s["All"], "ssim_y": s["Y"], "ssim_u": s["U"],
                          "ssim_v": s["V"], "ssim_db": ssim_db(s["All"])}
    return out


def ssim_db(ssim: float) -> float:
    """-10 log10(1 - SSIM), capped at SSIM_DB_CAP (SSIM 1, equal pictures, would be +inf)."""
    return SSIM_DB_CAP if ssim >= 1.0 else min(-10.0 * math.log10(1.0 - ssim), SSIM_DB_CAP)


def _summary(values: list[float]) -> dict[str, Any]:
    dist = distribution(np.array(values, dtype=float))
    return {"mean": dist["mean"], "p5": dist["p5"], "min": dist["min"], "count": dist["count"]}


def analyse(run_path: Path, side: str, frames: FramesFile, t0_ns: int, duration_s: float,
            clip_path: Path | None = None) -> dict[str, Any] | None:
    """metrics.json `frames.<side>.quality`, and quality-<side>.jsonl (one row per compared frame); None when the page
    sampled no picture (frames header `sample_every` absent or 0). Raises QualityError when the samples or the
    reference clip cannot be read."""
    sample_every = frames.header.get("sample_every")
    path = run_path / SAMPLES_FILE.format(side=side)
    if not sample_every and not path.exists():
        return None
    clip_info = frames.header.get("clip") or {}
    if not path.exists():
        raise QualityError(f"{path.name} is missing: the page was asked to sample every {sample_every}th frame")
    samples = read_samples(path)
    if clip_path is None:
        if not clip_info.get("path"):
            raise QualityError(f"frames-{side}.jsonl names no clip: nothing to compare the samples with")
        clip_path = Path(clip_info["path"])
    clip = open_clip(clip_path)
    for key, have in (("width", clip.width), ("height", clip.height), ("frames", clip.frames)):
        if clip_info.get(key) is not None and clip_info[key] != have:
            raise QualityError(f"{clip_path} holds {clip.width}x{clip.height}, {clip.frames} frames; the run played "
                               f"{clip_info.get('width')}x{clip_info.get('height')}, {clip_info.get('frames')} frames: "
                               "not the clip of this run")
    records = {r["presented_frames"]: r for r in frames.frames if isinstance(r.get("presented_frames"), int)}
    lo, hi = t0_ns / 1e6, t0_ns / 1e6 + duration_s * 1000
    rows: list[dict[str, Any]] = []
    pictures: list[tuple[int, int, bytes]] = []
    references: list[bytes] = []
    unnumbered = outside = 0
    for s in samples:
        rec = records.get(s.meta.get("presented_frames"), {})
        shown = rec.get("expected_display_ms", s.meta.get("expected_display_ms"))
        if not isinstance(shown, (int, float)) or not lo <= shown < hi:
            outside += 1
            continue
        index = s.meta.get("clip_index")
        if not isinstance(index, int):
            unnumbered += 1
            continue
        rows.append({"presented_frames": s.meta.get("presented_frames"), "t_s": round((shown - lo) / 1000, 6),
                     "rtp_timestamp": s.meta.get("rtp_timestamp"), "clip_index": index, "width": s.width,
                     "height": s.height})
        pictures.append((s.width, s.height, s.picture))
        references.append(clip.frame(index))
    results = compare(clip, pictures, references) if pictures else []
    for row, res in zip(rows, results):
        row.update(res)
    with (run_path / ROWS_FILE.format(side=side)).open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    sampled_records = sum(1 for r in frames.frames if r.get("sampled"))
    out: dict[str, Any] = {
        "sample_every": sample_every, "samples": len(samples), "sampled_records": sampled_records,
        "outside_call": outside, "unnumbered": unnumbered, "compared": len(rows),
        "reference": {"path": str(clip_path), "width": clip.width, "height": clip.height},
        "scaled": sum(1 for r in rows if (r["width"], r["height"]) != (clip.width, clip.height)),
        "stamp_rows_cropped": stamp_rows(clip.height), "rows_file": ROWS_FILE.format(side=side),
    }
    for key in ("psnr_db", "psnr_y_db", "ssim", "ssim_y", "ssim_db"):
        out[key] = _summary([r[key] for r in rows])
    out["ssim_db_capped"] = sum(1 for r in rows if r["ssim"] >= 1.0)
    return out
