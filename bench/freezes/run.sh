#!/bin/sh
# The bench/freezes calls (RESULTS.md), each under the machine-wide lock, into the directory given (not in git).
# From the repository's root: sh bench/freezes/run.sh /tmp/freezes-bench
set -e
out=${1:?usage: sh bench/freezes/run.sh OUT_DIR}
call() { flock -x -o /tmp/rtclab-quiet.lock npm run call -- "$@" || true; }  # an INVALID run is still recorded
call --scenario bench/freezes/control-no-smoothing.yaml --out "$out/control-1"
call --scenario bench/freezes/outages.yaml --out "$out/outages-1"
call --scenario bench/freezes/outages-no-smoothing.yaml --out "$out/outages-no-smoothing-1"
call --scenario bench/freezes/outages.yaml --out "$out/outages-2"
call --scenario scenarios/default.yaml --duration 30 --out "$out/default-1"
call --scenario bench/freezes/outages-no-smoothing.yaml --out "$out/outages-no-smoothing-2"
call --scenario bench/freezes/pause.yaml --out "$out/pause-1"
