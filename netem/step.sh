#!/bin/bash
# One scheduled change (capacity or delay step), staged ahead of its time by the kernel backend (in r) and the uml
# backend (in its guest, which reads the host's clock): starts `tc -batch` at once, waits in bash until the step's time,
# hands tc the change, and records when it did, when tc had applied it, and when tc returned (netem/steps.js;
# docs/netem.md, "Scheduled changes").
#   bash step.sh TICK DUE_US 'TC ARGS' OUT
# TICK: a FIFO nobody writes (bash's `read -t` on it is the wait: a process started between reading the clock and the
# step's time, date or sleep, would make the step late by its start, about 0.15 s in the uml guest); DUE_US: the step's
# time, epoch us; OUT: written last, in one write, "<tc's exit status> <handed us> <applied us> <returned us>"
# (applied 0: tc never answered; OUT.err: tc's stderr).
# Applied: tc runs its batch in order and stops at a failed command, and it answers the second command, a
# `qdisc show dev lo`, only once the kernel acknowledged the change: its first line of output times the change without
# tc's exit, which costs tens of ms in the uml guest. Every time is bash's own EPOCHREALTIME: no process is started
# between the clock and what it times.
tick=$1 due_us=$2 change=$3 out=$4
exec 3<> "$tick"
coproc TC { exec tc -batch - 2> "$out.err"; }
tc_pid=$TC_PID # bash unsets TC_PID once it has reaped the coprocess
# Our own copies of the coprocess's pipes (bash closes its own when the coprocess ends), the originals closed so that
# tc sees the end of its input when ours closes.
exec {tc_in}>&"${TC[1]}" {tc_out}<&"${TC[0]}"
eval "exec ${TC[1]}>&- ${TC[0]}<&-"
# bash writes its stdout line by line: tc may fail the change and exit between the two lines we hand it, and the
# second write's SIGPIPE would kill this script before it records tc's failure (seen in 5 of 30 runs of
# netem/test/steps.test.js). Ignored here, after tc started (it keeps the default), the write fails and we go on.
trap '' PIPE
d=$((due_us - ${EPOCHREALTIME/./}))
if [ "$d" -gt 0 ]; then
  printf -v f %06d $((d % 1000000))
  read -t "$((d / 1000000)).$f" -u 3
fi
handed=${EPOCHREALTIME/./}
printf '%s\nqdisc show dev lo\n' "$change" >&"$tc_in" 2>/dev/null
exec {tc_in}>&-
applied=0
if read -r -u "$tc_out" _; then applied=${EPOCHREALTIME/./}; fi
cat <&"$tc_out" > /dev/null
wait "$tc_pid"
rc=$?
returned=${EPOCHREALTIME/./}
echo "$rc $handed $applied $returned" > "$out"
