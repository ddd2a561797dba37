#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# File pipeline: frames from a file -> cudamlp -> results to a file (uringsink).
# Raw GRAY8 frames are read with io_uring straight into cudamlp's pinned pool;
# an encoded video (.mp4, .mkv, .webm, .mov) is decoded by decodebin (NVDEC on
# a GPU machine, into CUDA memory) straight into cudamlp, with no videoconvert.
#
#   pipelines/file.sh [IN.raw|IN.mp4 [OUT.f32]]
#   ELEMENTS=classic pipelines/file.sh     # filesrc ! rawvideoparse ... filesink instead
#   ENCODED=1 pipelines/file.sh            # makes a VP8 clip first and decodes it
# Without IN, makes FRAMES synthetic frames first. The output holds one
# float32 N×O block per frame (N = image rows, O = 1 here).
set -euo pipefail
. "$(dirname "$0")/env.sh"
FRAMES=${FRAMES:-100} WIDTH=${WIDTH:-1024} HEIGHT=${HEIGHT:-1024} BACKEND=${BACKEND:-auto}
SLOTS=${SLOTS:-2} DEPTH=${DEPTH:-8} ELEMENTS=${ELEMENTS:-uring}
in=${1:-} out=${2:-}
tmp=()
trap 'rm -f "${tmp[@]}"' EXIT
if [ -z "$out" ]; then
  out=$(mktemp --suffix=.f32)
  tmp+=("$out")
fi
if [ -z "$in" ] && [ "${ENCODED:-0}" != 0 ]; then
  in=$(mktemp --suffix=.webm)
  tmp+=("$in")
  gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=ball \
    ! video/x-raw,format=I420,width="$WIDTH",height="$HEIGHT",framerate=30/1 \
    ! vp8enc deadline=1 ! webmmux ! filesink location="$in"
elif [ -z "$in" ]; then
  in=$(mktemp --suffix=.raw)
  tmp+=("$in")
  gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=snow \
    ! video/x-raw,format=GRAY8,width="$WIDTH",height="$HEIGHT" ! filesink location="$in"
fi

case "$in" in
  *.mp4 | *.mkv | *.webm | *.mov)
    # The decoder's NV12/I420 (or CUDA memory) goes in as it is.
    start=$(date +%s.%N)
    log=$(pp_launch -m -v filesrc location="$in" ! decodebin \
      ! cudamlp name=mlp backend="$BACKEND" slots="$SLOTS" \
      ! uringsink location="$out" queue-depth="$DEPTH")
    end=$(date +%s.%N)
    stats=$(echo "$log" | pp_print_stats)
    echo "$stats"
    echo "$log" | grep -o 'mlp.GstPad:sink: caps = .*' | head -1 || true
    frames=$(echo "$stats" | sed -n 's/^  frames: \([0-9]*\).*/\1/p')
    rows=$(echo "$stats" | sed -n 's/^  samples: \([0-9]*\).*/\1/p')
    got=$(stat -c %s "$out")
    rate=$(awk -v f="$frames" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", f / (b - a) }')
    echo "file pipeline (decodebin): $frames frames of $rows rows, $got bytes out" \
      "(expected $((frames * rows * 4))), $rate frames/s including start-up"
    [ "${frames:-0}" -gt 0 ] && [ "$got" -eq $((frames * rows * 4)) ]
    exit
    ;;
esac

caps="video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=30/1"
if [ "$ELEMENTS" = classic ]; then
  source=(filesrc location="$in" ! rawvideoparse format=gray8 width="$WIDTH" height="$HEIGHT"
          framerate=30/1)
  sink=(filesink location="$out")
else
  source=(uringsrc location="$in" queue-depth="$DEPTH" caps="$caps")
  sink=(uringsink location="$out" queue-depth="$DEPTH")
fi
start=$(date +%s.%N)
pp_launch -m "${source[@]}" ! cudamlp backend="$BACKEND" slots="$SLOTS" ! "${sink[@]}" |
  pp_print_stats
end=$(date +%s.%N)

frames=$(( $(stat -c %s "$in") / (WIDTH * HEIGHT) ))
want=$(( frames * HEIGHT * 4 ))
got=$(stat -c %s "$out")
rate=$(awk -v f="$frames" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", f / (b - a) }')
echo "file pipeline ($ELEMENTS): $frames frames in, $got bytes out (expected $want)," \
  "$rate frames/s including start-up"
[ "$got" -eq "$want" ]
