#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the build into a scratch DESTDIR and checks the installed
# layout: the plugins link no CUDA library, and the installed plugin finds
# the installed CUDA module beside it (<libdir>/pingpong), not the build
# tree's. Without a GPU the module then loads and reports the missing
# device; with one, a frame runs.
#
#   tests/install-check.sh [BUILD_DIR]
set -euo pipefail
build=$(realpath "${1:-build}")
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet
plugin=$(find "$dest" -name libgstpingpong.so)
plugin_dir=$(dirname "$plugin")
module=$(find "$dest" -name libpingpong-cuda.so)
[ "$(dirname "$module")" = "$(dirname "$plugin_dir")/pingpong" ] ||
  { echo "FAIL: the module is at $module, not beside $plugin_dir"; exit 1; }
"$(dirname "$0")/plugin-needs.sh" --module "$module" "$plugin_dir"/*.so
if ldd "$plugin" | grep -E 'libcudart|libcublas'; then
  echo "FAIL: the installed plugin maps CUDA libraries"
  exit 1
fi

export GST_PLUGIN_PATH=$plugin_dir GST_REGISTRY=$dest/registry.bin
unset PINGPONG_CUDA_MODULE
out=$(gst-launch-1.0 videotestsrc num-buffers=4 ! video/x-raw,format=GRAY8,width=64,height=32 ! \
  cudamlp backend=cuda ! fakesink 2>&1) || true
if echo "$out" | grep -qE "module is not installed|cannot load the CUDA backend"; then
  echo "FAIL: the installed plugin did not load the installed module:"
  echo "$out"
  exit 1
fi
echo "$out" | grep -qE "Execution ended|no CUDA device" ||
  { echo "FAIL: cudamlp backend=cuda neither ran nor reported a missing device:"; echo "$out"; exit 1; }
echo "installed: $(basename "$plugin") and $(basename "$module") load from $dest"
echo "cudamlp backend=cuda says:"
echo "$out" | grep -E "^(ERROR|Execution ended)|CUDA" | head -4
