#!/usr/bin/env bash
# Runs every test suite of rtclab (after scripts/setup.sh), each suite even when an earlier one failed, and ends with
# one summary line. Suites that place real calls or build namespaces need root.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0 failed=0 failed_suites=()
log=$(mktemp -d)/test

run_suite() { # name, command...
  local name=$1; shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$log.$name"
  local rc=${PIPESTATUS[0]}
  local p f
  # Count tests from each runner's own closing lines.
  p=$(grep -hoP '^# pass \K\d+|test result: \w+\. \K\d+(?= passed)|(?<![\w])\d+(?= passed)' "$log.$name" | tail -n +1 | awk '{s+=$1} END {print s+0}')
  f=$(grep -hoP '^# fail \K\d+|test result: \w+\. \d+ passed; \K\d+(?= failed)|(?<![\w])\d+(?= failed)' "$log.$name" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -ne 0 ]; then
    failed_suites+=("$name")
    [ "$f" -eq 0 ] && failed=$((failed + 1)) # a suite that crashed before counting still counts as a failure
  fi
}

[ -f netem/bottleneck/Cargo.toml ] && run_suite bottleneck cargo test --release --locked --quiet --manifest-path netem/bottleneck/Cargo.toml
for d in analysis/*/Cargo.toml; do [ -f "$d" ] && run_suite "$(basename "$(dirname "$d")")" cargo test --release --locked --quiet --manifest-path "$d"; done
# TypeScript's checker over the JavaScript (tsconfig.json: checkJs); it prints nothing when every file checks.
run_suite types npx --no-install tsc -p .
node_dirs=()
for d in scenarios/test signaling/test client/test netem/test harness/test analysis/test; do [ -d "$d" ] && node_dirs+=("$d"); done
[ ${#node_dirs[@]} -gt 0 ] && run_suite node node --test --test-concurrency=1 "${node_dirs[@]}"
# The analyzer: its tests without real calls on every core (pytest-xdist), then the real calls one at a time, with
# their durations (the slowest part of the time budget).
if [ -d analysis/test ]; then
  run_suite analyzer .venv/bin/python -m pytest analysis/test -q -m "not real_calls" -n auto
  run_suite analyzer-real-calls .venv/bin/python -m pytest analysis/test -q -m real_calls -p no:xdist --durations=8
fi

echo
if [ ${#failed_suites[@]} -gt 0 ]; then echo "failed suites: ${failed_suites[*]}"; fi
echo "$passed passed, $failed failed"
[ ${#failed_suites[@]} -eq 0 ]
