"""RFC 8868 5.1's short TCP flows (cross_traffic kind tcp_short, docs/netem.md "Short TCP flows"): repeated downloads,
each on a new TCP connection, of the sizes and after the idle times that netem/cross.js drew from the item's seed.

  serve --bind ADDR --port P --congestion-control CC --dscp D
      in the sending namespace: for each connection, reads the size asked for ("SIZE\\n"), sends that many bytes,
      closes its side.
  fetch --server ADDR --port P --plan FILE --out FILE --stop-at-ns T --congestion-control CC
      in the receiving namespace: each flow of the plan (a thread) waits each idle time, then downloads its size,
      and writes one JSON line per download: when it asked (connect), when its last byte arrived, the completion
      time, or why it did not complete. Stops at T (epoch ns) or on SIGINT/SIGTERM; a download cut short by either is
      written with completed false and the reason.

Standard library only (started as `python3 -S -I`): the host's python3, no project environment in the namespaces."""

import argparse
import json
import os
import select
import signal
import socket
import socketserver
import sys
import threading
import time

CHUNK = 65536
MAX_SIZE = 1 << 30


def tune(sock: socket.socket, congestion_control: str, dscp: int = 0) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
    if dscp:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2)


def serve(args: argparse.Namespace) -> int:
    zeros = bytes(CHUNK)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            tune(self.connection, args.congestion_control, args.dscp)
            line = self.rfile.readline(32).strip()
            if not line.isdigit() or not 0 < int(line) <= MAX_SIZE:
                return
            left = int(line)
            while left > 0:
                n = self.connection.send(zeros[:min(left, CHUNK)])
                left -= n
            self.connection.shutdown(socket.SHUT_WR)
            while self.connection.recv(CHUNK):  # until the client has read everything and closed
                pass

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 128

        def server_bind(self) -> None:
            tune(self.socket, args.congestion_control, args.dscp)
            super().server_bind()

    with Server((args.bind, args.port), Handler) as server:
        signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
        signal.signal(signal.SIGINT, lambda *_: threading.Thread(target=server.shutdown).start())
        server.serve_forever(poll_interval=0.1)
    return 0


class Fetcher:
    def __init__(self, args: argparse.Namespace, out) -> None:
        self.args = args
        self.out = out
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.why_stopped = "stopped at its stop_s"

    def write(self, record: dict) -> None:
        with self.lock:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()

    def connect(self, sock: socket.socket) -> bool:
        """Connects, polling the stop flag (a SYN lost at the bottleneck waits for TCP's retransmission)."""
        sock.setblocking(False)
        sock.connect_ex((self.args.server, self.args.port))
        while not self.stop.is_set():
            _, writable, _ = select.select([], [sock], [], 0.1)
            if writable:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    raise OSError(err, os.strerror(err))
                sock.settimeout(0.1)
                return True
        return False

    def download(self, flow: int, index: int, size: int) -> None:
        rec = {"flow": flow, "index": index, "size_bytes": size, "start_ns": time.time_ns(), "end_ns": None,
               "completion_s": None, "bytes_received": 0, "completed": False, "reason": None}
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                tune(sock, self.args.congestion_control)
                if self.connect(sock):
                    sock.sendall(f"{size}\n".encode())
                while rec["bytes_received"] < size:
                    if self.stop.is_set():
                        rec["reason"] = self.why_stopped
                        break
                    try:
                        data = sock.recv(CHUNK)
                    except socket.timeout:
                        continue
                    if not data:
                        rec["reason"] = f"the server closed after {rec['bytes_received']} of {size} bytes"
                        break
                    rec["bytes_received"] += len(data)
                if rec["bytes_received"] >= size:
                    rec["end_ns"] = time.time_ns()
                    rec["completion_s"] = (rec["end_ns"] - rec["start_ns"]) / 1e9
                    rec["completed"] = True
        except OSError as e:
            rec["reason"] = f"{type(e).__name__}: {e}"
        self.write(rec)

    def run_flow(self, flow: int, steps: list) -> None:
        for index, step in enumerate(steps):
            if self.stop.wait(step["idle_s"]):
                return
            self.download(flow, index, step["size_bytes"])
            if self.stop.is_set():
                return


def fetch(args: argparse.Namespace) -> int:
    with open(args.plan) as f:
        plan = json.load(f)
    with open(args.out, "a") as out:
        fetcher = Fetcher(args, out)

        def on_signal(*_) -> None:
            fetcher.why_stopped = "the run ended"
            fetcher.stop.set()
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        threads = [threading.Thread(target=fetcher.run_flow, args=(i, steps), daemon=True)
                   for i, steps in enumerate(plan["flows"])]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            if time.time_ns() >= args.stop_at_ns:
                fetcher.stop.set()
            for t in threads:
                t.join(0.05)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="short_tcp.py")
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--congestion-control", required=True)
    s.add_argument("--dscp", type=int, default=0)
    f = sub.add_parser("fetch")
    f.add_argument("--server", required=True)
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--plan", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--stop-at-ns", type=int, required=True)
    f.add_argument("--congestion-control", required=True)
    args = p.parse_args(argv)
    return serve(args) if args.mode == "serve" else fetch(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
