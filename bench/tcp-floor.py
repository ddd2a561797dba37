#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The floor under the network pair: FRAMES frames of SIZE bytes sent over
one TCP connection, a frame every 1/RATE s, each stamped with the monotonic
clock when its send began; the receiver prints p50/p99 of when the frame's
last byte arrived (and its first), in µs. Both ends on one kernel (network
namespaces), so one clock. bench/network-latency.sh runs it with FLOOR=1.

  bench/tcp-floor.py send HOST PORT [FRAMES SIZE RATE]   # listens
  bench/tcp-floor.py recv HOST PORT [FRAMES SIZE RATE]   # connects
"""
import socket
import sys
import time


def send(host, port, frames, size, rate):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, port))
    server.listen(1)
    conn, _ = server.accept()
    frame = bytearray(size)
    start = time.monotonic()
    for i in range(frames):
        time.sleep(max(0.0, start + i / rate - time.monotonic()))
        frame[:8] = time.monotonic_ns().to_bytes(8, "little")
        conn.sendall(frame)
    conn.close()


def recv(host, port, frames, size):
    for _ in range(200):
        try:
            conn = socket.create_connection((host, port))
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit(f"nothing listens on {host}:{port}")
    frame = bytearray(size)
    view = memoryview(frame)
    whole, first = [], []
    for _ in range(frames):
        got, first_at = 0, None
        while got < size:
            n = conn.recv_into(view[got:], size - got)
            if n == 0:
                sys.exit("the sender closed mid-frame")
            first_at = first_at or time.monotonic_ns()
            got += n
        sent = int.from_bytes(frame[:8], "little")
        whole.append((time.monotonic_ns() - sent) / 1e3)
        first.append((first_at - sent) / 1e3)
    whole.sort(), first.sort()
    pick = lambda v, q: v[min(len(v) - 1, int(q * len(v)))]
    print(f"tcp floor: {frames} frames of {size} bytes, last byte p50 {pick(whole, .5):.0f} µs,"
          f" p99 {pick(whole, .99):.0f} µs; first byte p50 {pick(first, .5):.0f} µs")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("send", "recv"):
        sys.exit(__doc__)
    host, port = sys.argv[2], int(sys.argv[3])
    given = [int(v) for v in sys.argv[4:7]]
    frames, size, rate = given + [300, 2073600, 30][len(given):]
    if sys.argv[1] == "send":
        send(host, port, frames, size, rate)
    else:
        recv(host, port, frames, size)
