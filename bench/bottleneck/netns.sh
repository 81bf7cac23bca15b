# Sourced by the bottleneck's trial and benchmark scripts: a throwaway a - r - b topology in network
# namespaces named rtclab-bn<pid>-{a,r,b}, torn down (with every process started here) on exit.
# Addresses as in docs/run-directory.md: a 10.0.1.2, r 10.0.1.1 / 10.0.2.1, b 10.0.2.2. Transmit checksum offload is
# off as well: otherwise a capture at a-eth0 sees partial transport checksums that NFQUEUE fills in on the way,
# and the packet key (docs/bottleneck-log.md) differs between the two captures.

set -euo pipefail
BN_ID="rtclab-bn$$"
NS_A="$BN_ID-a"; NS_R="$BN_ID-r"; NS_B="$BN_ID-b"
BN_PIDS=()

bn_cleanup() {
  local pid
  for pid in "${BN_PIDS[@]:-}"; do
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  sleep 0.3
  for pid in "${BN_PIDS[@]:-}"; do
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  done
  for ns in "$NS_A" "$NS_R" "$NS_B"; do
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap bn_cleanup EXIT
trap 'exit 130' INT TERM

bn_need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || { echo "missing command: $c" >&2; exit 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "run as root (network namespaces)" >&2; exit 1; }
}

# bn_up: builds the topology, offloads off, forwarding on in r.
bn_up() {
  local t="bn$$"
  ip netns add "$NS_A"; ip netns add "$NS_R"; ip netns add "$NS_B"
  ip link add "${t}a" type veth peer name "${t}ra"
  ip link add "${t}b" type veth peer name "${t}rb"
  ip link set "${t}a" netns "$NS_A"; ip -n "$NS_A" link set "${t}a" name a-eth0
  ip link set "${t}ra" netns "$NS_R"; ip -n "$NS_R" link set "${t}ra" name r-eth0
  ip link set "${t}rb" netns "$NS_R"; ip -n "$NS_R" link set "${t}rb" name r-eth1
  ip link set "${t}b" netns "$NS_B"; ip -n "$NS_B" link set "${t}b" name b-eth0
  ip -n "$NS_A" addr add 10.0.1.2/24 dev a-eth0
  ip -n "$NS_R" addr add 10.0.1.1/24 dev r-eth0
  ip -n "$NS_R" addr add 10.0.2.1/24 dev r-eth1
  ip -n "$NS_B" addr add 10.0.2.2/24 dev b-eth0
  local ns dev
  for ns in "$NS_A" "$NS_R" "$NS_B"; do ip -n "$ns" link set lo up; done
  for pair in "$NS_A:a-eth0" "$NS_R:r-eth0" "$NS_R:r-eth1" "$NS_B:b-eth0"; do
    ns="${pair%%:*}"; dev="${pair##*:}"
    ip -n "$ns" link set "$dev" up
    ip netns exec "$ns" ethtool -K "$dev" gro off gso off tso off tx off >/dev/null 2>&1 || true
  done
  ip -n "$NS_A" route add default via 10.0.1.1
  ip -n "$NS_B" route add default via 10.0.2.1
  ip netns exec "$NS_R" sysctl -qw net.ipv4.ip_forward=1
}

# bn_start_bottleneck QUEUE CONFIG_JSON LOG [extra args]: starts the binary in r, waits for "ready",
# then adds the NFQUEUE rule for that direction (queue 0: a -> b, queue 1: b -> a).
bn_start_bottleneck() {
  local queue="$1" config="$2" log="$3"; shift 3
  local out="$log.stdout"
  ip netns exec "$NS_R" "$BN_BIN" --queue-num "$queue" --config "$config" --log "$log" "$@" >"$out" 2>"$log.stderr" &
  BN_PIDS+=($!)
  local i
  for i in $(seq 1 100); do
    grep -qx ready "$out" 2>/dev/null && break
    kill -0 "${BN_PIDS[-1]}" 2>/dev/null || { echo "bottleneck exited: $(cat "$log.stderr")" >&2; exit 1; }
    sleep 0.05
  done
  grep -qx ready "$out" || { echo "bottleneck not ready" >&2; exit 1; }
  if [ "$queue" = 0 ]; then
    ip netns exec "$NS_R" iptables -t mangle -A FORWARD -i r-eth0 -o r-eth1 -j NFQUEUE --queue-num 0
  else
    ip netns exec "$NS_R" iptables -t mangle -A FORWARD -i r-eth1 -o r-eth0 -j NFQUEUE --queue-num "$queue"
  fi
}

# bn_bg NS CMD...: runs a command in a namespace in the background, remembered for cleanup.
bn_bg() {
  local ns="$1"; shift
  ip netns exec "$ns" "$@" &
  BN_PIDS+=($!)
}

# bn_capture NS DEV FILE: tcpdump with nanosecond timestamps, snap length 256.
bn_capture() {
  bn_bg "$1" tcpdump -i "$2" -s 256 -n -w "$3" --time-stamp-precision=nano -U 2>"$3.log"
  sleep 0.5
}

# bn_stop PID: SIGTERM and wait.
bn_stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
