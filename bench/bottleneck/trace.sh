#!/usr/bin/env bash
# Where the late releases come from (issue 13): one rate of run.sh's benchmark (the userspace bottleneck, a fifo of
# 200 frames, iperf3 UDP at 1.05 x the link rate of 1500-byte packets) with a kernel trace of the whole machine
# recorded during the load (perf: scheduler switches, timer starts and expiries, every system call, user page
# faults), then trace.py: the bottleneck loop's system calls and what it was doing at the due time of each late
# release (asleep with its timer armed but the timer interrupt late, inside a system call, or running), beside how
# late every other timer of the machine ran in the same seconds. Needs perf (Debian: linux-perf) and tracefs.
#
# Usage: sudo bench/bottleneck/trace.sh [--pps 1000] [--duration 8] [--late-us 150]
#   The trace costs CPU itself (about a third of a core at 1k packets/s): compare lateness between traced runs only.
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"

pps=1000
duration_s=8
late_us=150
while [ $# -gt 0 ]; do
    case $1 in
    --pps) pps=$2; shift ;;
    --duration) duration_s=$2; shift ;;
    --late-us) late_us=$2; shift ;;
    -h | --help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
bench_init trace
command -v perf >/dev/null || { echo "missing command: perf (apt-get install linux-perf)" >&2; exit 1; }
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing

ip_len=1500
kbit=$((pps * (ip_len + 14) * 8 / 1000))
cat >"$WORK/rate-$pps.yaml" <<EOF
name: bench-trace-$pps
description: trace.sh at $pps packets/s of $ip_len bytes, link $kbit kbit/s, fifo of 200 frames
network:
  forward:
    delay_ms: 0
    rate: { kbit: $kbit, burst_bytes: 3028 }
    qdisc: { kind: fifo, limit_bytes: $((200 * (ip_len + 14))) }
  reverse:
    delay_ms: 0
    rate: null
EOF
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
net_up "$WORK/rate-$pps.yaml" userspace
bpid=$(bottleneck_pid forward)
at_flood_start() {
    # perf stamps events with CLOCK_MONOTONIC, the log with CLOCK_REALTIME: keep the offset between them.
    "$PY" -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))' >"$1/offset_ns"
    perf record -a -k mono -o "$1/perf.data" -e sched:sched_switch -e timer:hrtimer_start -e timer:hrtimer_expire_entry \
        -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e exceptions:page_fault_user -- sleep "$((duration_s - 1))" \
        >"$1/perf.log" 2>&1 &
    PERF_PID=$!
    steal0=$(steal_ticks)
}
at_flood_end() {
    wait "$PERF_PID" || { echo "perf failed: $(tail -3 "$1/perf.log")" >&2; exit 1; }
    echo "$(steal_ticks) $steal0 $((duration_s - 1)) $(nproc) $(getconf CLK_TCK)" >"$1/steal.txt"
}
# Time the hypervisor ran something else while this VM's vCPUs wanted to run (/proc/stat, all CPUs), clock ticks.
steal_ticks() { awk '/^cpu / { print $9 }' /proc/stat; }
flood "$WORK/us" "$((kbit * 105 / 100))K" $((ip_len - 28)) "$duration_s" --json
unset -f at_flood_start at_flood_end
net_down "$WORK/us"

echo "== analysing" >&2
perf script -i "$WORK/us/perf.data" -F comm,tid,cpu,time,event,trace --ns >"$WORK/us/perf.txt" 2>/dev/null
$GTLOG lateness "$WORK/us/bottleneck-forward.gtlog" --skip-s 1 >"$WORK/us/lateness.json"
"$PY" "$HERE/trace.py" "$WORK/us/perf.txt" --tid "$bpid" --offset-ns "$(cat "$WORK/us/offset_ns")" \
    --log "$WORK/us/bottleneck-forward.gtlog" --late-us "$late_us" >"$WORK/us/trace.json"
rm -f "$WORK/us/perf.txt" # large; perf.data stays
"$PY" - "$WORK/us" "$pps" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
d, pps, before, after = sys.argv[1:]
late, t = json.load(open(f"{d}/lateness.json"))["lateness"], json.load(open(f"{d}/trace.json"))
s1, s0, secs, ncpu, hz = map(int, open(f"{d}/steal.txt").read().split())
print(f"\nTraced run at {pps} packets/s, load average {before} before, {after} after; steal time (the hypervisor")
print(f"running something else) {100 * (s1 - s0) / hz / (secs * ncpu):.1f}% of the {ncpu} CPUs' time during the trace.")
print(f"Release lateness (log, first second skipped): p50 {late['p50_us']} us, p99 {late['p99_us']}, p99.9 {late['p99_9_us']}, max {late['max_us']}")
print("The bottleneck loop's system calls (us):")
for name, s in t["loop_syscalls_us"].items():
    print(f"  {name:16} n={s['n']:7}  p50 {s['p50']:8}  p99 {s['p99']:8}  max {s['max']:9}")
print(f"  page faults: {t['loop_page_faults']}; left the CPU: {t['loop_left_cpu_by_state']} (S: slept, R: preempted)")
l = t["late"]
print(f"Releases later than {l['threshold_us']} us, by what the loop was doing at the due time: {l['by_cause']}")
print(f"  asleep_timer_late: how late the timer interrupt came (us): {l['timer_expiry_delay_us_of_asleep_timer_late']}")
print("Every timer of the machine in the same seconds, how late its expiry ran (us):")
for fn, s in t["hrtimers_expiry_delay_us"].items():
    print(f"  {fn:20} n={s['n']:7}  p50 {s['p50']:8}  p99 {s['p99']:8}  p99.9 {s['p99_9']:8}  max {s['max']:9}")
PY
