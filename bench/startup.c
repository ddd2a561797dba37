/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pp-startup: how long a pipeline takes to give its first result, in this
 * process, part by part:
 *
 *   pp-startup 'videotestsrc num-buffers=1 ! … ! cudamlp name=mlp ! fakesink'
 *
 * prints one line of key=value: gst_init_ms, parse_ms, first_ms (NULL to
 * the first buffer at a sink), from the element named "mlp" (where there is
 * one) its plan source and its start-up structure (open, library, alloc,
 * weights, plan, graphs, configure; ms), and null_ms (the way back to
 * NULL). bench/startup.sh runs it in fresh processes,
 * cold and with a cached plan. */
#include <gst/gst.h>
#include <stdio.h>

#include "timing.h"

static gint64 first_ns;

static GstPadProbeReturn
on_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad, (void) info, (void) data;
  const gint64 now = pp_now_ns();
  gint64 none = 0;
  __atomic_compare_exchange_n(&first_ns, &none, now, FALSE, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return GST_PAD_PROBE_REMOVE;
}

static void
watch_sinks(GstElement *pipeline)
{
  GstIterator *it = gst_bin_iterate_sinks(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstPad *pad = gst_element_get_static_pad(g_value_get_object(&item), "sink");
    if (pad) {
      gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, NULL, NULL);
      gst_object_unref(pad);
    }
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
}

static void
print_startup(GstElement *pipeline)
{
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  if (!mlp)
    return;
  GstStructure *stats = NULL;
  g_object_get(mlp, "stats", &stats, NULL);
  const GstStructure *startup = NULL;
  const GValue *v = gst_structure_get_value(stats, "startup");
  if (v)
    startup = gst_value_get_structure(v);
  printf(" source=%s", gst_structure_get_string(stats, "plan-source"));
  for (int i = 0; startup && i < gst_structure_n_fields(startup); i++) {
    const gchar *name = gst_structure_nth_field_name(startup, i);
    gdouble ms = 0;
    gboolean yes = FALSE;
    if (gst_structure_get_boolean(startup, name, &yes))
      printf(" %s=%d", name, yes);
    else if (gst_structure_get_double(startup, name, &ms))
      printf(" %s=%.1f", name, ms);
  }
  gst_structure_free(stats);
  gst_object_unref(mlp);
}

int
main(int argc, char **argv)
{
  const gint64 t0 = pp_now_ns();
  gst_init(&argc, &argv);
  const gint64 t1 = pp_now_ns();
  if (argc != 2) {
    fprintf(stderr, "usage: %s PIPELINE\n", argv[0]);
    return 2;
  }
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(argv[1], &err);
  if (!pipeline || err) {
    fprintf(stderr, "%s\n", err ? err->message : "no pipeline");
    return 1;
  }
  const gint64 t2 = pp_now_ns();
  watch_sinks(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  int rc = 0;
  if (!msg || GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR || !first_ns) {
    fprintf(stderr, "pp-startup: no result\n");
    rc = 1;
  } else {
    printf("gst_init_ms=%.1f parse_ms=%.1f first_ms=%.1f", (t1 - t0) / 1e6, (t2 - t1) / 1e6,
           (first_ns - t2) / 1e6);
    print_startup(pipeline);
  }
  if (msg)
    gst_message_unref(msg);
  const gint64 t3 = pp_now_ns();
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (rc == 0)
    printf(" null_ms=%.1f\n", (pp_now_ns() - t3) / 1e6);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return rc;
}
