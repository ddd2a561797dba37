// SPDX-License-Identifier: LGPL-2.1-or-later
/* The start and the end of every element test's main(). Include after
 * gst/gst.h and cmocka.h. */
#ifndef PP_TEST_GSTMAIN_H
#define PP_TEST_GSTMAIN_H

#include <gst/gst.h>
#include <stdbool.h>

#include "testutil.h"

/* The backend the test runs cudamlp on: PP_TEST_BACKEND ("cuda"), or
 * *backend_name as it was ("cpu"). False when that is CUDA and no usable
 * GPU is here: main() then returns 77, meson's "skipped". */
static inline bool
test_gst_backend(const char **backend_name)
{
  if (g_getenv("PP_TEST_BACKEND"))
    *backend_name = g_getenv("PP_TEST_BACKEND");
  return !g_str_equal(*backend_name, "cuda") || test_cuda_usable();
}

/* gst_deinit() joins every thread of GStreamer's task pool. After a failed
 * assertion has left an element streaming (cmocka leaves the test at the
 * assertion, before its teardown) it would wait for ever, and meson would
 * report a timeout minutes later instead of the failure: deinit after a
 * clean run only. Returns `failed`. */
static inline int
test_gst_finish(int failed)
{
  if (failed == 0)
    gst_deinit();
  return failed;
}

/* Runs the tests PP_TEST_FILTER picks (all where unset: the sanitizer runs
 * of tools/gpu-check.sh pick some), adds what `more_failures` finds after
 * them where given, and finishes. */
static inline int
test_gst_run_n(const struct CMUnitTest *tests, size_t n, int (*more_failures)(void))
{
  if (g_getenv("PP_TEST_FILTER"))
    cmocka_set_test_filter(g_getenv("PP_TEST_FILTER"));
  int failed = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
  if (more_failures)
    failed += more_failures();
  return test_gst_finish(failed);
}
#define test_gst_run(tests, more_failures) test_gst_run_n(tests, G_N_ELEMENTS(tests), more_failures)

#endif
