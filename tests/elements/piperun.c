// SPDX-License-Identifier: LGPL-2.1-or-later
/* Running a pipeline description to EOS or an error, and what the element
 * tests read of it (piperun.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "piperun.h"

/* Runs `desc` to EOS (or error); returns the error text, if any. Before
 * NULL, `caps_of` names an element whose sink pad's caps go to *caps. */
static gchar *
run(const char *desc, GstElement **keep, const char *caps_of, GstCaps **caps)
{
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &err);
  if (!pipeline || err)
    fail_msg("%s: %s", desc, err ? err->message : "?");
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(msg);
  gchar *text = NULL;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gchar *debug = NULL;
    gst_message_parse_error(msg, &e, &debug);
    text = g_strdup_printf("%s | %s", e->message, debug ? debug : "");
    g_error_free(e);
    g_free(debug);
  }
  gst_message_unref(msg);
  if (caps_of) {
    GstElement *element = gst_bin_get_by_name(GST_BIN(pipeline), caps_of);
    assert_non_null(element);
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    *caps = gst_pad_get_current_caps(pad);
    gst_object_unref(pad);
    gst_object_unref(element);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  if (keep)
    *keep = pipeline;
  else
    gst_object_unref(pipeline);
  return text;
}

gchar *
test_run_pipeline(const char *desc, GstElement **keep)
{
  return run(desc, keep, NULL, NULL);
}

gchar *
test_run_pipeline_caps(const char *desc, const char *element, GstCaps **caps)
{
  return run(desc, NULL, element, caps);
}

GstPadProbeReturn
test_count_buffers(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad, (void) info;
  g_atomic_int_inc((gint *) data);
  return GST_PAD_PROBE_OK;
}

guint64
test_stat_u64(GstElement *element, const char *field)
{
  GstStructure *stats = NULL;
  g_object_get(element, "stats", &stats, NULL);
  assert_non_null(stats);
  guint64 value = 0;
  const gboolean found = gst_structure_get_uint64(stats, field, &value);
  gst_structure_free(stats);
  if (!found)
    fail_msg("%s's stats have no guint64 '%s'", GST_OBJECT_NAME(element), field);
  return value;
}
