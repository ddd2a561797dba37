// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-launch: gst-launch-1.0 for the network pipelines (pipelines/
 * sender.sh, receiver.sh), with what gst-launch cannot tell:
 *
 * - A network source that ends before the stream it carries did is an
 *   error. GStreamer's TCP and SRT sources end with EOS when the peer goes
 *   away, exactly as at a real end, and gdppay does not carry EOS; so the
 *   sending side's --mark-end puts an end marker (a custom serialized
 *   event, which gdppay does carry, and cudamlp passes on in order) just
 *   before EOS, and an EOS leaving the source named by --net before the
 *   marker has left the depayloader after it means the connection dropped
 *   mid-stream.
 * - A network source silent for --idle-timeout seconds after its first
 *   buffer is an error too: a cable pulled sends no FIN, and TCP would wait
 *   forever.
 * - --latency NAME: for each buffer reaching element NAME's sink pad, the
 *   pipeline's running time now minus the buffer's running time (its PTS in
 *   its segment); with a live source in the same pipeline, the frame's
 *   whole round trip. p50/p99/max printed at the end, without the first
 *   --warmup N buffers (0): a receiver configures on its first frame. A
 *   pipeline with no live source has no such latency: it says so instead.
 * - --latency-log FILE: with --latency, one line per buffer: its index,
 *   and when it was made (base time + its running time) and when it came
 *   back, in ns of the host's monotonic clock, the clock of cudamlp's
 *   PINGPONG_TRACE (its "origin_ns"), so bench/network-breakdown.py can
 *   split a frame's round trip at the receiver's cudamlp.
 * - --count NAME: buffers reaching NAME's sink pad, printed at the end.
 * - --wait-client NAME: PLAYING only once a client has connected to NAME
 *   (a tcpserversink, which drops what it gets while it has none), so a
 *   stream loses nothing while the receiver starts.
 *
 * And, in place of gst-launch-1.0 for any pipeline, its -m (element
 * messages, cudamlp's stats among them) and -v (each pad's caps) in its
 * words; -e and -q are taken and change nothing (Ctrl-C always ends with
 * EOS, and nothing else is printed). gst-launch-1.0 1.22 can wait for ever
 * when two errors arrive while the pipeline prerolls (a refusal, then the
 * source's "Internal data stream error"); this ends at the first error.
 *
 *   pingpong-launch [-m] [-v] [--net NAME] [--idle-timeout S] [--mark-end NAME]
 *                   [--latency NAME [--warmup N] [--latency-log FILE]] [--count NAME]
 *                   PIPELINE-DESCRIPTION...
 * Exit status: 0 at EOS, 1 on an error (printed), 2 on bad arguments. */
#include <errno.h>
#include <glib-unix.h>
#include <gst/gst.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define END_MARKER "pingpong-end-of-stream"

typedef struct {
  GstElement *pipeline;
  GMainLoop *loop;
  int status;
  /* --net */
  GstElement *net;
  gint in_band_eos;    /* the depayloader has let the end marker out */
  gboolean forwarding; /* on_depayloaded is pushing the marker itself */
  gint64 last_buffer_us;
  guint idle_timeout_s;
  /* --latency */
  GArray *latencies_us;
  FILE *latency_log;
  guint64 warmup;
  GMutex lock;
  guint64 counted;
  /* -m */
  gboolean messages;
  guint n_messages;
} launch;

static void
post_error(launch *l, const char *text)
{
  GError *err = g_error_new_literal(GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ, text);
  gst_element_post_message(l->net, gst_message_new_error(GST_OBJECT(l->net), err, NULL));
  g_error_free(err);
}

static GstPadProbeReturn
on_depayloaded(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  launch *l = data;
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
  /* By name alone: GDP does not keep a custom event's type (it comes out
   * as an unknown serialized downstream type). */
  if (l->forwarding || !gst_event_has_name(event, END_MARKER))
    return GST_PAD_PROBE_OK;
  g_atomic_int_set(&l->in_band_eos, 1);
  /* The stream ends here, not when the peer closes the connection (which
   * it does only when its own pipeline stops): the marker goes on, so the
   * results carry it back, and EOS after it. */
  l->forwarding = TRUE;
  gst_pad_push_event(pad, gst_event_ref(event));
  gst_pad_push_event(pad, gst_event_new_eos());
  l->forwarding = FALSE;
  return GST_PAD_PROBE_DROP;
}

/* --mark-end: the marker goes into the payloader just before EOS. */
static GstPadProbeReturn
on_payloader_event(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) data;
  if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS)
    gst_pad_send_event(pad, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                                 gst_structure_new_empty(END_MARKER)));
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_net_output(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  launch *l = data;
  (void) pad;
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    __atomic_store_n(&l->last_buffer_us, g_get_monotonic_time(), __ATOMIC_RELAXED);
    return GST_PAD_PROBE_OK;
  }
  if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS &&
      !g_atomic_int_get(&l->in_band_eos)) {
    post_error(l, "the connection closed before the end of the stream it carried (the peer "
                  "stopped, or the network dropped)");
    return GST_PAD_PROBE_DROP;
  }
  return GST_PAD_PROBE_OK;
}

static gboolean
check_idle(gpointer data)
{
  launch *l = data;
  const gint64 last = __atomic_load_n(&l->last_buffer_us, __ATOMIC_RELAXED);
  if (last && g_get_monotonic_time() - last > (gint64) l->idle_timeout_s * G_USEC_PER_SEC) {
    char text[160];
    g_snprintf(text, sizeof text,
               "nothing arrived for %u s (--idle-timeout): the peer or the network is gone",
               l->idle_timeout_s);
    post_error(l, text);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

static GstPadProbeReturn
on_result(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  launch *l = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  g_mutex_lock(&l->lock);
  l->counted++;
  GstEvent *seg_event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
  GstClock *clock = gst_element_get_clock(l->pipeline);
  if (l->latencies_us && seg_event && clock && GST_BUFFER_PTS_IS_VALID(buf)) {
    const GstSegment *segment;
    gst_event_parse_segment(seg_event, &segment);
    const GstClockTime pts =
        gst_segment_to_running_time(segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buf));
    const GstClockTime base = gst_element_get_base_time(l->pipeline);
    const GstClockTime now = gst_clock_get_time(clock) - base;
    if (GST_CLOCK_TIME_IS_VALID(pts)) {
      const double us = ((gint64) now - (gint64) pts) / 1000.0;
      if (l->counted > l->warmup)
        g_array_append_val(l->latencies_us, us);
      if (l->latency_log)
        fprintf(l->latency_log,
                "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n",
                l->counted - 1, base + pts, base + now);
    }
  }
  gst_clear_object(&clock);
  if (seg_event)
    gst_event_unref(seg_event);
  g_mutex_unlock(&l->lock);
  return GST_PAD_PROBE_OK;
}

/* -v: a pad's caps as they are set, as gst-launch-1.0 -v prints them: from
 * the bus (a property-notify watch), in order, on the main thread. */
static void
print_caps(GstMessage *msg)
{
  GstObject *object = NULL;
  const GValue *value = NULL;
  gst_message_parse_property_notify(msg, &object, NULL, &value);
  if (!value || !GST_VALUE_HOLDS_CAPS(value) || !gst_value_get_caps(value))
    return;
  g_autofree gchar *path = gst_object_get_path_string(object);
  g_autofree gchar *text = gst_caps_to_string(gst_value_get_caps(value));
  printf("%s: caps = %s\n", path, text);
  fflush(stdout);
}

static gboolean
on_message(GstBus *bus, GstMessage *msg, gpointer data)
{
  launch *l = data;
  (void) bus;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *debug = NULL;
    gst_message_parse_error(msg, &err, &debug);
    fprintf(stderr, "ERROR from %s: %s\n%s%s", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), err->message,
            debug ? debug : "", debug ? "\n" : "");
    g_error_free(err);
    g_free(debug);
    l->status = 1;
    g_main_loop_quit(l->loop);
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
    GError *err = NULL;
    gst_message_parse_warning(msg, &err, NULL);
    fprintf(stderr, "WARNING from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), err->message);
    g_error_free(err);
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_PROPERTY_NOTIFY) {
    print_caps(msg);
  } else if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
    g_main_loop_quit(l->loop);
  } else if (l->messages && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ELEMENT) {
    /* As gst-launch-1.0 -m prints them. */
    g_autofree gchar *s = gst_structure_to_string(gst_message_get_structure(msg));
    printf("Got message #%u from element \"%s\" (element): %s\n", l->n_messages++,
           GST_MESSAGE_SRC_NAME(msg), s);
    fflush(stdout);
  }
  return G_SOURCE_CONTINUE;
}

/* Ctrl-C ends the stream cleanly: EOS from the sources, so --mark-end
 * tells the peer; a second one stops at once. */
static gboolean
on_interrupt(gpointer data)
{
  launch *l = data;
  static gboolean asked;
  if (asked) {
    l->status = 1;
    g_main_loop_quit(l->loop);
    return G_SOURCE_REMOVE;
  }
  asked = TRUE;
  fprintf(stderr, "interrupt: ending the stream (again to stop now)\n");
  gst_element_send_event(l->pipeline, gst_event_new_eos());
  return G_SOURCE_CONTINUE;
}

static gboolean
quit_loop(gpointer data)
{
  g_main_loop_quit(((launch *) data)->loop);
  return G_SOURCE_REMOVE;
}

/* From the sink's own thread, maybe before the loop runs: an idle source
 * quits it once it does (a direct g_main_loop_quit before g_main_loop_run
 * would be forgotten, and the sender would wait for ever). */
static void
on_client_added(GstElement *sink, GObject *socket, gpointer data)
{
  (void) sink, (void) socket;
  g_idle_add(quit_loop, data);
}

static GstElement *
named(launch *l, const char *name)
{
  GstElement *e = gst_bin_get_by_name(GST_BIN(l->pipeline), name);
  if (!e)
    fprintf(stderr, "pingpong-launch: no element named %s in the pipeline\n", name);
  return e;
}

static int
compare_doubles(gconstpointer a, gconstpointer b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
percentile(GArray *sorted, double p)
{
  return g_array_index(sorted, double, (guint) (p * (sorted->len - 1) + 0.5));
}

/* The source's peer, the element right after it: the depayloader. */
static gboolean
watch_net(launch *l, const char *name)
{
  l->net = named(l, name);
  if (!l->net)
    return FALSE;
  GstPad *src = gst_element_get_static_pad(l->net, "src");
  GstPad *peer = src ? gst_pad_get_peer(src) : NULL;
  GstElement *depay = peer ? gst_pad_get_parent_element(peer) : NULL;
  GstPad *depay_src = depay ? gst_element_get_static_pad(depay, "src") : NULL;
  if (!depay_src) {
    fprintf(stderr, "pingpong-launch: %s must be a source linked to a depayloader\n", name);
  } else {
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
                      on_net_output, l, NULL);
    gst_pad_add_probe(depay_src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_depayloaded, l, NULL);
  }
  gboolean ok = depay_src != NULL;
  gst_clear_object(&depay_src);
  gst_clear_object(&depay);
  gst_clear_object(&peer);
  gst_clear_object(&src);
  return ok;
}

static gboolean
watch_sink(launch *l, const char *name, GstPadProbeType type, GstPadProbeCallback callback)
{
  GstElement *e = named(l, name);
  GstPad *pad = e ? gst_element_get_static_pad(e, "sink") : NULL;
  const gboolean ok = pad != NULL;
  if (ok)
    gst_pad_add_probe(pad, type, callback, l, NULL);
  gst_clear_object(&pad);
  gst_clear_object(&e);
  return ok;
}

/* The log's times are the pipeline clock's, which are the monotonic clock's
 * only for GStreamer's system clock of that type: the default, unless an
 * element provides a clock (none of the network pipelines' do). */
static gboolean
open_latency_log(launch *l, const char *path)
{
  GstClock *clock = gst_system_clock_obtain();
  GstClockType type = GST_CLOCK_TYPE_REALTIME;
  g_object_get(clock, "clock-type", &type, NULL);
  const gboolean usable = type == GST_CLOCK_TYPE_MONOTONIC && GST_IS_PIPELINE(l->pipeline);
  if (usable)
    gst_pipeline_use_clock(GST_PIPELINE(l->pipeline), clock);
  gst_object_unref(clock);
  if (!usable) {
    fprintf(stderr, "--latency-log: the pipeline's clock is not the monotonic one\n");
    return FALSE;
  }
  l->latency_log = fopen(path, "w");
  if (!l->latency_log)
    fprintf(stderr, "--latency-log: cannot write %s: %s\n", path, g_strerror(errno));
  return l->latency_log != NULL;
}

int
main(int argc, char **argv)
{
  gchar *net = NULL, *latency = NULL, *count = NULL, *mark_end = NULL, *wait_client = NULL,
        *latency_log = NULL;
  gint idle = 10, warmup = 0;
  gboolean messages = FALSE, verbose = FALSE, quiet = FALSE, eos_on_shutdown = FALSE;
  GOptionEntry entries[] = {
    { "messages", 'm', 0, G_OPTION_ARG_NONE, &messages,
      "print the elements' messages (cudamlp's stats), as gst-launch-1.0 -m", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "print each pad's caps, as gst-launch-1.0 -v",
      NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "taken for gst-launch-1.0's sake: prints no more",
      NULL },
    { "eos-on-shutdown", 'e', 0, G_OPTION_ARG_NONE, &eos_on_shutdown,
      "taken for gst-launch-1.0's sake: Ctrl-C always ends the stream with EOS", NULL },
    { "net", 0, 0, G_OPTION_ARG_STRING, &net,
      "the network source: its EOS before the in-band one, or silence, is an error", "NAME" },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &idle,
      "seconds without data from --net (after the first) that end the run with an error (10)",
      "S" },
    { "mark-end", 0, 0, G_OPTION_ARG_STRING, &mark_end,
      "send the end marker into NAME (the payloader) before EOS, for the peer's --net", "NAME" },
    { "wait-client", 0, 0, G_OPTION_ARG_STRING, &wait_client,
      "go to PLAYING only once a client has connected to NAME (a tcpserversink)", "NAME" },
    { "latency", 0, 0, G_OPTION_ARG_STRING, &latency,
      "print the running-time latency of the buffers reaching NAME", "NAME" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &warmup,
      "leave the first N buffers out of the --latency percentiles (0)", "N" },
    { "latency-log", 0, 0, G_OPTION_ARG_FILENAME, &latency_log,
      "with --latency: each buffer's index, made and back, in ns of the monotonic clock", "FILE" },
    { "count", 0, 0, G_OPTION_ARG_STRING, &count, "print how many buffers reached NAME", "NAME" },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new("PIPELINE-DESCRIPTION");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err) || argc < 2 || idle < 1 || warmup < 0) {
    fprintf(stderr, "%s\n", err ? err->message : "give a pipeline description");
    return 2;
  }
  g_option_context_free(ctx);

  launch l = { .idle_timeout_s = (guint) idle, .warmup = (guint64) warmup, .messages = messages };
  g_mutex_init(&l.lock);
  gchar *desc = g_strjoinv(" ", argv + 1);
  l.pipeline = gst_parse_launch(desc, &err);
  g_free(desc);
  if (!l.pipeline || err) {
    fprintf(stderr, "pipeline: %s\n", err ? err->message : "cannot be built");
    return 2;
  }
  if (verbose)
    gst_element_add_property_deep_notify_watch(l.pipeline, "caps", TRUE);
  if (latency)
    l.latencies_us = g_array_new(FALSE, FALSE, sizeof(double));
  if (latency_log && !latency) {
    fprintf(stderr, "--latency-log needs --latency\n");
    return 2;
  }
  if (latency_log && !open_latency_log(&l, latency_log))
    return 2;
  const GstPadProbeType buffers = GST_PAD_PROBE_TYPE_BUFFER;
  if ((net && !watch_net(&l, net)) || (latency && !watch_sink(&l, latency, buffers, on_result)) ||
      (count && !(latency && g_str_equal(count, latency)) &&
       !watch_sink(&l, count, buffers, on_result)) ||
      (mark_end &&
       !watch_sink(&l, mark_end, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_payloader_event)))
    return 2;

  l.loop = g_main_loop_new(NULL, FALSE);
  GstBus *bus = gst_element_get_bus(l.pipeline);
  gst_bus_add_watch(bus, on_message, &l);
  if (net)
    g_timeout_add(250, check_idle, &l);
  g_unix_signal_add(SIGINT, on_interrupt, &l);
  GstElement *server = wait_client ? named(&l, wait_client) : NULL;
  GstStateChangeReturn paused = GST_STATE_CHANGE_SUCCESS;
  if (wait_client && !server)
    return 2;
  if (server) {
    /* PAUSED first: a live source sends nothing, a file-like one prerolls
     * its first frame into the sink, which sends it at PLAYING. */
    g_signal_connect(server, "client-added", G_CALLBACK(on_client_added), &l);
    paused = gst_element_set_state(l.pipeline, GST_STATE_PAUSED);
    if (paused != GST_STATE_CHANGE_FAILURE) {
      fprintf(stderr, "waiting for the receiver to connect to %s\n", wait_client);
      g_main_loop_run(l.loop);
    }
    gst_object_unref(server);
  }
  /* A live pipeline does not preroll; without a live source a buffer's
   * running time says when it was read, not made: --latency is then no
   * latency. */
  if (!server && l.status == 0)
    paused = gst_element_set_state(l.pipeline, GST_STATE_PAUSED);
  const gboolean live = paused == GST_STATE_CHANGE_NO_PREROLL;
  if (l.status != 0 || paused == GST_STATE_CHANGE_FAILURE ||
      gst_element_set_state(l.pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    /* The error message on the bus says why. */
    l.status = 1;
    GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    if (msg) {
      on_message(bus, msg, &l);
      gst_message_unref(msg);
    }
  } else {
    g_main_loop_run(l.loop);
  }
  gst_element_set_state(l.pipeline, GST_STATE_NULL);
  gst_bus_remove_watch(bus);
  gst_object_unref(bus);

  if (count)
    printf("count %s: %" G_GUINT64_FORMAT "\n", count, l.counted);
  if (l.latencies_us && l.latencies_us->len && !live) {
    printf("latency %s: not measured: the pipeline has no live source, so a buffer's running "
           "time is when it was read, not made; use a live source (a camera, the network, "
           "is-live=true)\n",
           latency);
  } else if (l.latencies_us && l.latencies_us->len) {
    g_array_sort(l.latencies_us, compare_doubles);
    printf("latency %s: frames %u after %" G_GUINT64_FORMAT
           ", p50 %.0f µs, p99 %.0f µs, max %.0f µs\n",
           latency, l.latencies_us->len, l.warmup, percentile(l.latencies_us, 0.5),
           percentile(l.latencies_us, 0.99), percentile(l.latencies_us, 1.0));
  }
  if (l.latencies_us)
    g_array_free(l.latencies_us, TRUE);
  if (l.latency_log)
    fclose(l.latency_log);
  gst_clear_object(&l.net);
  gst_object_unref(l.pipeline);
  g_main_loop_unref(l.loop);
  g_mutex_clear(&l.lock);
  g_free(net), g_free(latency), g_free(count), g_free(mark_end), g_free(wait_client);
  g_free(latency_log);
  return l.status;
}
