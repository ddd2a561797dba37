#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/cameras-bench.sh, small and on the CPU: two RTP cameras replaying a
# 60-frame clip played twice over (bench/loop-clip.py), decoded by
# avdec_h264, then nothing or cudamlp with each camera's scores published
# to the bench's broker. Both tables must count every frame (240 at the
# sink: a timestamp that went back at the loop would count a frame as a
# repeat; 240 published, each matched to its last packet) and give each
# frame's time from its last packet to the sink and to its message: finite, positive and under 3 s (a few ms where the host
# is idle; CI's sanitizer runs on a busy host have given 0.6 s); and the
# receiver's threads and memory, read halfway. The model is small (16
# hidden units): what is tested is the bench, not the scoring.
#   cameras_bench_test.sh PP-CAMERAS-RECEIVER
set -euo pipefail
for e in x264enc avdec_h264 mp4mux qtdemux scorepublish; do
  gst-inspect-1.0 "$e" > /dev/null 2>&1 || { echo "no $e here"; exit 77; }
done
command -v mosquitto > /dev/null && command -v mosquitto_sub > /dev/null ||
  { echo "no mosquitto here"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gst-launch-1.0 -q -e videotestsrc num-buffers=60 pattern=ball \
  ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \
  ! x264enc speed-preset=ultrafast tune=zerolatency key-int-max=30 ! mp4mux \
  ! filesink location="$work/once.mp4"
"${PP_GST_PYTHON:-/usr/bin/python3}" "$here/../../bench/loop-clip.py" "$work/once.mp4" "$work/clip.mp4" 2
# Two even ports apart, likely free: the cameras' (the bench's default 5000
# may be another test's).
base=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1] & ~1)')
MLP_ARGS="hidden-size=16" BASE_PORT=$base PP_CAMERAS_RECEIVER=$1 TAILS="decoder published" \
  DECODER=avdec_h264 BACKEND=cpu LATENCY=0 \
  "$here/../../bench/cameras-bench.sh" "$work/clip.mp4" 120 2 > "$work/tables.md"
cat "$work/tables.md"
fail=0
check() { # description, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
# A table row's cells, by column (1: the first cell).
cell() { awk -F' *\\| *' -v t="$1" -v c="$2" '$2 == 2 && $3 == t { n++; if (n == '"$3"') print $(c + 1) }' "$work/tables.md"; }
below_3s() { awk -v v="$1" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 3000) }'; }
for t in decoder published; do
  check "$t: 240 frames at the sink" "[ '$(cell $t 3 1)' = 240 ]"
  p50=$(cell $t 7 2) p99=$(cell $t 8 2)
  check "$t: last packet → sink p50 $p50 ms, p99 $p99 ms" "below_3s '$p50' && below_3s '$p99'"
  threads=$(cell $t 4 2) rss=$(cell $t 5 2)
  check "$t: the receiver's footprint read ($threads threads, $rss MB)" "[ '${threads:-0}' -gt 1 ] && [ '${rss:-0}' -gt 1 ]"
done
check "published: 240 frames published" "[ '$(cell published 12 2)' = 240 ]"
p50=$(cell published 14 2) p99=$(cell published 15 2)
check "published: last packet → message p50 $p50 ms, p99 $p99 ms" "below_3s '$p50' && below_3s '$p99'"
exit $fail
