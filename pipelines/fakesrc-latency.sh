#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fake-source latency pipeline: synthetic frames -> cudamlp -> fakesink, with
# GStreamer's latency tracer timing each frame from source to sink.
#
#   pipelines/fakesrc-latency.sh            # the seed workload, 300 frames
#   FRAMES=100 WIDTH=256 HEIGHT=256 BACKEND=cpu pipelines/fakesrc-latency.sh
#   FORMAT=YUY2 WIDTH=1280 HEIGHT=720 LIVE=30 MAPPING=patches pipelines/fakesrc-latency.sh
#     (a camera's frames: a live source at 30 fps, YUY2 straight into cudamlp)
set -euo pipefail
. "$(dirname "$0")/env.sh"
FRAMES=${FRAMES:-300} WIDTH=${WIDTH:-1024} HEIGHT=${HEIGHT:-1024}
BACKEND=${BACKEND:-auto} SLOTS=${SLOTS:-2} FORMAT=${FORMAT:-GRAY8} MAPPING=${MAPPING:-rows}
PATCH=${PATCH:-16} LIVE=${LIVE:-0}
live=()
[ "$LIVE" != 0 ] && live=(is-live=true) rate=",framerate=$LIVE/1" || rate=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

GST_TRACERS="latency" GST_DEBUG="GST_TRACER:7" GST_DEBUG_NO_COLOR=1 GST_DEBUG_FILE="$log" \
pp_launch -m \
  videotestsrc num-buffers="$FRAMES" pattern=snow "${live[@]}" \
  ! "video/x-raw,format=$FORMAT,width=$WIDTH,height=$HEIGHT$rate" \
  ! cudamlp backend="$BACKEND" slots="$SLOTS" mapping="$MAPPING" patch-size="$PATCH" \
  ! fakesink sync=false | pp_print_stats

# Source-to-sink time per frame as the latency tracer saw it (its log also
# holds the record's format, "time=(guint64)%lu", which has no digits).
grep -o 'latency, src-element-id.*time=(guint64)[0-9][0-9]*' "$log" | sed 's/.*time=(guint64)//' |
  sort -n | awk -v frames="$FRAMES" '{ t[NR] = $1; s += $1 }
    END { if (!NR) { print "latency tracer: no records"; exit 1 }
          printf "latency tracer: %d frames, mean %.3f ms, p50 %.3f ms, p99 %.3f ms\n",
                 NR, s / NR / 1e6, t[int(NR * 0.5 + 0.5)] / 1e6, t[int(NR * 0.99 + 0.5)] / 1e6
          if (NR != frames) { printf "expected %d frames\n", frames; exit 1 } }'
