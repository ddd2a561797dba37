// SPDX-License-Identifier: LGPL-2.1-or-later
/* The receiving side of bench/cameras-bench.sh: N RTP/H.264 cameras on UDP
 * ports BASE, BASE+2, …, each
 *
 *   udpsrc ! rtpjitterbuffer ! rtph264depay ! h264parse ! DECODER ! TAIL ! SINK
 *
 * in one pipeline (camera i in a bin named cam<i>), for DURATION seconds
 * after "ready" (printed once the pipeline plays, for the sender to
 * start). Per camera it counts the
 * frames that reached the sink, and each frame's time from the decoder's
 * output to the sink (the TAIL: cudamlp, or nothing). At the end one line
 * of totals and latency percentiles over every frame of every camera:
 *
 *   cameras=N frames=F expected=E complete=C latency-p50-us=… p99-us=… max-us=…
 *   worst-camera-frames=W repeats=R
 *
 * and, with cudamlp in the tail, the plan the first one ran and how
 * (`plan: …`), so a row of the bench's table says what it measured.
 *
 * A frame that reaches the sink again with the timestamp of the one before
 * is not counted as a frame but as a repeat.
 *
 * "complete" counts cameras that got EXPECT frames (--expect, the frames
 * each sender sent).
 *
 * With --arrivals FILE it writes, per frame, when its last packet (the RTP
 * marker) came out of the socket and when the frame reached the sink
 * (0: never), wall clock, against the timestamp the frame carries from
 * the jitterbuffer on: "CAMERA PTS-NS ARRIVAL-US SINK-US" a line, for
 * bench/packet-latency.py, which matches them with the scores' messages at
 * a broker. "{cam}" in the tail and the sink is replaced by the camera's
 * number, so each camera's scorepublish can name its stream
 * (--sink "scorepublish stream-name=cam{cam} … sync=false").
 *
 * With --contexts K (GStreamer's CUDA library), camera i's elements get
 * the CUDA context i mod K of K made here, where by default the first
 * element to ask makes one that all the pipeline's elements share: the
 * decoders of a context wait on each other (NVDEC synchronizes the whole
 * context for each frame), and so do cudamlps, whose shared backend is
 * one per context.
 *
 *   pp-cameras-receiver --cameras N [--base-port 5000] [--duration 30]
 *                       [--decoder nvh264dec] [--tail "cudamlp shared=true …"]
 *                       [--sink "fakesink sync=false async=false"]
 *                       [--latency 100] [--expect 600] [--arrivals FILE]
 *                       [--contexts 1] */
#include <errno.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context-groups.h"
#include "packet-arrivals.h"
#include "stamp-ring.h"

#define RTP_CAPS "application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"
#define DEFAULT_SINK "fakesink sync=false async=false"

typedef struct {
  GMutex lock;
  PpStampRing decoded; /* frames between the decoder and the sink, by PTS */
  guint64 frames, repeats;
  GstClockTime last_pts;
  GArray *latency_us;   /* double */
  PpArrivals *arrivals; /* with --arrivals */
} camera;

static GstPadProbeReturn
on_decoded(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad;
  camera *c = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  g_mutex_lock(&c->lock);
  pp_stamp_ring_push(&c->decoded, GST_BUFFER_PTS(buf), g_get_monotonic_time());
  g_mutex_unlock(&c->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_sink(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad;
  camera *c = data;
  const gint64 now = g_get_monotonic_time();
  const GstClockTime pts = GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info));
  g_mutex_lock(&c->lock);
  /* A frame again with the same timestamp (nvh264dec repeats the frame
   * that follows parameter sets sent again with a keyframe): counted apart. */
  if (c->frames && pts == c->last_pts) {
    c->repeats++;
    g_mutex_unlock(&c->lock);
    return GST_PAD_PROBE_OK;
  }
  c->last_pts = pts;
  c->frames++;
  if (c->arrivals)
    pp_arrivals_at_sink(c->arrivals, pts);
  gint64 decoded_us;
  if (pp_stamp_ring_find(&c->decoded, pts, &decoded_us)) {
    const double us = (double) (now - decoded_us);
    g_array_append_val(c->latency_us, us);
  }
  g_mutex_unlock(&c->lock);
  return GST_PAD_PROBE_OK;
}

static int
compare_doubles(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
percentile(const GArray *sorted, double q)
{
  if (!sorted->len)
    return -1;
  return g_array_index(sorted, double, (guint) (q * (sorted->len - 1)));
}

/* The static pad of the element of that name, in the pipeline. */
static GstPad *
pad_of(GstElement *pipeline, const char *name, const char *pad_name)
{
  GstElement *e = gst_bin_get_by_name(GST_BIN(pipeline), name);
  GstPad *pad = gst_element_get_static_pad(e, pad_name);
  gst_object_unref(e);
  return pad;
}

static void
probe(GstElement *pipeline, const char *name, const char *pad_name, GstPadProbeCallback cb,
      camera *c)
{
  GstPad *pad = pad_of(pipeline, name, pad_name);
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, cb, c, NULL);
  gst_object_unref(pad);
}

/* The first cudamlp's plan and detail, if one made a plan. */
static void
print_plan(GstElement *pipeline)
{
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  gboolean found = FALSE;
  while (!found && gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object(&item);
    GstElementFactory *f = gst_element_get_factory(e);
    if (f && g_str_equal(GST_OBJECT_NAME(f), "cudamlp")) {
      GstStructure *stats = NULL;
      g_object_get(e, "stats", &stats, NULL);
      const gchar *plan = stats ? gst_structure_get_string(stats, "plan") : NULL;
      const gchar *detail = stats ? gst_structure_get_string(stats, "detail") : NULL;
      if (plan && *plan)
        printf("plan: %s (%s)\n", plan, detail ? detail : "");
      if (stats)
        gst_structure_free(stats);
      found = TRUE;
    }
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
}

static int
write_arrivals(const char *path, const camera *cameras, gint n)
{
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "%s: %s\n", path, g_strerror(errno));
    return -1;
  }
  int rc = 0;
  for (gint i = 0; i < n && rc == 0; i++)
    rc = pp_arrivals_write(cameras[i].arrivals, i, f);
  if (fclose(f) != 0 && rc == 0)
    rc = -errno;
  if (rc < 0)
    fprintf(stderr, "%s: %s\n", path, g_strerror(-rc));
  return rc;
}

int
main(int argc, char **argv)
{
  gint n = 1, base_port = 5000, duration = 30, latency = 100, expect = 0, contexts = 1;
  gchar *decoder = NULL, *tail = NULL, *sink = NULL, *arrivals = NULL;
  const GOptionEntry entries[] = {
    { "cameras", 0, 0, G_OPTION_ARG_INT, &n, "cameras (1)", "N" },
    { "base-port", 0, 0, G_OPTION_ARG_INT, &base_port, "camera i on port BASE + 2i (5000)", "P" },
    { "duration", 0, 0, G_OPTION_ARG_INT, &duration, "seconds from ready to the end (30)", "S" },
    { "decoder", 0, 0, G_OPTION_ARG_STRING, &decoder, "decoder (nvh264dec)", "D" },
    { "tail", 0, 0, G_OPTION_ARG_STRING, &tail, "elements after the decoder (none)", "T" },
    { "sink", 0, 0, G_OPTION_ARG_STRING, &sink,
      "the last element (fakesink sync=false async=false)", "S" },
    { "latency", 0, 0, G_OPTION_ARG_INT, &latency, "the jitterbuffer's, in ms (100)", "MS" },
    { "expect", 0, 0, G_OPTION_ARG_INT, &expect, "frames each camera sends (for complete=)", "F" },
    { "arrivals", 0, 0, G_OPTION_ARG_FILENAME, &arrivals,
      "write each frame's last packet's arrival here", "FILE" },
    { "contexts", 0, 0, G_OPTION_ARG_INT, &contexts,
      "CUDA contexts the cameras are spread over (1: the pipeline's one)", "K" },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new("- RTP cameras in, frames counted");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err) || n < 1 || contexts < 1) {
    fprintf(stderr, "%s\n", err ? err->message : "--cameras and --contexts must be at least 1");
    return 2;
  }
  g_option_context_free(ctx);
  GString *desc = g_string_new(NULL);
  for (gint i = 0; i < n; i++) {
    GString *t = g_string_new(tail), *last = g_string_new(sink ? sink : DEFAULT_SINK);
    g_autofree gchar *number = g_strdup_printf("%d", i);
    g_string_replace(t, "{cam}", number, 0);
    g_string_replace(last, "{cam}", number, 0);
    g_string_append_printf(desc,
                           "bin.( name=cam%d "
                           "udpsrc name=src%d port=%d buffer-size=4194304 caps=\"%s\" ! "
                           "rtpjitterbuffer name=jb%d latency=%d ! rtph264depay ! h264parse ! %s "
                           "name=dec%d ! %s%s %s name=sink%d ) ",
                           i, i, base_port + 2 * i, RTP_CAPS, i, latency,
                           decoder ? decoder : "nvh264dec", i, t->str, t->len ? " !" : "",
                           last->str, i);
    g_string_free(t, TRUE);
    g_string_free(last, TRUE);
  }
  GstElement *pipeline = gst_parse_launch(desc->str, &err);
  g_string_free(desc, TRUE);
  if (!pipeline || err) {
    fprintf(stderr, "pipeline: %s\n", err ? err->message : "not built");
    return 1;
  }
  PpContextGroups *groups = NULL;
  if (contexts > 1) {
    g_autofree gchar *why = NULL;
    if (!(groups = pp_context_groups_new(pipeline, contexts, &why))) {
      fprintf(stderr, "--contexts: %s\n", why);
      gst_object_unref(pipeline);
      g_free(decoder), g_free(tail), g_free(sink), g_free(arrivals);
      return 1;
    }
  }
  camera *cameras = g_new0(camera, n);
  for (gint i = 0; i < n; i++) {
    g_mutex_init(&cameras[i].lock);
    cameras[i].latency_us = g_array_new(FALSE, FALSE, sizeof(double));
    g_autofree gchar *dec = g_strdup_printf("dec%d", i), *sink = g_strdup_printf("sink%d", i);
    probe(pipeline, dec, "src", on_decoded, &cameras[i]);
    probe(pipeline, sink, "sink", on_sink, &cameras[i]);
    if (arrivals) {
      g_autofree gchar *src = g_strdup_printf("src%d", i), *jb = g_strdup_printf("jb%d", i);
      GstPad *socket = pad_of(pipeline, src, "src"), *ordered = pad_of(pipeline, jb, "src");
      cameras[i].arrivals = pp_arrivals_new();
      pp_arrivals_watch(cameras[i].arrivals, socket, ordered);
      gst_object_unref(socket);
      gst_object_unref(ordered);
    }
  }
  const gint64 start = g_get_monotonic_time();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_element_get_state(pipeline, NULL, NULL, GST_CLOCK_TIME_NONE);
  printf("ready after %.0f ms\n", (g_get_monotonic_time() - start) / 1000.0);
  fflush(stdout);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, (GstClockTime) duration * GST_SECOND, GST_MESSAGE_ERROR);
  int status = 0;
  if (msg) {
    gst_message_parse_error(msg, &err, NULL);
    fprintf(stderr, "error from %s: %s\n", GST_OBJECT_NAME(msg->src), err->message);
    g_clear_error(&err);
    gst_message_unref(msg);
    status = 1;
  }
  print_plan(pipeline);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (arrivals && write_arrivals(arrivals, cameras, n) < 0)
    status = 1;
  GArray *all = g_array_new(FALSE, FALSE, sizeof(double));
  guint64 frames = 0, worst = G_MAXUINT64, repeats = 0;
  gint complete = 0;
  for (gint i = 0; i < n; i++) {
    camera *c = &cameras[i];
    frames += c->frames;
    repeats += c->repeats;
    worst = MIN(worst, c->frames);
    complete += expect && c->frames >= (guint64) expect;
    g_array_append_vals(all, c->latency_us->data, c->latency_us->len);
    g_array_free(c->latency_us, TRUE);
    pp_arrivals_free(c->arrivals);
    g_mutex_clear(&c->lock);
  }
  qsort(all->data, all->len, sizeof(double), compare_doubles);
  printf("cameras=%d frames=%" G_GUINT64_FORMAT " expected=%" G_GUINT64_FORMAT
         " complete=%d latency-p50-us=%.0f p99-us=%.0f max-us=%.0f "
         "worst-camera-frames=%" G_GUINT64_FORMAT " repeats=%" G_GUINT64_FORMAT "\n",
         n, frames, (guint64) expect * (guint64) n, complete, percentile(all, 0.5),
         percentile(all, 0.99), percentile(all, 1.0), worst, repeats);
  g_array_free(all, TRUE);
  g_free(cameras);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  pp_context_groups_free(groups);
  g_free(decoder);
  g_free(tail);
  g_free(sink);
  g_free(arrivals);
  return status;
}
