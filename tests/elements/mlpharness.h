// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the cudamlp element tests share: the element made for the backend
 * under test, a harness whose bus can be read, a small model file, and the
 * leaks tracer's count. Include after cmocka.h and gst/gst.h. */
#ifndef PP_TEST_MLPHARNESS_H
#define PP_TEST_MLPHARNESS_H

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <stdint.h>

#include "model.h"

/* cudamlp on `backend` ("cpu", "cuda"), with PP_TEST_TUNING's tuning where
 * set, and the properties given (NULL-terminated, as g_object_set). */
GstElement *test_make_mlp(const char *backend, const char *first_property, ...);
/* A harness around `element` (taken) whose messages go to *bus. */
GstHarness *test_harness_for(GstElement *element, GstBus **bus);
/* Tears both down; messages left on the bus would hold the element. */
void test_harness_finish(GstHarness *h, GstBus *bus);
/* Every ERROR (or WARNING) on `bus`, one per line as "message | debug", or NULL. */
gchar *test_bus_text(GstBus *bus, GstMessageType type);
/* A hand-made 3→4→2 model (0.weight 4×3, 2.weight 2×4) in a temporary file,
 * cut 10 bytes short with `truncate`; the path, for the caller to unlink. */
gchar *test_write_small_model(gboolean truncate);
/* A result buffer of `n` samples against the float64 reference of `model`
 * on inputs `x` (n × K): scaled error within PP_FP32_REL_TOL, else the test
 * fails naming `what`. PP_DEBUG_DUMP prints every value of a failing one. */
void test_check_scores(GstBuffer *out, const pp_model *model, const float *x, uint32_t n,
                       const char *what);
/* GstObjects and GstMiniObjects still alive (GST_TRACERS=leaks), printed. */
int test_count_live_objects(void);

#endif
