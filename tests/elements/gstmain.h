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

#endif
