#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""From a frame's last packet in, to the receiver's sink and to its message
at the broker, for bench/cameras-bench.sh. Reads the receiver's arrivals
(pp-cameras-receiver --arrivals: "CAMERA PTS-NS ARRIVAL-US SINK-US" a line,
SINK-US 0 for a frame that never got there) and, where a broker was
measured, the messages a subscriber got (mosquitto_sub -F '%U %p':
"UNIX-SECONDS.NANOSECONDS JSON" a line, the JSON scorepublish's, its
stream named cam<CAMERA>), matched by camera and timestamp. A frame
published twice (the decoder repeating it) counts once, at its first
message. Both sides read the wall clock of one host. Percentiles over every
frame, and over the steady part: frames that arrived STEADY_S seconds
(the environment's, 5 if unset) or more after their camera's first
(decoders and the plan start meanwhile, and catch up on what queued).

    packet-latency.py ARRIVALS [MESSAGES]

prints one line of key=value, milliseconds:

    arrivals=A at-sink=S sink-p50-ms=… sink-p99-ms=… sink-max-ms=… steady-sink-p99-ms=…
    [messages=M frames-published=F p50-ms=… p99-ms=… max-ms=… steady-p50-ms=… steady-p99-ms=…]"""
import json
import os
import sys

STEADY_S = float(os.environ.get("STEADY_S", "5"))


def percentile(values, q):
    return values[int(q * (len(values) - 1))] if values else float("nan")


def spread(name, samples, first, qs):
    """samples: (camera, its last packet's arrival µs, latency ms) a frame;
    first: each camera's first arrival (µs)."""
    every = sorted(ms for _, _, ms in samples)
    steady = sorted(ms for camera, arrival, ms in samples
                    if arrival - first[camera] >= STEADY_S * 1_000_000)
    out = [f"{name}p{round(q * 100)}-ms={percentile(every, q):.2f}" for q in qs]
    out.append(f"{name}max-ms={percentile(every, 1.0):.2f}")
    out += [f"steady-{name}p{round(q * 100)}-ms={percentile(steady, q):.2f}" for q in qs]
    return out


def main():
    arrivals, first = {}, {}
    for line in open(sys.argv[1]):
        camera, pts, arrival_us, sink_us = line.split()
        key = (f"cam{camera}", int(pts))
        if key not in arrivals:
            arrivals[key] = (int(arrival_us), int(sink_us))
            first[key[0]] = min(first.get(key[0], int(arrival_us)), int(arrival_us))
    sink = [(camera, a, (s - a) / 1000.0) for (camera, _), (a, s) in arrivals.items() if s]
    words = [f"arrivals={len(arrivals)}", f"at-sink={len(sink)}"]
    words += spread("sink-", sink, first, (0.5, 0.99))
    if len(sys.argv) > 2:
        published, messages = {}, 0
        for line in open(sys.argv[2]):
            stamp, _, payload = line.partition(" ")
            try:
                m = json.loads(payload)
            except ValueError:
                continue
            messages += 1
            seconds, _, nanos = stamp.partition(".")
            unix_us = int(seconds) * 1_000_000 + int(nanos.ljust(9, "0")[:6])
            published.setdefault((m["stream"], m["pts"]), unix_us)
        broker = [(k[0], arrivals[k][0], (t - arrivals[k][0]) / 1000.0)
                  for k, t in published.items() if k in arrivals]
        words += [f"messages={messages}", f"frames-published={len(published)}"]
        words += spread("", broker, first, (0.5, 0.99))
    print(" ".join(words))


if __name__ == "__main__":
    main()
