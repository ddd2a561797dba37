#!/usr/bin/env bash
# What the network pair adds to a frame's latency: FRAMES live frames
# (1080p GRAY8 at 30 fps by default) through cudamlp in one local pipeline,
# then through pipelines/sender.sh -> receiver.sh -> back, between two
# network namespaces; both timed the same way (pingpong-launch --latency:
# running time at the results minus the frame's). Root and iproute2.
#
#   tools/network-latency.sh
#   FRAMES=300 WIDTH=1920 HEIGHT=1080 LIVE=30 BACKEND=cpu MLP_ARGS="hidden-size=16" ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/pipelines/env.sh"
. "$root/tests/pipelines/netns-pair.sh"
FRAMES=${FRAMES:-300} WIDTH=${WIDTH:-1920} HEIGHT=${HEIGHT:-1080} LIVE=${LIVE:-30}
BACKEND=${BACKEND:-auto} MLP_ARGS=${MLP_ARGS:-}
export FRAMES WIDTH HEIGHT LIVE BACKEND MLP_ARGS
work=$(mktemp -d)
trap 'netns_pair_down; rm -rf "$work"' EXIT
netns_pair_up

echo "== local: videotestsrc ! cudamlp in one pipeline"
# shellcheck disable=SC2086 # MLP_ARGS is a list of properties
"$PP_BUILD/tools/pingpong-launch" --latency results --count results \
  videotestsrc is-live=true num-buffers="$FRAMES" pattern=ball \
  ! "video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=$LIVE/1" \
  ! cudamlp backend="$BACKEND" $MLP_ARGS ! identity name=results ! fakesink sync=false |
  tee "$work/local.txt"

echo "== the pair: sender.sh in one namespace, receiver.sh in the other"
start_sender "$work/pair.txt"
ip netns exec "$gpu" "$root/pipelines/receiver.sh" || { cat "$work/pair.txt"; exit 1; }
wait "$sender" || { cat "$work/pair.txt"; exit 1; }
grep -v '^waiting' "$work/pair.txt"

p() { sed -n "s/.* $1 \([0-9]*\) µs.*/\1/p" "$2"; }
echo "== added by the network: p50 $(($(p p50 "$work/pair.txt") - $(p p50 "$work/local.txt"))) µs," \
  "p99 $(($(p p99 "$work/pair.txt") - $(p p99 "$work/local.txt"))) µs"
