#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Frames already on the GPU: `cudaupload ! cudamlp` and `nvh264dec ! cudamlp`
# (CUDA memory, no converter between) give the scores the system-memory path
# gives for the same frames, and cudamlp counts every frame as read on the
# device (device-inputs), none uploaded or staged. Frames in CUDA memory
# run without CUDA graphs (their decoder synchronizes the context we
# share, which no capture survives), frames in system memory with them. A
# second start with the decoder's caps takes the engine configured at
# start for them (cudamlppreload.c). Needs GStreamer's nvcodec
# plugin (gstreamer1.0-plugins-bad); exits 77 without it. PP_CLIP: a 1080p
# H.264 mp4 for the nvh264dec part (made with x264enc when that is here).
set -euo pipefail
gst-inspect-1.0 cudaupload > /dev/null 2>&1 || { echo "no cudaupload (nvcodec): skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
N=24
mlp="cudamlp backend=cuda mapping=patches patch-size=8 hidden-size=64 outputs=2"

# run NAME PIPELINE...: scores in $out/NAME.f32, messages in $out/NAME.log
run() {
  local name=$1; shift
  gst-launch-1.0 -m "$@" ! filesink location="$out/$name.f32" > "$out/$name.log" 2>&1 ||
    { cat "$out/$name.log"; exit 1; }
}
stat_of() { grep -o "$2=(guint64)[0-9]*" "$out/$1.log" | tail -1 | cut -d')' -f2; }
same() {
  python3 - "$out/$1.f32" "$out/$2.f32" <<'PY'
import sys, numpy as np
a, b = (np.fromfile(p, np.float32) for p in sys.argv[1:3])
assert a.size == b.size and a.size > 0, (a.size, b.size)
err = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
print(f"  {sys.argv[1].split('/')[-1]} vs {sys.argv[2].split('/')[-1]}: {a.size} scores, "
      f"relative difference {err:.2e}, {np.count_nonzero(b)} non-zero")
assert err <= 1e-5, err
PY
}
plan_of() { grep -o 'plan=(string)[^,;]*' "$out/$1.log" | tail -1; }
check_graphs() {
  local plan
  plan=$(plan_of "$1")
  echo "  $1: $plan"
  grep -q "graphs\\\\*=$2" <<< "$plan" || { echo "$1 should run with graphs=$2"; exit 1; }
}
check_device() {
  local frames=$2 dev staged
  dev=$(stat_of "$1" device-inputs) staged=$(stat_of "$1" staged-inputs)
  echo "  $1: device-inputs=$dev staged-inputs=$staged of $frames frames"
  [ "$dev" = "$frames" ] && [ "$staged" = 0 ]
}

for format in NV12 I420 YUY2; do
  src="videotestsrc num-buffers=$N pattern=smpte ! video/x-raw,format=$format,width=1918,height=1080"
  for color in rgb luma; do
    run "sys-$format-$color" $src ! $mlp color=$color
    run "dev-$format-$color" $src ! cudaupload ! "video/x-raw(memory:CUDAMemory)" ! $mlp color=$color
    same "dev-$format-$color" "sys-$format-$color"
    check_device "dev-$format-$color" $N
    check_graphs "dev-$format-$color" off
    check_graphs "sys-$format-$color" on
  done
done

clip=${PP_CLIP:-}
if [ -z "$clip" ] && gst-inspect-1.0 x264enc > /dev/null 2>&1; then
  clip=$out/clip.mp4
  gst-launch-1.0 -q videotestsrc num-buffers=$N ! video/x-raw,format=I420,width=1920,height=1080 \
    ! x264enc speed-preset=ultrafast ! h264parse ! mp4mux ! filesink location="$clip"
fi
if [ -n "$clip" ] && gst-inspect-1.0 nvh264dec > /dev/null 2>&1; then
  run nvdec-dev filesrc location="$clip" ! qtdemux ! h264parse ! nvh264dec ! $mlp
  # The same start again: the engine is configured at start for the caps
  # the last start had (its plan from the cache), before the decoder's
  # caps come, and gives the same scores.
  GST_DEBUG=cudamlp:4 run nvdec-again filesrc location="$clip" ! qtdemux ! h264parse ! nvh264dec \
    ! $mlp
  grep -q "configured at start for these caps" "$out/nvdec-again.log" ||
    { echo "the second start did not take the engine configured for its caps"; exit 1; }
  same nvdec-again nvdec-dev
  # A plan that runs layers on cuBLASLt, from the cache: a start without a
  # hint loads cuBLASLt in its configure; the next loads it at NULL→READY
  # (its configure then loads nothing) and takes the engine configured at
  # start, with the same scores. (A cold start's planner loads it while it
  # times, which its plan ms holds.) deep's layers with two outputs: with
  # one, the wide kernel runs the whole MLP and nothing loads cuBLASLt.
  deep="cudamlp backend=cuda precision=fp32 mapping=patches patch-size=8"
  deep+=' layers="linear(192,512),gelu,linear(512,256),gelu,linear(256,64),silu,linear(64,2)"'
  # A cache of their own: another test's start with these settings may
  # have left a hint.
  XDG_CACHE_HOME=$out/cache run nvdec-deep-cold filesrc location="$clip" ! qtdemux ! h264parse \
    ! nvh264dec ! $deep
  rm "$out"/cache/pingpong/*.start
  XDG_CACHE_HOME=$out/cache run nvdec-deep filesrc location="$clip" ! qtdemux ! h264parse \
    ! nvh264dec ! $deep
  XDG_CACHE_HOME=$out/cache GST_DEBUG=cudamlp:4 run nvdec-deep-again filesrc location="$clip" \
    ! qtdemux ! h264parse ! nvh264dec ! $deep
  python3 - "$out/nvdec-deep.log" "$out/nvdec-deep-again.log" <<'PY'
import re, sys
def startup(path):
    text = open(path).read()
    lib = re.findall(r'library-ms\\=\\\(double\\\)([0-9.e+-]+)', text)
    blas = re.findall(r'cublaslt\\=\\\(boolean\\\)(true|false)', text)
    assert lib and blas, f"{path}: no startup stats"
    return float(lib[-1]), blas[-1]
first, again = startup(sys.argv[1]), startup(sys.argv[2])
print(f"  deep's first start: library {first[0]} ms, cublaslt {first[1]}; "
      f"the second: library {again[0]} ms, cublaslt {again[1]}")
assert first[1] == "true" and again[1] == "true", "deep's plan should run layers on cuBLASLt"
assert first[0] > 0, "the first start should load cuBLASLt in its configure"
assert again[0] == 0, "the second start should have loaded cuBLASLt before its configure"
PY
  grep -q "configured at start for these caps" "$out/nvdec-deep-again.log" ||
    { echo "deep's second start did not take the engine configured for its caps"; exit 1; }
  same nvdec-deep-again nvdec-deep
  run nvdec-sys filesrc location="$clip" ! qtdemux ! h264parse ! nvh264dec ! video/x-raw ! $mlp
  grep -q 'cudamlp0.GstPad:sink: caps = video/x-raw(memory:CUDAMemory)' <(gst-launch-1.0 -v filesrc location="$clip" ! qtdemux ! h264parse \
    ! nvh264dec ! $mlp ! fakesink 2>&1) || { echo "nvh264dec ! cudamlp did not negotiate CUDA memory"; exit 1; }
  same nvdec-dev nvdec-sys
  n=$(stat_of nvdec-sys frames)
  check_device nvdec-dev "$n"
  check_graphs nvdec-dev off
else
  echo "  nvh264dec part skipped: no clip (PP_CLIP) or no nvh264dec"
fi
echo "cuda-memory: OK"
