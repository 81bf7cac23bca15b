"""The two queues of a dualpi2 link from its ground-truth log (docs/bottleneck-log.md: on a dualpi2 link the record's
`band` is the queue, 1 = L, 0 = C): per queue, what it forwarded, marked and dropped, and the forwarded packets'
sojourn."""
from __future__ import annotations

from typing import Any

import numpy as np

from .ecn import CE
from .stats import distribution

QUEUES = {1: "l", 0: "c"}
# The log's events (rundir.GTLOG_EVENTS): forwarded, forwarded_ce, and the queue's own drops (tail, AQM).
FORWARDED, FORWARDED_CE, DROPPED_TAIL, DROPPED_AQM = 0, 1, 2, 3


def analyse(records: np.ndarray) -> dict[str, Any]:
    """Per queue (`l`, `c`): packets forwarded; of them marked CE by the bottleneck (forwarded_ce, not CE on
    arrival); packets the queue dropped (tail or AQM); the forwarded packets' sojourn, dequeue - arrival, in ms."""
    out: dict[str, Any] = {}
    for band, name in QUEUES.items():
        mine = records[records["band"] == band]
        fwd = mine[(mine["event"] == FORWARDED) | (mine["event"] == FORWARDED_CE)]
        sojourn_ms = (fwd["dequeue_ns"].astype(np.int64) - fwd["arrival_ns"].astype(np.int64)) / 1e6
        out[name] = {"forwarded": int(fwd.size),
                     "marked_ce": int(np.count_nonzero((fwd["event"] == FORWARDED_CE) & (fwd["ecn_in"] != CE))),
                     "dropped": int(np.count_nonzero((mine["event"] == DROPPED_TAIL) | (mine["event"] == DROPPED_AQM))),
                     "sojourn_ms": distribution(sojourn_ms)}
    return out
