// SPDX-License-Identifier: LGPL-2.1-or-later
/* One run of pingpong-bench (bench-run.h). */
#include "bench-run.h"

#include <gst/app/gstappsrc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

typedef struct {
  GMutex lock;
  gint64 first_ns, last_ns;
  int seen, warmup;
} arrivals;

static GstPadProbeReturn
on_result(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  arrivals *a = data;
  (void) pad, (void) info;
  const gint64 now = pp_now_ns();
  g_mutex_lock(&a->lock);
  if (a->seen == a->warmup)
    a->first_ns = now;
  a->last_ns = now;
  a->seen++;
  g_mutex_unlock(&a->lock);
  return GST_PAD_PROBE_OK;
}

static void
fill_random(GstBuffer *buf, gboolean floats, GRand *rng)
{
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  if (floats)
    for (gsize i = 0; i < map.size / 4; i++)
      ((float *) map.data)[i] = (float) g_rand_double_range(rng, -1, 1);
  else
    for (gsize i = 0; i < map.size; i++)
      map.data[i] = (guint8) g_rand_int(rng);
  gst_buffer_unmap(buf, &map);
}

#define RING 8

/* One appsrc ! cudamlp ! fakesink of the pipeline, fed by a thread of its
 * own. */
typedef struct {
  GstElement *src, *mlp;
  GstPad *sink_pad;
  arrivals a;
  GstBufferPool *pool;
  GstBuffer *ring[RING];
  int total;
  gint64 interval_ns; /* 0: as fast as the element takes them */
  gboolean pushed_all;
} branch;

/* The device-id of stream s: the whole list for one stream (its slots
 * spread over the devices), else the list's (s mod G)-th device. */
static gchar *
stream_devices(const options *o, guint s)
{
  if (o->streams <= 1)
    return g_strdup(o->devices);
  g_auto(GStrv) ids = g_strsplit(o->devices, ",", -1);
  return g_strdup(ids[s % g_strv_length(ids)]);
}

/* The trace file of stream s: the run's, or with several streams one
 * each, "-streamS" before its extension. */
static gchar *
stream_trace(const options *o, guint s)
{
  if (!o->trace_file)
    return g_strdup("");
  if (o->streams <= 1)
    return g_strdup(o->trace_file);
  const char *dot = strrchr(o->trace_file, '.');
  const int stem = dot ? (int) (dot - o->trace_file) : (int) strlen(o->trace_file);
  return g_strdup_printf("%.*s-stream%u%s", stem, o->trace_file, s, dot ? dot : "");
}

/* Frames live in cudamlp's own pinned pool, as a source that honours the
 * ALLOCATION query would write them. */
static gboolean
fill_ring(branch *b, const workload *w, GRand *rng)
{
  GstCaps *caps = gst_caps_from_string(w->caps);
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  GstPad *mlp_sink = gst_element_get_static_pad(b->mlp, "sink");
  gboolean ok = gst_pad_query(mlp_sink, query) && gst_query_get_n_allocation_pools(query) > 0;
  if (ok) {
    gst_query_parse_nth_allocation_pool(query, 0, &b->pool, NULL, NULL, NULL);
    GstStructure *config = gst_buffer_pool_get_config(b->pool);
    guint size;
    gst_buffer_pool_config_get_params(config, NULL, &size, NULL, NULL);
    gst_buffer_pool_config_set_params(config, caps, size, RING, RING);
    ok = gst_buffer_pool_set_config(b->pool, config) && gst_buffer_pool_set_active(b->pool, TRUE);
  }
  for (int i = 0; ok && i < RING; i++) {
    ok = gst_buffer_pool_acquire_buffer(b->pool, &b->ring[i], NULL) == GST_FLOW_OK;
    if (ok)
      fill_random(b->ring[i], g_str_has_prefix(w->caps, "other/tensors"), rng);
  }
  gst_query_unref(query);
  gst_caps_unref(caps);
  gst_object_unref(mlp_sink);
  return ok;
}

/* Until `when` (pp_now_ns): sleeps to 100 µs before, spins the rest, so
 * frames leave on time to a few µs. */
static void
wait_until(gint64 when)
{
  gint64 now;
  while ((now = pp_now_ns()) < when)
    if (when - now > 150000)
      g_usleep((when - now) / 1000 - 100);
}

static gpointer
push_frames(gpointer data)
{
  branch *b = data;
  b->pushed_all = TRUE;
  const gint64 start = pp_now_ns();
  for (int i = 0; i < b->total; i++) {
    if (b->interval_ns)
      wait_until(start + i * b->interval_ns);
    /* A new GstBuffer sharing the pinned memory: cheap, and its own
     * timestamps. */
    GstBuffer *frame = gst_buffer_copy(b->ring[i % RING]);
    GST_BUFFER_PTS(frame) = i * GST_MSECOND;
    if (gst_app_src_push_buffer(GST_APP_SRC(b->src), frame) != GST_FLOW_OK) {
      b->pushed_all = FALSE;
      break;
    }
  }
  gst_app_src_end_of_stream(GST_APP_SRC(b->src));
  return NULL;
}

static gboolean
wait_for_eos(GstElement *pipeline, const workload *w)
{
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const gboolean ok = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (msg && !ok) {
    GError *e = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error(msg, &e, &dbg);
    fprintf(stderr, "%s: %s (%s)\n", w->name, e->message, dbg);
    g_error_free(e);
    g_free(dbg);
  }
  if (msg)
    gst_message_unref(msg);
  gst_object_unref(bus);
  return ok;
}

/* The element's figures of one branch into `out` (the first branch's), or
 * merged into it: latency p50 averaged, p99 the worst, staged summed. */
static void
read_stats(GstElement *mlp, run_result *out, guint index)
{
  GstStructure *stats;
  run_result r = { 0 };
  g_object_get(mlp, "stats", &stats, NULL);
  gst_structure_get_double(stats, "latency-p50-us", &r.p50_us);
  gst_structure_get_double(stats, "latency-p99-us", &r.p99_us);
  gst_structure_get_double(stats, "h2d-mean-us", &r.h2d_us);
  gst_structure_get_double(stats, "mlp-mean-us", &r.mlp_us);
  gst_structure_get_double(stats, "d2h-mean-us", &r.d2h_us);
  gst_structure_get_double(stats, "submit-mean-us", &r.submit_us);
  gst_structure_get_double(stats, "complete-mean-us", &r.complete_us);
  gst_structure_get_double(stats, "handoff-mean-us", &r.handoff_us);
  gst_structure_get_uint64(stats, "staged-inputs", &r.staged);
  r.batch_mean = 1;
  gst_structure_get_double(stats, "batch-mean", &r.batch_mean);
  g_strlcpy(r.plan, gst_structure_get_string(stats, "plan"), sizeof r.plan);
  gst_structure_free(stats);
  if (index == 0) {
    *out = r;
    return;
  }
  if (!out->other_plan[0] && strcmp(r.plan, out->plan) != 0) {
    g_strlcpy(out->other_plan, r.plan, sizeof out->other_plan);
    out->other_stream = index;
  }
  out->p50_us = (out->p50_us * index + r.p50_us) / (index + 1);
  out->p99_us = MAX(out->p99_us, r.p99_us);
  out->staged += r.staged;
}

/* Each device's frames/s when streams are spread over several: the
 * frames its streams measured over the span from their first to last. */
static void
device_rates(const options *o, const branch *branches, guint n, double *fps)
{
  g_auto(GStrv) ids = g_strsplit(o->devices, ",", -1);
  const guint g = MIN(g_strv_length(ids), PP_MAX_DEVICES);
  for (guint d = 0; d < g && n > 1; d++) {
    gint64 first = G_MAXINT64, last = 0;
    double measured = 0;
    for (guint s = d; s < n; s += g) {
      first = MIN(first, branches[s].a.first_ns);
      last = MAX(last, branches[s].a.last_ns);
      measured += branches[s].a.seen - branches[s].a.warmup;
    }
    fps[d] = last > first ? (measured - 1) * 1e9 / (double) (last - first) : 0;
  }
}

/* One pipeline run: o->streams branches at once. With `stages`, also each
 * stage timed alone, after EOS, on the first branch's pinned frames. frames/s counts
 * every branch's measured frames over the span from the first branch's
 * first to the last branch's last. */
gboolean
bench_run_pipeline(const workload *w, guint slots, const options *o, run_result *out,
                   stage_times *stages)
{
  const guint n = MAX(o->streams, 1);
  GString *desc = g_string_new(NULL);
  for (guint s = 0; s < n; s++) {
    g_autofree gchar *devices = stream_devices(o, s);
    g_autofree gchar *trace = stream_trace(o, s);
    g_string_append_printf(
        desc,
        "appsrc name=src%u format=time is-live=false max-bytes=0 caps=\"%s\" ! "
        "cudamlp name=mlp%u backend=%s device-id=%s slots=%u mapping=%s patch-size=%u "
        "hidden-size=%u outputs=%u completion=%s precision=%s color=%s layers=\"%s\" "
        "tuning=%s plan=\"%s\" trace-file=\"%s\" shared=%s max-batch=%d ! fakesink name=sink%u "
        "sync=false ",
        s, w->caps, s, o->backend, devices, slots, w->mapping, w->patch, w->hidden ? w->hidden : 1,
        w->outputs, o->completion, o->precision, w->color, w->layers ? w->layers : "", o->tuning,
        o->plan ? o->plan : "", trace, o->shared ? "true" : "false", MAX(o->max_batch, 1), s);
  }
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(desc->str, &err);
  g_string_free(desc, TRUE);
  if (!pipeline || err) {
    fprintf(stderr, "pipeline: %s\n", err ? err->message : "cannot be built");
    g_clear_error(&err);
    gst_clear_object(&pipeline);
    return FALSE;
  }
  branch *branches = g_new0(branch, n);
  for (guint s = 0; s < n; s++) {
    branch *b = &branches[s];
    g_autofree gchar *src = g_strdup_printf("src%u", s), *mlp = g_strdup_printf("mlp%u", s),
                     *sink = g_strdup_printf("sink%u", s);
    b->src = gst_bin_get_by_name(GST_BIN(pipeline), src);
    b->mlp = gst_bin_get_by_name(GST_BIN(pipeline), mlp);
    GstElement *fakesink = gst_bin_get_by_name(GST_BIN(pipeline), sink);
    b->sink_pad = gst_element_get_static_pad(fakesink, "sink");
    gst_object_unref(fakesink);
    b->a.warmup = o->warmup;
    b->total = o->warmup + o->frames;
    b->interval_ns = (gint64) o->interval_us * 1000;
    g_mutex_init(&b->a.lock);
    gst_pad_add_probe(b->sink_pad, GST_PAD_PROBE_TYPE_BUFFER, on_result, &b->a, NULL);
  }
  gst_element_set_state(pipeline, GST_STATE_PAUSED);
  GRand *rng = g_rand_new_with_seed(7);
  gboolean ok = TRUE;
  for (guint s = 0; s < n && ok; s++) {
    ok = fill_ring(&branches[s], w, rng);
    if (!ok)
      fprintf(stderr, "%s: cudamlp offered no usable pool\n", w->name);
  }
  g_rand_free(rng);
  if (ok) {
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GThread **pushers = g_new(GThread *, n);
    for (guint s = 0; s < n; s++)
      pushers[s] = g_thread_new("bench-push", push_frames, &branches[s]);
    ok = wait_for_eos(pipeline, w);
    for (guint s = 0; s < n; s++) {
      g_thread_join(pushers[s]);
      ok = ok && branches[s].pushed_all;
    }
    g_free(pushers);
  }
  if (ok) {
    gint64 first = G_MAXINT64, last = 0;
    double measured = 0;
    for (guint s = 0; s < n; s++) {
      branch *b = &branches[s];
      read_stats(b->mlp, out, s);
      ok = ok && b->a.seen == o->warmup + o->frames;
      first = MIN(first, b->a.first_ns);
      last = MAX(last, b->a.last_ns);
      measured += b->a.seen - b->a.warmup;
    }
    /* The first arrival opens the window. */
    out->fps = (measured - 1) * 1e9 / (double) (last - first);
    device_rates(o, branches, n, out->device_fps);
  }
  if (ok && stages) {
    const element_setup e = { o->backend, o->devices, out->plan, o->precision, o->completion };
    ok = bench_time_stages(w, &e, branches[0].ring[0], stages);
  }
  for (guint s = 0; s < n; s++) {
    branch *b = &branches[s];
    for (int i = 0; i < RING; i++)
      gst_clear_buffer(&b->ring[i]);
    if (b->pool) {
      gst_buffer_pool_set_active(b->pool, FALSE);
      gst_object_unref(b->pool);
    }
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  for (guint s = 0; s < n; s++) {
    branch *b = &branches[s];
    gst_object_unref(b->sink_pad);
    gst_object_unref(b->mlp);
    gst_object_unref(b->src);
    g_mutex_clear(&b->a.lock);
  }
  g_free(branches);
  gst_object_unref(pipeline);
  return ok;
}

/* A run of its own, not measured: tracing times every frame and holds each
 * slot until its frame is popped, which changes the overlap a little. */
void
bench_trace_run(const workload *w, guint slots, const options *o)
{
  g_mkdir_with_parents(o->trace_dir, 0755);
  g_autofree gchar *name = g_strdup_printf("%s-slots%u.json", w->name, slots);
  g_autofree gchar *path = g_build_filename(o->trace_dir, name, NULL);
  options traced = *o;
  traced.frames = MIN(o->frames, 512);
  traced.trace_file = path;
  run_result unused;
  if (!bench_run_pipeline(w, slots, &traced, &unused, NULL))
    fprintf(stderr, "%s: the traced run failed\n", w->name);
}
