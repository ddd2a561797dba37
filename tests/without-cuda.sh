#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs a command as on a machine without the CUDA libraries: in a mount
# namespace of its own, /dev/null is bound over every CUDA library the CUDA
# module links (and the driver's libcuda), so the loader cannot open them.
# Needs root (CI runs as root); exits 77 (skipped) otherwise.
#
#   tests/without-cuda.sh BUILD_DIR COMMAND...
# With no COMMAND, checks what a user without CUDA sees: the plugin loads,
# backend=auto runs on the CPU with a warning, backend=cuda fails naming
# the missing library, uringsrc works.
set -euo pipefail
build=$(realpath "$1")
shift
module=$build/src/cuda/libpingpong-cuda.so
[ -f "$module" ] || { echo "no CUDA module in this build: skipped"; exit 77; }

if [ "${PP_TEST_CUDA_LIBS_HIDDEN:-}" = 1 ]; then
  : # already inside a run of this script: the libraries are hidden
elif [ "${PP_IN_NAMESPACE:-}" != 1 ]; then
  if [ "$(id -u)" != 0 ] || ! unshare -m true 2> /dev/null; then
    echo "needs root and mount namespaces: skipped"
    exit 77
  fi
  PP_IN_NAMESPACE=1 exec unshare -m "$0" "$build" "$@"
fi

hide_cuda_libraries() {
  # Every CUDA library the module resolves to, and the driver wherever it is.
  local libs lib
  mapfile -t libs < <({
    ldd "$module" |
      awk '$3 ~ /^\// && $1 ~ /^lib(cuda|cudart|cublas|cublasLt|nvrtc|nvJitLink)\./ {print $3}'
    ldconfig -p | awk '$1 ~ /^libcuda\.so/ {print $NF}'
  } | xargs -r -n1 realpath | sort -u)
  [ ${#libs[@]} -gt 0 ] || { echo "no CUDA library found to hide"; exit 1; }
  for lib in "${libs[@]}"; do
    mount --bind /dev/null "$lib"
  done
  echo "hidden: ${libs[*]}"
  if ldd "$module" | grep -qE 'libcudart[^ ]* => /[^ ]* \('; then
    # A copy elsewhere on the loader's path would defeat the hiding.
    ldd "$module" | grep -E 'libcudart|libcublas' >&2
    echo "the CUDA runtime is still found" >&2
    exit 1
  fi
  export PP_TEST_CUDA_LIBS_HIDDEN=1
}
[ "${PP_TEST_CUDA_LIBS_HIDDEN:-}" = 1 ] || hide_cuda_libraries

if [ $# -gt 0 ]; then
  exec "$@"
fi

export GST_PLUGIN_PATH=$build/plugins
fail() { echo "FAIL: $*" >&2; exit 1; }
gst-inspect-1.0 cudamlp > /dev/null || fail "the plugin does not load"
src="videotestsrc num-buffers=8 ! video/x-raw,format=GRAY8,width=64,height=32"

out=$(gst-launch-1.0 $src ! cudamlp backend=auto ! fakesink 2>&1) ||
  fail "backend=auto did not fall back to the CPU: $out"
echo "$out" | grep -q "running on the CPU backend" || fail "no warning from backend=auto: $out"
echo "$out" | grep -qE "libcu(dart|blasLt).so" || fail "the warning does not name the missing library: $out"

if out=$(gst-launch-1.0 $src ! cudamlp backend=cuda ! fakesink 2>&1); then
  fail "backend=cuda ran without CUDA: $out"
fi
echo "$out" | grep -qE "cannot load the CUDA backend: .*libcu(dart|blasLt).so" ||
  fail "backend=cuda's error does not say what is missing: $out"

tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.out"' EXIT
head -c 100000 /dev/urandom > "$tmp"
gst-launch-1.0 -q uringsrc location="$tmp" ! uringsink location="$tmp.out" ||
  fail "uringsrc ! uringsink"
cmp "$tmp" "$tmp.out" || fail "uringsrc ! uringsink changed the bytes"
echo "without CUDA: the plugin loads, auto falls back, cuda says what is missing, uring works"
