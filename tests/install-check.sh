#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the build into a scratch DESTDIR and checks the installed
# layout: the plugins land where the system's GStreamer looks when the
# prefix is its own (/usr, as tools/setup-debian.sh configures), they link
# no CUDA library, and the installed plugin finds the installed CUDA module
# beside it (<libdir>/pingpong), not the build tree's. Without a GPU the
# module then loads and reports the missing device; with one, a frame runs.
# With --system (CI, as root), installs for real as the README says, runs
# gst-inspect-1.0 cudamlp and pingpong-export from a shell with no
# variables set, builds and runs the examples that read the scores meta,
# then uninstalls.
#
#   tests/install-check.sh [--system] [BUILD_DIR]
set -euo pipefail
system=0
[ "${1:-}" = --system ] && { system=1; shift; }
build=$(realpath "${1:-build}")
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet
plugin=$(find "$dest" -name libgstpingpong.so)
plugin_dir=$(dirname "$plugin")
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
system_dir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
if [ "$prefix" = /usr ] && [ "$plugin_dir" != "$dest$system_dir" ]; then
  echo "FAIL: prefix /usr puts the plugin in ${plugin_dir#"$dest"}, not GStreamer's $system_dir"
  exit 1
fi
[ -x "$dest$prefix/bin/pingpong-export" ] || { echo "FAIL: pingpong-export is not installed"; exit 1; }
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

if [ "$system" = 1 ]; then
  [ "$prefix" = /usr ] || { echo "FAIL: --system wants a build configured with --prefix=/usr"; exit 1; }
  meson install -C "$build" --no-rebuild --quiet
  trap 'ninja -C "$build" uninstall > /dev/null; rm -rf "$dest"' EXIT
  clean=(env -i HOME="$dest" PATH=/usr/bin:/bin)
  "${clean[@]}" gst-inspect-1.0 cudamlp > "$dest/inspect.txt" ||
    { echo "FAIL: gst-inspect-1.0 cudamlp after install, no variables set"; exit 1; }
  grep -q "Factory Details" "$dest/inspect.txt"
  "${clean[@]}" pingpong-export --help > /dev/null ||
    { echo "FAIL: pingpong-export after install, no variables set"; exit 1; }
  echo "installed in /usr: gst-inspect-1.0 cudamlp and pingpong-export run with no variables set"
  # The examples that read the scores meta, as a user builds and runs them.
  src=$(dirname "$0")/..
  "$src/tools/make-brightness-model" "$dest/bright.safetensors"
  # shellcheck disable=SC2046
  "${clean[@]}" cc "$src/examples/frame_scores.c" -o "$dest/frame_scores" \
    $("${clean[@]}" pkg-config --cflags --libs pingpong gstreamer-app-1.0) ||
    { echo "FAIL: examples/frame_scores.c does not build against the installed header"; exit 1; }
  c=$("${clean[@]}" "$dest/frame_scores" videotestsrc "$dest/bright.safetensors" 16 3 cpu) ||
    { echo "FAIL: the C example after install"; exit 1; }
  py=$("${clean[@]}" /usr/bin/python3 "$src/examples/frame_scores.py" videotestsrc \
    "$dest/bright.safetensors" --frames 3 --backend cpu) ||
    { echo "FAIL: the Python example after install"; exit 1; }
  [ "$c" = "$py" ] && [ "$(echo "$c" | wc -l)" = 3 ] ||
    { echo "FAIL: the examples differ after install:"; echo "$c"; echo "$py"; exit 1; }
  echo "installed: examples/frame_scores.c builds with pkg-config pingpong; it and the Python one read 3 frames' scores alike"
  # Uninstalled as the README says: nothing of ours left, folders included.
  ninja -C "$build" uninstall > /dev/null
  trap 'rm -rf "$dest"' EXIT
  left=$(find /usr/include/pingpong "/usr/lib/$(gcc -print-multiarch)/pingpong" \
    /usr/bin/pingpong-* "$system_dir"/libgstpingpong* 2>/dev/null || true)
  [ -z "$left" ] || { echo "FAIL: uninstall left:"; echo "$left"; exit 1; }
  echo "uninstalled: no file or folder of ours left"
fi
