#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Many cameras, one host: each camera's H.264 over RTSP or RTP decoded
# (nvh264dec on a GPU machine, avdec_h264 elsewhere), scored by its own
# cudamlp (device-id spreading the streams over the GPUs; a GPU's cudamlps
# share one backend, shared=true), and its scores
# sent by scorepublish with the stream's name and each frame's timestamp:
# to an MQTT broker (BROKER) and/or a file of JSON lines per stream
# (OUT_DIR). Each frame is counted: published, unpublished (the broker
# away) or missing (never arrived: lost on the network, dropped before
# cudamlp, or while its camera was away); the counts come at the end, a
# line per stream. A camera whose source fails (an RTSP server gone) is
# said on stderr and tried again every RETRY seconds (2) while the others
# go on; an RTP camera that restarts (a new RTP source) is taken up anew.
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
# MODEL=file (unset: generated weights), SHARED=0 (each cudamlp its own
# backend; default 1), SLOTS=4 (the shared backend's frames in flight),
# PATCH=16, LATENCY=100 (ms, the
# jitterbuffer's), DURATION=s (unset: until Ctrl-C; either ends every
# stream with EOS), RETRY=s (2), PRINT=1 prints the pipeline as a
# gst-launch line instead of running it (gst-launch would end every camera
# at the first one's error, and an RTP camera that restarts from sequence
# numbers just behind its last ones loses up to 2 s of packets as late;
# cameras.py starts its jitterbuffer over for each new RTP source), PP_GST_PYTHON (the python that has GStreamer's
# bindings; /usr/bin/python3).
set -euo pipefail
. "$(dirname "$0")/env.sh"
[ $# = 1 ] || { echo "usage: pipelines/cameras.sh CAMERAS.txt" >&2; exit 2; }
# One pipeline for every camera, and a source that fails tried again while
# the others go on: a GStreamer application (cameras.py), not gst-launch,
# which would end them all at the first error.
exec "$PP_GST_PYTHON" "$(dirname "$0")/cameras.py" "$1"
