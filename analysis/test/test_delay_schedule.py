"""A link's delay_schedule in the analyzer (docs/netem.md, docs/metrics.md `queuing_delay_ms`, `tq_ms`): the
scenario's view reads it, and each packet's queuing delay is its one-way delay minus the delay in force when it was
sent, on a hand-built run whose packets cross a 25 -> 125 -> 5 ms link with a known wait at the bottleneck."""

from __future__ import annotations

import numpy as np
import pytest

from rtclab import packets, scenario
from rtclab.analyze import analyze
from runbuild import MS, T0_NS, Run
from runbuild import scenario as scenario_doc

STEPS = [{"at_s": 2, "delay_ms": 125}, {"at_s": 4, "delay_ms": 5}]


def test_the_view_reads_the_steps_and_gives_the_delay_in_force() -> None:
    s = scenario.view(scenario_doc(6, {"delay_ms": 25, "delay_schedule": STEPS}))
    assert s.forward.delay_schedule == ((2, 125), (4, 5))
    assert [s.forward.delay_ms_at(t) for t in (0, 1.999, 2, 3.5, 4, 100)] == [25, 25, 125, 125, 5, 5]
    assert s.reverse.delay_schedule == ()
    assert s.round_trip_propagation_ms_at(3) == 125
    with pytest.raises(scenario.ScenarioError, match="delay_schedule"):
        scenario.view(scenario_doc(6, {"delay_schedule": [{"at_s": 0, "delay_ms": 5}]}))


def test_propagation_by_send_time() -> None:
    link = scenario.view(scenario_doc(6, {"delay_ms": 25, "delay_schedule": STEPS})).forward
    prop = packets.propagation_of(link, T0_NS)
    t = np.array([T0_NS, T0_NS + 2000 * MS - 1, T0_NS + 2000 * MS, T0_NS + 4500 * MS], dtype=np.int64)
    assert prop.at(t).tolist() == [25 * MS, 25 * MS, 125 * MS, 5 * MS]


def test_queuing_delay_subtracts_the_step_in_force(tmp_path) -> None:
    run = Run()
    sent, waits = [], []
    for i in range(300):  # one packet every 20 ms for 6 s; each waits 0-9 ms at the bottleneck
        t = T0_NS + i * 20 * MS
        wait = (i % 10) * MS
        delay = 25 if t < T0_NS + 2000 * MS else 125 if t < T0_NS + 4000 * MS else 5
        run.rtp(t, [t + wait + delay * MS], seq=i, ts=i * 900)
        sent.append(t)
        waits.append(wait / MS)
    (tmp_path / "r").mkdir()
    run.write(tmp_path / "r", scenario_doc(6, {"delay_ms": 25, "delay_schedule": STEPS}))
    m, table = analyze(tmp_path / "r", run_tshark=False)
    c = table.cols
    fwd = (c["direction"] == packets.FORWARD) & (c["status"] == packets.DELIVERED)
    got = c["queuing_delay_ns"][fwd] / MS
    assert got.tolist() == pytest.approx(waits)  # the step itself never reads as queue
    video = next(f for f in m["flows"] if f["direction"] == "forward")
    assert video["queuing_delay_ms"]["max"] == pytest.approx(9.0)
    assert video["owd_ms"]["max"] == pytest.approx(134.0)
