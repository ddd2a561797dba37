#!/usr/bin/env bash
# File pipeline: raw frames from a file -> cudamlp -> results to a file, with
# io_uring reads straight into cudamlp's pinned pool and io_uring writes.
#
#   pipelines/file.sh [IN.raw [OUT.f32]]
#   ELEMENTS=classic pipelines/file.sh     # filesrc ! rawvideoparse ... filesink instead
# Without IN.raw, makes FRAMES synthetic GRAY8 frames first. The output holds
# one float32 N×O block per frame (N = HEIGHT rows, O = 1 here).
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
if [ -z "$in" ]; then
  in=$(mktemp --suffix=.raw)
  tmp+=("$in")
  gst-launch-1.0 -q videotestsrc num-buffers="$FRAMES" pattern=snow \
    ! video/x-raw,format=GRAY8,width="$WIDTH",height="$HEIGHT" ! filesink location="$in"
fi

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
gst-launch-1.0 -m "${source[@]}" ! cudamlp backend="$BACKEND" slots="$SLOTS" ! "${sink[@]}" |
  pp_print_stats
end=$(date +%s.%N)

frames=$(( $(stat -c %s "$in") / (WIDTH * HEIGHT) ))
want=$(( frames * HEIGHT * 4 ))
got=$(stat -c %s "$out")
rate=$(awk -v f="$frames" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", f / (b - a) }')
echo "file pipeline ($ELEMENTS): $frames frames in, $got bytes out (expected $want)," \
  "$rate frames/s including start-up"
[ "$got" -eq "$want" ]
