/* The end of every element test's main(). Include after gst/gst.h. */
#ifndef PP_TEST_GSTFINISH_H
#define PP_TEST_GSTFINISH_H

#include <gst/gst.h>

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
