#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pipelines/sender.sh and receiver.sh between two network namespaces joined
# by a veth pair, as a capture host and a GPU host would be:
# - every frame's scores come back, in order, equal (byte for byte) to a
#   local run of the same frames through the same cudamlp;
# - the sender killed mid-stream: the receiver ends with an error naming
#   the dropped connection, within seconds, not a hang;
# - the link cut mid-stream (no FIN ever comes): both ends give up after
#   IDLE seconds with an error.
# Needs root and iproute2 (exit 77 otherwise). The backend is $BACKEND.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/pipelines/env.sh"
. "$root/tests/pipelines/netns-pair.sh"
FRAMES=${FRAMES:-30} WIDTH=${WIDTH:-256} HEIGHT=${HEIGHT:-128} BACKEND=${BACKEND:-cpu}
work=$(mktemp -d)
trap 'netns_pair_down; rm -rf "$work"' EXIT
netns_pair_up || exit $?
export BACKEND WIDTH HEIGHT LIVE=0

# Waits up to $2 seconds for process $1; its exit status, or 124.
wait_for() {
  local pid=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    if ! kill -0 "$pid" 2> /dev/null; then
      wait "$pid" && return 0 || return $?
    fi
    sleep 0.1
  done
  return 124
}

echo "== $FRAMES frames through the pair, against a local run"
gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=ball \
  ! "video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=30/1" \
  ! cudamlp backend="$BACKEND" ! filesink location="$work/local.bin"
start_sender "$work/sender.log" FRAMES="$FRAMES" SCORES="$work/net.bin"
ip netns exec "$gpu" "$root/pipelines/receiver.sh" > "$work/receiver.log" 2>&1 ||
  { cat "$work/receiver.log" "$work/sender.log"; exit 1; }
wait_for "$sender" 10 || { echo "sender: exit $?"; cat "$work/sender.log"; exit 1; }
cat "$work/sender.log"
grep -q "^count results: $FRAMES\$" "$work/sender.log"
[ -s "$work/local.bin" ] && cmp "$work/local.bin" "$work/net.bin"
echo "ok: $FRAMES results, in order, equal to the local run's ($(stat -c %s "$work/net.bin") bytes)"

echo "== the sender killed mid-stream"
start_sender "$work/sender.log" FRAMES=-1 LIVE=30
ip netns exec "$gpu" "$root/pipelines/receiver.sh" > "$work/receiver.log" 2>&1 &
receiver=$!
sleep 1.5
kill -9 "$sender"
rc=0
wait_for "$receiver" 10 || rc=$?
cat "$work/receiver.log"
[ "$rc" -ne 124 ] || { echo "the receiver hangs"; exit 1; }
[ "$rc" -ne 0 ] || { echo "the receiver ended without an error"; exit 1; }
grep -q "connection closed before the end of the stream" "$work/receiver.log"
echo "ok: the receiver ended with exit status $rc and the reason"

echo "== the link cut mid-stream"
start_sender "$work/sender.log" FRAMES=-1 LIVE=30 IDLE=2
IDLE=2 ip netns exec "$gpu" "$root/pipelines/receiver.sh" > "$work/receiver.log" 2>&1 &
receiver=$!
sleep 1.5
ip -n "$cap" link set "v$cap" down
rc=0
wait_for "$receiver" 10 || rc=$?
cat "$work/receiver.log"
[ "$rc" -ne 124 ] || { echo "the receiver hangs"; exit 1; }
[ "$rc" -ne 0 ] && grep -q "nothing arrived for 2 s" "$work/receiver.log"
rc=0
wait_for "$sender" 10 || rc=$?
[ "$rc" -ne 124 ] && [ "$rc" -ne 0 ] || { echo "sender: exit $rc"; cat "$work/sender.log"; exit 1; }
echo "ok: both ends gave up after 2 s without data, with an error"
