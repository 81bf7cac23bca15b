#!/usr/bin/env bash
# bench/frames: the calls of bench/frames/RESULTS.md, one after another, each under the machine's quiet lock
# (never two calls at once on this 2-core machine). Run from the repository's root, as root:
#   bash bench/frames/run.sh [OUT_DIR]        # default /tmp/frames-bench; run directories stay out of git
# Then: .venv/bin/python bench/frames/summarize.py OUT_DIR
set -u
out=${1:-/tmp/frames-bench}
mkdir -p "$out"
call() {  # NAME SCENARIO DURATION
  echo "$(date -u +%FT%TZ) start $1 ($2, $3 s)"
  flock -x -o /tmp/rtclab-quiet.lock node harness/cli.js --scenario "$2" --duration "$3" --out "$out/$1" \
    >"$out/$1.log" 2>&1
  local rc=$?
  echo "$(date -u +%FT%TZ) end $1 exit $rc"
}
for i in 1 2 3; do call idle25-$i bench/frames/idle-25ms.yaml 30; done
call idle75-1 bench/frames/idle-75ms.yaml 30
call c16-dt300 scenarios/repro/carlucci2016.yaml 60
for i in 1 2 3; do call default-$i scenarios/default.yaml 30; done
