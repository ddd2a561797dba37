#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The GPU host's half of the network pair (the other: sender.sh, on the
# capture host CAPTURE_HOST): it connects to the sender, takes its frames
# (TCP, GDP), runs them through cudamlp and sends the scores back the same
# way, as other/tensors with the frames' timestamps.
#
# The frames are read by fdsrc from a socket this script connects (bash's
# /dev/tcp), not by tcpclientsrc, which in GStreamer 1.22 reads 4 KiB at a
# time: 500 buffers for one 1080p frame (docs/PERFORMANCE.md, "Across
# hosts"). fdsrc reads at most BLOCKSIZE bytes into a new buffer each time;
# 256 KiB added 1.5-1.7 ms to a 1080p frame on the H100 host against
# 2.6 ms with 4 MiB. It retries for WAIT seconds until the sender listens.
#
# One stream per run: it ends when the sender's stream ends. If the
# connection drops mid-stream (the sender killed, or nothing for IDLE
# seconds: the network gone) it ends with an error, exit status 1.
#
#   CAPTURE_HOST=10.0.0.1 pipelines/receiver.sh
#   CAPTURE_HOST=... PORT=5000 RESULTS_PORT=5001 BACKEND=auto \
#     MLP_ARGS="model=m.safetensors slots=3" pipelines/receiver.sh
set -euo pipefail
. "$(dirname "$0")/env.sh"
: "${CAPTURE_HOST:?set CAPTURE_HOST to the address of the sender}"
PORT=${PORT:-5000} RESULTS_PORT=${RESULTS_PORT:-5001} IDLE=${IDLE:-10} WAIT=${WAIT:-10}
BACKEND=${BACKEND:-auto} MLP_ARGS=${MLP_ARGS:-} BLOCKSIZE=${BLOCKSIZE:-262144}
launch=${PP_LAUNCH:-$PP_BUILD/tools/pingpong-launch}

for ((try = 0; ; try++)); do
  { exec 3<> "/dev/tcp/$CAPTURE_HOST/$PORT"; } 2> /dev/null && break
  if ((try >= WAIT * 10)); then
    echo "receiver: nothing listens on $CAPTURE_HOST:$PORT (is sender.sh running?)" >&2
    exit 1
  fi
  sleep 0.1
done

# shellcheck disable=SC2086 # MLP_ARGS is a list of properties
exec "$launch" --net net --idle-timeout "$IDLE" \
  fdsrc name=net fd=3 blocksize="$BLOCKSIZE" ! gdpdepay \
  ! cudamlp name=mlp backend="$BACKEND" $MLP_ARGS \
  ! gdppay ! tcpclientsink host="$CAPTURE_HOST" port="$RESULTS_PORT" sync=false
