#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A thousand 1024×1024 GRAY8 frames through
# cudamlp on the GPU, to EOS, all 1000 counted by the element.
set -euo pipefail
out=$(gst-launch-1.0 -m videotestsrc num-buffers=1000 ! video/x-raw,format=GRAY8,width=1024,height=1024 \
  ! cudamlp backend=cuda ! fakesink 2>&1)
echo "$out" | grep -o 'application/x-cudamlp-stats.*' | sed 's/, /\n  /g'
echo "$out" | grep -q 'Got EOS from element "pipeline0"'
echo "$out" | grep -q 'backend=(string)cuda'
echo "$out" | grep -q 'frames=(guint64)1000'
