#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# On a GPU host, from the project root (docs/GPU-HOST.md): the 'gpu' test
# suite, the CUDA tests under compute-sanitizer (memcheck and racecheck),
# and the benchmark. Logs go to $LOGS (default ./gpu-logs).
#
#   tools/gpu-check.sh [tests] [sanitize] [bench]
#   SANITIZE_ELEMENT_FILTER='test_generated*' BENCH_ARGS='--workloads deep' ...
#   SANITIZE_TOOLS=racecheck (default: memcheck racecheck, for the three CUDA tests)
#   SANITIZE_TESTS='test_cuda_blas' (default: the three), SANITIZE_BACKEND_TESTS='test_chunks'
#   (default: all seven of test_cuda_backend's, one process each under racecheck),
#   SANITIZE_ELEMENTS=0 (skip the element tests under memcheck): a device call is
#   limited to 10 minutes, and the whole step takes longer, so it can be run in parts.
# With no arguments: all three. Under the sanitizers every choice is timed
# once (PP_GPU_QUICK, and tuning=quick for the element tests): kernels run
# hundreds of times slower there.
set -uo pipefail
LOGS=${LOGS:-$PWD/gpu-logs}
BUILD=${BUILD:-build}
mkdir -p "$LOGS"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests sanitize bench)
export GST_PLUGIN_PATH=$PWD/$BUILD/plugins
status=0

for step in "${steps[@]}"; do
  case "$step" in
    tests)
      echo "== gpu suite"
      meson test -C "$BUILD" --no-rebuild --print-errorlogs --suite gpu 2>&1 | tee "$LOGS/gpu-suite.log" |
        grep -E '^ *[0-9]+/|^(Ok|Fail|Skipped|Timeout):'
      cp "$BUILD/meson-logs/testlog.txt" "$LOGS/gpu-testlog.txt"
      grep -q '^Fail: *0' "$LOGS/gpu-suite.log" && grep -q '^Timeout: *0' "$LOGS/gpu-suite.log" || status=1
      ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
        for t in ${SANITIZE_TESTS:-test_cuda_kernels test_cuda_wide test_cuda_blas test_cuda_backend}; do
          echo "== compute-sanitizer --tool $tool $t"
          # test_cuda_backend runs past 10 minutes under racecheck: its seven
          # tests then run as seven processes at once (under memcheck too,
          # where SANITIZE_BACKEND_TESTS names them).
          filters=("")
          [ $t = test_cuda_backend ] && { [ "$tool" = racecheck ] || [ -n "${SANITIZE_BACKEND_TESTS:-}" ]; } &&
            filters=(${SANITIZE_BACKEND_TESTS:-test_every_path test_completion_modes_and_graphs
              test_chunks test_zero_copy test_autotune_picks_a_working_path
              test_plan_lines test_paths_timed_beside_a_plan test_no_graphs_take_one_kernel
              test_flush_and_teardown_in_flight test_device_errors})
          pids=()
          for f in "${filters[@]}"; do
            env PP_GPU_QUICK=1 ${f:+PP_TEST_FILTER=$f} compute-sanitizer --tool "$tool" --error-exitcode 99 \
              $( [ "$tool" = memcheck ] && echo --leak-check full ) \
              "$BUILD/tests/gpu/$t" > "$LOGS/sanitize-$tool-$t${f:+-$f}.log" 2>&1 &
            pids+=($!)
          done
          for i in "${!pids[@]}"; do
            wait "${pids[$i]}"
            rc=$?
            f=${filters[$i]}
            grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|PASSED|FAILED' \
              "$LOGS/sanitize-$tool-$t${f:+-$f}.log" | tail -4
            echo "exit $rc${f:+ ($f)}"
            [ $rc -eq 0 ] || status=1
          done
        done
      done
      [ "${SANITIZE_ELEMENTS:-1}" = 0 ] && continue
      # SANITIZE_ELEMENT_FILTER: a cmocka filter, as the element tests take long under memcheck.
      for t in test_cudamlp test_element test_negotiation test_shared; do
        echo "== compute-sanitizer --tool memcheck: $t on the GPU"
        env PP_TEST_BACKEND=cuda PP_TEST_TUNING=quick G_DEBUG=fatal-warnings GST_REGISTRY_FORK=no \
          ${SANITIZE_ELEMENT_FILTER:+PP_TEST_FILTER=$SANITIZE_ELEMENT_FILTER} \
          compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD/tests/elements/$t" \
          > "$LOGS/sanitize-memcheck-$t.log" 2>&1
        rc=$?
        grep -E 'ERROR SUMMARY|PASSED|FAILED' "$LOGS/sanitize-memcheck-$t.log" | tail -3
        echo "exit $rc"
        [ $rc -eq 0 ] || status=1
      done
      echo "== compute-sanitizer --tool memcheck: YUV formats on the GPU"
      PP_TEST_BACKEND=cuda PP_TEST_TUNING=quick PP_TEST_FILTER=test_every_yuv_format G_DEBUG=fatal-warnings \
        GST_REGISTRY_FORK=no compute-sanitizer --tool memcheck --error-exitcode 99 \
        "$BUILD/tests/elements/test_yuv" > "$LOGS/sanitize-memcheck-yuv.log" 2>&1
      rc=$?
      grep -E 'ERROR SUMMARY|PASSED|FAILED' "$LOGS/sanitize-memcheck-yuv.log" | tail -3
      echo "exit $rc"
      [ $rc -eq 0 ] || status=1
      ;;
    bench)
      echo "== benchmark"
      "$BUILD/bench/pingpong-bench" ${BENCH_ARGS:-} 2>&1 | tee "$LOGS/bench.md" || status=1
      ;;
    *)
      echo "unknown step $step" >&2
      status=2
      ;;
  esac
done
exit $status
