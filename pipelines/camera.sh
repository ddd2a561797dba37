#!/usr/bin/env bash
# Camera pipeline: a V4L2 camera -> cudamlp (one score per 16×16 patch) ->
# fakesink, printing the element's stats at the end (Ctrl-C stops it).
#
#   DEVICE=/dev/video0 pipelines/camera.sh        # FRAMES=300 to stop by itself
set -euo pipefail
. "$(dirname "$0")/env.sh"
DEVICE=${DEVICE:-/dev/video0} BACKEND=${BACKEND:-auto} FRAMES=${FRAMES:--1}
[ -e "$DEVICE" ] || { echo "camera.sh: no camera at $DEVICE (set DEVICE=...)" >&2; exit 77; }
gst-launch-1.0 -e -m v4l2src device="$DEVICE" num-buffers="$FRAMES" \
  ! videoconvert ! videoscale ! video/x-raw,format=RGB,width=640,height=480 \
  ! cudamlp backend="$BACKEND" mapping=patches patch-size=16 \
  ! fakesink | pp_print_stats
