#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Starts a mosquitto broker configured as bench/cameras-bench.sh configures
# its own, runs mqtt-stress against it, and with STALL_S stops the broker
# (SIGSTOP) for that many seconds, STALL_AT_S (4) into the run:
#
#   STALL_S=3 dev/mqtt-stress.sh build/dev/mqtt-stress 144 30 15 2000
set -euo pipefail
stress=$1
shift
port=${PORT:-18830}
dir=$(mktemp -d)
trap 'kill $broker 2> /dev/null || true; rm -rf "$dir"' EXIT
printf 'listener %s 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n%s\n%s\n' \
  "$port" "max_inflight_messages 4096" "max_queued_messages 1000000" > "$dir/broker.conf"
mosquitto -c "$dir/broker.conf" > "$dir/broker.log" 2>&1 &
broker=$!
sleep 0.5
if [ -n "${STALL_S:-}" ]; then
  (sleep $((${STALL_AT_S:-4} + 1)); kill -STOP $broker; sleep "$STALL_S"; kill -CONT $broker) &
fi
"$stress" "$port" "$@"
