// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the element tests share: running a gst-launch description to EOS,
 * counting what passes a pad, and reading an element's stats after it.
 * Include after cmocka.h. */
#ifndef PP_TEST_PIPERUN_H
#define PP_TEST_PIPERUN_H

#include <gst/gst.h>

/* Runs `desc` to EOS or an error (60 s at most, else the test fails);
 * returns the error's text ("message | debug"), NULL at EOS. With `keep`,
 * the pipeline (in NULL) is handed back for its stats. */
gchar *test_run_pipeline(const char *desc, GstElement **keep);
/* The same, and the caps `element`'s sink pad had at the end (NULL where
 * none were set), for the caller to unref. */
gchar *test_run_pipeline_caps(const char *desc, const char *element, GstCaps **caps);
/* `field` of `element`'s stats structure, a guint64; the test fails where
 * the field is missing. */
guint64 test_stat_u64(GstElement *element, const char *field);
/* A buffer probe that counts into the gint `data` points at. */
GstPadProbeReturn test_count_buffers(GstPad *pad, GstPadProbeInfo *info, gpointer data);

#endif
