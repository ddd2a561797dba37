#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of `videotestsrc num-buffers=1 ! cudamlp ! fakesink` on the GPU,
# against CUDA's own start, each run a fresh process: cold (an empty plan
# cache), cached (the plan kept by the run before), and on the CPU backend.
# Medians of REPEATS runs, alternating, for each workload's shapes:
#
#   bench/startup.sh [WORKLOADS]     REPEATS=5 BUILD=build
#
# whole ms: the process, start to exit (wall clock around it); first ms:
# in the process, NULL to the first result at the sink (pp-startup); then
# cudamlp's own parts (its stats' startup structure).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
export GST_PLUGIN_PATH=${GST_PLUGIN_PATH:-$build/plugins}
REPEATS=${REPEATS:-5}
workloads=${1:-hd,seed,deep}
declare -A caps=(
  [hd]="video/x-raw,format=RGB,width=1920,height=1080"
  [seed]="video/x-raw,format=GRAY8,width=1024,height=1024"
  [deep]="video/x-raw,format=RGB,width=1920,height=1080"
  [tiny]="video/x-raw,format=GRAY8,width=256,height=256"
)
declare -A props=(
  [hd]="mapping=patches patch-size=8 hidden-size=256"
  [seed]="mapping=rows hidden-size=1024"
  [deep]="mapping=patches patch-size=8 layers=\"linear(192,512),gelu,linear(512,256),gelu,linear(256,64),silu,linear(64,1)\""
  [tiny]="mapping=rows hidden-size=64"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now_ms() { date +%s%N | awk '{ printf "%.1f", $1 / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
field() { grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | median; }

# One fresh process: whole ms on the first line, pp-startup's on the second.
run() {
  local out=$1 backend=$2 w=$3 cache=$4
  local t0 t1
  t0=$(now_ms)
  XDG_CACHE_HOME=$cache "$build/bench/pp-startup" \
    "videotestsrc num-buffers=1 ! ${caps[$w]} ! cudamlp name=mlp backend=$backend ${props[$w]} ! fakesink" \
    > "$out.line"
  t1=$(now_ms)
  echo "whole_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(cat "$out.line")" >> "$out"
}

echo "# $(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), median of $REPEATS"
echo "| workload | run | whole ms | first ms | open | library | alloc | weights | plan | graphs | configure | plan from |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for w in ${workloads//,/ }; do
  warm=$work/warm-$w
  mkdir -p "$warm"
  run "$work/prime" cuda "$w" "$warm" # the cached runs' plan
  for _ in $(seq "$REPEATS"); do
    "$build/bench/pp-cuda-start" >> "$work/$w-cuda"
    cold=$(mktemp -d "$work/cold.XXXX")
    run "$work/$w-cold" cuda "$w" "$cold"
    run "$work/$w-cached" cuda "$w" "$warm"
    run "$work/$w-cpu" cpu "$w" "$cold"
  done
  printf '| %s | CUDA alone: driver %s + context %s ms (cuBLASLt load %s) | %s | | | | | | | | | |\n' "$w" \
    "$(field driver_ms "$work/$w-cuda")" "$(field context_ms "$work/$w-cuda")" \
    "$(field cublaslt_ms "$work/$w-cuda")" \
    "$(awk -F'[ =]' '{ print $2 + $4 }' "$work/$w-cuda" | median)"
  for kind in cold cached cpu; do
    f=$work/$w-$kind
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$w" "$kind" \
      "$(field whole_ms "$f")" "$(field first_ms "$f")" "$(field open-ms "$f")" \
      "$(field library-ms "$f")" "$(field alloc-ms "$f")" "$(field weights-ms "$f")" \
      "$(field plan-ms "$f")" "$(field graphs-ms "$f")" "$(field configure-ms "$f")" \
      "$(grep -o 'source=[a-z]*' "$f" | sort | uniq -c | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $2 }')"
  done
done
