#!/usr/bin/env bash
# Benchmark of the userspace bottleneck: release lateness and CPU at about 1k, 10k and 50k packets/s, beside
# kernel TBF's own pacing error measured the same way on the same machine.
#
# Each rate: a link just below the offered load (UDP from iperf3, 5% over the link rate), so the queue is always
# backlogged and departures should be spaced exactly one transmission time apart. Measured:
#  - lateness (userspace only): release_ns - due_ns from the ground-truth log;
#  - spacing error (both backends, the same way): |gap between consecutive packets at b-eth0 - transmission time|;
#  - CPU: the bottleneck process's user+system time over the run (TBF runs in the kernel: not separable);
#  - loss outside the model: packets captured leaving a that are not in the log, and kernel overruns.
# Usage: sudo bench/bottleneck/run.sh            (DURATION_S=10 RATES="1000 10000 50000" to change)
# Not a timed test: numbers depend on the machine and on what else runs on it.
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BN_BIN="${BN_BIN:-$ROOT/netem/bottleneck/target/release/rtclab-bottleneck}"
OUT="${OUT:-$(mktemp -d /tmp/rtclab-bn-bench.XXXXXX)}"
DURATION_S="${DURATION_S:-10}"
RATES="${RATES:-1000 10000 50000}"
BN_EXTRA_ARGS="${BN_EXTRA_ARGS:-}"
source "$HERE/netns.sh"
bn_need iperf3 tcpdump ethtool python3 iptables tc
[ -x "$BN_BIN" ] || { echo "build first: cargo build --release --manifest-path netem/bottleneck/Cargo.toml" >&2; exit 1; }
M="python3 $HERE/measure.py"
mkdir -p "$OUT"
bn_up

# IP packet size per rate: 1500 bytes up to 10k packets/s (10 and 100 Mbit/s); 200 bytes at 50k packets/s
# (1500-byte packets would be 600 Mbit/s, more than iperf3 and tcpdump sustain here).
ip_len_for() { if [ "$1" -ge 50000 ]; then echo 200; else echo 1500; fi; }

cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }   # user, system

run_load() { # run_load TAG KBIT IP_LEN : iperf3 at 1.05 x KBIT, captures at a and b
  local tag="$1" kbit="$2" ip_len="$3"
  local offered=$(( kbit * 105 / 100 ))
  bn_bg "$NS_B" iperf3 -s -1 -p 5201 >/dev/null
  bn_capture "$NS_A" a-eth0 "$OUT/$tag-a.pcap"; local ca=${BN_PIDS[-1]}
  bn_capture "$NS_B" b-eth0 "$OUT/$tag-b.pcap"; local cb=${BN_PIDS[-1]}
  ip netns exec "$NS_A" iperf3 -c 10.0.2.2 -p 5201 -u -b "${offered}K" -l $((ip_len - 28)) -t "$DURATION_S" --json >"$OUT/$tag-iperf3.json" || true
  sleep 0.5
  bn_stop $ca; bn_stop $cb
}

printf '%s\n' "rate,backend,pps_at_b,lateness_p50_us,lateness_p99_us,lateness_p99.9_us,lateness_max_us,spacing_p50_us,spacing_p99_us,spacing_p99.9_us,spacing_max_us,cpu_percent,not_in_log,kernel_overruns,capture_drops" >"$OUT/results.csv"
for pps in $RATES; do
  ip_len=$(ip_len_for "$pps")
  kbit=$(( pps * (ip_len + 14) * 8 / 1000 ))
  limit=$(( 200 * (ip_len + 14) ))
  echo "== $pps packets/s: $ip_len-byte IP packets, link $kbit kbit/s" >&2

  # Userspace bottleneck.
  tag="us-$pps"
  echo "{\"delay_ms\":0,\"jitter_ms\":0,\"loss_percent\":0,\"rate\":{\"kbit\":$kbit,\"burst_bytes\":$((2 * (ip_len + 14) < 3028 ? 3028 : 2 * (ip_len + 14)))},\"qdisc\":{\"kind\":\"fifo\",\"limit_bytes\":$limit}}" >"$OUT/$tag.json"
  # shellcheck disable=SC2086
  bn_start_bottleneck 0 "$OUT/$tag.json" "$OUT/$tag.gtlog" --stats "$OUT/$tag.stats.jsonl" $BN_EXTRA_ARGS
  pid=${BN_PIDS[-1]}
  t_start=$(date +%s.%N); c_start=$(cpu_ticks "$pid")
  run_load "$tag" "$kbit" "$ip_len"
  c_end=$(cpu_ticks "$pid"); t_end=$(date +%s.%N)
  bn_stop "$pid"
  ip netns exec "$NS_R" iptables -t mangle -F FORWARD
  # System time includes the kernel's forwarding of each accepted packet (the verdict call carries it on to b).
  cpu=$(python3 -c "u0,s0='$c_start'.split(); u1,s1='$c_end'.split(); d=$(getconf CLK_TCK)*($t_end-$t_start); print(f'{100*(int(u1)-int(u0))/d:.1f}+{100*(int(s1)-int(s0))/d:.1f}')")
  late=$($M lateness "$OUT/$tag.gtlog" --skip-s 1)
  spacing=$($M spacing "$OUT/$tag-b.pcap" --kbit "$kbit" --dport 5201 --skip-s 1)
  acct=$($M accounting "$OUT/$tag.gtlog" "$OUT/$tag-a.pcap" --dport 5201)
  overruns=$(tail -1 "$OUT/$tag.stats.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel_overruns"])')
  drops=$(cat "$OUT/$tag-a.pcap.log" "$OUT/$tag-b.pcap.log" | awk '/dropped by kernel/ {s += $1} END {print s + 0}')
  python3 - "$pps" "$late" "$spacing" "$acct" "$cpu" "$overruns" "$drops" >>"$OUT/results.csv" <<'PY'
import json, sys
pps, late, sp, acct, cpu, ovr, drops = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
l, s = late["lateness_us"], sp["abs_error_us"]
print(",".join(str(x) for x in [pps, "userspace", round(sp["packets_per_s"]), l["p50"], l["p99"], l["p99.9"], l["max"], s["p50"], s["p99"], s["p99.9"], s["max"], cpu, acct["not_in_log"], ovr, drops]))
PY

  # Kernel TBF with a bfifo of the same size, no delay.
  tag="tbf-$pps"
  ip netns exec "$NS_R" tc qdisc replace dev r-eth1 root handle 1: tbf rate "${kbit}kbit" burst $((2 * (ip_len + 14) < 3028 ? 3028 : 2 * (ip_len + 14))) limit "$limit"
  run_load "$tag" "$kbit" "$ip_len"
  ip netns exec "$NS_R" tc qdisc del dev r-eth1 root
  spacing=$($M spacing "$OUT/$tag-b.pcap" --kbit "$kbit" --dport 5201 --skip-s 1)
  drops=$(cat "$OUT/$tag-a.pcap.log" "$OUT/$tag-b.pcap.log" | awk '/dropped by kernel/ {s += $1} END {print s + 0}')
  python3 - "$pps" "$spacing" "$drops" >>"$OUT/results.csv" <<'PY'
import json, sys
pps, sp, drops = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
s = sp["abs_error_us"]
print(",".join(str(x) for x in [pps, "kernel-tbf", round(sp["packets_per_s"]), "", "", "", "", s["p50"], s["p99"], s["p99.9"], s["max"], "", "", "", drops]))
PY
done

python3 - "$OUT/results.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def f(v):
    if v in ("", None): return "-"
    x = float(v)
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}"
print()
print("release lateness (log: release - due) and departure spacing error (capture at b-eth0), microseconds")
hdr = ["rate", "backend", "pps@b", "late p50", "p99", "p99.9", "max", "| spacing p50", "p99", "p99.9", "max", "| cpu % usr+sys", "lost*", "overruns", "cap.drops"]
keys = ["rate", "backend", "pps_at_b", "lateness_p50_us", "lateness_p99_us", "lateness_p99.9_us", "lateness_max_us", "spacing_p50_us", "spacing_p99_us", "spacing_p99.9_us", "spacing_max_us", "cpu_percent", "not_in_log", "kernel_overruns", "capture_drops"]
table = [hdr] + [[r["rate"], r["backend"]] + [f(r[k]) if k not in ("not_in_log", "kernel_overruns", "capture_drops", "cpu_percent") else (r[k] or "-") for k in keys[2:]] for r in rows]
widths = [max(len(str(row[i])) for row in table) for i in range(len(hdr))]
for row in table:
    print("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))
print("* lost: packets captured leaving a that never reached the bottleneck's log (kernel drops before NFQUEUE).")
print("cpu: the bottleneck process, user + system; system includes forwarding each accepted packet on to b (and b's")
print("receive path), work that kernel TBF does in softirq context. The generator (iperf3) may fall short of the rate")
print("asked (pps@b); then the link is not always backlogged and the spacing error covers fewer gaps.")
PY
echo "raw data: $OUT" >&2
