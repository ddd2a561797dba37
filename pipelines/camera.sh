#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Camera pipeline: a V4L2 camera straight into cudamlp (one score per 16×16
# patch) -> fakesink, printing the element's stats at the end (Ctrl-C stops
# it). No videoconvert: the camera's YUY2, UYVY, NV12 or I420 goes in as it
# is and becomes R,G,B in the kernels' loads; an MJPEG camera goes through
# jpegdec (I420).
#
#   DEVICE=/dev/video0 pipelines/camera.sh        # FRAMES=300 to stop by itself
#   MJPEG=1 WIDTH=1280 HEIGHT=720 pipelines/camera.sh
set -euo pipefail
. "$(dirname "$0")/env.sh"
DEVICE=${DEVICE:-/dev/video0} BACKEND=${BACKEND:-auto} FRAMES=${FRAMES:--1}
WIDTH=${WIDTH:-1280} HEIGHT=${HEIGHT:-720} MJPEG=${MJPEG:-0}
[ -e "$DEVICE" ] || { echo "camera.sh: no camera at $DEVICE (set DEVICE=...)" >&2; exit 77; }
if [ "$MJPEG" != 0 ]; then
  camera=(image/jpeg,width="$WIDTH",height="$HEIGHT" ! jpegdec)
else
  camera=(video/x-raw,width="$WIDTH",height="$HEIGHT")
fi
pp_launch -e -m v4l2src device="$DEVICE" num-buffers="$FRAMES" ! "${camera[@]}" \
  ! cudamlp backend="$BACKEND" mapping=patches patch-size=16 \
  ! fakesink | pp_print_stats
