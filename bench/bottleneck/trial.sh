#!/usr/bin/env bash
# The userspace bottleneck by hand, through namespaces (issue 2's acceptance numbers):
#  1. ping RTT through 25 ms each way (no rate);
#  2. iperf3 UDP at 2 Mbit/s for 20 s through 1 Mbit/s, fifo 300 ms (25 ms each way): wire rate at b, maximum
#     queuing delay from the two captures, the log checked against the captures, release lateness;
#  3. the same load through kernel TBF + bfifo (no delay) for comparison;
#  4. SIGTERM: the process exits 0, no process left, the log complete.
# Usage: sudo bench/bottleneck/trial.sh [OUT_DIR]      (needs a release build of netem/bottleneck)
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BN_BIN="${BN_BIN:-$ROOT/netem/bottleneck/target/release/rtclab-bottleneck}"
OUT="${1:-$(mktemp -d /tmp/rtclab-bn-trial.XXXXXX)}"
mkdir -p "$OUT"
source "$HERE/netns.sh"
bn_need iperf3 tcpdump ethtool ping python3 iptables tc
[ -x "$BN_BIN" ] || { echo "build first: cargo build --release --manifest-path netem/bottleneck/Cargo.toml" >&2; exit 1; }
M="python3 $HERE/measure.py"
DURATION_S="${DURATION_S:-20}"
bn_up

echo '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":null,"qdisc":{"kind":"fifo"}}' >"$OUT/delay25.json"
echo '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":1000,"burst_bytes":3028},"qdisc":{"kind":"fifo","limit_ms":300}}' >"$OUT/fifo300.json"

echo "== 1. ping, 25 ms each way"
bn_start_bottleneck 0 "$OUT/delay25.json" "$OUT/ping-forward.gtlog"
FWD=${BN_PIDS[-1]}
bn_start_bottleneck 1 "$OUT/delay25.json" "$OUT/ping-reverse.gtlog"
REV=${BN_PIDS[-1]}
ip netns exec "$NS_A" ping -c 100 -i 0.02 -q 10.0.2.2 | tail -2 | tee "$OUT/ping.txt"
bn_stop $FWD; bn_stop $REV
ip netns exec "$NS_R" iptables -t mangle -F FORWARD

echo "== 2. iperf3 UDP 2 Mbit/s, ${DURATION_S} s, through 1 Mbit/s fifo 300 ms (25 ms each way)"
bn_start_bottleneck 0 "$OUT/fifo300.json" "$OUT/bottleneck-forward.gtlog" --stats "$OUT/bottleneck-forward.stats.jsonl"
FWD=${BN_PIDS[-1]}
bn_start_bottleneck 1 "$OUT/delay25.json" "$OUT/bottleneck-reverse.gtlog"
REV=${BN_PIDS[-1]}
bn_bg "$NS_B" iperf3 -s -1 -p 5201 >/dev/null
bn_capture "$NS_A" a-eth0 "$OUT/capture-a.pcap"; CAPA=${BN_PIDS[-1]}
bn_capture "$NS_B" b-eth0 "$OUT/capture-b.pcap"; CAPB=${BN_PIDS[-1]}
ip netns exec "$NS_A" iperf3 -c 10.0.2.2 -p 5201 -u -b 2M -l 1448 -t "$DURATION_S" --json >"$OUT/iperf3.json"
sleep 1
ps -o pid,rss,time,cmd -p $FWD | tail -1
kill -TERM $FWD $REV
FWD_RC=0; wait $FWD || FWD_RC=$?
wait $REV || true
sleep 0.5
bn_stop $CAPA; bn_stop $CAPB
echo "-- userspace: captures (UDP data to 5201, first 3 s skipped)"
$M owd "$OUT/capture-a.pcap" "$OUT/capture-b.pcap" --dport 5201 --proto 17 --skip-s 3 | tee "$OUT/owd-userspace.json"
echo "-- log against the captures"
$M logcheck "$OUT/bottleneck-forward.gtlog" "$OUT/capture-a.pcap" "$OUT/capture-b.pcap" --delay-ms 25 | tee "$OUT/logcheck.json"
echo "-- release lateness (log)"
$M lateness "$OUT/bottleneck-forward.gtlog" | tee "$OUT/lateness.json"
echo "-- log summary after SIGTERM"
$M gtlog-summary "$OUT/bottleneck-forward.gtlog" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("records","events","trailing_fragment_bytes")}))'
tail -1 "$OUT/bottleneck-forward.stats.jsonl"
ip netns exec "$NS_R" iptables -t mangle -F FORWARD

echo "== 3. kernel TBF 1 Mbit/s burst 3028 + bfifo 37500 bytes (no delay), same load"
ip netns exec "$NS_R" tc qdisc add dev r-eth1 root handle 1: tbf rate 1mbit burst 3028 limit 37500
bn_bg "$NS_B" iperf3 -s -1 -p 5201 >/dev/null
bn_capture "$NS_A" a-eth0 "$OUT/tbf-a.pcap"; CAPA=${BN_PIDS[-1]}
bn_capture "$NS_B" b-eth0 "$OUT/tbf-b.pcap"; CAPB=${BN_PIDS[-1]}
ip netns exec "$NS_A" iperf3 -c 10.0.2.2 -p 5201 -u -b 2M -l 1448 -t "$DURATION_S" --json >"$OUT/iperf3-tbf.json"
sleep 1
bn_stop $CAPA; bn_stop $CAPB
$M owd "$OUT/tbf-a.pcap" "$OUT/tbf-b.pcap" --dport 5201 --proto 17 --skip-s 3 | tee "$OUT/owd-tbf.json"

ip netns exec "$NS_R" tc qdisc del dev r-eth1 root

echo "== 5. ECN: an ECN TCP flow through 1 Mbit/s CoDel (ecn on), 10 s: CE marks at b with valid IP checksums"
echo '{"delay_ms":25,"jitter_ms":0,"loss_percent":0,"rate":{"kbit":1000,"burst_bytes":3028},"qdisc":{"kind":"codel","target_ms":5,"interval_ms":100,"limit_packets":1000,"ecn":true}}' >"$OUT/codel-ecn.json"
ip netns exec "$NS_A" sysctl -qw net.ipv4.tcp_ecn=1
ip netns exec "$NS_B" sysctl -qw net.ipv4.tcp_ecn=1
bn_start_bottleneck 0 "$OUT/codel-ecn.json" "$OUT/ecn-forward.gtlog"
EFWD=${BN_PIDS[-1]}
bn_start_bottleneck 1 "$OUT/delay25.json" "$OUT/ecn-reverse.gtlog"
EREV=${BN_PIDS[-1]}
bn_bg "$NS_B" iperf3 -s -1 -p 5202 >/dev/null
bn_capture "$NS_B" b-eth0 "$OUT/ecn-b.pcap"; CAPB=${BN_PIDS[-1]}
ip netns exec "$NS_A" iperf3 -c 10.0.2.2 -p 5202 -C cubic -t 10 --json >"$OUT/iperf3-ecn.json"
sleep 0.5
bn_stop $CAPB; bn_stop $EFWD; bn_stop $EREV
$M ce "$OUT/ecn-b.pcap"
$M gtlog-summary "$OUT/ecn-forward.gtlog" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["events"]))'
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("tcp goodput", round(d["end"]["sum_received"]["bits_per_second"]), "bit/s, retransmits", d["end"]["sum_sent"].get("retransmits"))' "$OUT/iperf3-ecn.json"

echo "== 6. every discipline and rate mode on real traffic: TCP bulk + ping for ${DISC_S:-6} s each"
printf '0\n1\n3\n5\n8\n10\n' >"$OUT/trace.txt"   # 6 opportunities per 10 ms: 7.3 Mbit/s average
for case in \
  'fifo|{"rate":{"kbit":2000},"qdisc":{"kind":"fifo","limit_packets":50}}' \
  'codel|{"rate":{"kbit":2000},"qdisc":{"kind":"codel"}}' \
  'pie|{"rate":{"kbit":2000},"qdisc":{"kind":"pie","ecn":true}}' \
  'sfq|{"rate":{"kbit":2000},"qdisc":{"kind":"sfq","limit_ms":300,"perturb_s":1}}' \
  'fq_codel|{"rate":{"kbit":2000},"qdisc":{"kind":"fq_codel"}}' \
  'prio|{"rate":{"kbit":2000},"qdisc":{"kind":"prio","bands":[{"dscp":[46],"qdisc":{"kind":"fifo","limit_packets":100}},{"qdisc":{"kind":"fq_codel","quantum_bytes":300,"limit_packets":800,"target_ms":2,"interval_ms":50,"ecn":false}}]}}' \
  'schedule|{"rate":{"schedule":[{"at_s":0,"kbit":2000},{"at_s":3,"kbit":500}]},"qdisc":{"kind":"fifo","limit_ms":100}}' \
  "trace|{\"rate\":{\"trace\":\"$OUT/trace.txt\"},\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":100}}" \
  'jitter_loss|{"delay_ms":10,"jitter_ms":5,"loss_percent":1,"rate":{"kbit":2000},"qdisc":{"kind":"fifo","limit_packets":100}}'; do
  name="${case%%|*}"; echo "${case#*|}" >"$OUT/disc-$name.json"
  port=$(( ${port:-5310} + 1 ))   # a fresh port each case: the last server may still be closing
  bn_start_bottleneck 0 "$OUT/disc-$name.json" "$OUT/disc-$name.gtlog"
  DF=${BN_PIDS[-1]}
  bn_start_bottleneck 1 "$OUT/delay25.json" "$OUT/disc-$name-reverse.gtlog"
  DR=${BN_PIDS[-1]}
  bn_bg "$NS_B" iperf3 -s -1 -p "$port" >/dev/null
  sleep 0.2
  ip netns exec "$NS_A" iperf3 -c 10.0.2.2 -p "$port" -C cubic -t "${DISC_S:-6}" --json >"$OUT/disc-$name-iperf3.json" &
  IP=$!
  sleep 2
  rtt=$(ip netns exec "$NS_A" ping -Q 0xb8 -c 15 -i 0.2 -q 10.0.2.2 | awk -F/ '/rtt/ {print $5}')
  wait $IP || true
  kill -TERM $DF $DR; rc=0; wait $DF || rc=$?; wait $DR || true
  ip netns exec "$NS_R" iptables -t mangle -F FORWARD
  goodput=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["end"]["sum_received"]["bits_per_second"]/1000))' "$OUT/disc-$name-iperf3.json" 2>/dev/null || echo "?")
  events=$($M gtlog-summary "$OUT/disc-$name.gtlog" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["events"]), "fragment", d["trailing_fragment_bytes"])')
  printf '%-12s exit %s  tcp %s kbit/s  ping(EF) avg rtt %s ms  %s\n' "$name" "$rc" "$goodput" "${rtt:-?}" "$events"
done

echo "== 4. after SIGTERM"
echo "forward bottleneck exit code: $FWD_RC"
pgrep -f "rtclab-bottleneck --queue-num" -a | grep -- "$OUT" && echo "LEFT RUNNING" || echo "no bottleneck process left"
echo "outputs in $OUT"
