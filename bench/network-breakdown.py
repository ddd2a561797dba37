#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Where the network pair's round trip goes, frame by frame.

Joins the sender's `pingpong-launch --latency-log` (index, made, back: ns of
the monotonic clock) with the receiver's cudamlp trace (PINGPONG_TRACE:
"chain" spans from the frame's entry into cudamlp, "push" spans until its
scores left it, µs from otherData.origin_ns on the same clock; both
namespaces share one kernel, so one clock). Prints p50/p99 of:

  there  made at the sender -> entered the receiver's cudamlp
  inside entered cudamlp -> its scores pushed on
  back   scores pushed -> back in the sender's pipeline

  bench/network-breakdown.py SENDER_LOG RECEIVER_TRACE_JSON [WARMUP]

The first WARMUP frames (0) are left out, as pingpong-launch --warmup does.
"""
import json
import sys


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(log_path, trace_path, warmup):
    with open(trace_path) as f:
        trace = json.load(f)
    origin = trace["otherData"]["origin_ns"]
    entered, pushed = {}, {}
    for ev in trace["traceEvents"]:
        frame = ev.get("args", {}).get("frame")
        if ev.get("ph") != "X" or frame is None:
            continue
        start = origin + ev["ts"] * 1000
        if ev["name"] == "chain":
            entered[frame] = start
        elif ev["name"] == "push":
            pushed[frame] = start + ev["dur"] * 1000
    parts = {"there": [], "inside": [], "back": [], "round trip": []}
    with open(log_path) as f:
        for line in f:
            index, made, back = (int(v) for v in line.split())
            if index < warmup or index not in entered or index not in pushed:
                continue
            parts["there"].append(entered[index] - made)
            parts["inside"].append(pushed[index] - entered[index])
            parts["back"].append(back - pushed[index])
            parts["round trip"].append(back - made)
    if not parts["there"]:
        sys.exit("no frame is in both files")
    print(f"{len(parts['there'])} frames")
    for name, values in parts.items():
        print(f"{name:>10}: p50 {percentile(values, 0.5) / 1e3:8.0f} µs,"
              f" p99 {percentile(values, 0.99) / 1e3:8.0f} µs")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 0)
