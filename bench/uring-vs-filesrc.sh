#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# uringsrc against filesrc as a user runs them: whole gst-launch-1.0
# processes (start, plugin load and exit included) reading one file to
# fakesink, in pairs whose order alternates, so drift hits both alike.
# Prints each case's median seconds and the median of the paired ratios
# filesrc / uringsrc (above 1: uringsrc faster).
#   page cache: the file read once beforehand; both read it from memory.
#   cold:       the file's pages evicted before every run (dd iflag=nocache,
#               no root needed); uringsrc with direct=true (O_DIRECT).
#
#   bench/uring-vs-filesrc.sh [DIR]   SIZE_MB=1024 BS=1048576 DEPTH=16 PAIRS=10
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$here/build/plugins}
DIR=${1:-$here/build}
SIZE_MB=${SIZE_MB:-1024} BS=${BS:-1048576} DEPTH=${DEPTH:-16} PAIRS=${PAIRS:-10}
file=$DIR/uring-vs-filesrc.in samples=$(mktemp -d)
trap 'rm -rf "$file" "$samples"' EXIT
bytes=$((SIZE_MB * 1048576))
head -c "$bytes" /dev/urandom > "$file"
sync

evict() { dd if="$file" iflag=nocache count=0 status=none; }
warm() { cat "$file" > /dev/null; }
# Seconds one pipeline takes as a whole process.
timed() {
  local t0 t1
  t0=$(date +%s%N)
  gst-launch-1.0 -q "$@" ! fakesink sync=false > /dev/null
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}
pair() { # name prep uringsrc-options
  local name=$1 prep=$2 opts=$3 f u
  for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then
      $prep; f=$(timed filesrc location="$file" blocksize="$BS")
      $prep; u=$(timed uringsrc location="$file" blocksize="$BS" queue-depth="$DEPTH" $opts)
    else
      $prep; u=$(timed uringsrc location="$file" blocksize="$BS" queue-depth="$DEPTH" $opts)
      $prep; f=$(timed filesrc location="$file" blocksize="$BS")
    fi
    echo "$f $u" >> "$samples/$name"
  done
  median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  local mf mu mr
  mf=$(awk '{ print $1 }' "$samples/$name" | median)
  mu=$(awk '{ print $2 }' "$samples/$name" | median)
  mr=$(awk '{ print $1 / $2 }' "$samples/$name" | median)
  printf '| %s | %.3f | %.3f | %.2f× |\n' "$name" "$mf" "$mu" "$mr"
}

echo "# $(uname -r), $(nproc) CPUs, $(stat -f -c %T "$DIR"): ${SIZE_MB} MiB file, $BS-byte blocks, uringsrc queue depth $DEPTH, $PAIRS pairs"
echo "| case | filesrc s (median) | uringsrc s (median) | filesrc / uringsrc (median of pairs) |"
echo "|---|---|---|---|"
warm
pair "page cache" warm ""
pair "cold, uringsrc direct=true" evict "direct=true"
