#!/usr/bin/env bash
# The userspace bottleneck's disciplines on real packets (issue 2: "an integration test through namespaces that shows
# the behaviour on real packets"), each case in a fresh network brought up by netem from a scenario in
# bench/bottleneck/scenarios/ (disc-CASE.yaml, tcp-ecn.yaml, tcp-SUBCASE.yaml), under the userspace backend.
# UDP cases: a forward link with 25 ms each way (the reverse link: 25 ms, no rate), a bulk iperf3 UDP flow at twice
# the link rate from a to b for BULK_S seconds, and a sparse flow (ping every 250 ms, DSCP 46) beside it once the
# queue has built up. Queuing delay = one-way delay between the captures at a-eth0 and b-eth0 minus its minimum.
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
# TCP cases (iperf3 TCP, CUBIC, from a to b):
#   ecn_tcp     an ECN TCP flow (tcp_ecn=1 in a and b) through 1 Mbit/s CoDel with ecn on, 10 s: CE marks at b,
#               all with valid IP header checksums (TCP goodput and retransmits printed)
#   tcp_all     every discipline and rate mode under a bulk TCP flow for DISC_S (6) seconds with 15 EF pings during
#               it: fifo, codel, pie ecn, sfq (limit in ms, perturb), fq_codel, prio (the thesis' classes: EF in a
#               fifo, the rest in fq_codel), a rate schedule, a Mahimahi trace, jitter + loss. Each bottleneck ends
#               cleanly on SIGTERM (gone, no error printed: lib.sh's stop_bottleneck) with a complete log (no
#               trailing fragment), forwards packets, and TCP gets through (goodput, ping RTT and log events printed)
# Prints PASS/FAIL lines with the numbers; exits 1 if any fails.
# Usage: sudo bench/bottleneck/disciplines.sh [BULK_S]   env: BOTTLENECK=path  ONLY="codel pie"  DISC_S=6
#   (a short run: BULK_S 8, DISC_S 3; the ecn_tcp flow always lasts 10 s)
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"
bench_init disc
bulk_s=${1:-15}
disc_s=${DISC_S:-6}
cases=${ONLY:-"codel codel_ecn pie fq_codel sfq prio ecn_tcp tcp_all"}

# The link rate of a UDP case (its scenario's forward rate): the bulk flow offers twice as much.
kbit_of() {
    case $1 in codel | codel_ecn | pie) echo 10000 ;; *) echo 1000 ;; esac
}

# The sparse flow beside the bulk one: DSCP 46 (EF), which only prio looks at. Run by flood (lib.sh) 3 s in.
during_flood() {
    local n=$(((bulk_s - 5) * 4))
    in_ns a ping -c $((n < 4 ? 4 : n)) -i 0.25 -Q 0xb8 10.0.2.2 >"$1/ping.txt" 2>&1 || true
}

udp_case() { # udp_case NAME DIR
    local c=$1 d=$2 tos=0
    [ "$c" = codel_ecn ] && tos=2 # ECT(0)
    net_up "disc-$c.yaml" userspace
    flood "$d" "$((2 * $(kbit_of "$c")))K" 1472 "$bulk_s" -S "$tos"
    net_down "$d"
    $GTLOG path "$d/a.pcap" "$d/b.pcap" --log "$d/bottleneck-forward.gtlog" --skip-s 4 >"$d/path.json"
    $GTLOG lateness "$d/bottleneck-forward.gtlog" >"$d/lateness.json"
    $GTLOG ecn "$d/b.pcap" >"$d/ecn.json"
    $GTLOG codel "$d/bottleneck-forward.gtlog" >"$d/codel.json"
    verdict "$c" "$("$PY" - "$c" "$d" <<'EOF'
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
)"
}

# tcp_flow DIR SCENARIO SECONDS PORT [ecn]: netem's network of SCENARIO (with ecn: net.ipv4.tcp_ecn=1 in a and b),
# an iperf3 TCP CUBIC flow from a to b (DIR/iperf3.json), 15 EF pings 2 s in (DIR/ping.txt), a capture at b
# (DIR/b.pcap); then SIGTERM to both bottlenecks, each one's clean end (0, or 1 and why: lib.sh's stop_bottleneck)
# in DIR/rc.
tcp_flow() {
    local d=$1 scenario=$2 seconds=$3 port=$4 cb client
    mkdir -p "$d"
    net_up "$scenario" userspace
    if [ "${5:-}" = ecn ]; then
        in_ns a sysctl -qw net.ipv4.tcp_ecn=1
        in_ns b sysctl -qw net.ipv4.tcp_ecn=1
    fi
    capture_start b "$d/b.pcap" tcp
    cb=$BG_PID
    bg b iperf3 -s -1 -p "$port" >/dev/null 2>&1
    sleep 0.3
    in_ns a iperf3 -c 10.0.2.2 -p "$port" -C cubic -t "$seconds" --json >"$d/iperf3.json" 2>"$d/iperf3.err" &
    client=$!
    sleep 2
    in_ns a ping -Q 0xb8 -c 15 -i 0.2 -q 10.0.2.2 >"$d/ping.txt" 2>&1 || true
    wait "$client" || true
    capture_stop "$cb"
    stop_bottleneck forward
    echo "$STOP_RC $STOP_DETAIL" >"$d/rc"
    stop_bottleneck reverse
    echo "$STOP_RC $STOP_DETAIL" >>"$d/rc"
    net_down "$d"
}

tcp_summary() { # tcp_summary DIR: goodput, retransmits, ping RTT, log events, exit codes as "True|False detail"
    $GTLOG lateness "$1/bottleneck-forward.gtlog" >"$1/lateness.json"
    "$PY" - "$1" <<'EOF'
import json, re, sys
d = sys.argv[1]
try:
    ip = json.load(open(f"{d}/iperf3.json"))
    goodput, retr = round(ip["end"]["sum_received"]["bits_per_second"] / 1000), ip["end"]["sum_sent"].get("retransmits")
except (OSError, ValueError, KeyError):
    goodput, retr = 0, None
m = re.search(r"= [\d.]+/([\d.]+)/", open(f"{d}/ping.txt").read())
lat = json.load(open(f"{d}/lateness.json"))
stops = [line.split(" ", 1) for line in open(f"{d}/rc").read().splitlines()]
rcs = [rc for rc, _ in stops]
ok = rcs == ["0", "0"] and lat["trailing_fragment_bytes"] == 0 and lat["events"].get("forwarded", 0) > 0 and goodput > 0
ends = "ended cleanly" if rcs == ["0", "0"] else "; ".join(f"{dir}: {why}" for dir, (_, why) in zip(("forward", "reverse"), stops))
print(ok, f"bottlenecks {ends}, tcp {goodput} kbit/s, retransmits {retr}, ping(EF) avg rtt "
          f"{m.group(1) if m else '?'} ms, events {lat['events']}, trailing fragment {lat['trailing_fragment_bytes']}")
EOF
}

for c in $cases; do
    echo "== $c"
    d=$WORK/$c
    mkdir -p "$d"
    case $c in
    codel | codel_ecn | pie | fq_codel | sfq | prio) udp_case "$c" "$d" ;;
    ecn_tcp)
        tcp_flow "$d" tcp-ecn.yaml 10 5202 ecn
        $GTLOG ecn "$d/b.pcap" >"$d/ecn.json"
        summary=$(tcp_summary "$d")
        verdict ecn_tcp "$("$PY" - "$d/ecn.json" "$summary" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
ok = sys.argv[2].startswith("True") and e["ecn"]["ce"] > 0 and e["bad_ip_checksums"] == 0
print(ok, f"CE marks at b {e['ecn']['ce']}, bad IP checksums {e['bad_ip_checksums']}; " + sys.argv[2].split(" ", 1)[1])
EOF
)"
        ;;
    tcp_all)
        port=5310
        for name in fifo codel pie sfq fq_codel prio schedule trace jitter_loss; do
            port=$((port + 1)) # a fresh port each case: the last server may still be closing
            tcp_flow "$d/$name" "tcp-$name.yaml" "$disc_s" "$port"
            verdict "tcp $name" "$(tcp_summary "$d/$name")"
        done
        ;;
    *) verdict "$c" "False unknown case" ;;
    esac
done
exit $FAILED
