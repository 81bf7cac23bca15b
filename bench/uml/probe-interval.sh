#!/bin/bash
# The uml lateness probe's interval against what the packets through the guest show (bench/uml/RESULTS.md): for each
# interval (ms), a 40 s run without a call, 5 CUBIC flows through the guest's TBF 10 Mbit/s + fifo 300 ms, 25 ms each
# way (probe-interval.yaml), analysed, then bench/uml/probe_vs_packets.py: each second the probe read late beside the
# reverse packets' largest extra one-way delay in it. Each run holds /tmp/rtclab-quiet.lock (nothing else beside it).
#   bash bench/uml/probe-interval.sh OUT_DIR [INTERVAL_MS...]     (default: 20 10 5)
set -euo pipefail
out=${1:?usage: bash bench/uml/probe-interval.sh OUT_DIR [INTERVAL_MS...]}
shift
cd "$(dirname "$0")/../.."
for iv in "${@:-20 10 5}"; do
  for ms in $iv; do
    run="$out/interval-$ms"
    RTCLAB_UML_PROBE_INTERVAL_MS=$ms flock -x -o /tmp/rtclab-quiet.lock \
      node harness/cli.js --scenario bench/uml/probe-interval.yaml --out "$run" --no-analyze > "$run.log" 2>&1 || true
    flock -x -o /tmp/rtclab-quiet.lock .venv/bin/python -m rtclab.cli analyze "$run" -q --no-dashboard --no-tshark > /dev/null
    echo "== every $ms ms: $(grep -o 'run \(VALID\|INVALID\)' "$run.log" | head -1)"
    .venv/bin/python bench/uml/probe_vs_packets.py "$run"
  done
done
