#!/bin/bash
# PID 1 of the user-mode Linux guest (netem/uml/guest.js starts it; docs/netem.md, "uml"). Its root is the host's own
# file system (hostfs), so it runs the host's sh, ip, tc and python3; it writes nothing on the host but the channel
# and the probe's file. It mounts the guest's own proc, sys, /dev and a scratch tmpfs, loads the qdiscs from the
# package's modules, enables forwarding (this guest has no IPv6: its module is not loaded), then serves the command
# channel: a directory on the host where the host drops NAME.cmd (a sh script) and gets back NAME.out, NAME.err and,
# last, NAME.rc (the exit status). Kernel parameters (init gets them as its environment): rtclab_chan=DIR (the
# channel), rtclab_modules=DIR (the package's modules directory, /usr/lib/uml/modules, holding VERSION/), and
# optionally rtclab_links=FILE (the device-counter probe's output, below). It writes DIR/ready (the
# guest kernel's version) once it serves, or DIR/failed (why) and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
chan=$rtclab_chan
fail() { echo "$*" > "$chan/failed.tmp"; mv "$chan/failed.tmp" "$chan/failed"; echo "rtclab guest: $*"; poweroff -f; }
mount -t proc proc /proc || fail "cannot mount proc"
mount -t sysfs sys /sys || fail "cannot mount sysfs"
# Scratch space of the guest's own, beside the channel (removed with it): not on /tmp, which stays the host's, where a
# run directory may be (the probe writes into it).
scratch=${chan%/*}/scratch
mkdir -p "$scratch" && mount -t tmpfs scratch "$scratch" || fail "cannot mount a tmpfs on $scratch"
mount -t devtmpfs dev /dev 2>/dev/null
# The host may have no /lib/modules to mount on: the package's modules go under the scratch space, for modprobe -d.
mkdir -p "$scratch/lib/modules" && mount --bind "$rtclab_modules" "$scratch/lib/modules" || fail "cannot bind $rtclab_modules"
# One modprobe for all (each process started over hostfs costs the guest tens of ms).
modprobe -a -d "$scratch" sch_tbf sch_netem sch_codel sch_fq_codel sch_pie sch_sfq sch_prio sch_htb sch_ingress ifb \
  act_mirred cls_u32 cls_matchall || fail "modprobe -a of the qdiscs failed"
# sch_dualpi2 is mainline since Linux 6.17; Debian 12's user-mode Linux (6.1) has none, so it is tried on its own and
# may be missing (netem/kernel.js refuses dualpi2 under uml while none of its packages has it).
modprobe -d "$scratch" sch_dualpi2 2> /dev/null
ip link set lo up
echo 1 > /proc/sys/net/ipv4/ip_forward
# The guest's drops outside the qdiscs into the run directory, when the host names the file (rtclab_links=FILE):
# links_probe.py, beside this script; its errors go to the console; it ends with the guest. (Its timer lateness is
# measured from the host: netem/uml/lateness.js.)
if [ -n "$rtclab_links" ]; then
  python3 -S -I "${0%/*}/links_probe.py" "$rtclab_links" < /dev/null > /dev/null &
fi
uname -r > "$chan/ready.tmp" && mv "$chan/ready.tmp" "$chan/ready"
# Serve: one command at a time, in the order the host's names sort (the host names them by time). Polling with bash's
# `read -t` on a FIFO costs no process per round; a command costs a sh. Every 100 ms: each round is a wake-up of this
# shell and a read of the channel directory over hostfs (every 20 ms, that was about 40 % of an idle guest's CPU), and
# nothing waits for a round that would need less: the set-up plan and the statistics probe go once a run, a capacity
# or delay step goes 1.5 s before its time (backend.js, STAGE_AHEAD_MS).
mkfifo "$scratch/tick" && exec 3<> "$scratch/tick"
while :; do
  for f in "$chan"/*.cmd; do
    n=${f%.cmd}
    [ -e "$f" ] && [ ! -e "$n.rc" ] || continue
    sh "$f" > "$n.out" 2> "$n.err" < /dev/null
    echo $? > "$n.rc.tmp"
    mv "$n.rc.tmp" "$n.rc"
  done
  read -t 0.1 -u 3
done
