#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The plugins link GLib, GStreamer (its CUDA library included, which opens
# the driver itself at run time) and liburing, and no CUDA library: those
# come with the CUDA module, opened on demand. Checks the ELF NEEDED entries
# of each plugin given, and that the module does link the CUDA runtime.
#
#   tests/plugin-needs.sh [--module M] PLUGIN...
set -euo pipefail
module=
if [ "${1:-}" = --module ]; then
  module=$2
  shift 2
fi
forbidden='^(libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnvJitLink|libstdc\+\+)\.so'
status=0
for plugin in "$@"; do
  needed=$(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  [ -n "$needed" ] || { echo "FAIL: no NEEDED entries read from $plugin"; status=1; }
  if bad=$(echo "$needed" | grep -E "$forbidden"); then
    echo "FAIL: $(basename "$plugin") links $(echo $bad)"
    status=1
  else
    echo "$(basename "$plugin"): $(echo $needed)"
  fi
done
if [ -n "$module" ]; then
  readelf -d "$module" | grep -q 'NEEDED.*\[libcudart\.so' ||
    { echo "FAIL: $module does not link the CUDA runtime"; status=1; }
  exported=$(nm -D --defined-only "$module" | awk '{print $3}')
  [ "$exported" = pp_cuda_module_entry ] ||
    { echo "FAIL: $module exports more than its entry: $(echo $exported | head -c 300)"; status=1; }
fi
exit $status
