#!/usr/bin/env bash
# Runs rtclab's tests (after scripts/setup.sh), in two tiers, each suite even when an earlier one failed, and ends with
# one line, "N passed, N failed", totalled from each runner's own report (JUnit XML from node --test and pytest, read
# by scripts/junit-totals.py; cargo test's "test result:" lines).
#   bash scripts/test.sh          both tiers (npm test)
#   bash scripts/test.sh --fast   the fast tier only, for the edit loop (npm run test:fast; 58-66 s warm on 2 vCPUs,
#                                 docs/contributing.md "The tests' time")
#   bash scripts/test.sh --real   the real tier only
#   bash scripts/test.sh --real-netem | --real-calls   one of the real tier's two parts (below), for a campaign
#     (bench/reliability/spreads.mjs) or the edit loop
#
# Every value a real-tier test bounds (a timing, a rate, a count) is written as `measure: NAME=VALUE` to
# RTCLAB_MEASURES_FILE (netem/test-support/measure.js, analysis/test-support/measures.py); when the caller sets none it
# is a file of this run's, and its lines are shown before the totals, so each run's log shows the margins it ran with.
#
# Which tier a test is in, by one rule:
#   real tier: what needs root and the machine's quiet: network namespaces, tc, a real Chromium, real calls (the
#     network's own tests in three lanes at once; then the calls, one at a time).
#     Node: files named *.integration.test.js (namespaces, the bottleneck, or a real browser) or *.e2e.test.js
#     (real calls through the emulated network). pytest: tests marked `real_calls` or `integration`
#     (pyproject.toml).
#     Its load-tolerant part needs root but not the quiet: tests that assert nothing a busy machine could move (an
#     exit code, a message, accounting, what is left behind; no time, rate or count read from a call or a link) and
#     whose calls run in namespaces of their own (a page on the host's own network loses its loads when another
#     test's namespaces change that network: net::ERR_NETWORK_CHANGED). A
#     Node file says so in its first lines (`// load-tolerant: why`), a pytest test by the marker `load_tolerant`.
#     They run first in the real tier, three at a time (the Node files one at a time, beside the analyzer's tests two
#     at a time). Not more: with the Node files two at a time, up to six calls ran at once on 2 vCPUs (the Ray study's
#     two, the resumed study's two, the concurrent-calls test's two), a Ray study's calls did not connect within their
#     20 s and the L4S call lost its ECT(1) (that test now runs with the calls); one at a time the part took 184 s
#     there, against 212 s. Even so a call may take over 20 s to connect here: the tests whose calls run at once give
#     them 120 s (call.connect_timeout_s).
#     Not beside the fast tier: that was slower than one after the other (both tiers 279 s at once against about
#     130 + 150 s: the fast tier alone keeps both cores busy), and some fast tests expect no network beside them.
#   fast tier: everything else: unit, plan, property and conformance tests, the type checks (tsc; mypy in
#     analysis/test/test_types.py), the linters (ruff, clippy, rustfmt; their rules in pyproject.toml, rustfmt.toml
#     and tsconfig.json's flags) and cargo's tests. A new test is fast unless its file name or marker says otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
tier=all parts=all
case "${1:-}" in
  '') ;;
  --fast) tier=fast ;;
  --real) tier=real ;;
  --real-netem) tier=real parts=netem ;;
  --real-calls) tier=real parts=calls ;;
  *) echo "usage: scripts/test.sh [--fast | --real | --real-netem | --real-calls]" >&2; exit 2 ;;
esac
# Python keeps its compiled modules (__pycache__, git-ignored) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE, set on some machines): else every test process compiles the analyzer's modules again.
unset PYTHONDONTWRITEBYTECODE
passed=0 failed=0 failed_suites=()
log=$(mktemp -d /tmp/rtclab-test.XXXXXX)
# RTCLAB_TEST_KEEP_LOGS=1 keeps each suite's output and JUnit XML (each test's time) in $log, named at the end.
if [ -n "${RTCLAB_TEST_KEEP_LOGS:-}" ]; then trap 'echo "logs kept in $log"' EXIT; else trap 'rm -rf "$log"' EXIT; fi
started=$SECONDS
show_measures=
if [ -z "${RTCLAB_MEASURES_FILE:-}" ]; then export RTCLAB_MEASURES_FILE="$log/measures.txt"; show_measures=1; fi

# A suite's output goes to $log/NAME.out (and to the terminal as it comes, unless it runs beside another suite: then
# it is shown whole when counted); how it is totalled is given by its kind:
#   junit FILE: the JUnit XML the runner wrote; cargo: cargo test's "test result:" lines; none: a check without tests
#   (tsc, the linters), one failure when it fails.
run_suite() { # name kind report live|quiet command...
  local name=$1 kind=$2 report=$3 show=$4 t0=$SECONDS rc; shift 4
  [ "$show" = live ] && echo "=== $name: $*"
  if [ "$show" = live ]; then "$@" 2>&1 | tee "$log/$name.out"; rc=${PIPESTATUS[0]}
  else "$@" >"$log/$name.out" 2>&1; rc=$?; fi
  echo "$kind $report $show $((SECONDS - t0)) $rc" >"$log/$name.meta"
}
count_suite() { # name: shows its output (unless it was shown live) and adds its totals
  local name=$1 kind report show secs rc p f
  [ -f "$log/$name.meta" ] || return 0
  read -r kind report show secs rc <"$log/$name.meta"
  [ "$show" = live ] || { echo "=== $name"; cat "$log/$name.out"; }
  case $kind in
    junit) read -r p f < <(python3 scripts/junit-totals.py $report) ;; # unquoted: a glob names a group's files
    cargo) read -r p f < <(grep -hoP '^test result: \w+\. \K\d+ passed; \d+(?= failed)' "$log/$name.out" \
             | awk -F'[ ;]+' '{p+=$1; f+=$3} END {print p+0, f+0}') ;;
    *) p=0 f=0 ;;
  esac
  echo "=== $name: $p passed, $f failed, exit $rc, $secs s"
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -ne 0 ]; then
    failed_suites+=("$name")
    [ "$f" -eq 0 ] && failed=$((failed + 1)) # a suite that failed without a failed test (crash, tsc) is one failure
  fi
}

node_tests() { # fast | real: the Node test files of that tier
  local f
  for f in scenarios/test/*.test.js signaling/test/*.test.js client/test/*.test.js netem/test/*.test.js \
           harness/test/*.test.js analysis/test/*.test.js; do
    [ -f "$f" ] || continue
    case $f in
      *.integration.test.js | *.e2e.test.js) [ "$1" = real ] && echo "$f" ;;
      *) [ "$1" = fast ] && echo "$f" ;;
    esac
  done
}
# The Rust crates, for the linters.
crates=()
for d in netem/bottleneck netem/uml/xstate-shim analysis/core; do [ -f "$d/Cargo.toml" ] && crates+=("$d/Cargo.toml"); done
# clippy over every target (the tests too) and, for the analyzer's core, its Python bindings (the feature maturin
# builds); any warning fails.
clippy_all() {
  local m rc=0 features
  for m in "${crates[@]}"; do
    features=(); grep -q '^python = ' "$m" && features=(--features python)
    cargo clippy --release --locked --quiet --all-targets "${features[@]}" --manifest-path "$m" -- -D warnings || rc=1
  done
  return $rc
}
# rustfmt's check (rustfmt.toml at the root); prints the diff it wants.
rustfmt_all() {
  local m rc=0
  for m in "${crates[@]}"; do cargo fmt --check --manifest-path "$m" || rc=1; done
  return $rc
}

# The junit reporter to a file for the totals, and the spec reporter for the reader.
node_test() { # report concurrency files...
  local report=$1 concurrency=$2; shift 2
  node --test --test-concurrency="$concurrency" --test-reporter=junit --test-reporter-destination="$report" \
    --test-reporter=spec --test-reporter-destination=stdout "$@"
}

# The fast tier's Node files in GROUPS processes at once, each running its share one file after another in one process
# (scripts/node-tests-in-one.mjs: a third less CPU than a process per file); the files are dealt in turn, so those
# that mostly wait (on a server, a guest's health checks) spread over the groups. Each group writes its own JUnit XML
# (PREFIX-K.xml) and spec report, shown group by group.
node_test_groups() { # prefix groups files...
  local prefix=$1 groups=$2 k i rc=0 pids=() mine; shift 2
  local files=("$@")
  for ((k = 1; k <= groups; k++)); do
    mine=()
    for ((i = k - 1; i < ${#files[@]}; i += groups)); do mine+=("${files[i]}"); done
    node --test-reporter=junit --test-reporter-destination="$prefix-$k.xml" \
      --test-reporter=spec --test-reporter-destination="$prefix-$k.spec" scripts/node-tests-in-one.mjs "${mine[@]}" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  cat "$prefix"-*.spec
  return $rc
}

is_load_tolerant() { head -5 "$1" | grep -q '^// load-tolerant:'; }
tolerant_pids=()
start_load_tolerant() { # the real tier's load-tolerant part, in the background
  local f files=()
  while read -r f; do case $f in netem/test/*) ;; *) is_load_tolerant "$f" && files+=("$f") ;; esac; done < <(node_tests real)
  if [ ${#files[@]} -gt 0 ]; then
    run_suite node-tolerant junit "$log/node-tolerant.xml" quiet node_test "$log/node-tolerant.xml" 1 "${files[@]}" &
    tolerant_pids+=($!)
  fi
  if [ -d analysis/test ]; then
    # Whole files to a worker (--dist loadfile), as in the fast tier: a module's fixture (test_dashboard_layout's
    # analysed call) is then built once, not in each worker that runs one of its tests.
    run_suite analyzer-tolerant junit "$log/analyzer-tolerant.xml" quiet .venv/bin/python -m pytest analysis/test -q \
      -n 2 --dist loadfile -m "(real_calls or integration) and load_tolerant" --durations=5 \
      --junitxml="$log/analyzer-tolerant.xml" &
    tolerant_pids+=($!)
  fi
}
run_load_tolerant() {
  local t0=$SECONDS
  start_load_tolerant
  [ ${#tolerant_pids[@]} -gt 0 ] || return 0
  wait "${tolerant_pids[@]}"
  count_suite node-tolerant
  count_suite analyzer-tolerant
  echo "=== load-tolerant real tests: $((SECONDS - t0)) s"
}

if [ "$tier" != real ]; then
  echo "=== fast tier"
  # Two lanes at once: pytest on both cores (pytest-xdist), and beside it the linters, the cargo tests, clippy, the
  # TypeScript checker and node's tests (in four processes at once, node_test_groups: much of their time is spent
  # waiting on the processes they start). Safe: no fast test measures time against a budget or needs the machine to
  # itself (the timing-sensitive ones are in the real tier, run alone below), so sharing the cores only makes them
  # slower, never wrong. pytest hands out whole files (--dist loadfile): a module's shared fixtures (synthetic
  # studies, analysed runs) are then built once, not once in each worker that runs one of its tests.
  fast_pids=()
  if [ -d analysis/test ]; then
    run_suite analyzer junit "$log/analyzer.xml" quiet .venv/bin/python -m pytest analysis/test -q -n auto \
      --dist loadfile -m "not real_calls and not integration" --durations=5 --junitxml="$log/analyzer.xml" &
    fast_pids+=($!)
  fi
  # The linters (each a second or two); quiet when the code passes.
  run_suite ruff none - quiet .venv/bin/ruff check --no-cache
  run_suite rustfmt none - quiet rustfmt_all
  [ -f netem/bottleneck/Cargo.toml ] && run_suite bottleneck cargo - quiet cargo test --release --locked --quiet --manifest-path netem/bottleneck/Cargo.toml
  [ -f netem/uml/xstate-shim/Cargo.toml ] && run_suite xstate-shim cargo - quiet cargo test --release --locked --quiet --manifest-path netem/uml/xstate-shim/Cargo.toml
  for d in analysis/*/Cargo.toml; do
    [ -f "$d" ] && run_suite "$(basename "$(dirname "$d")")" cargo - quiet cargo test --release --locked --quiet --manifest-path "$d"
  done
  # After the tests' release build, which it shares the crates' target directories with (and their lock).
  run_suite clippy none - quiet clippy_all
  # TypeScript's checker over the JavaScript (tsconfig.json: checkJs); it prints nothing when every file checks.
  run_suite types none - quiet npx --no-install tsc -p .
  mapfile -t fast < <(node_tests fast)
  [ ${#fast[@]} -gt 0 ] && run_suite node junit "$log/node-*.xml" quiet node_test_groups "$log/node" 4 "${fast[@]}"
  [ ${#fast_pids[@]} -gt 0 ] && wait "${fast_pids[@]}"
  for name in ruff rustfmt bottleneck xstate-shim core clippy types node analyzer; do count_suite "$name"; done
  echo "=== fast tier: $((SECONDS - started)) s"
fi

if [ "$tier" != fast ]; then
  echo "=== real tier"
  real_started=$SECONDS
  # The load-tolerant part first (see the top).
  [ "$parts" != netem ] && run_load_tolerant
  # Then the emulated network's own tests (netem/test/*.integration.test.js: no browser) in RTCLAB_NETEM_LANES lanes
  # at once (3 by default): each lane is a `node --test` over every file, starting at a different file, and a test
  # runs in the lane that claims it first (RTCLAB_TEST_CLAIMS, netem/test-support/lane.js), so the lanes share the
  # work as it comes and each test runs once. Each lane runs one test at a time. Safe beside each other: none of them
  # saturates a core (the links are 1-10 Mbit/s), the userspace bottleneck and the uml guest run at SCHED_FIFO, and
  # the captures take kernel timestamps. Then everything with a browser (real calls, one at a time, and nothing else
  # at once): calls check that the machine's CPU was not saturated (host_cpu_not_saturated).
  mapfile -t real < <(node_tests real)
  netem_real=() other_real=()
  for f in "${real[@]}"; do
    case $f in netem/test/*) netem_real+=("$f") ;; *) is_load_tolerant "$f" || other_real+=("$f") ;; esac
  done
  lanes=${RTCLAB_NETEM_LANES:-3}
  [ "$parts" = calls ] && netem_real=()
  [ "$parts" = netem ] && other_real=()
  if [ ${#netem_real[@]} -gt 0 ]; then
    mkdir "$log/claims"
    for ((k = 1; k <= lanes; k++)); do
      off=$(( (k - 1) * ${#netem_real[@]} / lanes ))
      RTCLAB_TEST_CLAIMS="$log/claims" run_suite "netem-real-$k" junit "$log/netem-real-$k.xml" quiet \
        node_test "$log/netem-real-$k.xml" 1 "${netem_real[@]:off}" "${netem_real[@]:0:off}" &
    done
    wait
    for ((k = 1; k <= lanes; k++)); do count_suite "netem-real-$k"; done
  fi
  # One real call serves two runners: the Node end-to-end test's default call stays here for the analyzer's real-call
  # tests that only read a default call (analysis/test/conftest.py, default_call_run), one call fewer.
  export RTCLAB_TEST_SHARED_RUNS="$log/shared-runs"
  mkdir -p "$RTCLAB_TEST_SHARED_RUNS"
  if [ ${#other_real[@]} -gt 0 ]; then
    run_suite node-real junit "$log/node-real.xml" live node_test "$log/node-real.xml" 1 "${other_real[@]}"
    count_suite node-real
  fi
  if [ -d analysis/test ] && [ "$parts" != netem ]; then
    run_suite analyzer-real junit "$log/analyzer-real.xml" live .venv/bin/python -m pytest analysis/test -q -p no:xdist \
      -m "(real_calls or integration) and not load_tolerant" --durations=8 --junitxml="$log/analyzer-real.xml"
    count_suite analyzer-real
  fi
  echo "=== real tier: $((SECONDS - real_started)) s"
fi

if [ -n "$show_measures" ] && [ -s "$RTCLAB_MEASURES_FILE" ]; then
  echo "=== measures: the values the real tier's bounds read (bench/reliability/RESULTS.md has their spreads)"
  sort "$RTCLAB_MEASURES_FILE"
fi
echo
if [ ${#failed_suites[@]} -gt 0 ]; then echo "failed suites: ${failed_suites[*]}"; fi
echo "$passed passed, $failed failed"
[ ${#failed_suites[@]} -eq 0 ]
