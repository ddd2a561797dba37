#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""From a frame's last packet in to its message at the broker, for
bench/cameras-bench.sh: matches the receiver's arrivals (pp-cameras-receiver
--arrivals: "CAMERA PTS-NS UNIX-US" a line) with the messages a subscriber
got (mosquitto_sub -F '%U %p': "UNIX-SECONDS.NANOSECONDS JSON" a line, the
JSON scorepublish's, its stream named cam<CAMERA>), by camera and
timestamp. A frame published twice (the decoder repeating it) counts once,
at its first message. Both sides read the wall clock of one host.

    broker-latency.py ARRIVALS MESSAGES

prints one line:

    messages=M frames-published=F arrivals=A matched=K p50-ms=… p99-ms=… max-ms=…"""
import json
import sys


def percentile(values, q):
    return values[int(q * (len(values) - 1))] if values else float("nan")


def main():
    arrivals = {}
    for line in open(sys.argv[1]):
        camera, pts, unix_us = line.split()
        arrivals.setdefault((f"cam{camera}", int(pts)), int(unix_us))
    first = {}
    messages = 0
    for line in open(sys.argv[2]):
        stamp, _, payload = line.partition(" ")
        try:
            m = json.loads(payload)
        except ValueError:
            continue
        messages += 1
        seconds, _, nanos = stamp.partition(".")
        unix_us = int(seconds) * 1_000_000 + int(nanos.ljust(9, "0")[:6])
        first.setdefault((m["stream"], m["pts"]), unix_us)
    latency = sorted((first[k] - arrivals[k]) / 1000.0 for k in first if k in arrivals)
    print(f"messages={messages} frames-published={len(first)} arrivals={len(arrivals)} "
          f"matched={len(latency)} p50-ms={percentile(latency, 0.5):.2f} "
          f"p99-ms={percentile(latency, 0.99):.2f} max-ms={percentile(latency, 1.0):.2f}")


if __name__ == "__main__":
    main()
