#!/usr/bin/env bash
# Runs test_uring_io N times, P at once, to catch a rare hang or failure
# (one CI run once hung in it under ASan). Each run has the test's watchdog
# at 30 s, so a hang ends with every thread's stacks and the ring's state in
# its log; logs of failed runs are kept in LOGS (default ./uring-hunt-logs).
#
#   tools/uring-hunt.sh BUILD_DIR [N [P]]
# e.g. with an ASan build:
#   meson setup build-hunt -Dcuda=disabled -Dgst-cuda=disabled \
#     -Db_sanitize=address,undefined -Db_lundef=false -Dpython-tests=disabled
#   ninja -C build-hunt tests/unit/test_uring_io && tools/uring-hunt.sh build-hunt 6000 32
set -euo pipefail
build=$(realpath "$1")
n=${2:-1000}
p=${3:-$(nproc)}
logs=$(realpath -m "${LOGS:-uring-hunt-logs}")
mkdir -p "$logs"
export HUNT_BIN=$build/tests/unit/test_uring_io HUNT_LOGS=$logs PP_BUILD_ROOT=$build
export PP_WATCHDOG_S=30 ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$(realpath "$(dirname "$0")/../tests/lsan.supp")
seq "$n" | xargs -P "$p" -I{} sh -c '
  timeout 90 "$HUNT_BIN" > "$HUNT_LOGS/run{}.log" 2>&1 && rm "$HUNT_LOGS/run{}.log" ||
    echo "run {}: exit $?"'
echo "uring-hunt: $n runs, $(ls "$logs" | wc -l) failed (logs in $logs)"
