#!/usr/bin/env bash
# Benchmark of the userspace bottleneck (issue 2): release lateness p50/p99/p99.9/max and CPU at ~1k, 10k and 50k
# packets/s, beside kernel TBF's own pacing error measured the same way on this machine. Not a test: it prints a
# table. Needs root, iperf3, tcpdump, ethtool, python3, and the release binary:
#   cargo build --release --locked --manifest-path netem/bottleneck/Cargo.toml
#
# Each level runs twice through a fresh a - r - b topology, with the same offered load and link:
#   - link rate = the level's packet rate worth of frames (wire bytes = IP length + 14, as TBF counts),
#     UDP offered at 1.02x that by iperf3 from a to b, so the link stays saturated and its departures are paced;
#   - userspace: rtclab-bottleneck in r (fifo 1000 packets, 5 ms delay) behind an iptables NFQUEUE rule;
#     kernel: TBF (same rate, burst 3028 bytes, limit 1000 frames) as root qdisc on r-eth1, no delay.
# Measures: spacing error = |gap between consecutive frames captured at b-eth0 - their frame time at the rate|
# (both backends); release lateness = release_ns - due_ns from the ground-truth log (userspace only); CPU of the
# bottleneck process (TBF runs in softirq, not attributable); unexplained loss = iperf3's lost packets minus the
# drops the bottleneck logged (queue-limit drops of the saturated fifo are expected and not counted), must be 0.
#
# Usage: bench/bottleneck/run.sh [DURATION_S]     env: BOTTLENECK=path/to/rtclab-bottleneck  LEVELS="1000 10000"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=topology.sh
source "$here/topology.sh"

duration_s=${1:-10}
bottleneck=${BOTTLENECK:-$repo/netem/bottleneck/target/release/rtclab-bottleneck}
levels=${LEVELS:-"1000 10000 50000"}
backends=${BACKENDS:-"userspace kernel"}
[ "$(id -u)" = 0 ] || { echo "run.sh needs root (network namespaces)" >&2; exit 1; }
[ "$backends" = kernel ] || [ -x "$bottleneck" ] || { echo "no bottleneck binary at $bottleneck: build it first (see the top of this file)" >&2; exit 1; }

work=$(mktemp -d /tmp/rtclab-bench.XXXXXX)
prefix=rtclab-t-bench$$
trap 'ns_down "$prefix"; echo "raw data kept in $work" >&2' EXIT

# UDP payload per level: 1500-byte IP packets, smaller ones at 50k/s so the generator keeps up on 2 cores.
payload_bytes() { if [ "$1" -ge 50000 ]; then echo 472; else echo 1472; fi; }

# Runs one measurement; prints one JSON line. $1 = backend (userspace|kernel), $2 = packets/s.
measure() {
    local backend=$1 pps=$2 dir="$work/$1-$2"
    local payload wire kbit offered_bps bpid=""
    payload=$(payload_bytes "$pps")
    wire=$((payload + 8 + 20 + 14))
    kbit=$(python3 -c "print(round($pps * $wire * 8 / 1000, 3))")
    offered_bps=$(python3 -c "print(int($pps * 1.02 * $payload * 8))")
    mkdir -p "$dir"
    ns_up "$prefix"
    if [ "$backend" = userspace ]; then
        printf '{"delay_ms":5,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":%s,"burst_bytes":3028},"qdisc":{"kind":"fifo","limit_packets":1000}}\n' \
            "$kbit" >"$dir/link.json"
        # Not through in_ns: $! must be the bottleneck itself (ip netns exec execs it), not a subshell.
        ip netns exec "$prefix-r" "$bottleneck" --queue-num 7 --config "$dir/link.json" --log "$dir/bottleneck-forward.gtlog" \
            --stats "$dir/bottleneck-forward.stats.jsonl" >"$dir/bottleneck.out" 2>"$dir/bottleneck.err" &
        bpid=$!
        wait_ready "$dir/bottleneck.out" 10 || { cat "$dir/bottleneck.err" >&2; return 1; }
        in_ns r iptables -t mangle -A FORWARD -i r-eth0 -o r-eth1 -j NFQUEUE --queue-num 7
    else
        in_ns r tc qdisc replace dev r-eth1 root tbf rate "${kbit}kbit" burst 3028 limit $((1000 * wire))
    fi
    in_ns b iperf3 -s -1 >/dev/null 2>&1 &
    ip netns exec "$prefix-b" tcpdump -i b-eth0 -s 96 -B 32768 --time-stamp-precision nano -w "$dir/b.pcap" \
        "udp and dst host 10.0.2.2" 2>"$dir/tcpdump.log" &
    local tpid=$!
    sleep 1
    local cpu0=0 cpu1=0 t0 t1
    [ -n "$bpid" ] && cpu0=$(cpu_seconds "$bpid")
    t0=$(date +%s.%N)
    in_ns a iperf3 -c 10.0.2.2 -u -b "$offered_bps" -l "$payload" -t "$duration_s" --pacing-timer 100 -J \
        >"$dir/iperf3.json" 2>"$dir/iperf3.err" || true
    t1=$(date +%s.%N)
    [ -n "$bpid" ] && cpu1=$(cpu_seconds "$bpid")
    sleep 0.5
    # The kernel's own count of packets it could not hand to the bottleneck (queue full, socket buffer full).
    in_ns r cat /proc/net/netfilter/nfnetlink_queue >"$dir/nfqueue.txt" 2>/dev/null || true
    in_ns r tc -s -j qdisc show dev r-eth1 >"$dir/qdisc.json"
    kill -INT "$tpid" 2>/dev/null || true
    wait "$tpid" 2>/dev/null || true
    if [ -n "$bpid" ]; then
        in_ns r iptables -t mangle -D FORWARD -i r-eth0 -o r-eth1 -j NFQUEUE --queue-num 7
        kill -TERM "$bpid" 2>/dev/null || true
        wait "$bpid" 2>/dev/null || true
    fi
    ns_down "$prefix"
    python3 - "$dir" "$backend" "$pps" "$kbit" "$cpu0" "$cpu1" "$t0" "$t1" <<'EOF'
import json, subprocess, sys, os
d, backend, pps, kbit, cpu0, cpu1, t0, t1 = sys.argv[1:]
here = os.environ["BENCH_HERE"]
def run(*a):
    return json.loads(subprocess.check_output([sys.executable, f"{here}/gtlog.py", *a]))
row = {"backend": backend, "pps": int(pps), "kbit": float(kbit)}
sp = run("spacing", f"{d}/b.pcap", "--dst", "10.0.2.2", "--kbit", kbit)
row["spacing_error"], row["captured_at_b"] = sp["spacing_error"], sp["packets"]
try:
    ip = json.load(open(f"{d}/iperf3.json"))
    s = ip["end"]["sum"]
    row["iperf3_lost"], row["iperf3_sent"] = s["lost_packets"], s["packets"]
    row["offered_pps"] = round(s["packets"] / float(ip["end"]["sum"]["seconds"]))
except Exception as e:
    row["iperf3_error"] = f"iperf3 output unreadable: {e}"
if backend == "userspace":
    lat = run("lateness", f"{d}/bottleneck-forward.gtlog")
    row["lateness"], row["events"] = lat["lateness"], lat["events"]
    row["cpu_percent"] = round(100 * (float(cpu1) - float(cpu0)) / (float(t1) - float(t0)), 1)
    row["tail_drops"] = lat["events"].get("dropped_tail", 0)
    # Lost by the bottleneck without a logged decision: refused by the kernel queue (/proc: queue_dropped,
    # user_dropped), or forwarded per the log but never seen at b.
    kernel = 0
    for line in open(f"{d}/nfqueue.txt"):
        f = line.split()
        if f and f[0] == "7":
            kernel = int(f[5]) + int(f[6])
    forwarded_udp = lat["forwarded_udp"]
    # tcpdump's "received by filter" counts every packet that reached b-eth0, also those still unwritten at exit.
    import re
    at_b = int(re.search(r"(\d+) packets? received by filter", open(f"{d}/tcpdump.log").read()).group(1))
    row["unexplained_loss"] = kernel + max(0, forwarded_udp - at_b)
else:
    q = json.load(open(f"{d}/qdisc.json"))
    row["tail_drops"] = sum(x.get("drops", 0) for x in q)
    row["unexplained_loss"] = None  # TBF's drops are its tail drops; nothing else to account for
print(json.dumps(row))
EOF
}

export BENCH_HERE=$here
results="$work/results.jsonl"
for pps in $levels; do
    for backend in $backends; do
        echo "measuring $backend at $pps packets/s for ${duration_s}s ..." >&2
        measure "$backend" "$pps" >>"$results" || echo "$backend at $pps packets/s failed" >&2
    done
done

python3 - "$results" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def q(d):
    if not d or not d.get("n"):
        return "-"
    return f'{d["p50_us"]:>6} {d["p99_us"]:>7} {d["p99_9_us"]:>7} {d["max_us"]:>8}'
print(f'{"pkt/s":>6} {"offered":>7} {"backend":<9} {"link kbit":>10} | {"spacing error us: p50 p99 p99.9 max":<33} | '
      f'{"release lateness us: p50 p99 p99.9 max":<33} | {"CPU %":>6} {"lost?":>6} {"tail drops":>10}')
for r in rows:
    cpu = r.get("cpu_percent", "-")
    loss = r.get("unexplained_loss")
    tail = r.get("tail_drops", "-")
    print(f'{r["pps"]:>6} {r.get("offered_pps", "-"):>7} {r["backend"]:<9} {r["kbit"]:>10} | {q(r.get("spacing_error")):<33} | '
          f'{q(r.get("lateness")):<33} | {cpu:>6} {"-" if loss is None else loss:>6} {tail:>10}')
print("spacing error: |gap between consecutive frames at b-eth0 - frame time at the link rate| (capture timestamps)")
print("release lateness: release_ns - due_ns from the ground-truth log; CPU: the bottleneck process, user+system")
print("offered: packets/s iperf3 actually sent (below the level when the generator is short of CPU)")
print("lost?: refused by the kernel's NFQUEUE (queue or socket full) + forwarded per the log but not seen at b;"
      " must be 0. tail drops: the saturated fifo's (or TBF's) own, expected")
EOF
