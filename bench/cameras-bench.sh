#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Cameras per GPU: N RTP/H.264 cameras on loopback, one sender process
# replaying an encoded clip per camera paced by the clock (filesrc !
# qtdemux ! h264parse ! rtph264pay ! udpsink sync=true: sending costs no
# encoding; the cameras' starts spread evenly over SPREAD_MS, by default
# the clip's keyframe interval, so that their keyframes, as independent
# cameras' do, arrive spread over the second rather than all in one frame
# period), one receiver process (pp-cameras-receiver) decoding every
# camera with nvh264dec and then, per TAILS entry, nothing (the decoders
# alone), cudamlp with hd's model on a backend shared by all the cameras,
# or one cudamlp backend per camera, or the shared backend with each
# camera's scores published to a mosquitto broker started here
# (*published*: scorepublish, QoS 1; *published-own*: the same on a
# backend per camera). Per N and tail one line: frames that
# reached the sink of all sent (and cameras that got every frame), and the
# time from the decoder's output to the sink, p50/p99/max over every frame.
# Then a second table, a row per N and tail: the host's CPU load, the
# receiver's threads, resident and GPU memory halfway through, each
# frame's time from its last packet out of the receiver's socket to the
# sink and, for *published*, the messages a subscriber got and each
# frame's time from that packet to its message at the subscriber
# (bench/packet-latency.py; "steady": frames STEADY_S or more after their
# camera's first).
#
#   bench/cameras-bench.sh CLIP.mp4 FRAMES "32 96 192"
#   TAILS="decoder shared own" (default; or published, published-own),
#   LATENCY=100 (ms, the jitterbuffer's),
#   DECODER=nvh264dec, BACKEND=cuda (avdec_h264 and cpu try it without a GPU),
#   MLP_ARGS="slots=4" (more of cudamlp's properties), BASE_PORT=5000 (camera i
#   on UDP port BASE_PORT + 2i), SPREAD_MS=1000 (camera i starts i/N of it
#   late; 33 puts every camera's keyframe in the same frame period),
#   CONTEXTS=1 (CUDA contexts the receiver spreads the cameras over: camera i
#   in context i mod CONTEXTS, a shared backend each), STEADY_S=5 (the
#   steady columns: frames that arrived this long or more after their
#   camera's first)
#
# Near as many cameras as the decoders take, run a minute a camera
# (bench/loop-clip.py CLIP.mp4 LONG.mp4 3; STEADY_S=25): NVDEC takes
# seconds to come up to speed as the cameras' sessions open, and what
# queues meanwhile takes tens of seconds to drain, most of a 20 s run.
#
# The clip: 1080p30 H.264 at 6 Mbit/s, keyframes every second, e.g.
#   gst-launch-1.0 -e videotestsrc num-buffers=600 pattern=snow !
#     video/x-raw,format=I420,width=1920,height=1080,framerate=30/1 !
#     x264enc speed-preset=ultrafast tune=zerolatency pass=cbr bitrate=6000 key-int-max=30 !
#     mp4mux ! filesink location=clip.mp4
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$here/build/plugins}
receiver=${PP_CAMERAS_RECEIVER:-$here/build/bench/pp-cameras-receiver}
clip=${1:?usage: cameras-bench.sh CLIP.mp4 FRAMES \"N1 N2 …\"} frames=${2:?frames in the clip}
counts=${3:-32 96 192}
TAILS=${TAILS:-decoder shared own}
LATENCY=${LATENCY:-100}
BASE_PORT=${BASE_PORT:-5000}
SPREAD_MS=${SPREAD_MS:-1000}
CONTEXTS=${CONTEXTS:-1}
export STEADY_S=${STEADY_S:-5}
DECODER=${DECODER:-nvh264dec}
mlp="cudamlp backend=${BACKEND:-cuda} mapping=patches patch-size=8 hidden-size=256 ${MLP_ARGS:-}"
broker_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
declare -A tails=([decoder]="" [shared]="$mlp shared=true" [own]="$mlp shared=false"
  [published]="$mlp shared=true" [published-own]="$mlp shared=false")
# The clip's length, and time for the receiver to start and drain.
duration=$((frames / 30 + 8))
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2> /dev/null || true; rm -rf "$out"' EXIT
rows=()
# The receiver's threads, resident memory (MB) and GPU memory (MB,
# nvidia-smi's for the process, where there is one), mid-run. (CUDA's
# pinned host memory is resident; /proc's VmPin does not count it.)
footprint() {
  awk '/^Threads:/ { t = $2 } /^VmRSS:/ { r = $2 }
    END { printf "threads=%d rss-mb=%.0f", t, r / 1024 }' "/proc/$1/status"
  command -v nvidia-smi > /dev/null &&
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2> /dev/null |
    awk -F', *' -v p="$1" '$1 == p { printf " gpu-mb=%s", $2 }'
}
# The host's CPU ticks, busy and all (/proc/stat), for its load while the
# cameras send.
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
echo "# $(date -u +%F): $clip, $frames frames per camera at 30 fps, jitterbuffer ${LATENCY} ms, starts spread over ${SPREAD_MS} ms, ${CONTEXTS} CUDA context(s), steady from ${STEADY_S} s; $mlp"
echo "| cameras | after the decoder | frames at the sink | of sent | cameras complete | decoder → sink p50 µs | p99 µs | max µs | fewest frames of a camera | repeated frames | receiver ready after ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $counts; do
  for t in $TAILS; do
    extra=(--arrivals "$out/arrivals" --contexts "$CONTEXTS")
    # The last tail's files go first: its "ready" line, still there while
    # the new receiver starts, would start the senders before it listens.
    rm -f "$out/messages" "$out/receiver" "$out/receiver.err" "$out/footprint"
    if [[ $t == published* ]]; then
      # A broker for thousands of QoS 1 messages a second to one
      # subscriber: mosquitto's defaults send it 20 at a time and drop
      # what queues past 1,000.
      printf 'listener %s 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n%s\n%s\n' \
        "$broker_port" "max_inflight_messages 4096" "max_queued_messages 1000000" > "$out/broker.conf"
      mosquitto -c "$out/broker.conf" > "$out/broker.log" 2>&1 & pids+=($!)
      sleep 0.5
      mosquitto_sub -p "$broker_port" -t 'pingpong/#' -q 1 --nodelay -F '%U %p' > "$out/messages" &
      pids+=($!)
      extra+=(--sink "scorepublish stream-name=cam{cam} broker=127.0.0.1:$broker_port
        sync=false async=false")
    fi
    "$receiver" --cameras "$n" --base-port "$BASE_PORT" --duration "$duration" --latency "$LATENCY" --expect "$frames" \
      --decoder "$DECODER" --tail "${tails[$t]}" "${extra[@]}" > "$out/receiver" 2> "$out/receiver.err" &
    rpid=$!
    while ! grep -q '^ready' "$out/receiver" 2> /dev/null; do
      kill -0 $rpid 2> /dev/null || { cat "$out/receiver.err" >&2; exit 1; }
      sleep 0.1
    done
    senders=()
    for i in $(seq 0 $((n - 1))); do
      senders+=(filesrc location="$clip" ! qtdemux ! h264parse config-interval=-1 !
        rtph264pay config-interval=-1 pt=96 ! udpsink host=127.0.0.1 port=$((BASE_PORT + 2 * i))
        sync=true ts-offset=$((SPREAD_MS * 1000000 * i / n)))
    done
    cpu0=$(cpu_ticks)
    (sleep $((frames / 60 + 1)); footprint "$rpid" > "$out/footprint") &
    gst-launch-1.0 -q "${senders[@]}" > "$out/sender" 2>&1 || { cat "$out/sender" >&2; }
    cpu1=$(cpu_ticks)
    wait $rpid || { cat "$out/receiver.err" >&2; }
    ready=$(sed -n 's/^ready after \([0-9]*\) ms/\1/p' "$out/receiver")
    line=$(grep '^cameras=' "$out/receiver")
    get() { sed -n "s/.*[ ^]$1=\([^ ]*\).*/\1/p" <<< " $line"; }
    printf '| %s | %s | %s | %.3f | %s of %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$t" \
      "$(get frames)" "$(awk -v f="$(get frames)" -v e="$(get expected)" 'BEGIN { print f / e }')" \
      "$(get complete)" "$n" "$(get latency-p50-us)" "$(get p99-us)" "$(get max-us)" \
      "$(get worst-camera-frames)" "$(get repeats)" "$ready"
    if [[ $t == published* ]]; then
      sleep 1
      kill "${pids[@]}" 2> /dev/null || true
      wait "${pids[@]}" 2> /dev/null || true
      pids=()
    fi
    busy=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { split(a, x); split(b, y); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2]) }')
    rows+=("$n $t busy=$busy $(cat "$out/footprint" 2> /dev/null) $(python3 "$here/bench/packet-latency.py" "$out/arrivals" \
      $([ -e "$out/messages" ] && echo "$out/messages"))")
  done
done
echo
echo "| cameras | after the decoder | host CPU busy % | receiver threads | RSS MB | GPU MB | last packet → sink p50 ms | p99 ms | max ms | steady p99 ms | messages at the subscriber | frames published | of sent | last packet → message p50 ms | p99 ms | max ms | steady p50 ms | steady p99 ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
  read -r n t line <<< "$row"
  line=" $line"
  get() { sed -n "s/.*[ ^]$1=\([^ ]*\).*/\1/p" <<< "$line"; }
  fp=$(get frames-published)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$n" "$t" "$(get busy)" "$(get threads)" "$(get rss-mb)" "$(get gpu-mb)" \
    "$(get sink-p50-ms)" "$(get sink-p99-ms)" "$(get sink-max-ms)" "$(get steady-sink-p99-ms)" \
    "$(get messages)" "$fp" "${fp:+$(awk -v f="$fp" -v e=$((n * frames)) 'BEGIN { printf "%.3f", f / e }')}" \
    "$(get p50-ms)" "$(get p99-ms)" "$(get max-ms)" "$(get steady-p50-ms)" "$(get steady-p99-ms)"
done
