"""Picture quality (rtclab.quality, docs/metrics.md "quality"): PSNR and SSIM of sampled frames, by ffmpeg's filters,
against numpy's own computation on hand-built pictures: a noisy copy (PSNR by its definition, SSIM by x264's
formula that ffmpeg's filter implements: 8x8 windows on a 4-pixel grid), two flat pictures (SSIM's closed form), the
stamp's rows left out, a smaller picture scaled up with bicubic; and bad input: a truncated sample file, a missing or
different reference clip, a sample whose bytes do not fit its size."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rtclab import quality, report
from rtclab.rundir import FramesFile

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")

W, H = 128, 72  # stamp rows cropped: round(72 / 18) = 4
CROP = 4


def planes(frame: np.ndarray, w: int = W, h: int = H) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = frame[: w * h].reshape(h, w)
    u = frame[w * h: w * h + (w // 2) * (h // 2)].reshape(h // 2, w // 2)
    v = frame[w * h + (w // 2) * (h // 2):].reshape(h // 2, w // 2)
    return y, u, v


def picture(seed: int) -> np.ndarray:
    """A smooth I420 picture with some texture (gradients and a few blocks), W x H."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    y = 60 + xx * 1.0 + yy * 0.8 + 20 * np.sin(xx / 5.0 + seed) + rng.integers(0, 12, (H, W))
    cy, cx = np.mgrid[0:H // 2, 0:W // 2]
    u = 128 + 30 * np.cos(cx / 7.0 + seed) + cy * 0.5
    v = 120 - 20 * np.sin(cy / 4.0) + cx * 0.3
    return np.concatenate([np.clip(p, 0, 255).astype(np.uint8).ravel() for p in (y, u, v)])


def write_clip(path: Path, frames: list[np.ndarray], w: int = W, h: int = H) -> None:
    with path.open("wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F30:1 Ip A1:1 C420jpeg XRTCLAB_STAMP=1\n".encode())
        for fr in frames:
            f.write(b"FRAME\n" + fr.tobytes())


def write_samples(path: Path, samples: list[tuple[dict, bytes]]) -> None:
    """The harness's layout (harness/recorder.js frameSample): one gzip member per sample, a JSON line then bytes."""
    with path.open("wb") as f:
        for meta, pic in samples:
            head = json.dumps({"kind": "sample", "format": "I420", "bytes": len(pic), **meta}) + "\n"
            f.write(gzip.compress(head.encode() + pic, compresslevel=1))


def run_dir(tmp_path: Path, clip: list[np.ndarray], received: list[tuple[int, np.ndarray, int, int]]
            ) -> tuple[Path, FramesFile]:
    """A run directory with the clip, the samples (clip index, picture, width, height) and their frame records."""
    write_clip(tmp_path / "clip.y4m", clip)
    recs, samples = [], []
    for n, (index, pic, w, h) in enumerate(received, start=1):
        meta = {"presented_frames": n * 10, "rtp_timestamp": 3000 * n, "expected_display_ms": 1000.0 + n,
                "width": w, "height": h, "clip_index": index}
        samples.append((meta, pic.tobytes()))
        recs.append({"kind": "frame", "presented_frames": n * 10, "expected_display_ms": 1000.0 + n, "sampled": True,
                     "clip_index": index, "width": w, "height": h})
    write_samples(tmp_path / "frame-samples-b.i420.gz", samples)
    header = {"kind": "header", "read_every": 1, "sample_every": 10,
              "clip": {"path": str(tmp_path / "clip.y4m"), "width": W, "height": H, "frames": len(clip), "fps": 30,
                       "stamp_version": 1}}
    return tmp_path, FramesFile(header=header, frames=recs, dropped=0)


def analyse(path: Path, ff: FramesFile) -> dict:
    q = quality.analyse(path, "b", ff, 0, 1e9)
    assert q is not None
    return q


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in (path / "quality-b.jsonl").read_text().splitlines()]


def numpy_psnr(ref: np.ndarray, dist: np.ndarray) -> tuple[float, float]:
    """PSNR (all planes from their pooled squared error, and Y) over the rows below the stamp: 10 log10(255^2 / MSE)."""
    sse, n, mse_y = 0.0, 0, 0.0
    for k, (a, b) in enumerate(zip(planes(ref), planes(dist))):
        c = CROP if k == 0 else CROP // 2
        d = a[c:].astype(float) - b[c:].astype(float)
        sse += float((d * d).sum())
        n += d.size
        if k == 0:
            mse_y = float((d * d).mean())
    return 10 * np.log10(255**2 / (sse / n)), 10 * np.log10(255**2 / mse_y)


def numpy_ssim_plane(a: np.ndarray, b: np.ndarray) -> float:
    """SSIM as x264 (and ffmpeg's ssim filter) computes it: sums over 8x8 windows whose corners lie on a 4-pixel grid,
    constants c1 = round(0.01^2 255^2 64), c2 = round(0.03^2 255^2 64 63), the mean over the windows."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    h, w = (a.shape[0] // 4) * 4, (a.shape[1] // 4) * 4
    blocks = lambda x: x[:h, :w].reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))
    s1, s2, ss, s12 = blocks(a), blocks(b), blocks(a * a + b * b), blocks(a * b)
    win = lambda x: x[:-1, :-1] + x[1:, :-1] + x[:-1, 1:] + x[1:, 1:]
    s1, s2, ss, s12 = win(s1), win(s2), win(ss), win(s12)
    c1, c2 = int(0.01 * 0.01 * 255 * 255 * 64 + 0.5), int(0.03 * 0.03 * 255 * 255 * 64 * 63 + 0.5)
    var = ss * 64 - s1 * s1 - s2 * s2
    cov = s12 * 64 - s1 * s2
    return float(np.mean((2 * s1 * s2 + c1) * (2.0 * cov + c2) / ((s1 * s1 + s2 * s2 + c1) * (var + c2))))


def numpy_ssim(ref: np.ndarray, dist: np.ndarray) -> tuple[float, float]:
    """(all planes weighted by their sizes, as ffmpeg's `All`; Y) below the stamp's rows."""
    values, sizes = [], []
    for k, (a, b) in enumerate(zip(planes(ref), planes(dist))):
        c = CROP if k == 0 else CROP // 2
        values.append(numpy_ssim_plane(a[c:], b[c:]))
        sizes.append(a[c:].size)
    return float(np.dot(values, sizes) / sum(sizes)), values[0]


def test_psnr_and_ssim_of_noisy_copies_are_numpys(tmp_path):
    clip = [picture(s) for s in range(3)]
    rng = np.random.default_rng(7)
    received = []
    for index, sigma in ((1, 3.0), (2, 8.0), (0, 1.5)):
        noisy = np.clip(clip[index].astype(float) + rng.normal(0, sigma, clip[index].shape), 0, 255).astype(np.uint8)
        received.append((index, noisy, W, H))
    path, ff = run_dir(tmp_path, clip, received)
    q = analyse(path, ff)
    got = rows(path)
    assert [r["clip_index"] for r in got] == [1, 2, 0] and q["compared"] == 3 and q["scaled"] == 0
    for r, (index, noisy, _, _) in zip(got, received):
        psnr_all, psnr_y = numpy_psnr(clip[index], noisy)
        ssim_all, ssim_y = numpy_ssim(clip[index], noisy)
        assert r["psnr_db"] == pytest.approx(psnr_all, abs=0.006)  # ffmpeg's stats file holds 2 decimals
        assert r["psnr_y_db"] == pytest.approx(psnr_y, abs=0.006)
        assert r["ssim_y"] == pytest.approx(ssim_y, abs=2e-6)  # 6 decimals
        assert r["ssim"] == pytest.approx(ssim_all, abs=3e-6)
        assert r["ssim_db"] == pytest.approx(-10 * np.log10(1 - r["ssim"]), abs=1e-9)  # from the 6 decimals
    # More noise, less quality; the summary is the rows' mean and 5th percentile (numpy's linear interpolation).
    assert got[1]["psnr_db"] < got[0]["psnr_db"] < got[2]["psnr_db"]
    assert q["psnr_db"]["mean"] == pytest.approx(np.mean([r["psnr_db"] for r in got]))
    assert q["ssim"]["p5"] == pytest.approx(np.percentile([r["ssim"] for r in got], 5))
    # SSIM in dB: the mean of the samples' dB (not the dB of the mean SSIM), none capped.
    db = [-10 * np.log10(1 - r["ssim"]) for r in got]
    assert q["ssim_db"]["mean"] == pytest.approx(np.mean(db)) and q["ssim_db"]["min"] == pytest.approx(min(db))
    assert q["ssim_db"]["p5"] == pytest.approx(np.percentile(db, 5)) and q["ssim_db_capped"] == 0
    text = "\n".join(report._quality_lines(q))
    assert f"picture quality of 3 sampled frames (1 in 10 shown, 0 scaled up to {W}x{H})" in text
    assert f"PSNR mean {q['psnr_db']['mean']:.2f} (p5 {q['psnr_db']['p5']:.2f}) dB" in text
    assert f"SSIM in dB mean {q['ssim_db']['mean']:.2f} (p5 {q['ssim_db']['p5']:.2f}) dB" in text


def test_samples_compared_in_chunks_give_the_same_rows(tmp_path, monkeypatch):
    """Several ffmpeg runs (CHUNK samples each) give what one run gives, row for row, in the samples' order."""
    clip = [picture(s) for s in range(3)]
    rng = np.random.default_rng(3)
    received = [(i % 3, np.clip(clip[i % 3] + rng.normal(0, 2 + i, clip[0].shape), 0, 255).astype(np.uint8), W, H)
                for i in range(5)]
    path, ff = run_dir(tmp_path, clip, received)
    analyse(path, ff)
    whole = rows(path)
    monkeypatch.setattr(quality, "CHUNK", 2)
    analyse(path, ff)
    assert rows(path) == whole and len(whole) == 5


def test_two_flat_pictures_have_the_closed_form_ssim_and_psnr(tmp_path):
    """Flat 100 against flat 110: no variance, so SSIM = (2 s1 s2 + c1) / (s1^2 + s2^2 + c1) with window sums
    s = 64 x level; PSNR = 10 log10(255^2 / 10^2)."""
    flat = lambda level: np.full(W * H * 3 // 2, level, np.uint8)
    path, ff = run_dir(tmp_path, [flat(100)], [(0, flat(110), W, H)])
    analyse(path, ff)
    (r,) = rows(path)
    s1, s2, c1 = 64 * 100, 64 * 110, 416
    assert r["ssim"] == pytest.approx((2 * s1 * s2 + c1) / (s1**2 + s2**2 + c1), abs=1e-6)  # 0.995475
    assert r["psnr_db"] == pytest.approx(10 * np.log10(255**2 / 100), abs=0.006)  # 28.13 dB
    assert r["ssim_db"] == pytest.approx(-10 * np.log10(1 - r["ssim"]))  # 23.44 dB


def test_equal_pictures_are_capped_at_48_db_and_the_stamp_rows_do_not_count(tmp_path):
    clip = [picture(1)]
    changed = clip[0].copy()
    y, _, _ = planes(changed)
    y[:CROP] = 255 - y[:CROP]  # only the stamp's rows differ
    path, ff = run_dir(tmp_path, clip, [(0, clip[0].copy(), W, H), (0, changed, W, H)])
    q = analyse(path, ff)
    for r in rows(path):
        assert r["psnr_db"] == quality.PSNR_CAP_DB and r["ssim"] == 1.0
        assert r["ssim_db"] == quality.SSIM_DB_CAP == 60.0  # SSIM 1 is +inf dB: shown as the cap
    assert q["stamp_rows_cropped"] == CROP
    assert q["ssim_db_capped"] == 2 and q["ssim_db"]["mean"] == 60.0
    one_more = changed.copy()
    planes(one_more)[0][CROP] = 255 - planes(one_more)[0][CROP]  # and the first row below them
    (tmp_path / "again").mkdir()
    path2, ff2 = run_dir(tmp_path / "again", clip, [(0, one_more, W, H)])
    analyse(path2, ff2)
    assert rows(path2)[0]["psnr_db"] < 40


def test_a_smaller_picture_is_scaled_up_to_the_clip_with_bicubic_before_it_is_compared(tmp_path):
    """The received picture at half size (2x2 means of the clip frame): compared after ffmpeg's bicubic scaling to
    the clip's size (here done apart, by a plain ffmpeg command, and measured with numpy)."""
    clip = [picture(3)]
    y, u, v = planes(clip[0])
    half = lambda p: p.reshape(p.shape[0] // 2, 2, p.shape[1] // 2, 2).mean(axis=(1, 3)).round().astype(np.uint8)
    small = np.concatenate([half(p).ravel() for p in (y, u, v)])
    path, ff = run_dir(tmp_path, clip, [(0, small, W // 2, H // 2)])
    q = analyse(path, ff)
    (r,) = rows(path)
    assert q["scaled"] == 1 and (r["width"], r["height"]) == (W // 2, H // 2)
    raw = subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s",
                          f"{W // 2}x{H // 2}", "-i", "-", "-vf", f"scale={W}:{H}:flags=bicubic", "-f", "rawvideo",
                          "-pix_fmt", "yuv420p", "-"], input=small.tobytes(), capture_output=True, check=True).stdout
    up = np.frombuffer(raw, np.uint8)
    psnr_all, psnr_y = numpy_psnr(clip[0], up)
    assert r["psnr_db"] == pytest.approx(psnr_all, abs=0.006) and r["psnr_y_db"] == pytest.approx(psnr_y, abs=0.006)
    assert r["ssim"] == pytest.approx(numpy_ssim(clip[0], up)[0], abs=3e-6)
    assert 20 < r["psnr_db"] < quality.PSNR_CAP_DB


def test_samples_without_a_number_or_outside_the_call_are_counted_not_compared(tmp_path):
    clip = [picture(0)]
    path, ff = run_dir(tmp_path, clip, [(0, clip[0], W, H)])
    write_samples(path / "frame-samples-b.i420.gz", [
        ({"presented_frames": 10, "expected_display_ms": 1001.0, "width": W, "height": H, "clip_index": None},
         clip[0].tobytes()),
        ({"presented_frames": 20, "expected_display_ms": 1001.0, "width": W, "height": H, "clip_index": 0},
         clip[0].tobytes())])
    ff.frames[0]["expected_display_ms"] = 1001.0
    ff.frames.append({"kind": "frame", "presented_frames": 20, "expected_display_ms": 1e12, "sampled": True})
    q = quality.analyse(path, "b", ff, 0, 10.0)
    assert q is not None
    assert (q["samples"], q["unnumbered"], q["outside_call"], q["compared"]) == (2, 1, 1, 0)
    assert q["psnr_db"]["mean"] is None


def test_a_truncated_sample_file_is_a_clear_error(tmp_path):
    clip = [picture(0)]
    path, ff = run_dir(tmp_path, clip, [(0, clip[0], W, H), (0, clip[0], W, H)])
    f = path / "frame-samples-b.i420.gz"
    data = f.read_bytes()
    f.write_bytes(data[:-20])  # the second member cut short
    with pytest.raises(quality.QualityError, match=r"frame-samples-b.i420.gz: truncated: the file ends inside sample "
                                                   r"2 \(at byte \d+ of \d+\); 1 whole samples before it"):
        quality.analyse(path, "b", ff, 0, 1e9)


def test_a_sample_whose_bytes_do_not_fit_its_size_is_refused(tmp_path):
    clip = [picture(0)]
    path, ff = run_dir(tmp_path, clip, [(0, clip[0], W, H)])
    write_samples(path / "frame-samples-b.i420.gz", [({"presented_frames": 10, "width": W, "height": H + 2,
                                                       "clip_index": 0}, clip[0].tobytes())])
    with pytest.raises(quality.QualityError, match=rf"sample 1 holds {W * H * 3 // 2} bytes, an I420 picture of "
                                                   rf"{W}x{H + 2} is {W * (H + 2) * 3 // 2}"):
        quality.analyse(path, "b", ff, 0, 1e9)


def test_a_missing_or_different_reference_clip_is_a_clear_error(tmp_path):
    clip = [picture(0), picture(1)]
    path, ff = run_dir(tmp_path, clip, [(0, clip[0], W, H)])
    (path / "clip.y4m").unlink()
    with pytest.raises(quality.QualityError, match=r"the reference clip .*clip.y4m is missing"):
        quality.analyse(path, "b", ff, 0, 1e9)
    write_clip(path / "clip.y4m", clip[:1])
    with pytest.raises(quality.QualityError, match=r"holds 128x72, 1 frames; the run played 128x72, 2 frames: not "
                                                   r"the clip of this run"):
        quality.analyse(path, "b", ff, 0, 1e9)


def test_a_run_without_samples_has_no_quality_and_a_missing_sample_file_is_named(tmp_path):
    clip = [picture(0)]
    path, ff = run_dir(tmp_path, clip, [(0, clip[0], W, H)])
    (path / "frame-samples-b.i420.gz").unlink()
    with pytest.raises(quality.QualityError, match=r"frame-samples-b.i420.gz is missing: the page was asked to "
                                                   r"sample every 10th frame"):
        quality.analyse(path, "b", ff, 0, 1e9)
    ff.header["sample_every"] = 0
    assert quality.analyse(path, "b", ff, 0, 1e9) is None
