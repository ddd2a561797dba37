#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The README's quick start, step by step: a tiny PyTorch model trained,
# exported, a clip made, scored by cudamlp, the scores read into NumPy.
#
#   pipelines/quickstart.sh [DIR]      # DIR keeps model.pt, model.safetensors, clip.mp4
#   CLIP=mine.mp4 pipelines/quickstart.sh   # your own clip instead of the made one
set -euo pipefail
. "$(dirname "$0")/env.sh"
repo=$here/..
work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
cd "$work"

python3 "$repo/examples/train.py" model.pt
"$repo/tools/pingpong-export" model.pt model.safetensors
clip=${CLIP:-clip.mp4}
if [ -z "${CLIP:-}" ]; then
  gst-launch-1.0 -q -e videotestsrc num-buffers=90 pattern=smpte \
    ! video/x-raw,format=I420,width=320,height=240 ! x264enc ! mp4mux ! filesink location=clip.mp4
fi
python3 "$repo/examples/scores.py" "$clip" model.safetensors
