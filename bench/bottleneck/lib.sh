# Sourced by every script in bench/bottleneck/. The network is netem's own (docs/netem.md): each case brings one up
# from a scenario file (`node netem/cli.js up --scenario FILE --backend userspace|kernel`; netem picks a fresh id, so
# the bench never collides with other runs and `npm run net -- show|clean ID` see it), runs its commands in the
# namespaces with `node netem/cli.js exec ID a|r|b -- CMD`, and takes it down with `node netem/cli.js down ID`. The
# EXIT trap takes down every network the script brought up, by its id (never `clean` without ids: other runs share
# this machine), and stops every process it started.
#
#   bench_init NAME       checks root, the binary and the commands; sets WORK (a new directory under /tmp, kept for
#                         the raw data); installs the EXIT trap
#   net_up SCENARIO userspace|kernel   brings a network up (SCENARIO: a file in bench/bottleneck/scenarios/, or a
#                         path); its id in NET. userspace: netem starts rtclab-bottleneck in r for each direction
#   net_down [DIR]        takes NET down and moves netem's files of the run into DIR (default WORK/net-ID):
#                         bottleneck-<direction>.gtlog, .stats.jsonl, .json (the link it ran), .log (its output)
#   in_ns a|r|b CMD...    runs CMD in that namespace of NET
#   bg a|r|b CMD...       the same in the background; CMD's own pid in BG_PID (stop_pid waits for it)
#   stop_pid PID [SIGNAL] signal a process started by bg (TERM by default) and wait; its exit code in STOP_RC
#   wait_bg PID           wait until a process started by bg ends; returns its exit code
#   bottleneck_pid forward|reverse   pid of NET's userspace bottleneck (from netem's state file)
#   stop_bottleneck forward|reverse [SIGNAL]   signal it (TERM by default) and wait until it is gone (5 s); STOP_RC 0
#                         if it ended and printed no error, else 1; STOP_DETAIL says which (see the function)
#   capture_start a|b FILE [FILTER]   tcpdump on a-eth0 / b-eth0 (default filter: udp), nanosecond timestamps,
#                         immediate mode, 64 MiB buffer (CAPTURE_OPTS replaces -B/-U/--immediate-mode); pid in BG_PID
#   capture_stop PID...   SIGINT (after 1.2 s for packets still queued in the link) and wait
#   capture_drops FILE... packets the kernel dropped for those captures
#   flood DIR BITRATE UDP_PAYLOAD SECONDS [IPERF3_ARGS...]   captures DIR/a.pcap and DIR/b.pcap around an iperf3 UDP
#                         flow from a to b (its output in DIR/iperf3.txt); functions the caller may define, each with
#                         DIR as argument: at_flood_start (just before the flow starts), during_flood (3 s into it),
#                         at_flood_end (as soon as it has ended)
#   cpu_ticks PID         "user system" clock ticks the process has used
#   verdict NAME "True|False DETAIL"   prints PASS/FAIL NAME: DETAIL; a FAIL sets FAILED=1
#
# Addresses (netem's): a 10.0.1.2, r 10.0.1.1 | 10.0.2.1, b 10.0.2.2. netem turns GRO/GSO/TSO and transmit checksum
# offload off on every data veth: wire packets for the captures and the rate, and packet keys (docs/bottleneck-log.md)
# that match between the captures at a and b.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BOTTLENECK=${BOTTLENECK:-$REPO/netem/bottleneck/target/release/rtclab-bottleneck}
# netem runs the bottleneck named by RTCLAB_BOTTLENECK: BOTTLENECK=path benchmarks another binary.
export RTCLAB_BOTTLENECK=$BOTTLENECK
NETEM=(node "$REPO/netem/cli.js")
STATE_DIR=/run/rtclab # netem's state files, /run/rtclab/<id>.json (with runDir: the run's files)
# The analyzer's environment: gtlog.py and floor.py read captures and logs with its library (rtclab.rundir).
PY=${RTCLAB_PYTHON:-$REPO/.venv/bin/python}
GTLOG="$PY $HERE/gtlog.py"
WORK=""
NET=""
NETS=()            # every network this script brought up and has not taken down
declare -A NET_DIR # id -> netem's run directory of that network
declare -A JOB_OF  # bg: CMD's pid -> the pid of the job running it (node netem/cli.js exec), which bash can wait for
FAILED=0

bench_init() {
    local name=$1 c
    [ "$(id -u)" = 0 ] || { echo "$name needs root (network namespaces)" >&2; exit 1; }
    for c in node ip iptables tcpdump iperf3 python3 ping tc; do
        command -v "$c" >/dev/null || { echo "missing command: $c" >&2; exit 1; }
    done
    [ -x "$BOTTLENECK" ] || {
        echo "no bottleneck binary at $BOTTLENECK: cargo build --release --locked --manifest-path netem/bottleneck/Cargo.toml" >&2
        exit 1
    }
    WORK=${WORK_DIR:-$(mktemp -d "/tmp/rtclab-bench-$name.XXXXXX")}
    mkdir -p "$WORK"
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_cleanup() {
    local pid id
    # A script may define on_exit (run.sh: stop the Chromium call); it runs first.
    if declare -F on_exit >/dev/null; then on_exit || true; fi
    for pid in "${!JOB_OF[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    # netem's down stops whatever still runs in the namespaces, then removes them.
    for id in "${NETS[@]}"; do
        NET=$id
        net_down || echo "could not take down network $id: see node netem/cli.js show $id" >&2
    done
    for pid in "${JOB_OF[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -z "$WORK" ] || echo "raw data kept in $WORK" >&2
}

net_up() {
    local scenario=$1 backend=$2 id
    [[ $scenario == /* ]] || scenario=$HERE/scenarios/$scenario
    id=$("${NETEM[@]}" up --scenario "$scenario" --backend "$backend") || { echo "netem up failed for $scenario" >&2; return 1; }
    [[ $id =~ ^[a-z0-9]{6}$ ]] || { echo "netem up printed \"$id\", not a run id" >&2; return 1; }
    NET=$id
    NETS+=("$id")
    NET_DIR[$id]=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runDir"])' "$STATE_DIR/$id.json")
}

net_down() {
    local dest=${1:-$WORK/net-$NET} id=$NET rest=() n run_dir
    [ -n "$id" ] || return 0
    run_dir=${NET_DIR[$id]:-}
    "${NETEM[@]}" down "$id" >/dev/null
    # down keeps the run's files in netem's run directory (on /run, a tmpfs): they are this run's data, so they
    # move to the bench's directory.
    mkdir -p "$dest"
    if [ -n "$run_dir" ] && [ -d "$run_dir" ]; then
        find "$run_dir" -mindepth 1 -maxdepth 1 -exec mv -t "$dest" {} +
        rmdir "$run_dir"
    fi
    for n in "${NETS[@]}"; do [ "$n" = "$id" ] || rest+=("$n"); done
    NETS=("${rest[@]}")
    NET=""
}

in_ns() {
    local host=$1
    shift
    "${NETEM[@]}" exec "$NET" "$host" -- "$@"
}

bg() {
    local host=$1 pidfile job i
    shift
    pidfile=$WORK/.bg-pid.$RANDOM$RANDOM
    # sh writes its pid and becomes CMD (exec keeps the pid): that pid is the one to signal. Signalling node's
    # would leave CMD running.
    "${NETEM[@]}" exec "$NET" "$host" -- sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' "$pidfile" "$@" &
    job=$!
    for ((i = 0; i < 400; i++)); do
        [ -s "$pidfile" ] && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.025
    done
    [ -s "$pidfile" ] || { echo "bg $host: $1 did not start" >&2; return 1; }
    BG_PID=$(cat "$pidfile")
    rm -f "$pidfile"
    JOB_OF[$BG_PID]=$job
}

stop_pid() {
    kill -"${2:-TERM}" "$1" 2>/dev/null || true
    STOP_RC=0
    wait_bg "$1" || STOP_RC=$?
}

wait_bg() { # wait_bg PID: wait until a process started by bg ends; returns its exit code
    local job=${JOB_OF[$1]:-} rc=0
    [ -n "$job" ] || return 0
    wait "$job" || rc=$?
    unset "JOB_OF[$1]"
    return $rc
}

bottleneck_pid() {
    bottleneck_state "$1" pid
}

bottleneck_state() { # bottleneck_state forward|reverse pid|log: that field of netem's record of the process
    python3 - "$STATE_DIR/$NET.json" "$1" "$2" <<'EOF'
import json, sys
state, direction, field = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
print(next(b[field] for b in state["bottlenecks"] if b["direction"] == direction))
EOF
}

stop_bottleneck() {
    local direction=$1 pid i out
    pid=$(bottleneck_pid "$direction")
    out=$(bottleneck_state "$direction" log)
    kill -"${2:-TERM}" "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    # netem started it detached, so its exit code is nobody's to read here. It exits non-zero only after printing
    # one sentence on stderr (docs/bottleneck.md), into its log: exited + no such line = exit code 0.
    if kill -0 "$pid" 2>/dev/null; then
        STOP_RC=1 STOP_DETAIL="still running 5 s after SIG${2:-TERM}"
    elif grep -v -e '^ready$' -e '^rtclab-bottleneck: note: ' "$out" | grep -q .; then
        STOP_RC=1 STOP_DETAIL="exited with: $(grep -v -e '^ready$' -e '^rtclab-bottleneck: note: ' "$out" | head -c 300)"
    else
        STOP_RC=0 STOP_DETAIL="exited, no error in its output"
    fi
}

capture_start() {
    local host=$1 file=$2 filter=${3:-udp} i
    # Snap length 160 holds Ethernet + IPv4 + the 64 bytes the packet key covers. --immediate-mode: each packet is
    # handed to tcpdump at once, so none is left in the kernel's ring buffer when it stops; -Z root: write as root.
    # CAPTURE_OPTS replaces the buffering options (capture.sh compares settings; default: a 64 MiB kernel buffer,
    # which keeps every packet where tcpdump's 2 MiB default dropped thousands at 50k packets/s: RESULTS.md).
    # shellcheck disable=SC2086 # CAPTURE_OPTS is a list of options
    bg "$host" tcpdump -i "$host-eth0" -s 160 -n ${CAPTURE_OPTS:--B 65536 -U --immediate-mode} --time-stamp-precision=nano -Z root -w "$file" "$filter" 2>"$file.log"
    for ((i = 0; i < 200; i++)); do
        grep -q "listening on" "$file.log" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "tcpdump on $host-eth0 did not start: $(cat "$file.log")" >&2
    return 1
}

capture_stop() {
    local pid
    # The last packets of a flow may still be queued in the emulated link (300 ms of queue + 25 ms of delay here):
    # let them reach b first.
    sleep 1.2
    for pid in "$@"; do stop_pid "$pid" INT; done
}

capture_drops() {
    cat "${@/%/.log}" | awk '/dropped by kernel/ { s += $1 } END { print s + 0 }'
}

cpu_ticks() {
    awk '{ print $14, $15 }' "/proc/$1/stat"
}

flood() {
    local dir=$1 bitrate=$2 payload=$3 seconds=$4 ca cb server client rc=0
    shift 4
    mkdir -p "$dir"
    capture_start a "$dir/a.pcap"; ca=$BG_PID
    capture_start b "$dir/b.pcap"; cb=$BG_PID
    bg b iperf3 -s -1 >/dev/null 2>&1; server=$BG_PID
    sleep 0.3
    # bg returns once iperf3 itself runs (node's start-up, a second on a busy machine, is behind us): the load
    # starts now.
    bg a iperf3 -c 10.0.2.2 -u -b "$bitrate" -l "$payload" -t "$seconds" "$@" >"$dir/iperf3.txt" 2>"$dir/iperf3.err"
    client=$BG_PID
    if declare -F at_flood_start >/dev/null; then at_flood_start "$dir"; fi
    if declare -F during_flood >/dev/null; then
        sleep 3
        during_flood "$dir"
    fi
    wait_bg "$client" || rc=$?
    if declare -F at_flood_end >/dev/null; then at_flood_end "$dir"; fi
    [ "$rc" = 0 ] || echo "iperf3 client exited $rc: $(head -c 300 "$dir/iperf3.err")" >&2
    capture_stop "$ca" "$cb"
    stop_pid "$server" # iperf3 -s -1 has usually exited by now
}

verdict() {
    local ok=${2%% *} detail=${2#* }
    if [ "$ok" = True ]; then echo "PASS $1: $detail"; else echo "FAIL $1: $detail"; FAILED=1; fi
}
