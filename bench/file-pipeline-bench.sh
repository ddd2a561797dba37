#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The file -> cudamlp -> file pipeline with uringsrc/uringsink against
# filesrc ! rawvideoparse / filesink: frames/s and CPU seconds per GB of
# frames, timed in-process from PLAYING to EOS (build/bench/pp-io-bench),
# median and range over REPEATS interleaved rounds, input in the page cache.
#
#   bench/file-pipeline-bench.sh [DIR]   FRAMES=2000 WIDTH=1024 HEIGHT=1024 SLOTS=2 REPEATS=5
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$here/build/plugins}
bench=${PP_IO_BENCH:-$here/build/bench/pp-io-bench}
DIR=${1:-$here/build}
FRAMES=${FRAMES:-2000} WIDTH=${WIDTH:-1024} HEIGHT=${HEIGHT:-1024} SLOTS=${SLOTS:-2}
REPEATS=${REPEATS:-5} BACKEND=${BACKEND:-cuda} DEPTH=${DEPTH:-8}
in=$DIR/frames.raw out=$DIR/scores.f32 samples=$(mktemp -d)
trap 'rm -rf "$in" "$out" "$samples"' EXIT
frame=$((WIDTH * HEIGHT)) bytes=$((FRAMES * WIDTH * HEIGHT))
head -c "$bytes" /dev/urandom > "$in"
caps="video/x-raw,format=GRAY8,width=$WIDTH,height=$HEIGHT,framerate=30/1"
mlp="cudamlp backend=$BACKEND slots=$SLOTS"
declare -A pipelines=(
  [uring]="uringsrc location=$in queue-depth=$DEPTH caps=\"$caps\" ! $mlp ! uringsink location=$out queue-depth=$DEPTH"
  [classic]="filesrc location=$in ! rawvideoparse format=gray8 width=$WIDTH height=$HEIGHT framerate=30/1 ! $mlp ! filesink location=$out"
)
for _ in $(seq "$REPEATS"); do
  for name in uring classic; do
    cat "$in" > /dev/null
    rm -f "$out"
    "$bench" "$bytes" "${pipelines[$name]}" >> "$samples/$name"
  done
done
echo "# $(date -u +%F): $FRAMES ${WIDTH}x$HEIGHT GRAY8 frames, $mlp, input in the page cache, $REPEATS interleaved rounds"
echo "| source and sink | frames/s median (min–max) | CPU s/GB median |"
echo "|---|---|---|"
for name in uring classic; do
  label=$([ "$name" = uring ] && echo "uringsrc → … → uringsink" || echo "filesrc ! rawvideoparse → … → filesink")
  cpu=$(awk -v f="$frame" '{ print $3 / ($1 / 1e9) }' "$samples/$name" | sort -n | awk '{ c[NR] = $1 } END { print c[int((NR + 1) / 2)] }')
  awk -v f="$frame" '{ print $1 / f / $2 }' "$samples/$name" | sort -n |
    awk -v l="$label" -v cpu="$cpu" '{ v[NR] = $1 } END { m = int((NR + 1) / 2);
      printf "| %s | %.0f (%.0f–%.0f) | %.3f |\n", l, v[m], v[1], v[NR], cpu }'
done
