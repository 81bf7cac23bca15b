# Sourced by run.sh and acceptance.sh: a throwaway a - r - b topology (design.md section 3) with unique names,
# torn down by an EXIT trap. Only bash, iproute2, ethtool and iptables; no other state is touched.
#
#   ns_up PREFIX        creates PREFIX-a, PREFIX-r, PREFIX-b; a=10.0.1.2, r=10.0.1.1|10.0.2.1, b=10.0.2.2
#   ns_down PREFIX      removes them (and so their veths, qdiscs and iptables rules); safe to call twice
#   in_ns NAME CMD...   runs CMD in PREFIX-NAME (a, r or b)

set -euo pipefail

NS_PREFIX=""

in_ns() {
    local name=$1
    shift
    ip netns exec "$NS_PREFIX-$name" "$@"
}

ns_up() {
    NS_PREFIX=$1
    local n
    for n in a r b; do ip netns add "$NS_PREFIX-$n"; done
    # Create each veth pair directly inside its namespaces: no name can collide in the root namespace.
    ip link add a-eth0 netns "$NS_PREFIX-a" type veth peer name r-eth0 netns "$NS_PREFIX-r"
    ip link add r-eth1 netns "$NS_PREFIX-r" type veth peer name b-eth0 netns "$NS_PREFIX-b"
    in_ns a ip addr add 10.0.1.2/24 dev a-eth0
    in_ns r ip addr add 10.0.1.1/24 dev r-eth0
    in_ns r ip addr add 10.0.2.1/24 dev r-eth1
    in_ns b ip addr add 10.0.2.2/24 dev b-eth0
    local dev
    for pair in a:a-eth0 r:r-eth0 r:r-eth1 b:b-eth0; do
        n=${pair%%:*}
        dev=${pair#*:}
        # Wire packets for captures and rate limiting (design.md section 3). tx checksumming off too: with it on,
        # a capture at a-eth0 sees UDP/TCP checksums not yet filled in, so the packet key (docs/bottleneck-log.md,
        # which covers the transport header) differs between the captures at a and b.
        in_ns "$n" ethtool -K "$dev" gro off gso off tso off tx off >/dev/null
        in_ns "$n" ip link set "$dev" up
    done
    for n in a r b; do in_ns "$n" ip link set lo up; done
    in_ns a ip route add default via 10.0.1.1
    in_ns b ip route add default via 10.0.2.1
    in_ns r sysctl -qw net.ipv4.ip_forward=1
}

ns_down() {
    local prefix=${1:-$NS_PREFIX}
    [ -n "$prefix" ] || return 0
    local n pid
    for n in a r b; do
        if ip netns list | grep -q "^$prefix-$n\b"; then
            # Processes still inside (iperf3 servers, tcpdump, the bottleneck) would keep the namespace alive.
            for pid in $(ip netns pids "$prefix-$n" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
            sleep 0.2
            for pid in $(ip netns pids "$prefix-$n" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
            ip netns del "$prefix-$n" 2>/dev/null || true
        fi
    done
}

# Waits until FILE has a line "ready" (the bottleneck's handshake), or fails after SECONDS.
wait_ready() {
    local file=$1 seconds=${2:-10} i
    for ((i = 0; i < seconds * 20; i++)); do
        if grep -qx ready "$file" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "the bottleneck did not print ready within ${seconds}s" >&2
    return 1
}

# Seconds of CPU (user + system) a process has used so far.
cpu_seconds() {
    local pid=$1
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$pid/stat"
}
