#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the network pair adds to a frame's latency: FRAMES live frames
# (1080p GRAY8 at 30 fps by default) through cudamlp in one local pipeline,
# then through pipelines/sender.sh -> receiver.sh -> back, between two
# network namespaces; both timed the same way (pingpong-launch --latency:
# running time at the results minus the frame's). Root and iproute2.
#
#   bench/network-latency.sh
#   FRAMES=300 WIDTH=1920 HEIGHT=1080 LIVE=30 BACKEND=cpu MLP_ARGS="hidden-size=16" ...
# WARMUP (30: a second) frames at the start are left out of the figures of
# both runs, as the receiver configures (and autotunes) on its first frame
# while the sender's live frames queue.
# MTU=9000 sets the veth pair's MTU; FLOOR=1 first times raw TCP frames of
# the same size and rate (bench/tcp-floor.py, python3).
# BREAKDOWN=DIR also splits the pair's round trip at the receiver's cudamlp
# (bench/network-breakdown.py), keeping the sender's log and the trace there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/pipelines/env.sh"
. "$root/tests/pipelines/netns-pair.sh"
FRAMES=${FRAMES:-300} WIDTH=${WIDTH:-1920} HEIGHT=${HEIGHT:-1080} LIVE=${LIVE:-30}
BACKEND=${BACKEND:-auto} MLP_ARGS=${MLP_ARGS:-} WARMUP=${WARMUP:-30}
export FRAMES WIDTH HEIGHT LIVE BACKEND MLP_ARGS WARMUP
work=$(mktemp -d)
trap 'netns_pair_down; rm -rf "$work"' EXIT
netns_pair_up

if [ -n "${FLOOR:-}" ]; then
  echo "== raw TCP between the namespaces: bench/tcp-floor.py"
  args=(10.213.0.1 5000 "$FRAMES" $((WIDTH * HEIGHT)) "$LIVE")
  ip netns exec "$cap" "$root/bench/tcp-floor.py" send "${args[@]}" &
  ip netns exec "$gpu" "$root/bench/tcp-floor.py" recv "${args[@]}"
  wait
fi

echo "== local: videotestsrc ! cudamlp in one pipeline"
# shellcheck disable=SC2086 # MLP_ARGS is a list of properties
"$PP_BUILD/tools/pingpong-launch" --latency results --warmup "$WARMUP" \
  --count results videotestsrc is-live=true num-buffers="$FRAMES" pattern=ball \
  ! "video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=$LIVE/1" \
  ! cudamlp backend="$BACKEND" $MLP_ARGS ! identity name=results ! fakesink sync=false |
  tee "$work/local.txt"

echo "== the pair: sender.sh in one namespace, receiver.sh in the other"
traced=()
if [ -n "${BREAKDOWN:-}" ]; then
  mkdir -p "$BREAKDOWN"
  traced=(PINGPONG_TRACE="$BREAKDOWN/receiver.json")
  start_sender "$work/pair.txt" LATENCY_LOG="$BREAKDOWN/sender.log"
else
  start_sender "$work/pair.txt"
fi
env "${traced[@]}" ip netns exec "$gpu" "$root/pipelines/receiver.sh" ||
  { cat "$work/pair.txt"; exit 1; }
wait "$sender" || { cat "$work/pair.txt"; exit 1; }
grep -v '^waiting' "$work/pair.txt"

p() { sed -n "s/.* $1 \([0-9]*\) µs.*/\1/p" "$2"; }
[ -n "${BREAKDOWN:-}" ] &&
  "$root/bench/network-breakdown.py" "$BREAKDOWN/sender.log" "$BREAKDOWN/receiver.json" "$WARMUP"
echo "== added by the network: p50 $(($(p p50 "$work/pair.txt") - $(p p50 "$work/local.txt"))) µs," \
  "p99 $(($(p p99 "$work/pair.txt") - $(p p99 "$work/local.txt"))) µs"
