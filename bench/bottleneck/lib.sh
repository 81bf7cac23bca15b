# Sourced by every script in bench/bottleneck/: a throwaway a - r - b topology (design.md section 3) in network
# namespaces named PREFIX-{a,r,b} (PREFIX starts with rtclab-t-, unique per run), the bottleneck and capture
# helpers, and an EXIT trap that stops every process started here and removes the namespaces (with them their veths,
# qdiscs and iptables rules). Only bash, iproute2, ethtool, iptables and tcpdump; no other state is touched.
#
#   bench_init NAME       checks root, the binary and the commands; sets PREFIX=rtclab-t-NAME<pid> and WORK (a new
#                         directory under /tmp, kept for the raw data); installs the EXIT trap
#   ns_up / ns_down       create / remove PREFIX-a, PREFIX-r, PREFIX-b (ns_down is safe to call twice)
#   in_ns a|r|b CMD...    runs CMD in that namespace
#   bg a|r|b CMD...       the same in the background; its pid in BG_PID, stopped on exit
#   start_bottleneck DIR forward|reverse LINK_JSON [ARGS...]   the binary in r, then its NFQUEUE rule; pid in BPID
#   stop_pid PID [SIGNAL] signal (TERM by default) and wait; exit code in STOP_RC
#   capture_start a|b FILE [FILTER]   tcpdump on a-eth0 / b-eth0 (default filter: udp), nanosecond timestamps;
#                         pid in BG_PID
#   capture_stop PID...   SIGINT (after 1.2 s of grace) and wait;   capture_drops FILE...   packets the kernel dropped for those captures
#   flood DIR BITRATE UDP_PAYLOAD SECONDS [IPERF3_ARGS...]   captures DIR/a.pcap and DIR/b.pcap around an iperf3 UDP
#                         flow from a to b (its output in DIR/iperf3.txt); a function during_flood, if defined, runs
#                         3 s into the flow with DIR as its argument
#   cpu_ticks PID         "user system" clock ticks the process has used
#   verdict NAME "True|False DETAIL"   prints PASS/FAIL NAME: DETAIL; a FAIL sets FAILED=1
#
# Addresses: a 10.0.1.2, r 10.0.1.1 | 10.0.2.1, b 10.0.2.2. Queue 7 is a -> b ("forward"), queue 8 b -> a ("reverse").
# GRO/GSO/TSO and transmit checksum offload are off on every veth: wire packets for the captures and the rate, and
# with tx checksumming on a capture at a-eth0 sees UDP/TCP checksums not yet filled in, so the packet key
# (docs/bottleneck-log.md, which covers the transport header) would differ between the captures at a and b.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BOTTLENECK=${BOTTLENECK:-$REPO/netem/bottleneck/target/release/rtclab-bottleneck}
GTLOG="python3 $HERE/gtlog.py"
PREFIX=""
WORK=""
PIDS=()
FAILED=0

bench_init() {
    local name=$1 c
    [ "$(id -u)" = 0 ] || { echo "$name needs root (network namespaces)" >&2; exit 1; }
    for c in ip iptables ethtool tcpdump iperf3 python3 ping tc; do
        command -v "$c" >/dev/null || { echo "missing command: $c" >&2; exit 1; }
    done
    [ -x "$BOTTLENECK" ] || {
        echo "no bottleneck binary at $BOTTLENECK: cargo build --release --locked --manifest-path netem/bottleneck/Cargo.toml" >&2
        exit 1
    }
    PREFIX=rtclab-t-$name$$
    WORK=${WORK_DIR:-$(mktemp -d "/tmp/rtclab-t-$name.XXXXXX")}
    mkdir -p "$WORK"
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_cleanup() {
    local pid
    # A script may define on_exit (run.sh: stop the Chromium call); it runs first.
    if declare -F on_exit >/dev/null; then on_exit || true; fi
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    ns_down
    [ -z "$WORK" ] || echo "raw data kept in $WORK" >&2
}

in_ns() {
    local name=$1
    shift
    ip netns exec "$PREFIX-$name" "$@"
}

bg() {
    local name=$1
    shift
    ip netns exec "$PREFIX-$name" "$@" &
    BG_PID=$!
    PIDS+=("$BG_PID")
}

ns_up() {
    local n dev pair
    for n in a r b; do ip netns add "$PREFIX-$n"; done
    # Each veth pair is created directly inside its namespaces: no name can collide in the root namespace.
    ip link add a-eth0 netns "$PREFIX-a" type veth peer name r-eth0 netns "$PREFIX-r"
    ip link add r-eth1 netns "$PREFIX-r" type veth peer name b-eth0 netns "$PREFIX-b"
    in_ns a ip addr add 10.0.1.2/24 dev a-eth0
    in_ns r ip addr add 10.0.1.1/24 dev r-eth0
    in_ns r ip addr add 10.0.2.1/24 dev r-eth1
    in_ns b ip addr add 10.0.2.2/24 dev b-eth0
    for pair in a:a-eth0 r:r-eth0 r:r-eth1 b:b-eth0; do
        n=${pair%%:*}
        dev=${pair#*:}
        in_ns "$n" ethtool -K "$dev" gro off gso off tso off tx off >/dev/null
        in_ns "$n" ip link set "$dev" up
    done
    for n in a r b; do in_ns "$n" ip link set lo up; done
    in_ns a ip route add default via 10.0.1.1
    in_ns b ip route add default via 10.0.2.1
    in_ns r sysctl -qw net.ipv4.ip_forward=1
}

ns_down() {
    [ -n "$PREFIX" ] || return 0
    local n pid
    for n in a r b; do
        if ip netns list | grep -q "^$PREFIX-$n\b"; then
            # Processes still inside (iperf3 servers, tcpdump, the bottleneck) would keep the namespace alive.
            for pid in $(ip netns pids "$PREFIX-$n" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
            sleep 0.2
            for pid in $(ip netns pids "$PREFIX-$n" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
            ip netns del "$PREFIX-$n" 2>/dev/null || true
        fi
    done
}

start_bottleneck() {
    local dir=$1 direction=$2 link=$3 queue in_dev out_dev i
    shift 3
    case $direction in
    forward) queue=7 in_dev=r-eth0 out_dev=r-eth1 ;;
    reverse) queue=8 in_dev=r-eth1 out_dev=r-eth0 ;;
    *) echo "start_bottleneck: direction forward or reverse, not $direction" >&2; return 1 ;;
    esac
    mkdir -p "$dir"
    echo "$link" >"$dir/link-$direction.json"
    bg r "$BOTTLENECK" --queue-num "$queue" --config "$dir/link-$direction.json" --direction "$direction" \
        --log "$dir/bottleneck-$direction.gtlog" --stats "$dir/bottleneck-$direction.stats.jsonl" "$@" \
        >"$dir/out-$direction" 2>"$dir/err-$direction"
    BPID=$BG_PID
    # The bottleneck prints "ready" once it is bound to its queue; only then is the rule added (no rule without a
    # reader: packets to a queue nobody reads are dropped).
    for ((i = 0; i < 200; i++)); do
        grep -qx ready "$dir/out-$direction" 2>/dev/null && break
        kill -0 "$BPID" 2>/dev/null || break
        sleep 0.05
    done
    grep -qx ready "$dir/out-$direction" 2>/dev/null || {
        echo "the bottleneck did not get ready: $(cat "$dir/err-$direction")" >&2
        return 1
    }
    in_ns r iptables -t mangle -A FORWARD -i "$in_dev" -o "$out_dev" -j NFQUEUE --queue-num "$queue"
}

stop_pid() {
    kill -"${2:-TERM}" "$1" 2>/dev/null || true
    STOP_RC=0
    wait "$1" || STOP_RC=$?
}

capture_start() {
    local name=$1 file=$2 filter=${3:-udp} i
    # Snap length 160 holds Ethernet + IPv4 + the 64 bytes the packet key covers.
    bg "$name" tcpdump -i "$name-eth0" -s 160 -n -U --time-stamp-precision nano -w "$file" "$filter" 2>"$file.log"
    for ((i = 0; i < 100; i++)); do
        grep -q "listening on" "$file.log" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "tcpdump on $name-eth0 did not start: $(cat "$file.log")" >&2
    return 1
}

capture_stop() {
    local pid
    # tcpdump's kernel ring hands packets over in blocks retired after up to 1 s; on SIGINT it exits without reading
    # a block not yet retired, so the last second's packets would be missing from the file. Wait for it first.
    sleep 1.2
    for pid in "$@"; do kill -INT "$pid" 2>/dev/null || true; done
    for pid in "$@"; do wait "$pid" || true; done
}

capture_drops() {
    cat "${@/%/.log}" | awk '/dropped by kernel/ { s += $1 } END { print s + 0 }'
}

cpu_ticks() {
    awk '{ print $14, $15 }' "/proc/$1/stat"
}

flood() {
    local dir=$1 bitrate=$2 payload=$3 seconds=$4 ca cb client
    shift 4
    mkdir -p "$dir"
    capture_start a "$dir/a.pcap"; ca=$BG_PID
    capture_start b "$dir/b.pcap"; cb=$BG_PID
    bg b iperf3 -s -1 >/dev/null 2>&1
    sleep 0.3
    in_ns a iperf3 -c 10.0.2.2 -u -b "$bitrate" -l "$payload" -t "$seconds" "$@" >"$dir/iperf3.txt" 2>"$dir/iperf3.err" &
    client=$!
    if declare -F during_flood >/dev/null; then
        sleep 3
        during_flood "$dir"
    fi
    wait "$client" || true
    capture_stop "$ca" "$cb"
}

verdict() {
    local ok=${2%% *} detail=${2#* }
    if [ "$ok" = True ]; then echo "PASS $1: $detail"; else echo "FAIL $1: $detail"; FAILED=1; fi
}
