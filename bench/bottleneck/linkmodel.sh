#!/usr/bin/env bash
# The userspace bottleneck's link model on real packets (issue 2 item 4), each case in a fresh network brought up by
# netem from bench/bottleneck/scenarios/link-CASE.yaml; iperf3 UDP (1500-byte IP packets) from a to b, captures at
# a-eth0 and b-eth0:
#   loss       loss_percent 10: the log's random-loss drops are 10% +- 2% of the packets, none of them reaches b
#   jitter     delay 20 ms + jitter 10 ms: in the log, due - end of transmission spread over [20, 30] ms (more
#              than 8 ms apart) with due times in order; at b no packet reordered (one-way delays reported)
#   schedule   2000 kbit/s, then 500 kbit/s from at_s 6 (time 0 set with SIGUSR1 as the load starts, as netem does
#              at a call's start): wire rate at b within 3% of each
#   trace      a Mahimahi trace, one opportunity every 12 ms: 1514 bytes / 12 ms = 1009.3 kbit/s within 2%
#   config     (the binary alone, no network) invalid or incomplete links exit with code 2 and name the field;
#              --print-config writes a valid link back as it was given
# Prints PASS/FAIL lines with the numbers; exits 1 if any fails.
# Usage: sudo bench/bottleneck/linkmodel.sh [SECONDS]   (SECONDS of load per case, default 8; the schedule case
#        always runs 13 s: its step is at 6 s)     env: BOTTLENECK=path  ONLY="loss trace"
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"
bench_init link
seconds=${1:-8}
cases=${ONLY:-"loss jitter schedule trace config"}

# one_link DIR CASE BITRATE SECONDS: netem's network of scenarios/link-CASE.yaml (userspace), captures, iperf3 UDP;
# then teardown (the bottlenecks' files move to DIR).
one_link() {
    local d=$1 c=$2 bitrate=$3 seconds=$4
    net_up "link-$c.yaml" userspace
    flood "$d" "$bitrate" 1472 "$seconds"
    net_down "$d"
}

for c in $cases; do
    echo "== $c"
    d=$WORK/$c
    case $c in
    loss)
        one_link "$d" loss 2M "$seconds"
        $GTLOG lateness "$d/bottleneck-forward.gtlog" >"$d/lateness.json"
        $GTLOG path "$d/a.pcap" "$d/b.pcap" --log "$d/bottleneck-forward.gtlog" >"$d/path.json"
        verdict loss "$("$PY" - "$d" <<'PY'
import json, sys
d = sys.argv[1]
lat, path = json.load(open(f"{d}/lateness.json")), json.load(open(f"{d}/path.json"))
lost = lat["events"].get("dropped_loss", 0)
share = 100 * lost / lat["records"]
print(abs(share - 10) <= 2 and path["log_dropped_present_at_b"] == 0,
      f"{lost} of {lat['records']} packets dropped as random loss ({share:.2f}%), "
      f"dropped but seen at b: {path['log_dropped_present_at_b']}")
PY
)"
        ;;
    jitter)
        one_link "$d" jitter 2M "$seconds"
        $GTLOG path "$d/a.pcap" "$d/b.pcap" >"$d/path.json"
        $GTLOG order "$d/b.pcap" >"$d/order.json"
        verdict jitter "$("$PY" - "$d" "$HERE" "$seconds" <<'PY'
import json, sys
d, seconds = sys.argv[1], float(sys.argv[3])
sys.path.insert(0, sys.argv[2])
import gtlog
path, order = json.load(open(f"{d}/path.json")), json.load(open(f"{d}/order.json"))
lo, hi = path["one_way_delay_ms"]["min"], path["one_way_delay_ms"]["max"]
# The model, exact: due - end of transmission within [delay, delay + jitter], due times never decreasing.
_, records, _ = gtlog.read_gtlog(f"{d}/bottleneck-forward.gtlog")
fwd = sorted((r for r in records if r["event"] in (0, 1)), key=lambda r: r["tx_end_ns"])
extra = [(r["due_ns"] - r["tx_end_ns"]) / 1e6 for r in fwd]
monotonic = all(b["due_ns"] >= a["due_ns"] for a, b in zip(fwd, fwd[1:]))
ok = (min(extra) >= 20 and max(extra) <= 30 and max(extra) - min(extra) > 8 and monotonic
      and order["reordered"] == 0 and order["packets"] > 0.75 * seconds * 2e6 / (1514 * 8))  # 3/4 of the load
print(ok, f"log: due - tx_end {min(extra):.3f}..{max(extra):.3f} ms, due times in order: {monotonic}; "
          f"captures: one-way delay {lo}..{hi} ms (the rest is release lateness), "
          f"{order['reordered']} of {order['packets']} packets reordered")
PY
)"
        ;;
    schedule)
        # Schedule time 0 is when the load starts: SIGUSR1 tells the bottleneck "time 0 is now" (what netem sends it
        # at a call's start; netem's CLI starts the schedule when the network comes up).
        at_flood_start() {
            t0=$(date +%s%N)
            kill -USR1 "$(bottleneck_pid forward)"
        }
        one_link "$d" schedule 4M 13
        unset -f at_flood_start
        $GTLOG windows "$d/b.pcap" --t0-ns "$t0" >"$d/windows.json"
        verdict schedule "$("$PY" - "$d" <<'PY'
import json, sys
w = json.load(open(f"{sys.argv[1]}/windows.json"))["windows_kbit"]
first, second = w[1:5], w[7:11]
ok = len(second) == 4 and all(abs(x - 2000) <= 60 for x in first) and all(abs(x - 500) <= 15 for x in second)
print(ok, f"wire kbit/s per second from t0: {w} (2000 in s 1-4, 500 in s 7-10)")
PY
)"
        ;;
    trace)
        one_link "$d" trace 2M "$seconds" # scenarios/trace-12ms.txt: one opportunity every 12 ms
        $GTLOG path "$d/a.pcap" "$d/b.pcap" >"$d/path.json"
        verdict trace "$("$PY" - "$d" <<'PY'
import json, sys
k = json.load(open(f"{sys.argv[1]}/path.json")).get("received_wire_kbit", 0)
print(abs(k - 1009.33) <= 20, f"received wire rate {k} kbit/s (1514 bytes per 12 ms = 1009.3)")
PY
)"
        ;;
    config)
        # The binary alone (--check, --print-config: no queue, no network). It takes netem's normalised link, every
        # field given: each of these lacks one or gets one wrong, and the error must name that field.
        mkdir -p "$d"
        full='"delay_schedule":[],"jitter_ms":0,"loss_percent":0,"outage":null,"loss_gemodel":null,"rate":{"kbit":1000,"burst_bytes":3028}'
        i=0
        for pair in \
            "delay_ms|{\"delay_ms\":-1,$full,\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10}}" \
            "qdisc.kind|{\"delay_ms\":25,$full,\"qdisc\":{\"kind\":\"red\"}}" \
            "qdisc.target|{\"delay_ms\":25,$full,\"qdisc\":{\"kind\":\"codel\",\"target\":5,\"interval_ms\":100,\"limit_packets\":1000,\"ecn\":false}}" \
            "loss_percent|{\"delay_ms\":1,\"delay_schedule\":[],\"jitter_ms\":0,\"loss_percent\":150,\"outage\":null,\"loss_gemodel\":null,\"rate\":null,\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10}}" \
            "qdisc.bands[0].dscp|{\"delay_ms\":25,$full,\"qdisc\":{\"kind\":\"prio\",\"bands\":[{\"dscp\":[99],\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10},\"rate_cap\":null},{\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10},\"rate_cap\":null}],\"meters\":[]}}" \
            "jitter_ms|{\"delay_ms\":25,\"delay_schedule\":[],\"loss_percent\":0,\"outage\":null,\"loss_gemodel\":null,\"rate\":null,\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10}}" \
            "qdisc.limit_ms|{\"delay_ms\":25,$full,\"qdisc\":{\"kind\":\"fifo\",\"limit_ms\":300}}" \
            "rate.burst_bytes|{\"delay_ms\":25,\"delay_schedule\":[],\"jitter_ms\":0,\"loss_percent\":0,\"outage\":null,\"loss_gemodel\":null,\"rate\":{\"kbit\":1000},\"qdisc\":{\"kind\":\"fifo\",\"limit_packets\":10}}"; do
            i=$((i + 1))
            field=${pair%%|*}
            echo "${pair#*|}" >"$d/bad$i.json"
            rc=0
            "$BOTTLENECK" --check --config "$d/bad$i.json" >"$d/bad$i.out" 2>"$d/bad$i.err" || rc=$?
            if [ "$rc" = 2 ] && grep -qF "\`$field\`" "$d/bad$i.err"; then ok=True; else ok=False; fi
            verdict "config $field" "$ok exit code $rc: $(head -c 300 "$d/bad$i.err")"
        done
        # A valid link comes back from --print-config as it went in (the links of the tcp_all cases' kinds).
        echo '{"delay_ms":10,"delay_schedule":[],"jitter_ms":5,"loss_percent":1.5,"outage":{"mean_on_ms":5000,"mean_off_ms":200},"loss_gemodel":null,"rate":{"schedule":[{"at_s":0,"kbit":2000},{"at_s":3,"kbit":500}],"burst_bytes":3028},"qdisc":{"kind":"prio","bands":[{"dscp":[46],"qdisc":{"kind":"fifo","limit_packets":100},"rate_cap":null},{"qdisc":{"kind":"fq_codel","target_ms":2,"interval_ms":50,"limit_packets":800,"quantum_bytes":300,"flows":1024,"ecn":false},"rate_cap":null}],"meters":[]}}' >"$d/good.json"
        rc=0
        "$BOTTLENECK" --print-config --config "$d/good.json" >"$d/good.out" 2>"$d/good.err" || rc=$?
        verdict "config --print-config" "$("$PY" - "$d/good.json" "$d/good.out" "$rc" <<'PY'
import json, sys
given, rc = json.load(open(sys.argv[1])), sys.argv[3]
try:
    printed = json.load(open(sys.argv[2]))
except ValueError as e:
    printed = f"not JSON: {e}"
print(rc == "0" and printed == given, f"exit code {rc}, printed the link as given: {printed == given}")
PY
)"
        ;;
    esac
done
exit $FAILED
