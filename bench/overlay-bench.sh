#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# How long scoreoverlay takes per frame: 1920×1080 frames with their scores
# (cudamlp mapping=patches, 16×16, the brightness model), drawn over I420
# and RGBx, a patch grid and smoothed; GStreamer's latency tracer times the
# element itself. Prints the median and 95th percentile in ms; one core
# keeps up with 60 fps below 16.7 ms.
#
#   bench/overlay-bench.sh [FRAMES] [BACKEND]
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-300} backend=${2:-cpu}
export GST_PLUGIN_PATH=$PWD/build/plugins
model=$(mktemp --suffix=.safetensors)
trap 'rm -f "$model"' EXIT
tools/make-brightness-model "$model"
printf '%-6s %-7s %8s %8s\n' format draw p50_ms p95_ms
for format in I420 RGBx; do
  for smooth in false true; do
    GST_TRACERS="latency(flags=element)" GST_DEBUG=GST_TRACER:7 GST_DEBUG_NO_COLOR=1 \
      gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball \
      ! video/x-raw,format=$format,width=1920,height=1080,framerate=60/1 \
      ! cudamlp backend="$backend" model="$model" mapping=patches \
      ! scoreoverlay smooth=$smooth ! fakesink 2>&1 |
      grep 'element=(string)scoreoverlay0' | sed 's/.*time=(guint64)\([0-9]*\).*/\1/' |
      sort -n | awk -v f=$format -v s=$smooth '{ t[NR] = $1 } END {
        printf "%-6s %-7s %8.2f %8.2f\n", f, s == "true" ? "smooth" : "grid",
          t[int(NR * 0.5) + 1] / 1e6, t[int(NR * 0.95) + 1] / 1e6 }'
  done
done
