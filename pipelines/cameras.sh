#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Many cameras, one host: each camera's H.264 over RTSP or RTP decoded
# (nvh264dec on a GPU machine, avdec_h264 elsewhere), scored by its own
# cudamlp (device-id spreading the streams over the GPUs), and its scores
# sent by scorepublish with the stream's name and each frame's timestamp:
# to an MQTT broker (BROKER) and/or a file of JSON lines per stream
# (OUT_DIR). Each frame is counted: published, unpublished (the broker
# away) or missing (never arrived: lost on the network or dropped before
# cudamlp); the counts come at the end, a line per stream.
#
#   pipelines/cameras.sh cameras.txt
#
# cameras.txt, one camera a line, its name first or left out (cam1, cam2…):
#   door  rtsp://10.0.0.7:8554/stream     rtspsrc (TCP or UDP as the server offers)
#   yard  udp://:5000                      RTP/H.264 arriving on UDP port 5000
#
# BROKER=host[:port] (unset: none), OUT_DIR=dir (default ./scores when there
# is no broker), BACKEND (auto), DECODER (auto: nvh264dec where it exists
# and BACKEND is not cpu), DEVICES=0,1 (round robin; unset: one GPU),
# MODEL=file (unset: generated weights), PATCH=16, LATENCY=100 (ms, the
# jitterbuffer's), DURATION=s (unset: until Ctrl-C; either ends every
# stream with EOS, by SIGINT, which a script's background job ignores: run
# it in the foreground), PRINT=1 prints the gst-launch line instead of
# running it.
set -euo pipefail
. "$(dirname "$0")/env.sh"
list=${1:?usage: pipelines/cameras.sh CAMERAS.txt}
BACKEND=${BACKEND:-auto} PATCH=${PATCH:-16} LATENCY=${LATENCY:-100}
BROKER=${BROKER:-} MODEL=${MODEL:-} DEVICES=${DEVICES:-} DURATION=${DURATION:-}
OUT_DIR=${OUT_DIR:-$([ -n "$BROKER" ] || echo scores)}
if [ -z "${DECODER:-}" ]; then
  DECODER=avdec_h264
  [ "$BACKEND" != cpu ] && gst-inspect-1.0 nvh264dec > /dev/null 2>&1 && DECODER=nvh264dec
fi
IFS=, read -r -a devices <<< "$DEVICES"

rtp_caps="application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"
branches=()
n=0
while read -r first second _; do
  case "$first" in '' | '#'*) continue ;; esac
  n=$((n + 1))
  if [ -n "$second" ]; then name=$first url=$second; else name=cam$n url=$first; fi
  case "$url" in
    rtsp://*) src="rtspsrc location=$url latency=$LATENCY ! rtph264depay" ;;
    udp://*)
      port=${url##*:}
      src="udpsrc port=$port buffer-size=4194304 caps=\"$rtp_caps\" ! rtpjitterbuffer latency=$LATENCY ! rtph264depay"
      ;;
    *) echo "cameras.sh: $list: '$url' is neither rtsp://… nor udp://…:PORT" >&2; exit 2 ;;
  esac
  mlp="cudamlp name=mlp-$name backend=$BACKEND mapping=patches patch-size=$PATCH output=video-meta"
  [ -n "$MODEL" ] && mlp+=" model=$MODEL"
  [ ${#devices[@]} -gt 0 ] && mlp+=" device-id=${devices[$(((n - 1) % ${#devices[@]}))]}"
  pub="scorepublish name=pub-$name stream-name=$name"
  [ -n "$BROKER" ] && pub+=" broker=$BROKER"
  [ -n "$OUT_DIR" ] && pub+=" location=$OUT_DIR/$name.jsonl"
  branches+=("$src ! h264parse ! $DECODER ! $mlp ! $pub")
done < "$list"
[ "$n" -gt 0 ] || { echo "cameras.sh: no camera in $list" >&2; exit 2; }
line=$(printf ' %s' "${branches[@]}")
if [ "${PRINT:-0}" != 0 ]; then
  echo "gst-launch-1.0 -e -m$line"
  exit 0
fi
[ -n "$OUT_DIR" ] && mkdir -p "$OUT_DIR"
# One line per stream at the end, from scorepublish's summary.
summaries() {
  grep -o 'scorepublish-summary.*' | sed 's/(guint64)//g; s/(string)//g; s/scorepublish-summary, //; s/;$//'
}
if [ -n "$DURATION" ]; then
  # SIGINT at the end: -e turns it into EOS, so every stream finishes.
  eval "timeout -s INT $DURATION gst-launch-1.0 -e -m $line" | summaries || true
else
  eval "gst-launch-1.0 -e -m $line" | summaries
fi
