"""studies/thesis/ecn_table.py, the thesis' table, against what a synthetic path did."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from rtclab import synth
from rtclab.analyze import analyze

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ecn_table", ROOT / "studies" / "thesis" / "ecn_table.py")
assert _spec and _spec.loader
ecn_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ecn_table)


def test_jitter_is_the_mean_delay_change_between_neighbours_of_the_synthetic_tcp_flow(tmp_path):
    run = tmp_path / "run"
    truth = synth.write_run(run,
                            synth.SynthConfig(duration_s=3.0, duplicate=0.0, reorder=0.0, loss=0.0, tcp_flows=1,
                                              tcp_start_s=0.5, tcp_stop_s=2.5))
    m, _ = analyze(run, run_tshark=False, write=True)
    tcp = next(f for f in m["flows"] if f["direction"] == "forward" and f["protocol"] == "tcp")
    # Independent: the model's own one-way delays of its TCP packets, in send order.
    sel = truth.kind == 3
    owd = (truth.t_recv_ns[sel] - truth.t_send_ns[sel])[np.argsort(truth.t_send_ns[sel], kind="stable")]
    assert ecn_table.jitter_ms(run, tcp["id"]) == pytest.approx(np.abs(np.diff(owd)).mean() / 1e6, rel=1e-9)
    # The row takes the busiest flow of a DSCP 46 cross-traffic item: there is none in a synthetic run, and it says so.
    with pytest.raises(ValueError, match="DSCP 46"):
        ecn_table.run_row(run)
    # Make the scenario's TCP item the priority one: the row is its flow's numbers (port 5201: item 0).
    assert tcp["dst"].endswith(":5201")
    m["scenario"]["cross_traffic"][0]["dscp"] = 46
    (run / "metrics.json").write_text(json.dumps(m, default=str))
    row = ecn_table.run_row(run)
    assert row["prio_rate_mean_kbit"] == pytest.approx(tcp["throughput_bps"]["windows"]["0.15s"]["mean"] / 1e3)
    assert row["prio_owd_p99_ms"] == tcp["owd_ms"]["p99"]
    assert row["prio_loss_percent"] == 0.0


def test_no_study_is_exit_2(tmp_path, capsys):
    assert ecn_table.main([str(tmp_path)]) == 2
    assert "study.json missing" in capsys.readouterr().err
