#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The capture host's half of the network pair (the other: receiver.sh, on
# the GPU host, which connects here): frames leave over TCP as GDP
# (gdppay: caps, timestamps and events travel with them), the scores come
# back the same way, in order, with their frames' timestamps.
#
#   frames ! gdppay ! tcpserversink :PORT ──▶ receiver: fdsrc ! gdpdepay
#                                                 ! cudamlp ! gdppay
#   sink ◀ gdpdepay ◀ tcpserversrc :RESULTS_PORT ◀── receiver: tcpclientsink
#
# Frames start once the receiver has connected, so none is lost; the run
# ends when the last frame's scores are back (or Ctrl-C ends the stream).
# Prints how many results came back and their round-trip latency (the
# pipeline's running time at arrival minus the frame's); with SCORES it writes
# the scores there, frame after frame. A connection dropped mid-stream ends
# the run with an error (exit status 1). docs/PERFORMANCE.md ("Across
# hosts") says why TCP and GDP.
#
#   pipelines/sender.sh                     # live 1080p GRAY8 test frames
#   FRAMES=300 WIDTH=1920 HEIGHT=1080 LIVE=30 SCORES=scores.bin pipelines/sender.sh
#   SOURCE="v4l2src ! video/x-raw,format=YUY2" pipelines/sender.sh
set -euo pipefail
. "$(dirname "$0")/env.sh"
LISTEN=${LISTEN:-0.0.0.0} PORT=${PORT:-5000} RESULTS_PORT=${RESULTS_PORT:-5001}
IDLE=${IDLE:-10} FRAMES=${FRAMES:--1} WIDTH=${WIDTH:-1920} HEIGHT=${HEIGHT:-1080}
LIVE=${LIVE:-30} SCORES=${SCORES:-}
launch=${PP_LAUNCH:-$PP_BUILD/tools/pingpong-launch}
# LIVE=0: frames as fast as they go (their timestamps still 30 fps apart,
# so a latency would mean nothing).
# WARMUP=N: the first N frames' round trips are left out of the figures.
live=true rate=$LIVE latency=(--latency results --warmup "${WARMUP:-0}")
# LATENCY_LOG=FILE: each frame's times, for bench/network-breakdown.py.
[ -n "${LATENCY_LOG:-}" ] && latency+=(--latency-log "$LATENCY_LOG")
[ "$LIVE" = 0 ] && live=false rate=30 latency=()
SOURCE=${SOURCE:-videotestsrc num-buffers=$FRAMES pattern=ball is-live=$live \
! video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=$rate/1}
sink="fakesink sync=false async=false"
[ -n "$SCORES" ] && sink="filesink location=$SCORES sync=false async=false"

# shellcheck disable=SC2086 # SOURCE and sink are pipeline fragments
exec "$launch" --wait-client frames --net net --idle-timeout "$IDLE" --mark-end pay \
  "${latency[@]}" --count results \
  $SOURCE ! gdppay name=pay ! tcpserversink name=frames host="$LISTEN" port="$PORT" sync=false \
  tcpserversrc name=net host="$LISTEN" port="$RESULTS_PORT" ! gdpdepay \
  ! identity name=results ! $sink
