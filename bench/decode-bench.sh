#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A 1080p H.264 file through NVDEC into cudamlp, four ways, timed in-process
# in the steady state: the pipeline prerolls first (decoder and cudamlp
# opened, cudamlp tuned, the first frame at the sink) and PLAYING to EOS is
# timed (build/bench/pp-io-bench --preroll; start-up reported apart), median of
# REPEATS: the decoder alone; nvh264dec ! cudamlp (CUDA memory: no copy to the
# host, no conversion on the CPU); nvh264dec ! video/x-raw ! cudamlp (NV12
# downloaded, then uploaded as planes); and the old way through videoconvert.
# cuda-memory-queue puts a queue between the decoder and cudamlp, so the
# decoder's thread never waits on cudamlp's chain.
#
#   bench/decode-bench.sh CLIP.mp4 FRAMES     REPEATS=3
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$here/build/plugins}
bench=${PP_IO_BENCH:-$here/build/bench/pp-io-bench}
clip=${1:?usage: decode-bench.sh CLIP.mp4 FRAMES} frames=${2:?frames in the clip}
REPEATS=${REPEATS:-3}
dec="filesrc location=$clip ! qtdemux ! h264parse ! nvh264dec"
mlp="cudamlp backend=cuda mapping=patches patch-size=8 hidden-size=256"
names=(decoder cuda-memory cuda-memory-queue nv12-upload videoconvert)
declare -A pipelines=(
  [decoder]="$dec ! fakesink sync=false"
  [cuda-memory]="$dec ! $mlp ! fakesink sync=false"
  [cuda-memory-queue]="$dec ! queue ! $mlp ! fakesink sync=false"
  [nv12-upload]="$dec ! video/x-raw ! $mlp ! fakesink sync=false"
  [videoconvert]="$dec ! videoconvert ! video/x-raw,format=RGB ! $mlp ! fakesink sync=false"
)
samples=$(mktemp -d)
trap 'rm -rf "$samples"' EXIT
for _ in $(seq "$REPEATS"); do
  for name in "${names[@]}"; do
    "$bench" --preroll "$frames" "${pipelines[$name]}" >> "$samples/$name"
  done
done
echo "# $(date -u +%F): $clip, $frames frames, median of $REPEATS (min–max)"
echo "| pipeline | frames/s | CPU ms per frame | × decoder alone | start-up ms |"
echo "|---|---|---|---|---|"
base=$(awk '{ print $1 / $2 }' "$samples/decoder" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
for name in "${names[@]}"; do
  cpu=$(awk '{ print 1000 * $3 / $1 }' "$samples/$name" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  startup=$(awk '{ print 1000 * $4 }' "$samples/$name" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  awk '{ print $1 / $2 }' "$samples/$name" | sort -n |
    awk -v l="$name" -v cpu="$cpu" -v base="$base" -v st="$startup" '{ v[NR] = $1 } END { m = int((NR + 1) / 2);
      printf "| %s | %.0f (%.0f–%.0f) | %.2f | %.2f | %.0f |\n", l, v[m], v[1], v[NR], cpu, v[m] / base, st }'
done
