"""`rtclab import webrtc-internals|rtcstats FILE` (rtclab/imports/getstats_dump.py, docs/export.md "Importing getStats
dumps") and `rtclab compare` of an imported field call beside a lab run.

The dumps are made from a real lab call's getStats (lab run uvmsl3, the README's default call, 60 s:
analysis/test/data/lab-call-uvmsl3/, its getstats-a/-b.jsonl with the stats types the analyzer reads, and its
metrics.json's getStats means in lab-getstats.json) by the independent writers of test-support/dump_writers.py: no
page of the harness saves a dump, so the lab run's records are converted into each layout. The bar: the imported
run's getStats rates are the lab run's within 1 %. Hand-made edge cases: the older webrtc-internals layout, legacy
goog stats, several peer connections, truncated and foreign files."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import dump_writers
import pytest

from rtclab import cli, metrics_schema
from rtclab.imports import getstats_dump
from rtclab.imports.statsdump import DumpError

LAB = Path(__file__).parent / "data" / "lab-call-uvmsl3"
BAR = 0.01  # the bar: an imported dump's getStats rates within 1 % of the lab run's


def lab_lines(side: str) -> list[dict[str, Any]]:
    """The lab call's getStats samples that hold a stats object (its first, before the transport existed, has none
    of the kinds kept)."""
    lines = [json.loads(x) for x in gzip.decompress((LAB / f"getstats-{side}.jsonl.gz").read_bytes()).splitlines()]
    return [ln for ln in lines if ln["report"]]


def lab_means() -> dict[str, Any]:
    return json.loads((LAB / "lab-getstats.json").read_text())


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return code, out.getvalue(), err.getvalue()


def write_dump(path: Path, kind: str, pcs: dict[str, list[dict[str, Any]]], **kw: Any) -> Path:
    if kind == "webrtc-internals":
        path.write_text(json.dumps(dump_writers.webrtc_internals(pcs, **kw)))
    elif kind == "rtcstats-2":
        path.write_text(dump_writers.rtcstats_classic(pcs))
    else:
        path.write_text(dump_writers.rtcstats_format3(pcs, **kw))
    return path


def imported(tmp_path: Path, kind: str, side: str, name: str, **kw: Any) -> dict[str, Any]:
    dump = write_dump(tmp_path / f"{name}.dump", kind, {"1234-1": lab_lines(side)}, **kw)
    out = tmp_path / name
    code, stdout, err = run_cli("import", kind.split("-")[0] if kind.startswith("rtcstats") else kind, str(dump),
                                "--out", str(out), "--side", side)
    assert code == 0, err
    assert "IMPORTED" in stdout
    return json.loads((out / "metrics.json").read_text())


def streams(m: dict[str, Any], direction: str = "forward") -> dict[str, dict[str, Any]]:
    return {s["kind"]: s for s in m["getstats"]["directions"][direction]["streams"]}


def assert_within(got: float | None, want: float, what: str) -> None:
    assert got is not None and abs(got - want) <= BAR * abs(want), f"{what}: imported {got}, lab {want}"


@pytest.mark.parametrize("kind", ["webrtc-internals", "rtcstats-2", "rtcstats-3"])
def test_an_imported_dump_of_a_lab_call_gives_its_getstats_rates_within_1_percent(tmp_path: Path, kind: str) -> None:
    lab = {s["kind"]: s for s in lab_means()["forward"]["streams"]}
    sender = imported(tmp_path, kind, "a", "sender")  # the sending browser's dump, as side a
    receiver = imported(tmp_path, kind, "b", "receiver")  # the receiving browser's dump, as side b
    for k in ("video", "audio"):
        a, b = streams(sender)[k], streams(receiver)[k]
        assert a["ssrc"] == lab[k]["ssrc"] == b["ssrc"]
        assert_within(a["sent_bitrate_bps"]["mean"], lab[k]["sent_bitrate_bps"], f"{kind} {k} sent")
        assert_within(a["target_bitrate_bps"]["mean"], lab[k]["target_bitrate_bps"], f"{kind} {k} target")
        assert_within(a["rtt_ms"]["mean"], lab[k]["rtt_ms"], f"{kind} {k} RTT")
        assert_within(b["received_bitrate_bps"]["mean"], lab[k]["received_bitrate_bps"], f"{kind} {k} received")
    assert_within(streams(receiver)["video"]["received_fps"]["mean"], lab["video"]["received_fps"], f"{kind} fps")
    assert_within(sender["getstats"]["directions"]["forward"]["available_outgoing_bitrate_bps"]["mean"],
                  lab_means()["forward"]["available_outgoing_bitrate_bps"], f"{kind} available outgoing")


def independent_sent_rate(lines: list[dict[str, Any]], ssrc: int) -> float:
    """The mean of bytesSent's rate between consecutive samples, computed here from the lab's own lines."""
    pts = [(ln["t"], o["bytesSent"]) for ln in lines for o in ln["report"]
           if o["type"] == "outbound-rtp" and o.get("ssrc") == ssrc]
    rates = [(b1 - b0) * 8 / (t1 - t0) for (t0, b0), (t1, b1) in zip(pts, pts[1:])]
    return sum(rates) / len(rates)


@pytest.mark.parametrize("kind", ["webrtc-internals", "rtcstats-3"])
def test_the_sent_rate_is_the_counters_own_rate(tmp_path: Path, kind: str) -> None:
    lines = lab_lines("a")
    m = imported(tmp_path, kind, "a", "sender")
    video = streams(m)["video"]
    assert_within(video["sent_bitrate_bps"]["mean"], independent_sent_rate(lines, video["ssrc"]), kind)
    series = next(v for k, v in m["getstats"]["directions"]["forward"]["series"].items()
                  if k.startswith("sent_bitrate_bps:video"))
    with_video = [ln for ln in lines if any(o["type"] == "outbound-rtp" and o.get("kind") == "video"
                                            for o in ln["report"])]
    assert len(series) == len(with_video) - 1  # one sample per getStats call: none merged, none split


def test_an_imported_run_says_what_it_has_not_and_shows_no_zeros(tmp_path: Path) -> None:
    m = imported(tmp_path, "webrtc-internals", "a", "field")
    assert metrics_schema.problems(m) == []
    imp = m["imported"]
    assert imp["kind"] == "webrtc-internals" and imp["captures"] is None and imp["network_ground_truth"] is None
    assert set(getstats_dump.NO_CAPTURES) <= set(imp["no_captures"])
    assert m["flows"] == [] and m["fairness"] == {}
    for section in ("rfc8867", "multiflow", "bottleneck_queue", "ground_truth", "frames", "cpu", "capacity_bps"):
        assert m[section] is None, section
    assert m["validity"]["valid"] is None  # neither valid nor INVALID: nothing of a lab to judge
    assert m["run"]["duration_s"] == pytest.approx(lab_lines("a")[-1]["t"] - lab_lines("a")[0]["t"], abs=0.01)
    report = (tmp_path / "field" / "report.txt").read_text()
    assert "IMPORTED" in report and "sections without captures" in report
    for why in getstats_dump.NO_CAPTURES.values():
        assert why in report
    page = (tmp_path / "field" / "dashboard.html").read_text()
    assert "IMPORTED" in page and "Congestion controller at a" in page
    # The received side was not in the sender's dump: missing, not 0
    video = streams(m)["video"]
    assert video.get("received_bitrate_bps") is None and "getstats-b.jsonl missing" in " ".join(m["problems"])
    # the run's other commands read it as a lab run's
    assert run_cli("dashboard", str(tmp_path / "field"))[0] == 0
    code, _, err = run_cli("export", "csv", str(tmp_path / "field"), "--out", str(tmp_path / "field.csv"))
    assert code == 0, err


@pytest.mark.parametrize("layout", ["ms", "older"])
def test_the_other_webrtc_internals_layouts_give_the_same_rates(tmp_path: Path, layout: str) -> None:
    chromium_m = imported(tmp_path, "webrtc-internals", "a", "chromium")
    assert "ISO dates" in chromium_m["imported"]["layout"] and "timestamp series" in chromium_m["imported"]["layout"]
    other_m = imported(tmp_path, "webrtc-internals", "a", layout, layout=layout)
    assert ("ISO dates" if layout == "older" else "times in ms") in other_m["imported"]["layout"]
    assert "laid evenly" in other_m["imported"]["layout"]
    chromium, other = streams(chromium_m), streams(other_m)
    for k in ("video", "audio"):
        # laid evenly, a point's time is off its own by the getStats calls' jitter (a few ms in the lab call)
        assert other[k]["sent_bitrate_bps"]["mean"] == pytest.approx(chromium[k]["sent_bitrate_bps"]["mean"], rel=1e-3)
        assert other[k]["rtt_ms"]["mean"] == pytest.approx(chromium[k]["rtt_ms"]["mean"], rel=1e-6)


def test_chromiums_timestamp_series_gives_every_sample_its_own_time(tmp_path: Path) -> None:
    """Chromium 156's `<id>-timestamp` series: each imported sample is at its getStats call's own time, however
    unevenly the calls came (here one call of the lab's moved 300 ms later), where laying them evenly could not."""
    lines = lab_lines("a")[:20]
    moved = [dict(ln, t=ln["t"] + 0.3 if i == 10 else ln["t"], report=[
        dict(o, timestamp=o["timestamp"] + 300 if i == 10 and o["type"] not in ("remote-inbound-rtp",) else
             o["timestamp"]) for o in ln["report"]]) for i, ln in enumerate(lines)]
    dump = write_dump(tmp_path / "moved.json", "webrtc-internals", {"1-1": moved})
    calls = getstats_dump.import_dump("webrtc-internals", dump, tmp_path / "moved")
    got = [json.loads(x)["t"] for x in (tmp_path / "moved" / "getstats-a.jsonl").read_text().splitlines()]
    own = [statistics.median(o["timestamp"] for o in ln["report"] if not o["type"].startswith("remote-")) / 1000
           for ln in moved]
    assert got == pytest.approx(own, abs=1e-6)
    assert calls[0].samples == len(moved)


def legacy_dump(n: int = 11) -> dict[str, Any]:
    """A hand-made older dump of legacy goog stats: 1 Mbit/s of video sent (125000 bytes a second), googRtt 50 ms,
    the bandwidth estimate 1.2 Mbit/s; values as strings, times as ISO dates, no statsType (the ids say the type)."""
    start = 1795830000000

    def series(values: list[Any]) -> dict[str, Any]:
        return {"startTime": dump_writers._iso(start), "endTime": dump_writers._iso(start + 1000 * (n - 1)),
                "values": json.dumps(values)}
    stats = {"ssrc_1111_send-ssrc": series(["1111"] * n), "ssrc_1111_send-mediaType": series(["video"] * n),
             "ssrc_1111_send-bytesSent": series([str(125000 * i) for i in range(n)]),
             "ssrc_1111_send-googRtt": series(["50"] * n),
             "ssrc_1111_send-googFrameRateSent": series(["30"] * n),
             "bweforvideo-googAvailableSendBandwidth": series(["1200000"] * n),
             "bweforvideo-googTargetEncBitrate": series(["1100000"] * n)}
    return {"PeerConnections": {"77-1": {"stats": stats, "updateLog": [], "url": "https://old.example"}},
            "UserAgent": "Chrome/60"}


def test_legacy_goog_stats_are_read_as_standard_ones(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text(json.dumps(legacy_dump()))
    calls = getstats_dump.import_dump("webrtc-internals", tmp_path / "old.txt", tmp_path / "old")
    m = calls[0].metrics
    video = streams(m)["video"]
    assert video["ssrc"] == 1111
    assert video["sent_bitrate_bps"]["mean"] == pytest.approx(1e6)
    assert video["target_bitrate_bps"]["mean"] == pytest.approx(1.1e6)
    assert video["rtt_ms"]["mean"] == pytest.approx(50.0)
    assert m["getstats"]["directions"]["forward"]["available_outgoing_bitrate_bps"]["mean"] == pytest.approx(1.2e6)
    assert any("legacy (goog)" in n for n in m["imported"]["notes"])


def test_several_peer_connections_become_one_call_each(tmp_path: Path) -> None:
    lines = lab_lines("a")
    later = [dict(ln, t=ln["t"] + 100, report=[dict(o, timestamp=o["timestamp"] + 100000) for o in ln["report"]])
             for ln in lines[:30]]
    no_media = [dict(ln, report=[o for o in ln["report"] if o["type"] == "transport"]) for ln in lines[:5]]
    pcs = {"1-1": lines, "1-2": later, "1-3": no_media}
    for kind in ("webrtc-internals", "rtcstats-2"):
        out = tmp_path / kind
        calls = getstats_dump.import_dump(kind.split("-")[0] if kind.startswith("rtcstats") else kind,
                                          write_dump(tmp_path / f"{kind}.dump", kind, pcs), out)
        assert [(c.call_id, c.peer_connection, c.run_dir.name) for c in calls] == [("c1", "1-1", "c1"),
                                                                                   ("c2", "1-2", "c2")]
        index = json.loads((out / "imported.json").read_text())
        assert [c["peer_connection"] for c in index["calls"]] == ["1-1", "1-2"] and index["without_rtp"] == ["1-3"]
        first, second = (json.loads((out / c / "metrics.json").read_text()) for c in ("c1", "c2"))
        assert first["run"]["duration_s"] == pytest.approx(lines[-1]["t"] - lines[0]["t"], abs=0.01)
        assert second["run"]["duration_s"] == pytest.approx(later[-1]["t"] - later[0]["t"], abs=0.01)
        assert second["run"]["call_start"] == pytest.approx(later[0]["t"], abs=0.01)
        for d in ("c1", "c2"):
            assert (out / d / "dashboard.html").exists() and (out / d / "report.txt").exists()


def test_a_removed_object_in_format_3_ends_its_stream(tmp_path: Path) -> None:
    lines = lab_lines("a")
    video_id = next(o["id"] for o in lines[-1]["report"] if o["type"] == "outbound-rtp" and o["kind"] == "video")
    m = imported(tmp_path, "rtcstats-3", "a", "gone", drop_after={video_id: 30})
    series = next(v for k, v in m["getstats"]["directions"]["forward"]["series"].items()
                  if k.startswith("sent_bitrate_bps:video"))
    assert max(t for t, _ in series) < lines[30]["t"] - lines[0]["t"]


@pytest.mark.parametrize("kind", ["webrtc-internals", "rtcstats"])
def test_a_truncated_dump_is_refused_naming_the_truncation(tmp_path: Path, kind: str) -> None:
    full = (write_dump(tmp_path / "full", "webrtc-internals" if kind == "webrtc-internals" else "rtcstats-2",
                       {"1-1": lab_lines("a")})).read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(full[: len(full) // 2])
    code, _, err = run_cli("import", kind, str(cut), "--out", str(tmp_path / "out"))
    assert code == 2 and "truncated" in err and str(cut) in err
    assert not (tmp_path / "out").exists()
    gz = tmp_path / "cut.gz"
    gz.write_bytes(gzip.compress(full.encode())[:2000])
    code, _, err = run_cli("import", kind, str(gz), "--out", str(tmp_path / "out2"))
    assert code == 2 and "gzip" in err and "cut short" in err


def test_foreign_and_empty_files_are_refused_naming_what_is_wrong(tmp_path: Path) -> None:
    rtc = write_dump(tmp_path / "rtc.jsonl", "rtcstats-2", {"1-1": lab_lines("a")[:3]})
    internals = write_dump(tmp_path / "wi.json", "webrtc-internals", {"1-1": lab_lines("a")[:3]})
    cases = [("webrtc-internals", rtc, "not valid JSON"), ("rtcstats", internals, "a chrome://webrtc-internals dump"),
             ("webrtc-internals", tmp_path / "missing.txt", "no such file")]
    (tmp_path / "empty.txt").write_text("")
    cases.append(("rtcstats", tmp_path / "empty.txt", "empty"))
    (tmp_path / "nopc.json").write_text(json.dumps({"getUserMedia": []}))
    cases.append(("webrtc-internals", tmp_path / "nopc.json", "PeerConnections"))
    (tmp_path / "nomedia.json").write_text(json.dumps(dump_writers.webrtc_internals(
        {"1-1": [dict(ln, report=[o for o in ln["report"] if o["type"] == "transport"]) for ln in lab_lines("a")]})))
    cases.append(("webrtc-internals", tmp_path / "nomedia.json", "no peer connection with RTP streams"))
    for i, (kind, path, words) in enumerate(cases):
        code, _, err = run_cli("import", kind, str(path), "--out", str(tmp_path / f"o{i}"))
        assert code == 2 and words in err, (kind, path.name, err)


def test_the_target_directory_must_be_new_or_empty(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "d.json", "webrtc-internals", {"1-1": lab_lines("a")[:5]})
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(DumpError, match="not an empty directory"):
        getstats_dump.import_dump("webrtc-internals", dump, tmp_path / "busy")


def lab_run(tmp_path: Path) -> Path:
    """The lab call as a run directory: its manifest and getStats (its captures are not in the test data)."""
    run = tmp_path / "lab"
    run.mkdir()
    shutil.copy(LAB / "manifest.json", run / "manifest.json")
    for side in ("a", "b"):
        (run / f"getstats-{side}.jsonl").write_bytes(gzip.decompress((LAB / f"getstats-{side}.jsonl.gz").read_bytes()))
    return run


def figures_of(page: str) -> dict[str, Any]:
    doc = page.split('<script id="figures" type="application/json">')[1].split("</script>")[0]
    return {f["id"]: f["fig"] for f in json.loads(doc.replace("<\\/", "</"))}


def test_compare_shows_an_imported_field_call_beside_the_lab_run(tmp_path: Path) -> None:
    lab = lab_run(tmp_path)
    imported(tmp_path, "webrtc-internals", "a", "field")
    out = tmp_path / "compare.html"
    code, stdout, err = run_cli("compare", str(tmp_path / "field"), str(lab), "--out", str(out), "-q")
    assert code == 0, err
    figs = figures_of(out.read_text())
    sent = figs["gs_sent_bitrate_bps"]["data"]
    assert [t["name"] for t in sent] == ["field", "default lab"]
    lab_m = json.loads((lab / "metrics.json").read_text())
    field_m = json.loads((tmp_path / "field" / "metrics.json").read_text())
    for trace, m in zip(sent, (field_m, lab_m)):  # each line is its run's own series, in Mbit/s
        want = next(v for k, v in m["getstats"]["directions"]["forward"]["series"].items()
                    if k.startswith("sent_bitrate_bps:video"))
        assert [y for y in trace["y"] if y is not None] == pytest.approx([v * 1e-6 for _, v in want])
    # the receiver's view is the lab run's alone; the field dump (the sender's) is named as without it
    assert [t["name"] for t in figs["gs_received_bitrate_bps"]["data"]] == ["default lab"]
    page = out.read_text()
    assert "holds no receiver&#x27;s view" in page or "holds no receiver's view" in page
    assert "imported" in stdout and "field" in stdout and "lab" in stdout
    lab_video = next(s for s in lab_m["getstats"]["directions"]["forward"]["streams"] if s["kind"] == "video")
    assert_within(lab_video["sent_bitrate_bps"]["mean"], lab_means()["forward"]["streams"][1]["sent_bitrate_bps"],
                  "today's analysis of the lab run against its metrics.json")
