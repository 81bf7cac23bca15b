#!/usr/bin/env bash
# The by-hand checks of the userspace bottleneck (issue 2, item 4), through a throwaway a - r - b topology:
#   1. iperf3 UDP at 2 Mbit/s for 20 s through a 1 Mbit/s fifo of 300 ms (limit_bytes 37500), 25 ms delay:
#      received wire rate at b-eth0 within 2% of 1 Mbit/s, maximum queuing delay (one-way delay - its minimum,
#      from the two captures) within 3 ms of 300 ms; the log agrees with the captures. 200-byte IP packets
#      (242-byte frames, 1.9 ms each): with 1500-byte ones the queue holds 24 frames of 12.1 ms and, as under
#      kernel TBF + bfifo (measured: 292 ms), the maximum is 24 x 12.1 = 291 ms, not 300.
#   2. 25 ms each way (one bottleneck per direction), no load: ping RTT 50 ms +- 0.5 ms, with rate null and with
#      1 Mbit/s each way (a token bucket of 3028 bytes, as TBF, sends a lone ping at once).
#   3. SIGTERM under load: exit code 0, no process left, the log parseable with no trailing fragment.
#   4. SIGKILL: forwarding stops (no --queue-bypass: a dead bottleneck must not be silently bypassed).
# Prints PASS/FAIL lines with the measured numbers; exits 1 if any check fails. Needs root, iperf3, tcpdump,
# ethtool, python3 and the release binary (cargo build --release --locked --manifest-path netem/bottleneck/Cargo.toml).
# Usage: bench/bottleneck/acceptance.sh [FLOOD_SECONDS]     env: BOTTLENECK=path/to/rtclab-bottleneck
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=topology.sh
source "$here/topology.sh"

flood_s=${1:-20}
bottleneck=${BOTTLENECK:-$repo/netem/bottleneck/target/release/rtclab-bottleneck}
[ "$(id -u)" = 0 ] || { echo "acceptance.sh needs root (network namespaces)" >&2; exit 1; }
[ -x "$bottleneck" ] || { echo "no bottleneck binary at $bottleneck: build it first" >&2; exit 1; }
work=$(mktemp -d /tmp/rtclab-accept.XXXXXX)
prefix=rtclab-t-accept$$
trap 'ns_down "$prefix"; echo "raw data kept in $work" >&2' EXIT
failed=0

verdict() { # name ok detail
    if [ "$2" = True ]; then echo "PASS $1: $3"; else echo "FAIL $1: $3"; failed=1; fi
}

# start_bottleneck DIR QUEUE IN_DEV OUT_DEV LINK_JSON DIRECTION: sets $bpid; adds the NFQUEUE rule once it is ready.
start_bottleneck() {
    local dir=$1 queue=$2 in_dev=$3 out_dev=$4
    mkdir -p "$dir"
    echo "$5" >"$dir/link.json"
    ip netns exec "$prefix-r" "$bottleneck" --queue-num "$queue" --config "$dir/link.json" \
        --log "$dir/bottleneck-$6.gtlog" --stats "$dir/bottleneck-$6.stats.jsonl" >"$dir/out" 2>"$dir/err" &
    bpid=$!
    wait_ready "$dir/out" 10 || { cat "$dir/err" >&2; return 1; }
    in_ns r iptables -t mangle -A FORWARD -i "$in_dev" -o "$out_dev" -j NFQUEUE --queue-num "$queue"
}

# stop_bottleneck PID: SIGTERM, returns its exit code in $stop_rc.
stop_bottleneck() {
    kill -TERM "$1"
    stop_rc=0
    wait "$1" || stop_rc=$?
}

echo "== 1. fifo 300 ms at 1 Mbit/s, UDP (200-byte IP packets) at 2 Mbit/s for ${flood_s}s"
ns_up "$prefix"
d=$work/fifo
start_bottleneck "$d" 7 r-eth0 r-eth1 \
    '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":1000,"burst_bytes":3028},"qdisc":{"kind":"fifo","limit_bytes":37500}}' forward
fifo_pid=$bpid
ip netns exec "$prefix-a" tcpdump -i a-eth0 -s 160 --time-stamp-precision nano -w "$d/a.pcap" "udp" 2>"$d/tcpdump-a.log" &
cap_a=$!
ip netns exec "$prefix-b" tcpdump -i b-eth0 -s 160 --time-stamp-precision nano -w "$d/b.pcap" "udp" 2>"$d/tcpdump-b.log" &
cap_b=$!
in_ns b iperf3 -s -1 >/dev/null 2>&1 &
sleep 1
in_ns a iperf3 -c 10.0.2.2 -u -b 2M -l 172 -t "$flood_s" -J >"$d/iperf3.json" 2>"$d/iperf3.err" || true
sleep 1 # the queue drains (300 ms) and the delay line empties
kill -INT "$cap_a" "$cap_b"
wait "$cap_a" "$cap_b" || true
stop_bottleneck "$fifo_pid"
in_ns r iptables -t mangle -D FORWARD -i r-eth0 -o r-eth1 -j NFQUEUE --queue-num 7
python3 "$here/gtlog.py" path "$d/a.pcap" "$d/b.pcap" --log "$d/bottleneck-forward.gtlog" >"$d/path.json"
python3 "$here/gtlog.py" lateness "$d/bottleneck-forward.gtlog" >"$d/lateness.json"
cat "$d/path.json" "$d/lateness.json"
read -r ok detail < <(python3 - "$d/path.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
k = p.get("received_wire_kbit", 0)
print(abs(k - 1000) <= 20, f"received wire rate {k} kbit/s (1000 +- 20)")
EOF
)
verdict "rate" "$ok" "$detail"
read -r ok detail < <(python3 - "$d/path.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
q = p.get("queuing_delay_max_ms", 0)
print(abs(q - 300) <= 3, f"max queuing delay {q} ms (300 +- 3)")
EOF
)
verdict "queuing delay" "$ok" "$detail"
read -r ok detail < <(python3 - "$d/path.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
a, b = p.get("log_forwarded_missing_at_b"), p.get("log_dropped_present_at_b")
m = p.get("owd_minus_log_release", {})
print(a == 0 and b == 0 and m.get("max_us", 1e9) < 200,
      f"log forwarded but missing at b: {a}, log dropped but present at b: {b}, "
      f"capture one-way delay - log (release - arrival): p50 {m.get('p50_us')} us max {m.get('max_us')} us")
EOF
)
verdict "log agrees with captures" "$ok" "$detail"
ns_down "$prefix"

echo "== 2. ping, 25 ms each way, no load"
run=0
for rate in null '{"kbit":1000,"burst_bytes":3028}'; do
    run=$((run + 1))
    ns_up "$prefix"
    link="{\"delay_ms\":25,\"jitter_ms\":0,\"loss_percent\":0,\"rate\":$rate,\"qdisc\":{\"kind\":\"fifo\",\"limit_bytes\":37500}}"
    start_bottleneck "$work/ping$run" 7 r-eth0 r-eth1 "$link" forward
    fwd_pid=$bpid
    start_bottleneck "$work/ping$run" 8 r-eth1 r-eth0 "$link" reverse
    rev_pid=$bpid
    in_ns a ping -c 50 -i 0.1 10.0.2.2 >"$work/ping$run/ping.txt"
    stop_bottleneck "$fwd_pid"
    stop_bottleneck "$rev_pid"
    read -r ok detail < <(python3 - "$work/ping$run/ping.txt" "$rate" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
loss = re.search(r"([\d.]+)% packet loss", text).group(1)
lo, avg, hi, mdev = map(float, m.groups())
# A token bucket (as TBF, burst 3028 bytes) sends a lone 98-byte frame at once: no serialization time added.
expected = 50.0
rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", text)]
within = sum(1 for r in rtts if abs(r - expected) <= 0.5)
print(abs(lo - expected) <= 0.5 and abs(hi - expected) <= 0.5 and float(loss) == 0,
      f"rate {sys.argv[2]}: RTT min/avg/max {lo}/{avg}/{hi} ms, {within}/{len(rtts)} within {expected:.1f} +- 0.5 ms, "
      f"loss {loss}%")
EOF
)
    verdict "ping RTT" "$ok" "$detail"
    ns_down "$prefix"
done

echo "== 3. SIGTERM under load"
ns_up "$prefix"
d=$work/sigterm
start_bottleneck "$d" 7 r-eth0 r-eth1 \
    '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":1000,"burst_bytes":3028},"qdisc":{"kind":"fifo","limit_bytes":37500}}' forward
term_pid=$bpid
in_ns b iperf3 -s -1 >/dev/null 2>&1 &
in_ns a iperf3 -c 10.0.2.2 -u -b 2M -l 1472 -t 5 >/dev/null 2>&1 &
sleep 3
stop_bottleneck "$term_pid"
left=$(ps -o pid= -p "$term_pid" || true)
python3 "$here/gtlog.py" lateness "$d/bottleneck-forward.gtlog" >"$d/lateness.json"
read -r ok detail < <(python3 - "$d/lateness.json" "$stop_rc" "$left" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
rc, left = sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
ok = rc == "0" and not left.strip() and p["trailing_fragment_bytes"] == 0 and p["records"] > 0
print(ok, f"exit code {rc}, process left: {left.strip() or 'none'}, {p['records']} records, "
          f"trailing fragment {p['trailing_fragment_bytes']} bytes, events {p['events']}")
EOF
)
verdict "SIGTERM" "$ok" "$detail"
ns_down "$prefix"

echo "== 4. SIGKILL: traffic stops instead of bypassing the dead bottleneck"
ns_up "$prefix"
start_bottleneck "$work/sigkill" 7 r-eth0 r-eth1 \
    '{"delay_ms":1,"jitter_ms":0,"loss_percent":0,"rate":null,"qdisc":{"kind":"fifo","limit_packets":1000}}' forward
in_ns a ping -c 3 -i 0.2 -q 10.0.2.2 >"$work/ping-alive.txt" || true
kill -KILL "$bpid"
wait "$bpid" || true
in_ns a ping -c 3 -i 0.2 -W 1 -q 10.0.2.2 >"$work/ping-dead.txt" || true
alive=$(grep -o '[0-9]* received' "$work/ping-alive.txt" | cut -d' ' -f1)
dead=$(grep -o '[0-9]* received' "$work/ping-dead.txt" | cut -d' ' -f1)
[ "$alive" = 3 ] && [ "$dead" = 0 ] && ok=True || ok=False
verdict "SIGKILL" "$ok" "pings through the live bottleneck: $alive/3, after SIGKILL: $dead/3"
ns_down "$prefix"
left_ns=$(ip netns list | grep -c "^$prefix" || true)
[ "$left_ns" = 0 ] && verdict "cleanup" True "no namespace left" || verdict "cleanup" False "$left_ns namespaces left"
exit $failed
