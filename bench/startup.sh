#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of cudamlp on the GPU against CUDA's own start, each run a fresh
# process: cold (an empty plan cache), cached (the plan kept by the run
# before), and on the CPU backend. Medians of REPEATS runs, alternating, for
# each workload's shapes:
#
#   bench/startup.sh [WORKLOADS]     REPEATS=5 BUILD=build CLIP=clip.mp4 PRECISION=bf16
#
# Workloads hd, seed, deep, tiny: `videotestsrc num-buffers=1 ! cudamlp !
# fakesink`. With CLIP (an H.264 file), also decoder (nvh264dec alone),
# nvdec-hd and nvdec-deep (nvh264dec ! cudamlp, frames in CUDA memory): the
# clip plays through, and first ms is what counts there. PRECISION: cudamlp's
# precision (its default when unset).
#
# whole ms: the process, exec to exit (wall clock around it); first ms: in
# the process, from PLAYING to the first result at the sink (pp-startup);
# gst_init and null (PLAYING to NULL, the teardown) beside it; then
# cudamlp's own parts (its stats' startup structure). CUDA alone:
# pp-cuda-start, a process that starts the driver, makes one context and
# exits (in-process parts, and its whole process); "with cuBLASLt" also
# loads cuBLASLt and checks its first GEMM algorithm. "beyond CUDA": whole
# ms minus CUDA alone's whole ms, with cuBLASLt where cudamlp's plan runs
# layers on it (its stats' startup cublaslt; library ms is 0 where the
# element loaded it early, at NULL→READY, as the cached runs here do).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$build/plugins}
REPEATS=${REPEATS:-5}
workloads=${1:-hd,seed,deep}
[ -n "${CLIP:-}" ] && workloads+=",decoder,nvdec-hd,nvdec-deep"
deep_layers='layers="linear(192,512),gelu,linear(512,256),gelu,linear(256,64),silu,linear(64,1)"'
nvdec="filesrc location=${CLIP:-} ! qtdemux ! h264parse ! nvh264dec"
declare -A src=(
  [hd]="videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=1920,height=1080"
  [seed]="videotestsrc num-buffers=1 ! video/x-raw,format=GRAY8,width=1024,height=1024"
  [deep]="videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=1920,height=1080"
  [tiny]="videotestsrc num-buffers=1 ! video/x-raw,format=GRAY8,width=256,height=256"
  [decoder]="$nvdec" [nvdec-hd]="$nvdec" [nvdec-deep]="$nvdec"
)
declare -A props=(
  [hd]="mapping=patches patch-size=8 hidden-size=256"
  [seed]="mapping=rows hidden-size=1024"
  [deep]="mapping=patches patch-size=8 $deep_layers"
  [tiny]="mapping=rows hidden-size=64"
  [nvdec-hd]="mapping=patches patch-size=8 hidden-size=256"
  [nvdec-deep]="mapping=patches patch-size=8 $deep_layers"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
field() { grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | median; }

pipeline() { # WORKLOAD BACKEND
  if [ "$1" = decoder ]; then
    echo "${src[$1]} ! fakesink"
  else
    echo "${src[$1]} ! cudamlp name=mlp backend=$2 ${props[$1]} ${PRECISION:+precision=$PRECISION} ! fakesink"
  fi
}

# One fresh process, its line with whole_ms first.
run() { # OUT BACKEND WORKLOAD CACHE
  local t0 t1 line
  t0=$(now_ms)
  line=$(XDG_CACHE_HOME=$4 "$build/bench/pp-startup" "$(pipeline "$3" "$2")")
  t1=$(now_ms)
  echo "whole_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $line" >> "$1"
}
cuda_alone() { # OUT [--cublaslt]
  local t0 t1 line
  t0=$(now_ms)
  line=$("$build/bench/pp-cuda-start" "${@:2}")
  t1=$(now_ms)
  echo "whole_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $line" >> "$1"
}

echo "# $(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), median of $REPEATS"
echo "| workload | run | whole ms | beyond CUDA | first ms | gst_init | null | open | library | alloc | weights | plan | graphs | configure | plan from |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for w in ${workloads//,/ }; do
  warm=$work/warm-$w
  mkdir -p "$warm"
  kinds="cold cached cpu"
  [[ $w == nvdec-* ]] && kinds="cold cached"
  [ "$w" = decoder ] && kinds="alone"
  [ "$w" = decoder ] || run "$work/prime" cuda "$w" "$warm" # the cached runs' plan
  for _ in $(seq "$REPEATS"); do
    cuda_alone "$work/$w-cuda"
    cuda_alone "$work/$w-cuda-lt" --cublaslt
    cold=$(mktemp -d "$work/cold.XXXX")
    for kind in $kinds; do
      case $kind in
        cold | alone) run "$work/$w-$kind" cuda "$w" "$cold" ;;
        cached) run "$work/$w-$kind" cuda "$w" "$warm" ;;
        cpu) run "$work/$w-$kind" cpu "$w" "$cold" ;;
      esac
    done
  done
  cuda_whole=$(field whole_ms "$work/$w-cuda")
  lt_whole=$(field whole_ms "$work/$w-cuda-lt")
  printf '| %s | CUDA alone: driver %s + context %s ms in-process | %s | | | | | | | | | | | | |\n' \
    "$w" "$(field driver_ms "$work/$w-cuda")" "$(field context_ms "$work/$w-cuda")" "$cuda_whole"
  printf '| %s | CUDA alone with cuBLASLt: + load %s + first algorithm %s ms | %s | | | | | | | | | | | | |\n' \
    "$w" "$(field cublaslt_ms "$work/$w-cuda-lt")" "$(field lt_first_ms "$work/$w-cuda-lt")" "$lt_whole"
  for kind in $kinds; do
    f=$work/$w-$kind
    whole=$(field whole_ms "$f")
    base=$cuda_whole
    awk -v l="$(field cublaslt "$f")" 'BEGIN { exit !(l > 0) }' && base=$lt_whole
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$w" "$kind" \
      "$whole" "$(awk -v a="$whole" -v b="$base" 'BEGIN { printf "%+.0f", a - b }')" \
      "$(field first_ms "$f")" "$(field gst_init_ms "$f")" "$(field null_ms "$f")" \
      "$(field open-ms "$f")" "$(field library-ms "$f")" "$(field alloc-ms "$f")" \
      "$(field weights-ms "$f")" "$(field plan-ms "$f")" "$(field graphs-ms "$f")" \
      "$(field configure-ms "$f")" \
      "$(grep -o 'source=[a-z]*' "$f" | sort | uniq -c | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $2 }')"
  done
  if [ -n "${RAW:-}" ]; then # every run's line, for the record
    for f in "$work/$w-"*; do sed "s|^|$(basename "$f") |" "$f"; done >> "$RAW"
  fi
done
