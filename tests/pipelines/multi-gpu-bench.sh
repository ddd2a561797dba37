#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/multi-gpu-bench.sh on the CPU backend, every step the GPU host
# runs: one stream on device 0 and spread over devices 0,1 (its plan line
# in two parts, each device's timed alone), four streams on one device and
# on two. Each table must hold a measured row for every slot count, with
# the MLP timed alone, and the ratios must be printed.
#   tests/pipelines/multi-gpu-bench.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# The benchmark links the CUDA runtime (for its GPU timings), so it cannot
# start where tests/without-cuda.sh hides it.
[ -z "${PP_TEST_CUDA_LIBS_HIDDEN:-}" ] || { echo "CUDA libraries hidden: skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GST_PLUGIN_PATH=$build/plugins
BUILD=$build BACKEND=cpu WORKLOADS=tiny FRAMES=48 REPEATS=1 "$root/bench/multi-gpu-bench.sh" "$out" |
  tee "$out/summary.txt"
check_table() { # name, slot counts...
  local name=$1
  shift
  for slots in "$@"; do
    # workload | slots | frames/s | period | p50 | p99 | H2D | MLP | D2H: the MLP a number.
    grep -qE "^\| tiny \| $slots \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| – \| [0-9.]+ \| – \|" \
      "$out/$name.md" || { echo "$name.md: no measured row for $slots slots"; cat "$out/$name.md"; exit 1; }
  done
}
check_table one-gpu 2 3 4
check_table two-gpus 4 6 8
check_table streams-one-gpu 2 3 4
check_table streams-two-gpus 2 3 4
grep -q 'cpu \\| cpu' "$out/two-gpus.md" || { echo "two-gpus.md: the plan of both devices is not there"; exit 1; }
grep -q '^# tiny: the stages alone on device 0' "$out/two-gpus.md" ||
  { echo "two-gpus.md does not say which device was timed"; exit 1; }
grep -qE '^one stream tiny: [0-9]+ -> [0-9]+ frames/s, x[0-9.]+$' "$out/summary.txt"
grep -qE '^4 streams tiny: [0-9]+ -> [0-9]+ frames/s, x[0-9.]+$' "$out/summary.txt"
echo "every step ran"
