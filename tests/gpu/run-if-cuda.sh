#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs the command given when a CUDA device is usable, else exits 77.
#   run-if-cuda.sh HAS_CUDA_PROGRAM COMMAND [ARGS...]
set -euo pipefail
"$1" || exit $?
shift
exec "$@"
