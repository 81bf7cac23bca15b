"""The study report, dashboard and compare, on synthetic studies (rtclab.synth runs analysed for real, no call): the
terminal tables print study.json's numbers, the boxes' quantiles equal numpy's on the same pooled samples (read here
from the runs' packets.parquet and metrics.json), every figure of the dashboard has data for a study with and one
without cross traffic (the embedded figure JSON, and the page in headless Chromium with no console error), compare
on two studies with one shared point, and bad input exits 2."""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import inprocess
from rtclab import synth
from rtclab.analyze import analyze
from rtclab.dashboard import write as write_run_dashboard
from rtclab.study import studydir
from rtclab.study.tdist import t_quantile
from rtclab_study import plan as planmod
from rtclab_study import spec

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"

CROSS_STUDY = """name: cross-study
description: synthetic, a TCP flow from 2 s to 6 s
base: {duration_s: 8}
axes:
  - path: network.forward.qdisc
    name: qdisc
    values: [{kind: fifo, limit_ms: 300}, {kind: codel}]
  - path: network.forward.rate.kbit
    name: kbit
    values: [4000, 6000]
repetitions: 2
max_attempts: 2
"""
ALONE_STUDY = """name: alone-study
description: synthetic, the call alone
base: {duration_s: 8}
points:
  - {name: qdisc-fifo_kbit-4000, set: {network.forward.rate.kbit: 4000}}
  - {name: solo-2000, set: {network.forward.rate.kbit: 2000}}
repetitions: 2
"""
# point -> per repetition, the attempts' outcomes (the cross study); every other repetition: one valid attempt
OUTCOMES = {("qdisc-codel_kbit-6000", 1): ["invalid", "valid"], ("qdisc-codel_kbit-6000", 2): ["invalid", "invalid"]}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`rtclab study ARGS...` in this process (test-support/inprocess.py); bad input's last case starts the real
    command."""
    return inprocess.rtclab("study", *args)


def build(tmp: Path, text: str, chromium: str, tcp_flows: int, dashboards: bool) -> Path:
    """A study directory of synthetic runs, aggregated by the CLI (which also writes the dashboard)."""
    f = tmp / "study.yaml"
    f.write_text(text)
    out = tmp / "out"
    plan = planmod.make(spec.load(f))
    planmod.write(plan, out)
    seed = 100 if tcp_flows else 200
    for i, p in enumerate(plan.study.points):
        kbit = float(next(s.value for s in p.settings if s.path == "network.forward.rate.kbit"))
        for rep in range(1, plan.study.repetitions + 1):
            for attempt, outcome in enumerate(OUTCOMES.get((p.name, rep), ["valid"]), start=1):
                seed += 1
                d = studydir.attempt_dir(out, p.name, rep, attempt)
                synth.write_run(d, synth.SynthConfig(duration_s=8.0, tcp_flows=tcp_flows, tcp_start_s=2.0,
                                                     tcp_stop_s=6.0, capacity_kbit=kbit, video_pps=100.0,
                                                     tcp_pps=200.0, queue_peak_ms=15.0 + 10 * i + rep,
                                                     loss=0.004 * (1 + i), seed=seed))
                m = json.loads((d / "manifest.json").read_text())
                m["versions"] = {"chromium": chromium}
                if outcome == "invalid":
                    m["validity"] = {"valid": False, "checks": [{"name": "host_cpu_not_saturated", "ok": False,
                                                                 "detail": "97% busy"}]}
                (d / "manifest.json").write_text(json.dumps(m))
                if outcome == "valid":
                    metrics, table = analyze(d, run_tshark=False)
                    if dashboards:
                        write_run_dashboard(d, metrics, table)
    r = run_cli("aggregate", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "dashboard.html").exists(), r.stdout
    return out


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"cross": build(tmp_path_factory.mktemp("cross"), CROSS_STUDY, "Chromium 156.0.8078.79 built on Debian", 1,
                           True),
            "alone": build(tmp_path_factory.mktemp("alone"), ALONE_STUDY, "Chromium 155.0.7000.1", 0, False)}


def doc_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "study.json").read_text())


# ---- the terminal report ---------------------------------------------------------------------------------------------

NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _check_cell(cell: str, s: dict[str, Any] | None, factor: float, what: str) -> None:
    if s is None:
        assert cell == "-", what
        return
    m = re.fullmatch(rf"({NUM})(?: ±({NUM}))?(?: n=(\d+))?", cell)
    assert m, f"{what}: {cell!r}"
    assert float(m.group(1)) == pytest.approx(s["mean"] * factor, rel=1e-3, abs=0.051), what
    if s["ci95_half_width"] is None:
        assert m.group(2) is None, what
    else:
        assert float(m.group(2)) == pytest.approx(s["ci95_half_width"] * factor, rel=1e-3, abs=0.051), what


def _tables(text: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """{title: (head, rows)} of the report's tables (columns split on two or more spaces)."""
    out = {}
    blocks = text.split("\n\n")
    for b in blocks:
        lines = b.strip("\n").split("\n")
        if len(lines) >= 3 and lines[0].startswith("phase ") and set(lines[2]) <= {"-", " "}:
            split = [re.split(r"\s{2,}", ln.strip()) for ln in lines[1:]]
            out[lines[0]] = (split[0], [r for r in split[2:] if len(r) == len(split[0])])
    return out


@pytest.mark.parametrize("which", ["cross", "alone"])
def test_the_report_prints_study_json_numbers_with_their_phase(studies: dict[str, Path], which: str) -> None:
    out = studies[which]
    doc = doc_of(out)
    r = run_cli("report", str(out), "--no-dashboard")
    assert r.returncode == 0, r.stderr
    tables = _tables(r.stdout)
    titles = list(tables)
    # RFC 8867's metrics of the media flows, then the CPU table (the runs' cpu.jsonl) close the whole call's tables.
    whole = ["phase all (the whole call): flows", "phase all (the whole call): forward bottleneck",
             "phase all (the whole call): RFC 8867, the media flows' metrics",
             "phase all (the whole call): CPU, mean cores (cpu.jsonl)"]
    if which == "cross":  # the cross-traffic phase first, then the whole call
        assert titles == ["phase cross_traffic (2-6 s of the call): flows", "phase cross_traffic (2-6 s of the call): "
                          "forward bottleneck", *whole], titles
    else:
        assert titles == whole
    cols = {"rate kbit/s": ("throughput_bps", 1e-3), "U": ("utilisation", 1.0),
            "loss (bytes)": ("loss_ratio_bytes", 1.0),
            "queue ms": ("queuing_delay_ms_mean", 1.0), "Tq ms": ("tq_ms_mean", 1.0),
            "call / fair share": ("call_share_of_fair_share", 1.0),
            "TCP / fair share": ("tcp_share_of_fair_share", 1.0),
            "Jain": ("jain_index", 1.0), "host busy": ("cpu_host_busy_cores", 1.0),
            "chromium-a": ("cpu_chromium_a_cores", 1.0), "outside the run": ("cpu_outside_run_cores", 1.0),
            "rate / target": ("rate_to_target_ratio", 1.0), "ramp-up s": ("ramp_up_s", 1.0),
            "converged share": ("converged_fraction", 1.0)}
    points = {p["name"]: p for p in doc["points"]}
    checked = 0
    for title, (head, rows) in tables.items():
        phase = "cross_traffic" if "cross_traffic" in title else "all"
        assert rows and len(rows) >= len(points)
        for row in rows:
            p = points[row[0]]
            flow = row[1] if head[1] == "flow" else \
                ("cpu" if "CPU" in title else "rfc8867" if "RFC 8867" in title else "bottleneck")
            for h, cell in zip(head, row):
                if h not in cols:
                    continue
                metric, factor = cols[h]
                s = p["flows"].get(flow, {}).get(phase, {}).get(metric)
                _check_cell(cell, s if s and s["mean"] is not None else None, factor, f"{title} {row[0]} {h}")
                checked += 1
    assert checked >= (46 if which == "cross" else 22)
    flows = {row[1] for t, (h, rows) in tables.items() if t.endswith("flows") for row in rows}
    assert flows == ({"forward:video", "forward:tcp"} if which == "cross" else {"forward:video"})


def test_report_options_phase_and_metric(studies: dict[str, Path]) -> None:
    r = run_cli("report", str(studies["cross"]), "--no-dashboard", "--phase", "before_cross_traffic", "--metric",
                "jitter_ms", "--metric", "received_bps")
    assert r.returncode == 0, r.stderr
    tables = _tables(r.stdout)
    assert list(tables) == ["phase before_cross_traffic (0-2 s of the call): flows",
                            "phase before_cross_traffic (0-2 s of the call): forward bottleneck"]
    assert tables["phase before_cross_traffic (0-2 s of the call): flows"][0] == ["point", "flow", "n", "jitter ms"]


# ---- the boxes: pooled quantiles against numpy -----------------------------------------------------------------------

def _video_id(m: dict[str, Any]) -> int:
    video = max((f for f in m["flows"] if f["direction"] == "forward" and f["kind"] == "video"),
                key=lambda f: f["packets_sent"])
    return int(video["id"])


def _samples(run: Path, phase: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The video flow's queuing delays (ms) and Tq samples (ms) of one run in one phase, read here independently."""
    m = json.loads((run / "metrics.json").read_text())
    t = pq.read_table(run / "packets.parquet").to_pydict()
    t0_ns = round(m["run"]["call_start"] * 1e9)
    lo, hi = (-math.inf, math.inf) if phase["name"] == "all" else \
        (t0_ns + int(phase["start_s"] * 1e9), t0_ns + int(phase["end_s"] * 1e9))
    qd = [q for f, st, ts, q in zip(t["flow"], t["status"], t["t_send_ns"], t["queuing_delay_ns"])
          if f == _video_id(m) and st == "delivered" and q >= 0 and lo <= ts < hi]
    ssrc = next(f["ssrc"] for f in m["flows"] if f["id"] == _video_id(m))
    tq = m["getstats"]["directions"]["forward"]["series"][f"tq_ms:video:{ssrc}"]
    tq_in = [v for ts, v in tq if phase["name"] == "all" or phase["start_s"] <= ts < phase["end_s"]]
    return np.array(qd, dtype=float) / 1e6, np.array(tq_in, dtype=float)


@pytest.mark.parametrize("which", ["cross", "alone"])
def test_box_quantiles_equal_numpy_on_the_pooled_samples(studies: dict[str, Path], which: str) -> None:
    out = studies[which]
    doc = doc_of(out)
    checked = 0
    for p in doc["points"]:
        for ph in p["phases"]:
            pooled = [_samples(out / d, ph) for d in p["runs_used"]]
            for i, dist in enumerate(("queuing_delay_ms", "tq_ms")):
                x = np.concatenate([s[i] for s in pooled])
                got = p["distributions"]["forward:video"][ph["name"]][dist]
                assert got["n_samples"] == x.size > 0 and got["runs"] == len(p["runs_used"])
                want = np.percentile(x, [5, 25, 50, 75, 95])
                for q, w in zip((5, 25, 50, 75, 95), want):
                    assert got[f"p{q}"] == pytest.approx(w, rel=1e-12, abs=1e-12), (p["name"], ph["name"], dist, q)
                assert got["mean"] == pytest.approx(x.mean(), rel=1e-12)
                checked += 1
        if len(p["runs_used"]) == 1:  # one run: the box is that run's distribution, as the analyzer computed it
            m = json.loads((out / p["runs_used"][0] / "metrics.json").read_text())
            video = next(f for f in m["flows"] if f["id"] == _video_id(m))
            box = p["distributions"]["forward:video"]["all"]["queuing_delay_ms"]
            for q in (5, 25, 50, 75, 95):
                assert box[f"p{q}"] == pytest.approx(video["queuing_delay_ms"][f"p{q}"], rel=1e-9)
    assert checked == (4 * 4 * 2 if which == "cross" else 2 * 1 * 2)
    assert any(len(p["runs_used"]) == 1 for p in doc["points"]) == (which == "cross")


# ---- the dashboard ---------------------------------------------------------------------------------------------------

def figures_of(page: Path) -> dict[str, dict[str, Any]]:
    text = page.read_text()
    payload = re.search(r'<script id="figures" type="application/json">(.*?)</script>', text, re.S)
    assert payload
    return {f["id"]: f["fig"] for f in json.loads(payload.group(1).replace("<\\/", "</"))}


def _has_data(tr: dict[str, Any]) -> bool:
    ys = tr.get("y") if tr.get("type") != "box" else tr.get("median")
    return bool(tr.get("x")) and any(v is not None for v in ys or [])


@pytest.mark.parametrize("which", ["cross", "alone"])
def test_every_figure_of_the_dashboard_has_data(studies: dict[str, Path], which: str) -> None:
    out = studies[which]
    doc = doc_of(out)
    figs = figures_of(out / "dashboard.html")
    param = "kbit"
    expected = {"bars-utilisation", "bars-loss_ratio_bytes", "bars-queuing_delay_ms_mean", "bars-tq_ms_mean",
                "bars-call_share_of_fair_share", "box-queuing_delay_ms", "box-tq_ms", "series-rate", "series-delay",
                "cpu"}
    expected |= {f"sweep-{param}-{m}" for m in ("queuing_delay_ms_mean", "tq_ms_mean", "utilisation",
                                                "loss_ratio_bytes")}
    if which == "cross":  # RFC 8867's figure, one per point, where TCP competes (rfc-i: the i-th point's first run)
        expected |= {f"rfc-{i}" for i, p in enumerate(doc["points"]) if p["runs_used"]}
    assert set(figs) == expected
    first = "cross_traffic" if which == "cross" else "all"
    for i, p in enumerate(doc["points"] if which == "cross" else []):  # each flow's rate and fair share, as measured
        m = json.loads((out / p["runs_used"][0] / "metrics.json").read_text())
        traces = {t["name"]: t for t in figs[f"rfc-{i}"]["data"]}
        assert traces["capacity"]["y"] == [bps / 1e3 for _, bps in m["capacity_steps"]]
        for f in m["rfc8867"]["flows"]:
            assert traces[f"{f['name']} rate"]["y"] == [r / 1e3 for r in f["rate_bps"]]
            assert traces[f"{f['name']} fair share"]["y"] == [None if t is None else t / 1e3 for t in f["target_bps"]]
    for fid, fig in figs.items():
        visible = [tr for tr in fig["data"] if tr.get("visible", True)]
        assert visible and all(_has_data(tr) for tr in visible), fid
        if fid == "cpu":  # the runs' CPU is counted over the whole call only: no phase selector, and it says so
            assert "phase: all (the whole call)" in fig["layout"]["title"]["text"]
            assert "updatemenus" not in fig["layout"]
        elif not fid.startswith(("series", "rfc")):  # time series: no phase
            assert f"phase: {first}" in fig["layout"]["title"]["text"], fid
            buttons = fig["layout"]["updatemenus"][0]["buttons"]
            assert buttons[0]["label"].startswith(first) and any(b["label"].startswith("all") for b in buttons), fid
            for b in buttons:  # each phase's button shows that phase's traces (each trace's meta) and says so
                phase = b["label"].split(" ")[0]
                assert b["args"][0]["visible"] == [tr["meta"] == phase for tr in fig["data"]], (fid, phase)
                assert f"phase: {b['label']}" in b["args"][1]["title"]["text"]
                assert any(tr["meta"] == phase for tr in fig["data"]) or phase != first, (fid, phase)
    # Bars: the means and CI half-widths of study.json, grouped by the first axis.
    bars = figs["bars-queuing_delay_ms_mean"]["data"]
    for p in doc["points"]:
        s = p["flows"]["forward:video"][first]["queuing_delay_ms_mean"]
        tr = next(t for t in bars if t["visible"] and p["name"] in t["customdata"])
        i = tr["customdata"].index(p["name"])
        assert tr["y"][i] == pytest.approx(s["mean"])
        assert tr["error_y"]["array"][i] == (None if s["ci95_half_width"] is None
                                             else pytest.approx(s["ci95_half_width"]))
    if which == "cross":
        assert {tuple(t["x"]) for t in bars if t["visible"]} == {("fifo", "codel")}  # x: the first axis' labels
        shaded = figs["series-rate"]["layout"]["shapes"]
        assert [(s["x0"], s["x1"]) for s in shaded] == [(2.0, 6.0)]
        bars = figs["bars-call_share_of_fair_share"]["data"]
        assert any(t["name"] == "TCP competitors (mean) kbit=4000" for t in bars)
    # Boxes: whiskers p5/p95, box p25/p50/p75 of study.json's distributions.
    box = next(t for t in figs["box-queuing_delay_ms"]["data"] if t["visible"])
    for name, lo, med, hi in zip(box["x"], box["lowerfence"], box["median"], box["upperfence"]):
        d = next(p for p in doc["points"] if p["name"] == name)["distributions"]["forward:video"][first]
        assert (lo, med, hi) == (d["queuing_delay_ms"]["p5"], d["queuing_delay_ms"]["p50"],
                                 d["queuing_delay_ms"]["p95"])
    # One overlaid series per point (its first valid run).
    assert len(figs["series-rate"]["data"]) == len(doc["points"])


def test_the_dashboard_links_every_run_and_lists_the_excluded(studies: dict[str, Path]) -> None:
    out = studies["cross"]
    text = (out / "dashboard.html").read_text()
    doc = doc_of(out)
    links = re.findall(r'<a href="([^"]+)">', text)
    for p in doc["points"]:
        for d in p["runs_used"]:
            assert f"{d}/dashboard.html" in links
            assert (out / d / "dashboard.html").exists()
        assert f'id="point-{p["name"]}"' in text
    assert text.count("host_cpu_not_saturated") == 3  # the three invalid attempts, with the failed check
    assert "Repetitions without a valid run" in text and "exhausted" in text
    assert 'class="quick"' not in text


def test_a_quick_study_says_so_on_its_dashboard(studies: dict[str, Path], tmp_path: Path) -> None:
    from rtclab.study import dashboard
    doc = dict(doc_of(studies["alone"]), quick_factor=0.25, quick_note="QUICK x0.25: durations and schedules scaled")
    page = dashboard.write(studies["alone"], doc, tmp_path / "quick.html")
    text = page.read_text()
    assert '<div class="quick">QUICK x0.25: durations and schedules scaled (quick factor 0.25)</div>' in text
    # Links are relative to the page wherever it is written.
    run = doc["points"][0]["runs_used"][0]
    assert re.search(r'href="[^"]*' + re.escape(Path(run).name) + '"', text)


CHROMIUM_CHECK = r"""
import puppeteer from 'puppeteer-core';
import { pathToFileURL } from 'node:url';
const browser = await puppeteer.launch({ executablePath: process.argv[1], headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'] });
const result = {};
try {
  for (const file of process.argv.slice(2)) {
    const page = await browser.newPage();
    const errors = [];
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('request', (req) => { if (!req.url().startsWith('file:')) errors.push(`network: ${req.url()}`); });
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    await page.waitForFunction('window.rtclabReady !== undefined', { timeout: 30000 });
    const readyMs = await page.evaluate("window.rtclabReady");
    const charts = await page.evaluate(() => Array.from(document.querySelectorAll('.chart')).map((el) => ({
      id: el.id, traces: (el.data ?? []).length, drawn: el.querySelector('.main-svg') !== null,
      bars: el.querySelectorAll('.point, .box, .trace path').length })));
    result[file] = { errors, charts, readyMs };
    await page.close();
  }
} finally { await browser.close(); }
console.log(JSON.stringify(result));
"""


@pytest.mark.integration  # a real headless Chromium: the real tier (scripts/test.sh)
@pytest.mark.load_tolerant  # errors and drawn charts, no time
def test_the_dashboards_load_in_chromium_without_errors(studies: dict[str, Path], tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: the setup installs Debian's chromium")
    # The cross study's dashboard and a compare page (the full plotly.js takes seconds to start on this 2-core
    # machine): the other study's dashboard is built the same way, its figures checked as JSON above.
    from rtclab.study import compare
    page, _ = compare.write(studies["cross"], studies["alone"], tmp_path / "compare.html")
    pages = [str(studies["cross"] / "dashboard.html"), str(page)]
    # Run from the repository so that puppeteer-core resolves from its node_modules.
    p = subprocess.run(["node", "--input-type=module", "-e", CHROMIUM_CHECK, CHROMIUM, *pages], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout.strip().splitlines()[-1])
    for page in pages:
        got = result[page]
        assert got["errors"] == [], (page, got["errors"])
        ids = [c["id"] for c in got["charts"]]
        assert ids == list(figures_of(Path(page))), page
        for c in got["charts"]:
            assert c["drawn"] and c["traces"] > 0 and c["bars"] > 0, (page, c)


# ---- compare ---------------------------------------------------------------------------------------------------------

def _welch_independent(a: list[float], b: list[float]) -> tuple[float, float]:
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return statistics.fmean(b) - statistics.fmean(a), t_quantile(0.975, df) * math.sqrt(va + vb)


def test_compare_puts_the_shared_point_side_by_side(studies: dict[str, Path], tmp_path: Path) -> None:
    a, b = studies["cross"], studies["alone"]
    page = tmp_path / "c.html"
    r = run_cli("compare", str(a), str(b), "--out", str(page))
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert text.startswith(f"A: cross-study (Chromium 156.0.8078.79; {a})\nB: alone-study (Chromium 155.0.7000.1; {b})")
    assert ("points in both: 1; only in A: qdisc-fifo_kbit-6000, qdisc-codel_kbit-4000, qdisc-codel_kbit-6000; "
            "only in B: solo-2000") in text
    # The cross-traffic phase of A (B has none: its cells are -), then the whole call.
    assert "phase cross_traffic (2-6 s of the call)" in text and "phase all (the whole call)" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("qdisc-fifo_kbit-4000") and "queue ms" in ln
               and text.index(ln) > text.index("phase all"))
    cells = re.split(r"\s{2,}", row.strip())
    # B - A and its Welch interval, from the runs' own values in study.parquet.
    vals = {}
    for name, out in (("a", a), ("b", b)):
        t = pq.read_table(out / "study.parquet").to_pylist()
        vals[name] = [x["queuing_delay_ms_mean"] for x in t if x["point"] == "qdisc-fifo_kbit-4000"
                      and x["flow"] == "forward:video" and x["phase"] == "all"]
    assert len(vals["a"]) == len(vals["b"]) == 2
    diff, half = _welch_independent(vals["a"], vals["b"])
    assert float(cells[5]) == pytest.approx(diff, abs=0.051)
    lo, hi = (float(x) for x in cells[6].split(" .. "))
    assert lo == pytest.approx(diff - half, abs=0.051) and hi == pytest.approx(diff + half, abs=0.051)
    assert cells[3].startswith(f"{statistics.fmean(vals['a']):.1f} ±") and cells[3].endswith("n=2")
    figs = figures_of(page)
    assert figs and all(any(_has_data(t) for t in f["data"] if t["visible"]) for f in figs.values())
    q = figs["compare-queuing_delay_ms_mean"]["data"]
    assert {t["name"] for t in q} == {"A: cross-study", "B: alone-study"}


# ---- bad input -------------------------------------------------------------------------------------------------------

def test_bad_input_exits_2_with_a_message(studies: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """In process (the CLI's own main; one case also through `rtclab study` in a subprocess below)."""
    from rtclab_study.__main__ import main
    (tmp_path / "planned").mkdir()
    (tmp_path / "planned" / "plan.json").write_text((studies["alone"] / "plan.json").read_text())
    cases = [
        (["report", str(tmp_path / "nowhere")], "is not a directory"),
        (["report", str(tmp_path)], "holds no plan.json: not a study directory"),
        (["report", str(tmp_path / "planned")], "holds no study.json: run `rtclab study aggregate"),
        (["report", str(studies["alone"]), "--phase", "cross_traffic"], "no phase 'cross_traffic' in this study"),
        (["report", str(studies["alone"]), "--metric", "queue"], "unknown metric(s) queue"),
        (["compare", str(studies["alone"]), str(tmp_path)], "not a study directory"),
        (["compare", str(tmp_path / "planned"), str(studies["alone"])], "holds no study.json"),
    ]
    for args, message in cases:
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert message in err, (args, err)
    r = subprocess.run([sys.executable, "-m", "rtclab.cli", "study", "report", str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "not a study directory" in r.stderr, r.stderr
    assert not list(tmp_path.glob("**/dashboard.html")) and not list(tmp_path.glob("**/*.html"))


def test_the_dashboard_shows_priority_shares_asked_and_achieved(tmp_path: Path) -> None:
    """Several video flows (issue 9): the study dashboard draws each point's asked share against the achieved share,
    mean and 95% CI over the point's valid runs used (from their metrics.json multiflow.shares), and draws nothing of
    the kind for a study whose runs have one flow."""
    out = build(tmp_path, ALONE_STUDY, "Chromium 156.0.8078.79 built on Debian", 0, False)
    assert "shares" not in figures_of(out / "dashboard.html")
    doc = json.loads((out / "study.json").read_text())
    achieved: dict[str, list[float]] = {}
    for p in doc["points"]:
        for i, run_dir in enumerate(p["runs_used"]):
            got = 0.2 + 0.05 * i + (0.1 if p["name"] == "solo-2000" else 0.0)
            achieved.setdefault(p["name"], []).append(got)
            mpath = out / run_dir / "metrics.json"
            m = json.loads(mpath.read_text())
            m["multiflow"] = {"shares": {"flows": [
                {"call": "c1", "track": "v1", "priority": "low", "asked_share": 0.2, "achieved_share": got},
                {"call": "c1", "track": "v2", "priority": "high", "asked_share": 0.8, "achieved_share": 1 - got}]}}
            mpath.write_text(json.dumps(m))
    r = run_cli("report", str(out))
    assert r.returncode == 0, r.stderr
    fig = figures_of(out / "dashboard.html")["shares"]
    asked_trace, got_trace = fig["data"]
    for p in doc["points"]:
        i = asked_trace["x"].index(f"{p['name']} c1/v1")
        assert asked_trace["y"][i] == pytest.approx(0.2)
        values = achieved[p["name"]]
        assert got_trace["y"][i] == pytest.approx(statistics.fmean(values))
        j = asked_trace["x"].index(f"{p['name']} c1/v2")
        assert got_trace["y"][j] == pytest.approx(statistics.fmean([1 - v for v in values]))
        if len(values) > 1:
            half = t_quantile(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
            assert got_trace["error_y"]["array"][i] == pytest.approx(half)
