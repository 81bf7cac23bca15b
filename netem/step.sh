#!/bin/bash
# One scheduled change (capacity or delay step), staged ahead of its time by the kernel backend (in r) and the uml
# backend (in its guest, which reads the host's clock): starts `tc -batch` at once, waits in bash until the step's time,
# hands tc the change, and records when it did and when tc returned, applied (netem/steps.js; docs/netem.md,
# "Scheduled changes").
#   bash step.sh TICK DUE_US 'TC ARGS' OUT
# TICK: a FIFO nobody writes (bash's `read -t` on it is the wait: a process started between reading the clock and the
# step's time, date or sleep, would make the step late by its start, about 0.15 s here); DUE_US: the step's time,
# epoch us; OUT: written last, in one write, "<tc's exit status> <handed us> <returned us>" (OUT.err: tc's stderr).
# Every time is bash's own EPOCHREALTIME: no process is started between the clock and what it times.
tick=$1 due_us=$2 change=$3 out=$4
exec 3<> "$tick"
coproc TC { exec tc -batch - > /dev/null 2> "$out.err"; }
tc_in=${TC[1]}
d=$((due_us - ${EPOCHREALTIME/./}))
if [ "$d" -gt 0 ]; then
  printf -v f %06d $((d % 1000000))
  read -t "$((d / 1000000)).$f" -u 3
fi
handed=${EPOCHREALTIME/./}
echo "$change" >&"$tc_in"
exec {tc_in}>&-
wait "$TC_PID"
rc=$?
returned=${EPOCHREALTIME/./}
echo "$rc $handed $returned" > "$out"
