"""The run dashboard read at a glance, checked in real headless Chromium from plotly's own layout and the SVG it drew:
every panel's legend lies beside its panel (right of the plot area, within the panel's height, not cut off, naming
exactly that panel's traces), a sampled series has no line drawn across a gap (the frames' stall) and a line over
each stretch between gaps, and a sparse series (audio's RTCP RTT, GCC's probes) is drawn as markers only, one per
sample. The run: a synthetic 30 s call (rtclab.synth) with the receiving page's frames and a 1 s stall, side a's RTC
event log a real one of Chromium 156 (analysis/test/data) with the call's clock set to it, and getStats whose audio
RTT is renewed every 5 s, as RTCP receiver reports renew it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rtclab import cli, synth
from rtclab.eventlog import parser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
REAL_LOG = Path(__file__).parent / "data" / "eventlog-chromium156-a.log"
STALL = (15.0, 16.0)
AUDIO_RTT_EVERY_S = 5
VIEWPORT_WIDTH = 1280  # a laptop's screen

pytestmark = [
    pytest.mark.integration,  # a real headless Chromium: the real tier (scripts/test.sh)
    pytest.mark.load_tolerant,  # positions and paths on the page, no time
]

# Opens the page, waits until every figure is drawn, and reads per chart: the plot area and each panel (y axis) in px
# from plotly's layout, each legend's box and entries from the SVG, each trace's drawn line pieces (the x extent of
# each subpath of its line, in data units) and its drawn markers.
BROWSER_CHECK = r"""
import puppeteer from 'puppeteer-core';
import { pathToFileURL } from 'node:url';
const [chromium, file, width] = process.argv.slice(1);
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'] });
try {
  const page = await browser.newPage();
  await page.setViewport({ width: Number(width), height: 900 });
  const errors = [];
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  await page.waitForFunction('window.rtclabReady !== undefined', { timeout: 30000 });
  const charts = await page.evaluate(() => Array.from(document.querySelectorAll('.chart')).map((gd) => {
    const fl = gd._fullLayout;
    const origin = gd.getBoundingClientRect();
    const box = (r) => ({ left: r.left - origin.left, right: r.right - origin.left, top: r.top - origin.top,
      bottom: r.bottom - origin.top });
    const panels = Object.keys(fl).filter((k) => /^yaxis\d*$/.test(k)).map((k) => ({ axis: k.replace('axis', ''),
      top: fl[k]._offset, bottom: fl[k]._offset + fl[k]._length }));
    const legends = fl._legends.map((id) => {
      const g = gd.querySelector(`.main-svg g.${id}`);
      return { id, box: g ? box(g.querySelector('.bg').getBoundingClientRect()) : null,
        scrolls: fl[id]._effHeight < fl[id]._height,
        // plotly names an entry's text after its legend: legendtext, legend2text, ...
        items: g ? Array.from(g.querySelectorAll(`g.traces text.${id}text`)).map((t) => t.textContent) : [] };
    });
    const traces = gd._fullData.map((tr) => ({ name: tr.name, mode: tr.mode, yaxis: tr.yaxis, legend: tr.legend,
      showlegend: tr.showlegend, pieces: [], markers: 0 }));
    const xa = fl.xaxis;
    for (const g of gd.querySelectorAll('g.trace.scatter')) {
      const tr = traces[g.__data__[0].trace.index];
      for (const p of g.querySelectorAll('path.js-line')) {
        for (const sub of (p.getAttribute('d') || '').split('M').filter((s) => s.trim())) {
          const xs = Array.from(('M' + sub).matchAll(/[MLH]\s*(-?[\d.]+(?:e-?\d+)?)/g), (mt) => xa.p2d(Number(mt[1])));
          if (xs.length > 1) tr.pieces.push([Math.min(...xs), Math.max(...xs)]);
        }
      }
      tr.markers = Array.from(g.querySelectorAll('path.point')).filter((p) => {
        const r = p.getBBox(); return r.width > 0 && r.height > 0;
      }).length;
    }
    return { id: gd.id, width: fl.width, plot: { left: xa._offset, right: xa._offset + xa._length }, panels, legends,
      traces, pxPerX: xa._length / (xa.range[1] - xa.range[0]) };
  }));
  console.log(JSON.stringify({ errors, charts }));
} finally { await browser.close(); }
"""


def _add_audio_rtt(getstats_a: Path, start_epoch_s: float) -> int:
    """An audio remote-inbound-rtp in every poll, its RTT renewed (roundTripTimeMeasurements grows) every
    AUDIO_RTT_EVERY_S, as RTCP receiver reports renew it; returns how many RTT samples that makes."""
    lines = [json.loads(x) for x in getstats_a.read_text().splitlines()]
    renewed = 0
    for line in lines:
        s = round(line["t"] - start_epoch_s)
        renewed = s // AUDIO_RTT_EVERY_S
        if renewed:
            line["report"].append({"id": "RIaudio", "type": "remote-inbound-rtp", "timestamp": line["t"] * 1000,
                                   "kind": "audio", "ssrc": synth.AUDIO_SSRC, "roundTripTime": 0.05 + renewed / 1000,
                                   "roundTripTimeMeasurements": renewed, "packetsLost": 0, "fractionLost": 0.0})
    getstats_a.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return renewed


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: the setup installs Debian's chromium")
    log = parser.read(REAL_LOG)
    first_ms = float(min(log.delay_based["time_ms"][0], log.loss_based["time_ms"][0]))
    start = (first_ms + log.utc_offset_ms) / 1000 - 0.5  # the call starts half a second before the log's first event
    run = tmp_path_factory.mktemp("layout") / "run"
    synth.write_run(run, synth.SynthConfig(duration_s=30.0, frames=True, stall_s=STALL, start_epoch_s=start))
    shutil.copy(REAL_LOG, run / "eventlog-a.log")
    audio_rtts = _add_audio_rtt(run / "getstats-a.jsonl", start)
    assert cli.main(["analyze", str(run), "-q", "--no-tshark"]) in (0, 3)  # the log is another call's: may be INVALID
    p = subprocess.run(["node", "--input-type=module", "-e", BROWSER_CHECK, CHROMIUM, str(run / "dashboard.html"),
                        str(VIEWPORT_WIDTH)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["errors"] == []
    return {"m": json.loads((run / "metrics.json").read_text()), "charts": {c["id"]: c for c in got["charts"]},
            "audio_rtts": audio_rtts}


def test_every_panel_has_its_own_legend_beside_it(page: dict[str, Any]) -> None:
    charts = page["charts"]
    assert list(charts) == ["timeseries", "owd", "cdf"]
    # rates, congestion controller, RTT/Tq, frames, GCC's estimates and its detector (the real log), loss, fps,
    # resolution, CPU
    assert len(charts["timeseries"]["panels"]) == 10
    for chart in charts.values():
        legends = {lg["id"]: lg for lg in chart["legends"]}
        assert len(legends) == len(chart["panels"]), chart["id"]
        for panel in chart["panels"]:
            traces = [t for t in chart["traces"] if t["yaxis"] == panel["axis"]]
            (legend_id,) = {t["legend"] for t in traces}  # one legend per panel, no other panel's traces in it
            lg = legends[legend_id]
            assert sorted(lg["items"]) == sorted(t["name"] for t in traces if t["showlegend"]), (chart["id"], panel)
            box = lg["box"]
            assert box is not None, (chart["id"], legend_id)  # plotly drew this legend
            where = f"{chart['id']} panel {panel['axis']}: legend {box}, panel {panel}, plot {chart['plot']}"
            assert box["left"] >= chart["plot"]["right"], where  # right of the plot area, over none of it
            assert box["right"] <= chart["width"] + 0.5, where  # not cut off at the figure's edge
            assert panel["top"] - 0.5 <= box["top"] and box["bottom"] <= panel["bottom"] + 0.5, where  # its rows
            assert not lg["scrolls"], where  # the panel is as high as its legend needs


def _runs_between_gaps(t: list[float]) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The stretches of samples (first, last) and the gaps (last before, first after) between them: a gap where two
    samples are more than twice the series' median interval apart (docs/analyzer.md, "The run dashboard")."""
    x = np.asarray(t, dtype=float)
    d = np.diff(x)
    cut = np.flatnonzero(d > 2 * np.median(d))
    starts = np.concatenate([[0], cut + 1])
    ends = np.concatenate([cut, [len(x) - 1]])
    return ([(x[a], x[b]) for a, b in zip(starts, ends)], [(x[i], x[i + 1]) for i in cut])


def test_a_sampled_series_has_no_line_across_a_gap_and_one_over_each_stretch(page: dict[str, Any]) -> None:
    chart = page["charts"]["timeseries"]
    tol = 1.5 / chart["pxPerX"]  # a pixel and a half, in seconds
    ser = page["m"]["frames"]["b"]["series"]
    stretches, gaps = _runs_between_gaps(ser["t_s"])
    assert any(a < STALL[0] + 0.5 and b > STALL[1] for a, b in gaps), gaps  # the stall is one of the gaps
    g2g = next(t for t in chart["traces"] if t["name"].startswith("glass-to-glass"))
    assert g2g["pieces"], g2g
    for a, b in gaps:
        assert not [p for p in g2g["pieces"] if p[0] <= a + tol and p[1] >= b - tol], (a, b)
    for a, b in stretches:
        if b > a:
            assert any(abs(p[0] - a) <= tol and abs(p[1] - b) <= tol for p in g2g["pieces"]), (a, b)
    # The video's RTT, renewed every poll here: one line from its first sample to its last.
    (key,) = [k for k in page["m"]["getstats"]["directions"]["forward"]["series"] if k.startswith("rtt_ms:video")]
    rtt = page["m"]["getstats"]["directions"]["forward"]["series"][key]
    video = next(t for t in chart["traces"] if t["name"] == "RTT video")
    assert len(video["pieces"]) == 1 and video["pieces"][0] == pytest.approx([rtt[0][0], rtt[-1][0]], abs=tol)


def test_a_sparse_series_is_markers_one_per_sample(page: dict[str, Any]) -> None:
    chart = page["charts"]["timeseries"]
    series = page["m"]["getstats"]["directions"]["forward"]["series"]
    (key,) = [k for k in series if k.startswith("rtt_ms:audio")]
    assert len(series[key]) == page["audio_rtts"] >= 5
    ser = page["m"]["congestion_controller"]["sides"]["a"]["series"]
    expected = {"RTT audio": len(series[key]), "probe cluster": len(ser["probe_clusters_bps"]),
                "probe result": len(ser["probe_results_bps"])}
    assert expected["probe cluster"] > 0 and expected["probe result"] > 0  # the real log has probes
    for name, n in expected.items():
        tr = next(t for t in chart["traces"] if t["name"] == name)
        assert tr["mode"] == "markers" and tr["pieces"] == [] and tr["markers"] == n, (name, tr, n)
