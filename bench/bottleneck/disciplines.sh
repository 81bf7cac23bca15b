#!/usr/bin/env bash
# The userspace bottleneck's disciplines on real packets, by hand (issue 2 item 4): a forward link with 25 ms each
# way (the reverse link: 25 ms, no rate), a bulk iperf3 UDP flow at twice the link rate from a to b for BULK_S
# seconds, and a sparse flow (ping every 250 ms, DSCP 46) beside it once the queue has built up.
#   codel       10 Mbit/s: the first AQM drop comes `interval` (100 ms) after the first dequeue above target with
#               more than one MTU queued, the next ones on drop_next += interval/sqrt(count) (RFC 8289), each at
#               the first dequeue after its time (so late by at most one frame time, 1.2 ms; 1.5 allowed)
#   codel_ecn   10 Mbit/s, ECT(0) bulk traffic: marked CE instead of dropped: CE seen at b, IP header checksums
#               valid, no ECT packet dropped by the AQM
#   pie         10 Mbit/s: the bulk flow's queuing delay settles near target 15 ms (p50 within 7.5..30 ms).
#               (At 1 Mbit/s it cannot: PIE does not drop with less than 2 MTUs queued, 24 ms there, as Linux.)
#   fq_codel    1 Mbit/s: the sparse flow keeps a low RTT beside the bulk flow: p50 < 65 ms (50 ms + at most one
#               bulk frame, 12 ms, ahead of it; a fifo of 300 ms would give 350 ms)
#   sfq         1 Mbit/s: the same with round robin: p50 < 75 ms
#   prio        1 Mbit/s: the sparse flow in band 0 (DSCP 46) is served first (RTT p50 < 65 ms) while the bulk
#               flow in band 1 waits in a 300 ms fifo (its queuing delay p50 > 250 ms)
# Queuing delay = one-way delay between the captures at a-eth0 and b-eth0 minus its minimum.
# Prints PASS/FAIL lines with the numbers; exits 1 if any fails. Needs root, iperf3, tcpdump, ethtool, python3 and
# the release binary. Usage: bench/bottleneck/disciplines.sh [BULK_S]   env: BOTTLENECK=path  ONLY="codel pie"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=topology.sh
source "$here/topology.sh"

bulk_s=${1:-15}
bottleneck=${BOTTLENECK:-$repo/netem/bottleneck/target/release/rtclab-bottleneck}
cases=${ONLY:-"codel codel_ecn pie fq_codel sfq prio"}
[ "$(id -u)" = 0 ] || { echo "disciplines.sh needs root (network namespaces)" >&2; exit 1; }
[ -x "$bottleneck" ] || { echo "no bottleneck binary at $bottleneck: build it first" >&2; exit 1; }
work=$(mktemp -d /tmp/rtclab-disc.XXXXXX)
prefix=rtclab-t-disc$$
trap 'ns_down "$prefix"; echo "raw data kept in $work" >&2' EXIT
failed=0

kbit_of() {
    case $1 in codel | codel_ecn | pie) echo 10000 ;; *) echo 1000 ;; esac
}

qdisc_of() {
    case $1 in
    codel) echo '{"kind":"codel","target_ms":5,"interval_ms":100,"limit_packets":1000,"ecn":false}' ;;
    codel_ecn) echo '{"kind":"codel","target_ms":5,"interval_ms":100,"limit_packets":1000,"ecn":true}' ;;
    pie) echo '{"kind":"pie","target_ms":15,"tupdate_ms":15,"alpha":2,"beta":20,"limit_packets":1000,"ecn":false}' ;;
    fq_codel) echo '{"kind":"fq_codel","target_ms":5,"interval_ms":100,"limit_packets":10240,"quantum_bytes":1514,"flows":1024,"ecn":true}' ;;
    sfq) echo '{"kind":"sfq","limit_packets":127,"quantum_bytes":1514,"perturb_s":0,"divisor":1024}' ;;
    prio) echo '{"kind":"prio","bands":[{"dscp":[46],"qdisc":{"kind":"fifo","limit_packets":100}},{"qdisc":{"kind":"fifo","limit_bytes":37500}}]}' ;;
    esac
}

# start DIR QUEUE IN_DEV OUT_DEV LINK_JSON DIRECTION: the bottleneck in r, then its NFQUEUE rule; sets $bpid.
start() {
    local dir=$1
    echo "$5" >"$dir/link-$6.json"
    ip netns exec "$prefix-r" "$bottleneck" --queue-num "$2" --config "$dir/link-$6.json" \
        --log "$dir/bottleneck-$6.gtlog" --stats "$dir/bottleneck-$6.stats.jsonl" >"$dir/out-$6" 2>"$dir/err-$6" &
    bpid=$!
    wait_ready "$dir/out-$6" 10 || { cat "$dir/err-$6" >&2; return 1; }
    in_ns r iptables -t mangle -A FORWARD -i "$3" -o "$4" -j NFQUEUE --queue-num "$2"
}

for c in $cases; do
    echo "== $c"
    d=$work/$c
    mkdir -p "$d"
    ns_up "$prefix"
    start "$d" 7 r-eth0 r-eth1 \
        "{\"delay_ms\":25,\"jitter_ms\":0,\"loss_percent\":0,\"rate\":{\"kbit\":$(kbit_of "$c"),\"burst_bytes\":3028},\"qdisc\":$(qdisc_of "$c")}" forward
    fwd=$bpid
    start "$d" 8 r-eth1 r-eth0 \
        '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":null,"qdisc":{"kind":"fifo","limit_packets":1000}}' reverse
    rev=$bpid
    ip netns exec "$prefix-a" tcpdump -i a-eth0 -s 160 --time-stamp-precision nano -w "$d/a.pcap" udp 2>"$d/tcpdump-a.log" &
    cap_a=$!
    ip netns exec "$prefix-b" tcpdump -i b-eth0 -s 160 --time-stamp-precision nano -w "$d/b.pcap" udp 2>"$d/tcpdump-b.log" &
    cap_b=$!
    in_ns b iperf3 -s -1 >/dev/null 2>&1 &
    sleep 1
    tos=0
    [ "$c" = codel_ecn ] && tos=2 # ECT(0)
    in_ns a iperf3 -c 10.0.2.2 -u -b "$((2 * $(kbit_of "$c")))K" -l 1472 -S "$tos" -t "$bulk_s" >"$d/iperf3.txt" 2>&1 &
    bulk=$!
    sleep 3
    # The sparse flow: DSCP 46 (EF), which only prio looks at.
    in_ns a ping -c $(((bulk_s - 5) * 4)) -i 0.25 -Q 0xb8 10.0.2.2 >"$d/ping.txt" 2>&1 || true
    wait "$bulk" || true
    sleep 1
    kill -INT "$cap_a" "$cap_b"
    wait "$cap_a" "$cap_b" || true
    kill -TERM "$fwd" "$rev"
    wait "$fwd" "$rev" || true
    ns_down "$prefix"
    python3 "$here/gtlog.py" path "$d/a.pcap" "$d/b.pcap" --log "$d/bottleneck-forward.gtlog" --skip-s 4 >"$d/path.json"
    python3 "$here/gtlog.py" lateness "$d/bottleneck-forward.gtlog" >"$d/lateness.json"
    python3 "$here/gtlog.py" ecn "$d/b.pcap" >"$d/ecn.json"
    python3 "$here/gtlog.py" codel "$d/bottleneck-forward.gtlog" >"$d/codel.json"
    read -r ok detail < <(python3 - "$c" "$d" <<'EOF'
import json, re, statistics, sys
c, d = sys.argv[1:]
path = json.load(open(f"{d}/path.json"))
lat = json.load(open(f"{d}/lateness.json"))
ecn = json.load(open(f"{d}/ecn.json"))
rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", open(f"{d}/ping.txt").read())]
rtt = statistics.median(rtts) if rtts else float("inf")
q = path.get("queuing_delay_after_skip", {})
q50 = q.get("p50_us", 1e9) / 1000
ev = lat["events"]
aqm, ce = ev.get("dropped_aqm", 0), ev.get("forwarded_ce", 0)
desc = (f"bulk queuing delay p50 {q50:.1f} ms p99 {q.get('p99_us', 0) / 1000:.1f} ms, sparse RTT p50 {rtt:.1f} ms "
        f"({len(rtts)} pings), events {ev}, CE at b {ecn['ecn']['ce']}, bad IP checksums {ecn['bad_ip_checksums']}, "
        f"wire rate at b {path.get('received_wire_kbit')} kbit/s")
ok = False
if c == "codel":
    cd = json.load(open(f"{d}/codel.json"))
    slack = 1.5 * cd.get("dequeue_spacing_p50_ms", 0)
    first = cd.get("first_drop_after_above_target_ms", -1)
    late = [x["late_vs_schedule_ms"] for x in cd.get("drops", [])]
    ok = 100 <= first <= 100 + slack and len(late) >= 5 and all(0 <= x <= slack for x in late)
    desc = (f"first AQM drop {first} ms after the first dequeue above target (100 ms + <= {slack:.1f}), next drops "
            f"late vs interval/sqrt(n) schedule by {late} ms; " + desc)
elif c == "codel_ecn":
    ok = ce > 0 and ecn["ecn"]["ce"] > 0 and ecn["bad_ip_checksums"] == 0 and lat["aqm_drops_of_ect"] == 0
    desc = f"ECT packets dropped by the AQM {lat['aqm_drops_of_ect']}; " + desc
elif c == "pie":
    ok = aqm > 0 and 7.5 <= q50 <= 30
elif c == "fq_codel":
    ok = rtt < 65
elif c == "sfq":
    ok = rtt < 75
elif c == "prio":
    ok = rtt < 65 and q50 > 250
print(ok, desc)
EOF
)
    if [ "$ok" = True ]; then echo "PASS $c: $detail"; else echo "FAIL $c: $detail"; failed=1; fi
done
exit $failed
