#!/usr/bin/env bash
# bench/clips: the calls of bench/clips/RESULTS.md, the two clips alternating (so the machine's drift falls on both),
# one after another, each under the machine's quiet lock (never two calls at once on this 2-core machine). Run from
# the repository's root, as root, after setup (which makes both clips):
#   bash bench/clips/run.sh [OUT_DIR [CALLS_PER_CLIP [DURATION_S]]]   # default /tmp/clips-bench 3 60
# Then: .venv/bin/python bench/clips/compare.py OUT_DIR
set -u
out=${1:-/tmp/clips-bench}
calls=${2:-3}
duration=${3:-60}
mkdir -p "$out"
call() {  # NAME SCENARIO
  echo "$(date -u +%FT%TZ) start $1 ($2, $duration s)"
  flock -x -o /tmp/rtclab-quiet.lock node harness/cli.js --scenario "$2" --duration "$duration" --out "$out/$1" \
    >"$out/$1.log" 2>&1
  echo "$(date -u +%FT%TZ) end $1 exit $?"
}
for i in $(seq 1 "$calls"); do
  call "testsrc2-$i" bench/clips/testsrc2-2m.yaml
  call "natural-$i" bench/clips/natural-2m.yaml
done
