#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The scores drawn over the video: cudamlp mapping=patches, then scoreoverlay
# (cudamlp then pushes the frames with their scores attached), in the two
# ways a user runs it:
#   a file: filesrc ! decodebin ! cudamlp ! scoreoverlay ! x264enc ! mp4mux
#   live:   videotestsrc (for a camera) ! cudamlp ! scoreoverlay ! videoconvert
#           ! autovideosink (fakesink without a display)
# The model scores each 16×16 patch by its mean brightness
# (tools/make-brightness-model), so the ball of the made-up clip lights up.
#
#   pipelines/heatmap.sh [IN.mp4 [SCORED.mp4]]
#   FRAME=frame.png pipelines/heatmap.sh    # also one scored frame as a picture
#   PATTERN=smpte OVERLAY="smooth=true colormap=magma" pipelines/heatmap.sh
# Without IN, makes a FRAMES-frame clip first (videotestsrc ball, x264).
set -euo pipefail
. "$(dirname "$0")/env.sh"
FRAMES=${FRAMES:-120} WIDTH=${WIDTH:-1280} HEIGHT=${HEIGHT:-720} BACKEND=${BACKEND:-auto}
PATCH=${PATCH:-16} MODEL=${MODEL:-} PATTERN=${PATTERN:-ball} OVERLAY=${OVERLAY:-}
in=${1:-} out=${2:-}
tmp=()
trap 'rm -f "${tmp[@]}"' EXIT
if [ -z "$MODEL" ]; then
  MODEL=$(mktemp --suffix=.safetensors)
  tmp+=("$MODEL")
  "$here/../tools/make-brightness-model" "$MODEL" --patch "$PATCH"
fi
if [ -z "$in" ]; then
  in=$(mktemp --suffix=.mp4)
  tmp+=("$in")
  gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern="$PATTERN" \
    ! video/x-raw,format=I420,width="$WIDTH",height="$HEIGHT",framerate=30/1 \
    ! x264enc speed-preset=ultrafast ! mp4mux ! filesink location="$in"
fi
if [ -z "$out" ]; then
  out=$(mktemp --suffix=.mp4)
  tmp+=("$out")
fi
mlp="cudamlp mapping=patches patch-size=$PATCH model=$MODEL backend=$BACKEND"

echo "file: $in -> $out"
pp_launch -q filesrc location="$in" ! decodebin ! $mlp ! scoreoverlay $OVERLAY \
  ! x264enc speed-preset=ultrafast ! mp4mux ! filesink location="$out"

echo "live: videotestsrc -> display"
sink=fakesink
[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && sink=autovideosink
pp_launch -q videotestsrc num-buffers="$FRAMES" pattern=ball is-live=true \
  ! video/x-raw,width="$WIDTH",height="$HEIGHT",framerate=30/1 ! $mlp ! scoreoverlay \
  ! videoconvert ! $sink

# Every frame came through: the scored file decodes to as many frames.
count() {
  gst-launch-1.0 -v filesrc location="$1" ! decodebin ! fakesink silent=false 2>&1 |
    grep -c 'chain   \*\*\*' || true
}
n_in=$(count "$in") n_out=$(count "$out")
echo "frames: $n_in in, $n_out scored"
[ "$n_in" -gt 0 ] && [ "$n_in" = "$n_out" ] || { echo "frames were lost" >&2; exit 1; }

if [ -n "${FRAME:-}" ]; then
  # A frame from the middle of the scored clip.
  gst-launch-1.0 -q filesrc location="$out" ! decodebin ! videoconvert \
    ! videorate drop-only=true ! "video/x-raw,framerate=1/1" ! pngenc snapshot=false \
    ! multifilesink location="$FRAME.%d" max-files=2 > /dev/null
  last=$(ls "$FRAME".* | sort -t. -k3 -n | tail -1)
  mv "$last" "$FRAME"
  rm -f "$FRAME".*
  echo "one scored frame: $FRAME"
fi
