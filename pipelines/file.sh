#!/usr/bin/env bash
# File pipeline: raw frames from a file -> cudamlp -> results to a file.
#
#   pipelines/file.sh [IN.raw [OUT.f32]]
# Without IN.raw, makes FRAMES synthetic GRAY8 frames first. The output holds
# one float32 N×O block per frame (N = HEIGHT rows, O = 1 here).
set -euo pipefail
. "$(dirname "$0")/env.sh"
FRAMES=${FRAMES:-100} WIDTH=${WIDTH:-1024} HEIGHT=${HEIGHT:-1024} BACKEND=${BACKEND:-auto}
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

gst-launch-1.0 -m filesrc location="$in" \
  ! rawvideoparse format=gray8 width="$WIDTH" height="$HEIGHT" framerate=30/1 \
  ! cudamlp backend="$BACKEND" \
  ! filesink location="$out" | pp_print_stats

frames=$(( $(stat -c %s "$in") / (WIDTH * HEIGHT) ))
want=$(( frames * HEIGHT * 4 ))
got=$(stat -c %s "$out")
echo "file pipeline: $frames frames in, $got bytes out (expected $want)"
[ "$got" -eq "$want" ]
