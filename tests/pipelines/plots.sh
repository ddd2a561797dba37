#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tools/pingpong-plots on a small CPU run, so the script cannot rot: the
# benchmark on the CPU (tiny, 1–3 slots) with a trace, then the three
# pictures, each checked to be a PNG of some size.
#   tests/pipelines/plots.sh BUILD_DIR PYTHON
set -euo pipefail
build=$1 python=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
"$python" -c 'import matplotlib' 2> /dev/null || { echo "no matplotlib: skipped"; exit 77; }
# The benchmark links the CUDA runtime (for its GPU timings), so it cannot
# start where tests/without-cuda.sh hides it.
[ -z "${PP_TEST_CUDA_LIBS_HIDDEN:-}" ] || { echo "CUDA libraries hidden: skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GST_PLUGIN_PATH=$build/plugins
"$build/bench/pingpong-bench" --backend cpu --workloads tiny --slots 1,2,3 --frames 48 --warmup 8 \
  --repeats 1 --trace "$out/traces" > "$out/bench.md"
cat "$out/bench.md"
"$python" "$root/tools/pingpong-plots" --bench "$out/bench.md" --trace "$out/traces/tiny-slots3.json" \
  --out "$out/plots"
for png in fps-vs-slots latency timeline; do
  f=$out/plots/$png.png
  [ "$(head -c 4 "$f" | tail -c 3)" = PNG ] || { echo "$f is not a PNG"; exit 1; }
  [ "$(stat -c %s "$f")" -gt 10000 ] || { echo "$f is too small to hold a plot"; exit 1; }
done
# A second run into the same folder names only what it wrote; none says why.
said=$("$python" "$root/tools/pingpong-plots" --trace "$out/traces/tiny-slots3.json" --out "$out/plots")
[ "$said" = "wrote $out/plots/latency.png, $out/plots/timeline.png" ] ||
  { echo "a trace-only run said: $said"; exit 1; }
if said=$("$python" "$root/tools/pingpong-plots" --out "$out/plots" 2>&1); then
  echo "no input, yet it succeeded: $said"; exit 1
fi
echo "$said" | grep -q "nothing to draw: give --bench and/or --trace" ||
  { echo "no input: $said"; exit 1; }
echo "plots drawn"
