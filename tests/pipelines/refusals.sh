#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Caps refused while the pipeline prerolls bring two errors (cudamlp's, then
# the source's "Internal data stream error"), on which gst-launch-1.0 1.22
# can wait for ever. pingpong-launch, and the README's pipeline scripts
# that run through it, must end every time, with an error: RUNS runs of
# pingpong-launch (200 unless set) and a tenth as many of heatmap.sh on a
# clip too small for its patches, each given 20 s.
#   tests/pipelines/refusals.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${RUNS:-200}
export GST_PLUGIN_PATH=$build/plugins PP_BUILD=$build
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
head -c $((8 * 8 * 10)) /dev/urandom > "$out/frames.raw"

ends_with_error() { # what, command...
  local what=$1 rc=0
  shift
  timeout 20 "$@" > "$out/log" 2>&1 || rc=$?
  if [ $rc -eq 124 ]; then
    echo "$what: still running after 20 s"
    cat "$out/log"
    exit 1
  fi
  if [ $rc -eq 0 ] || ! grep -q 'holds no whole' "$out/log"; then
    echo "$what: exit $rc, without the refusal's reason:"
    cat "$out/log"
    exit 1
  fi
}

for i in $(seq "$runs"); do
  ends_with_error "pingpong-launch, run $i" "$build/tools/pingpong-launch" \
    filesrc location="$out/frames.raw" ! rawvideoparse format=gray8 width=8 height=8 \
    ! cudamlp backend=cpu mapping=patches patch-size=16 ! fakesink
done
echo "pingpong-launch: $runs runs, each ended with the refusal"

if ! gst-inspect-1.0 x264enc > /dev/null 2>&1 || ! gst-inspect-1.0 avdec_h264 > /dev/null 2>&1; then
  echo "no x264enc or avdec_h264: heatmap.sh skipped"
  exit 0
fi
gst-launch-1.0 -q videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=32,height=32 \
  ! x264enc ! mp4mux ! filesink location="$out/clip.mp4"
"$root/tools/make-brightness-model" "$out/model.safetensors" --patch 64
for i in $(seq $(((runs + 9) / 10))); do
  ends_with_error "heatmap.sh, run $i" env BACKEND=cpu PATCH=64 MODEL="$out/model.safetensors" \
    "$root/pipelines/heatmap.sh" "$out/clip.mp4" "$out/scored.mp4"
done
echo "heatmap.sh: $(((runs + 9) / 10)) runs, each ended with the refusal"
