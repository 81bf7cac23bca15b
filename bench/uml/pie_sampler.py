"""Runs in the uml guest (bench/uml/pie-timer.mjs starts it): every pie qdisc's drop probability and queue delay,
read by rtnetlink every PERIOD seconds, one line per pie qdisc and read:

    <epoch s> <guest CLOCK_MONOTONIC s> <ifindex> <prob, over 2^64> <delay us> <backlog bytes> <drops>

usage: python3 -S -I pie_sampler.py OUT [PERIOD]

`prob` and `delay` are sch_pie's own (`struct tc_pie_xstats`: prob is vars.prob << 8, delay vars.qdelay in us, the
queue delay of the last packet dequeued). One netlink dump per read, no process per sample: each process the guest
starts costs it about 0.1 s. Standard library only, no site packages: the guest runs the host's python3 over hostfs.
"""

import socket
import struct
import sys
import time

RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
TCA_KIND, TCA_XSTATS, TCA_STATS2 = 1, 4, 7
TCA_STATS_QUEUE = 3
NLMSG_HDR, TCMSG = struct.Struct("IHHII"), struct.Struct("BxxxiIII")


def attributes(buf: bytes, off: int, end: int):
    """(type, payload) of each netlink attribute in buf[off:end]."""
    while off + 4 <= end:
        length, kind = struct.unpack_from("HH", buf, off)
        if length < 4:
            return
        yield kind & 0x7FFF, buf[off + 4:off + length]
        off += (length + 3) & ~3


def pie_qdiscs(sock: socket.socket, seq: int):
    """(ifindex, prob, delay_us, backlog, drops) of each pie qdisc, from one RTM_GETQDISC dump."""
    sock.send(NLMSG_HDR.pack(NLMSG_HDR.size + TCMSG.size, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, seq, 0)
              + TCMSG.pack(0, 0, 0, 0, 0))
    while True:
        data, off = sock.recv(1 << 16), 0
        while off + NLMSG_HDR.size <= len(data):
            length, kind = struct.unpack_from("IH", data, off)
            if kind in (NLMSG_DONE, NLMSG_ERROR):
                return
            if kind == RTM_NEWQDISC:
                ifindex = TCMSG.unpack_from(data, off + NLMSG_HDR.size)[1]
                name, xstats, queue = None, None, None
                for akind, value in attributes(data, off + NLMSG_HDR.size + TCMSG.size, off + length):
                    if akind == TCA_KIND:
                        name = value.rstrip(b"\0")
                    elif akind == TCA_XSTATS:
                        xstats = value
                    elif akind == TCA_STATS2:
                        queue = next((v for k, v in attributes(value, 0, len(value)) if k == TCA_STATS_QUEUE), None)
                if name == b"pie" and xstats is not None:
                    prob, delay = struct.unpack_from("QI", xstats)
                    backlog, drops = struct.unpack_from("II", queue, 4) if queue else (0, 0)
                    yield ifindex, prob, delay, backlog, drops
            off += (length + 3) & ~3


def main() -> None:
    out = open(sys.argv[1], "w", buffering=1 << 16)
    period = float(sys.argv[2]) if len(sys.argv) > 2 else 0.002
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    sock.bind((0, 0))
    seq = 0
    while True:
        seq += 1
        wall, mono = time.time(), time.monotonic()
        for ifindex, prob, delay, backlog, drops in pie_qdiscs(sock, seq):
            out.write(f"{wall:.6f} {mono:.6f} {ifindex} {prob} {delay} {backlog} {drops}\n")
        time.sleep(period)


if __name__ == "__main__":
    main()
