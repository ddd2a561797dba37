// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudamlp element tests' shared helpers (mlpharness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <string.h>

#include "mlpharness.h"
#include "model.h"
#include "testutil.h"

void
test_check_scores(GstBuffer *out, const pp_model *model, const float *x, uint32_t n,
                  const char *what)
{
  const size_t count = (size_t) n * model->o;
  assert_int_equal(gst_buffer_get_size(out), count * sizeof(float));
  double *ref = g_new(double, count), *mag = g_new(double, count);
  test_reference_mlp(model, x, n, ref, mag);
  GstMapInfo map;
  gst_buffer_map(out, &map, GST_MAP_READ);
  const double err = test_scaled_error((const float *) map.data, ref, mag, count);
  if (g_getenv("PP_DEBUG_DUMP") && !(err <= PP_FP32_REL_TOL))
    for (size_t i = 0; i < count; i++)
      g_printerr("%zu: %.9g %.9g\n", i, ((const float *) map.data)[i], ref[i]);
  gst_buffer_unmap(out, &map);
  g_free(ref);
  g_free(mag);
  if (!(err <= PP_FP32_REL_TOL))
    fail_msg("%s: scaled error %.3e > %.0e", what, err, PP_FP32_REL_TOL);
}

GstElement *
test_make_mlp(const char *backend, const char *first_property, ...)
{
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  assert_non_null(e);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend);
  /* Under compute-sanitizer every choice is timed once (tools/gpu-check.sh). */
  if (g_getenv("PP_TEST_TUNING"))
    gst_util_set_object_arg(G_OBJECT(e), "tuning", g_getenv("PP_TEST_TUNING"));
  va_list args;
  va_start(args, first_property);
  if (first_property)
    g_object_set_valist(G_OBJECT(e), first_property, args);
  va_end(args);
  return e;
}

/* A harness whose element posts to a bus we can read. */
GstHarness *
test_harness_for(GstElement *element, GstBus **bus)
{
  *bus = gst_bus_new();
  gst_element_set_bus(element, *bus);
  GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
  gst_object_unref(element); /* the harness holds its own reference */
  return h;
}

/* Messages left on the bus hold the element, which holds the bus: flush them. */
void
test_harness_finish(GstHarness *h, GstBus *bus)
{
  gst_bus_set_flushing(bus, TRUE);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

gchar *
test_bus_text(GstBus *bus, GstMessageType type)
{
  GString *text = NULL;
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered(bus, type))) {
    GError *err = NULL;
    gchar *debug = NULL;
    if (type == GST_MESSAGE_ERROR)
      gst_message_parse_error(msg, &err, &debug);
    else
      gst_message_parse_warning(msg, &err, &debug);
    if (!text)
      text = g_string_new(NULL);
    else
      g_string_append_c(text, '\n');
    g_string_append_printf(text, "%s | %s", err->message, debug ? debug : "");
    g_error_free(err);
    g_free(debug);
    gst_message_unref(msg);
  }
  return text ? g_string_free(text, FALSE) : NULL;
}

/* A hand-made 3→4→2 model (0.weight 4×3, 2.weight 2×4) in a temporary file. */
gchar *
test_write_small_model(gboolean truncate)
{
  static const char json[] =
      "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]},"
      "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[48,80]}}";
  return test_write_safetensors(json, NULL, 80, truncate ? 10 : 0);
}

/* With GST_TRACERS=leaks (the test environment sets it), every GstObject and
 * GstMiniObject made after gst_init must be gone once the tests finish. */
int
test_count_live_objects(void)
{
  /* Tasks drop their last reference on a pool thread after join: wait. */
  gst_task_cleanup_all();
  GList *tracers = gst_tracing_get_active_tracers();
  int live = 0;
  for (GList *l = tracers; l; l = l->next) {
    if (!g_str_equal(G_OBJECT_TYPE_NAME(l->data), "GstLeaksTracer"))
      continue;
    GstStructure *info = NULL;
    g_signal_emit_by_name(l->data, "get-live-objects", &info);
    const GValue *list = gst_structure_get_value(info, "live-objects-list");
    live = gst_value_list_get_size(list);
    for (int i = 0; i < live; i++) {
      const GstStructure *obj = gst_value_get_structure(gst_value_list_get_value(list, i));
      gchar *text = gst_structure_to_string(obj);
      g_printerr("still alive: %s\n", text);
      g_free(text);
    }
    gst_structure_free(info);
  }
  g_list_free_full(tracers, gst_object_unref);
  return live;
}
