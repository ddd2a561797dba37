#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pipelines/cameras.sh as a site runs it: on one side of a veth pair (a
# network namespace, the site) two RTP/H.264 cameras over UDP
# (videotestsrc ! x264enc ! rtph264pay ! udpsink, 90 frames each), an RTSP
# camera (gst-rtsp-server, rtsp_camera.py) and a mosquitto broker started
# here; on the other (the GPU host) the receiver, scoring them on the CPU
# backend and publishing to the broker and to JSON lines. Without root, all
# of it on 127.0.0.1. Camera "door" stops for a second after 45 frames and
# comes back (a new sender, as a restarted camera: a new SSRC, its sequence
# numbers starting where the first sender's did, behind the last ones the
# receiver took, as a camera that counts from a fixed number at each boot);
# camera "yard" loses 5% of its packets. Every frame is accounted for:
# door's 90 frames all scored, its pause counted as missing frames (~30,
# more as much as its second sender took to start);
# yard's scored and missing frames together 85–90 of 90 (a loss in the last
# frames leaves no gap to count); every scored frame a line in the file. The
# broker is stopped 1.2 s into the run and started again 0.8 s later: each
# camera's frames are published or counted unpublished (their sum its frames
# scored), the receiver says the broker went away, and publishing resumes
# (gate's last frame reaches the subscriber); every frame published, and
# no other, reaches the subscriber, whose session the broker keeps across
# the restart. The RTSP camera "gate" is killed 2 s into the run and
# started again 1.5 s later: the others go on, the receiver says so and
# tries again until gate is back, and gate's frames after the gap are
# scored, the gap counted as missing. Camera "porch" is an RTSP URL where
# nothing listens, down from the start: the receiver says so and tries
# again, and the others go on (a sink that never prerolls must not hold the
# pipeline in PAUSED). Camera "attic" is an RTP port no packet ever reaches:
# its stream still ends at the end and is counted. (The per-camera count
# lines cameras.sh prints at the end are scorepublish's summaries, which
# publish_test.py checks.)
# PP_TEST_BACKEND=cuda runs the same with nvh264dec and the CUDA backend
# (the GPU suite), the frames reaching cudamlp in CUDA memory.
set -euo pipefail
backend=${PP_TEST_BACKEND:-cpu}
decoder=avdec_h264
[ "$backend" = cpu ] || decoder=nvh264dec
py=${PP_GST_PYTHON:-/usr/bin/python3}
for e in x264enc rtph264pay "$decoder" rtspsrc scorepublish; do
  gst-inspect-1.0 "$e" > /dev/null 2>&1 || { echo "no $e here"; exit 77; }
done
command -v mosquitto > /dev/null && command -v mosquitto_sub > /dev/null ||
  { echo "no mosquitto here"; exit 77; }
"$py" -c 'import gi; gi.require_version("GstRtspServer", "1.0")' 2> /dev/null ||
  { echo "no gst-rtsp-server bindings here (gir1.2-gst-rtsp-server-1.0)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
# The site: the cameras and the broker on one host (network namespace),
# the receiver on another, joined by a veth pair (tests/pipelines/netns-pair.sh);
# where namespaces cannot be made (no root), all of it on 127.0.0.1.
. "$here/netns-pair.sh"
trap 'kill "${pids[@]}" 2> /dev/null || true; netns_pair_down; rm -rf "$work"' EXIT
if netns_pair_up > "$work/netns.log" 2>&1; then
  site=(ip netns exec "$cap") receiver=(ip netns exec "$gpu")
  site_host=10.213.0.1 receiver_host=10.213.0.2
else
  site=() receiver=() site_host=127.0.0.1 receiver_host=127.0.0.1
fi
echo "cameras and broker at $site_host, the receiver at $receiver_host"
free_port() { "$py" -c 'import socket; s = socket.socket(socket.AF_INET, socket.'"$1"'); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
broker_port=$(free_port SOCK_STREAM) door=$(free_port SOCK_DGRAM) yard=$(free_port SOCK_DGRAM)
attic=$(free_port SOCK_DGRAM)
rtsp=$(free_port SOCK_STREAM) nobody=$(free_port SOCK_STREAM)
printf 'door udp://:%s\nyard udp://:%s\ngate rtsp://%s:%s/cam\nporch rtsp://%s:%s/cam\nattic udp://:%s\n' \
  "$door" "$yard" "$site_host" "$rtsp" "$site_host" "$nobody" "$attic" > "$work/cameras.txt"
"${site[@]}" "$py" "$here/rtsp_camera.py" "$rtsp" "$site_host" > "$work/rtsp.log" 2>&1 & pids=($!)

# The broker keeps its sessions across the restart (saved as it stops) and
# the subscriber's is kept (a client id, no clean session), so what the
# receiver publishes once the broker is back, before the subscriber has
# reconnected, waits for it rather than going to no one. (Started by root,
# mosquitto would run as its own user, who cannot write here.)
printf 'listener %s %s\nallow_anonymous true\npersistence true\npersistence_location %s/\nuser %s\n' \
  "$broker_port" "$site_host" "$work" "$(id -un)" > "$work/broker.conf"
"${site[@]}" mosquitto -c "$work/broker.conf" > "$work/broker.log" 2>&1 & broker_pid=$!
pids+=($broker_pid)
sleep 0.5
"${site[@]}" mosquitto_sub -h "$site_host" -p "$broker_port" -t 'pingpong/#' -q 1 -v -c -i pp-cameras-test \
  > "$work/messages.txt" & pids+=($!)

send() { # port frames drop-probability [first-seqnum]
  "${site[@]}" gst-launch-1.0 -q videotestsrc is-live=true num-buffers="$2" \
    ! video/x-raw,format=I420,width=128,height=96,framerate=30/1 \
    ! x264enc tune=zerolatency key-int-max=15 speed-preset=ultrafast \
    ! rtph264pay config-interval=1 pt=96 seqnum-offset="${4:--1}" \
    ! identity drop-probability="$3" \
    ! udpsink host="$receiver_host" port="$1"
}
# The cameras start once the receiver listens (a packet sent before is
# lost where nothing can count it: the receiver starts in 1-3 s, CUDA's
# and the plugins' loading included).
listening() {
  "${receiver[@]}" cat /proc/net/udp /proc/net/udp6 2> /dev/null | grep -q "$(printf ':%04X ' "$1")"
}
receiver_up() { for _ in $(seq 300); do listening "$door" && listening "$yard" && return; sleep 0.1; done; }
# door's pause is the sleep between its two senders and the second's
# start, which a busy host (CI's sanitizer run) stretches: the times
# around it bound the frames the receiver may count missing.
(receiver_up; send "$yard" 90 0.05 & send "$door" 45 0 1000; date +%s.%N > "$work/door-paused"
  sleep 1; send "$door" 45 0 1000; date +%s.%N > "$work/door-done"; wait) \
  > "$work/senders.log" 2>&1 & pids+=($!)
rtsp_pid=${pids[0]}
(receiver_up; sleep 1.2; kill "$broker_pid"; sleep 0.8
  exec "${site[@]}" mosquitto -c "$work/broker.conf" >> "$work/broker.log" 2>&1) &
pids+=($!)
(receiver_up; sleep 2; kill "$rtsp_pid"; sleep 1.5
  exec "${site[@]}" "$py" "$here/rtsp_camera.py" "$rtsp" "$site_host" > "$work/rtsp2.log" 2>&1) &
pids+=($!)
status=0
BACKEND=$backend DECODER=$decoder DURATION=9 BROKER=$site_host:$broker_port OUT_DIR="$work/scores" \
  "${receiver[@]}" "$here/../../pipelines/cameras.sh" "$work/cameras.txt" > "$work/summary.txt" 2> "$work/stderr.txt" ||
  status=$?
cat "$work/summary.txt" "$work/stderr.txt"
sleep 0.5

# What each camera's file says: frames scored (its lines) and missing (the
# gaps each message reports); what the broker delivered, per topic.
scored() { wc -l < "$work/scores/$1.jsonl"; }
missing() { grep -o '"missing-before":[0-9]*' "$work/scores/$1.jsonl" | awk -F: '{ n += $2 } END { print n + 0 }'; }
fail=0
check() { # description, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
check "the receiver ended cleanly (exit $status)" "[ $status = 0 ]"
# A camera's count line: frames published and unpublished.
counted() { sed -n "s/^stream=$1, frames=[0-9]*, published=\([0-9]*\), unpublished=\([0-9]*\),.*/\\$2/p" "$work/summary.txt"; }
received() { grep "^pingpong/$1/scores " "$work/messages.txt" | sed 's/.*"frame":\([0-9]*\).*/\1/' | sort -un; }
outage=0
for cam in door yard gate; do
  n=$(scored "$cam") got=$(received "$cam" | wc -l) pub=$(counted "$cam" 1) unpub=$(counted "$cam" 2)
  echo "$cam: $n scored, $(missing "$cam") missing, $pub published, $unpub unpublished, $got messages at the broker"
  check "$cam: published + unpublished = scored" "[ '$((pub + unpub))' = '$n' ]"
  check "$cam: every frame published reached the broker's subscriber, no other" "[ '$got' = '$pub' ]"
  [ "$unpub" = 0 ] || outage=1
done
check "the broker's outage counted frames unpublished" "[ $outage = 1 ]"
check "the receiver said the broker went away" "grep -q 'not reachable' '$work/stderr.txt'"
check "publishing resumed: gate's last frame at the subscriber" "received gate | grep -qx '$(($(scored gate) - 1))'"
check "door: all 90 frames scored" "[ '$(scored door)' = 90 ]"
m=$(missing door)
# At most the time from the first sender's end to the second's, less its
# 45 frames (1.5 s), in frames, and 5 more; at least 45.
most=$(awk -v a="$(cat "$work/door-paused")" -v b="$(cat "$work/door-done")" \
  'BEGIN { n = int((b - a - 1.5) * 30) + 5; print (n > 45 ? n : 45) }')
check "door: its 1 s pause counted as missing frames ($m, 25-$most)" "[ '$m' -ge 25 ] && [ '$m' -le $most ]"
t=$(($(scored yard) + $(missing yard)))
check "yard: scored + missing = $t, 85-90 of 90" "[ $t -ge 85 ] && [ $t -le 90 ]"
# Beside a miscount, yard's gaps between timestamps that are not one frame period.
[ $t -ge 85 ] && [ $t -le 90 ] ||
  awk '{ match($0, /"frame":[0-9]+/); f = substr($0, RSTART + 8, RLENGTH - 8)
         match($0, /"pts":[0-9]+/); t = substr($0, RSTART + 6, RLENGTH - 6) }
       NR > 1 && ((t - p) * 30 / 1e9 < 0.9 || (t - p) * 30 / 1e9 > 1.1) {
         printf "yard: frame %d came %.2f frame periods after the one before\n", f, (t - p) * 30 / 1e9 }
       { p = t }' "$work/scores/yard.jsonl"
g=$(scored gate) gm=$(missing gate)
after=$(sed -n '/"missing-before"/,$p' "$work/scores/gate.jsonl" | wc -l)
check "gate (RTSP): the receiver said it failed and tried again" "grep -q '^camera gate: .*trying again' '$work/stderr.txt'"
check "gate: $g frames scored, $after of them after the gap" "[ '$g' -ge 90 ] && [ '$after' -ge 60 ]"
check "gate: the gap counted as missing ($gm, 30-150)" "[ '$gm' -ge 30 ] && [ '$gm' -le 150 ]"
lost=$(sed -n 's/^stream=yard,.*packets-lost=\([0-9]*\).*/\1/p' "$work/summary.txt")
check "yard: the jitterbuffer's lost packets counted ($lost)" "[ '${lost:-0}' -gt 0 ]"
check "porch (never up): the receiver said so and tried again" \
  "grep -q '^camera porch: .*trying again' '$work/stderr.txt'"
check "porch: no frame scored" "grep -q '^stream=porch, frames=0,' '$work/summary.txt'"
check "attic (RTP, no packet ever): no frame scored" "grep -q '^stream=attic, frames=0,' '$work/summary.txt'"
check "every stream ended at the end (EOS)" "! grep -q 'no EOS within' '$work/stderr.txt'"
check "a count line per camera at the end" "[ \$(grep -c '^stream=.*frames=' '$work/summary.txt') = 5 ]"
exit $fail
