#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# uringsrc vs filesrc and uringsink vs filesink on a large file, from the
# page cache and with O_DIRECT, against fio's io_uring engine at the same
# block size and queue depth: MB/s (1 MB = 10^6 bytes) and CPU seconds per
# GB (user + system, all threads of the process), as median and range over
# REPEATS rounds; each round runs every case once, so drift in the machine
# hits all cases alike. GStreamer pipelines are timed in-process from
# PLAYING to EOS (build/bench/pp-io-bench): loading the plugin, which maps
# the CUDA libraries, is left out. fio rows are skipped without fio.
#
#   bench/io-bench.sh [DIR]   SIZE_MB=4000 BS=1048576 DEPTH=8 REPEATS=7 CASES=all
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$here/build/plugins}
bench=${PP_IO_BENCH:-$here/build/bench/pp-io-bench}
DIR=${1:-$here/build}
SIZE_MB=${SIZE_MB:-4000} BS=${BS:-1048576} DEPTH=${DEPTH:-8} REPEATS=${REPEATS:-7}
file=$DIR/io-bench.in out=$DIR/io-bench.out samples=$(mktemp -d)
trap 'rm -rf "$file" "$out" "$samples"' EXIT
have_fio=$(command -v fio >/dev/null && echo 1 || echo 0)

bytes=$((SIZE_MB * 1000000))
[ -f "$file" ] && [ "$(stat -c %s "$file")" -eq "$bytes" ] || head -c "$bytes" /dev/urandom > "$file"
blocks=$(( (bytes + BS - 1) / BS ))

drop_cache() { sync; echo 3 > /proc/sys/vm/drop_caches; }
warm_cache() { cat "$file" > /dev/null; }
fresh_out() { rm -f "$out"; sync; }

src() { echo "$1 location=$file blocksize=$BS $2 ! fakesink sync=false"; }
sink() { echo "fakesrc num-buffers=$blocks sizetype=fixed sizemax=$BS filltype=nothing ! $1 location=$out $2"; }

# name | prep | kind (gst or fio-read/fio-write) | pipeline or fio args
cases=(
  "read, page cache: filesrc|warm_cache|gst|$(src filesrc "")"
  "read, page cache: uringsrc|warm_cache|gst|$(src uringsrc "queue-depth=$DEPTH")"
  "read, page cache: fio io_uring|warm_cache|fio-read|--direct=0"
  "read, O_DIRECT: uringsrc direct=true|drop_cache|gst|$(src uringsrc "queue-depth=$DEPTH direct=true")"
  "read, O_DIRECT: fio io_uring --direct=1|drop_cache|fio-read|--direct=1"
  "read, cold cache: filesrc|drop_cache|gst|$(src filesrc "")"
  "read, cold cache: uringsrc|drop_cache|gst|$(src uringsrc "queue-depth=$DEPTH")"
  "write, page cache: filesink|fresh_out|gst|$(sink filesink "")"
  "write, page cache: uringsink|fresh_out|gst|$(sink uringsink "queue-depth=$DEPTH")"
  "write, page cache: fio io_uring|fresh_out|fio-write|--direct=0"
)

# One run: prints "MB/s CPU-s/GB".
run_case() {
  local prep=$1 kind=$2 what=$3
  $prep
  case "$kind" in
    gst) "$bench" "$bytes" "$what" | awk '{ printf "%.1f %.3f\n", $1 / $2 / 1e6, $3 / ($1 / 1e9) }' ;;
    fio-*)
      # terse v3: read bw KB/s $7, runtime ms $9; write $48, $50; usr% $88, sys% $89
      local rw=${kind#fio-} target=$file
      [ "$rw" = write ] && target=$out
      fio --name=x --filename="$target" --rw="$rw" --bs="$BS" --iodepth="$DEPTH" \
          --ioengine=io_uring --size="$bytes" --output-format=terse $what |
        awk -F';' -v rw="$rw" -v b="$bytes" '{
          bw = rw == "read" ? $7 : $48; ms = rw == "read" ? $9 : $50;
          printf "%.1f %.3f\n", bw * 1024 / 1e6, ($88 + $89) / 100 * ms / 1000 / (b / 1e9) }' ;;
  esac
}

for round in $(seq "$REPEATS"); do
  for i in "${!cases[@]}"; do
    IFS='|' read -r name prep kind what <<< "${cases[$i]}"
    [[ $kind == fio-* && $have_fio == 0 ]] && continue
    run_case "$prep" "$kind" "$what" >> "$samples/$i"
  done
done

echo "# $(date -u +%F), $(uname -r), $(nproc) CPUs, $(stat -f -c %T "$DIR") on $(df "$DIR" | awk 'NR==2 {print $1}'): $SIZE_MB MB file, $BS-byte blocks, queue depth $DEPTH, $REPEATS interleaved rounds"
echo "| what | MB/s median (min–max) | CPU s/GB median |"
echo "|---|---|---|"
for i in "${!cases[@]}"; do
  IFS='|' read -r name _ <<< "${cases[$i]}"
  [ -s "$samples/$i" ] || { echo "| $name | (no fio here) | |"; continue; }
  cpu=$(sort -n -k2 "$samples/$i" | awk '{ c[NR] = $2 } END { print c[int((NR + 1) / 2)] }')
  sort -n "$samples/$i" | awk -v name="$name" -v cpu="$cpu" '{ mb[NR] = $1 }
    END { m = int((NR + 1) / 2);
          printf "| %s | %.0f (%.0f–%.0f) | %.3f |\n", name, mb[m], mb[1], mb[NR], cpu }'
done
