#!/usr/bin/env bash
# Capture settings at high packet rates (issue 13): do the two captures (a-eth0 and b-eth0, tcpdump as netem and
# these scripts run it) keep every packet? For each setting and rate: an iperf3 UDP flow through plain kernel
# forwarding (scenarios/plain.yaml, no rate: the load alone decides the rate), captured at a and b; printed: the
# packets/s reached, the packets tcpdump reported dropped by the kernel at a and at b, and the packets missing from
# a capture against iperf3's own count of what it sent (those can go missing without tcpdump counting them).
#
# Usage: sudo bench/bottleneck/capture.sh [--duration S] [--rates "50000 100000"] [--ip-len 200]
#   settings compared (each replaces the buffering options of lib.sh's capture_start), in this order:
#     default   -U --immediate-mode                 (tcpdump's 2 MiB buffer: what netem ran until issue 13)
#     B64       -B 65536 -U --immediate-mode        (64 MiB buffer; lib.sh's default now)
#     B256      -B 262144 -U --immediate-mode
#     B64-noU   -B 65536 --immediate-mode           (written in 4 KiB stdio blocks, not one write per packet)
#     B64-batch -B 65536                            (no immediate mode: the kernel hands over blocks of packets)
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"

duration_s=5
rates="50000 100000"
ip_len=200
while [ $# -gt 0 ]; do
    case $1 in
    --duration) duration_s=$2; shift ;;
    --rates) rates=$2; shift ;;
    --ip-len) ip_len=$2; shift ;;
    -h | --help) sed -n '2,/^source/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
bench_init capture
declare -A SETTINGS=(
    [default]="-U --immediate-mode"
    [B64]="-B 65536 -U --immediate-mode"
    [B256]="-B 262144 -U --immediate-mode"
    [B64-noU]="-B 65536 --immediate-mode"
    [B64-batch]="-B 65536"
)
order="default B64 B256 B64-noU B64-batch"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
net_up plain.yaml kernel
for pps in $rates; do
    for name in $order; do
        echo "== $pps packets/s of $ip_len bytes, capture $name: ${SETTINGS[$name]}" >&2
        CAPTURE_OPTS=${SETTINGS[$name]} flood "$WORK/$name-$pps" "$((pps * ip_len * 8 / 1000))K" $((ip_len - 28)) "$duration_s" --json
        echo "$pps $name" >"$WORK/$name-$pps/case.txt"
    done
done
net_down "$WORK/net"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== analysing" >&2
{
    printf '\nCaptures at high rates, plain kernel forwarding, %s-byte IP packets, %s s per case; %s CPUs, load average %s before,\n' \
        "$ip_len" "$duration_s" "$(nproc)" "$load_before"
    printf '%s after; %s Chromium processes on the machine at the end.\n' "$load_after" "$(pgrep -c -f 'chrom(e|ium)' || true)"
    for pps in $rates; do
        for name in $order; do
            d=$WORK/$name-$pps
            $GTLOG path "$d/a.pcap" "$d/b.pcap" >"$d/path.json"
            echo "$pps $name $(capture_drops "$d/a.pcap") $(capture_drops "$d/b.pcap")"
        done
    done | "$PY" -c '
import json, sys
work, duration, settings = sys.argv[1], float(sys.argv[2]), dict(s.split("=", 1) for s in sys.argv[3:])
row = "%8s  %-10s  %-28s  %7s  %7s  %7s  %9s  %9s  %11s"
print(row % ("asked/s", "setting", "tcpdump buffering options", "sent/s", "drops@a", "drops@b", "missing@a", "missing@b",
             "iperf3 lost"))
for line in sys.stdin:
    pps, name, da, db = line.split()
    d = "%s/%s-%s" % (work, name, pps)
    it = json.load(open(d + "/iperf3.txt"))["end"]["sum"]
    sent, lost = it["packets"], it.get("lost_packets", 0)
    path = json.load(open(d + "/path.json"))
    # missing: sent by iperf3 but not in the capture (plain forwarding loses nothing between a and b itself; the
    # server may still lose packets in its socket buffer after b captured them: iperf3 lost, printed apart)
    print(row % (pps, name, settings[name].replace("_", " "), "%.0f" % (sent / duration), da, db,
                 sent - path["sent"], sent - path["received"], lost))
' "$WORK" "$duration_s" $(for n in $order; do printf '%s=%s ' "$n" "${SETTINGS[$n]// /_}"; done)
    echo "drops: tcpdump's own count of packets the kernel dropped for it (its ring buffer was full);"
    echo "missing: packets iperf3 sent that are not in the capture at a / at b; iperf3 lost: its server's count of packets"
    echo "  it never read (its socket buffer overflowed after the capture at b, or they were lost on the way)."
    echo "  -1: the capture holds one packet more than iperf3 counted, its UDP handshake: every packet was captured."
} | tee "$WORK/capture.txt"
