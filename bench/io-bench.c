// SPDX-License-Identifier: LGPL-2.1-or-later
/* pp-io-bench: runs one gst-launch description to EOS and prints
 *   <units> <seconds> <cpu seconds>
 * timed from PLAYING to EOS in this process, so plugin loading and pipeline
 * construction stay out; CPU is user + system of every thread of the process
 * (io_uring's workers included). bench/io-bench.sh builds the table.
 *
 * With --preroll the pipeline first prerolls (NULL to PAUSED: devices
 * opened, caps negotiated, cudamlp configured and tuned, the first buffer
 * at the sinks) and only PLAYING to EOS is timed: the steady state. UNITS is
 * then scaled to the buffers that reached the sinks in the timed part, and
 * the start-up's seconds are printed as a fourth column. A live pipeline
 * (no preroll) is timed from PAUSED as without the flag.
 *
 *   pp-io-bench BYTES 'filesrc location=big ! fakesink sync=false'
 *   pp-io-bench --preroll FRAMES 'filesrc location=clip.mp4 ! decodebin ! fakesink' */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double
cpu_seconds(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double
wall_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Buffers that reached the pipeline's sinks, and how many of them came
 * before the timed part began. */
static gint sink_buffers;

static GstPadProbeReturn
count_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad, (void) data;
  const gint n = (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
                     ? (gint) gst_buffer_list_length(GST_PAD_PROBE_INFO_BUFFER_LIST(info))
                     : 1;
  g_atomic_int_add(&sink_buffers, n);
  return GST_PAD_PROBE_OK;
}

static void
count_at_sinks(GstElement *pipeline)
{
  GstIterator *it = gst_bin_iterate_sinks(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstPad *pad = gst_element_get_static_pad(g_value_get_object(&item), "sink");
    if (pad) {
      gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
                        count_buffer, NULL, NULL);
      gst_object_unref(pad);
    }
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
}

/* NULL to PAUSED; FALSE on an error. *prerolled is FALSE for a live
 * pipeline, which has no preroll to wait for. */
static gboolean
preroll(GstElement *pipeline, GstBus *bus, gboolean *prerolled)
{
  const GstStateChangeReturn ret = gst_element_set_state(pipeline, GST_STATE_PAUSED);
  *prerolled = ret != GST_STATE_CHANGE_NO_PREROLL;
  if (ret == GST_STATE_CHANGE_FAILURE)
    return FALSE;
  if (!*prerolled)
    return TRUE;
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE,
                                               GST_MESSAGE_ASYNC_DONE | GST_MESSAGE_ERROR);
  const gboolean ok = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ASYNC_DONE;
  if (!ok)
    gst_bus_post(bus, gst_message_ref(msg)); /* reported below like any error */
  gst_message_unref(msg);
  return ok;
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const gboolean steady = argc > 1 && strcmp(argv[1], "--preroll") == 0;
  if (steady)
    argc--, argv++;
  if (argc != 3) {
    fprintf(stderr, "usage: %s [--preroll] UNITS PIPELINE\n", argv[0]);
    return 2;
  }
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(argv[2], &err);
  if (!pipeline || err) {
    fprintf(stderr, "%s\n", err ? err->message : "no pipeline");
    return 1;
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  double startup = 0;
  gint before = 0;
  if (steady) {
    count_at_sinks(pipeline);
    const double s0 = wall_seconds();
    gboolean prerolled = FALSE;
    if (preroll(pipeline, bus, &prerolled) && prerolled)
      startup = wall_seconds() - s0;
    before = g_atomic_int_get(&sink_buffers);
  }
  const double cpu0 = cpu_seconds(), t0 = wall_seconds();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const double t1 = wall_seconds(), cpu1 = cpu_seconds();
  int rc = 0;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error(msg, &e, NULL);
    fprintf(stderr, "%s\n", e->message);
    g_error_free(e);
    rc = 1;
  }
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  if (steady) {
    const gint total = g_atomic_int_get(&sink_buffers);
    const double units = total > 0 ? g_ascii_strtod(argv[1], NULL) * (total - before) / total : 0;
    printf("%.1f %.6f %.6f %.6f\n", units, t1 - t0, cpu1 - cpu0, startup);
  } else {
    printf("%s %.6f %.6f\n", argv[1], t1 - t0, cpu1 - cpu0);
  }
  return rc;
}
