// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench: each reference workload of docs/ARCHITECTURE.md (seed, hd,
 * hd-nv12, hd-luma, tiny, balanced, deep) through cudamlp on the GPU with slots = 1, 2, 3, 4, in a
 * real pipeline:
 *
 *   appsrc (frames in cudamlp's own pinned pool) ! cudamlp ! fakesink
 *
 * and one table: frames/s (median of repeated runs, measured at the sink
 * after a warm-up), the element's per-frame latency p50/p99 over exactly the
 * measured frames, each stage alone on the same pinned frame (H2D, MLP, D2H;
 * CUDA events, medians), the physical bound (the period that the frame's
 * bytes at the pinned copy bandwidth measured at start, and its FLOPs at
 * the device's peak for the precision, allow: bench-bound.c), `of bound`
 * (bound / measured period), and the MLP of a plain-cuBLAS implementation
 * of the same math, timed in the same run. Paced, the bound is a frame's
 * latency floor (its slowest stage at those rates) and `of bound` the floor
 * over the latency p50.
 *
 * --interval-us U paces the source like a live one: frame i is pushed at
 * i·U after the first, so with U above a frame's own time each frame finds
 * the GPU idle and its latency is its own chain, not the queue behind it
 * (saturated, latency ≈ slots × period by Little's law).
 *
 * Several GPUs: --devices 0,1 spreads one cudamlp's slots over them (the
 * stages alone are then timed on the first device, with its part of the
 * element's plan line); --streams S runs S such branches in one pipeline
 * (stream s on the (s mod G)-th device), frames/s then being their sum;
 * with --shared, the streams of a device share one backend (shared=true).
 *
 * --backend cpu runs every step on the CPU backend, which has no copies:
 * its MLP alone is timed, the copy columns say "–".
 *
 *   pingpong-bench [--workloads seed,hd,tiny,balanced] [--slots 1,2,3,4]
 *                  [--frames 4096] [--warmup 128] [--repeats 3]
 *                  [--completion auto|consumer|event-thread]
 *                  [--precision fp32|tf32|bf16|fp16]
 *                  [--devices 0,1] [--streams S] [--shared] [--backend cpu]
 *                  [--trace DIR] [--interval-us U]
 */
#include <cuda_runtime_api.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cublas_reference.h"
#include "cuda_kernels.h"
#include "frame.h"
#include "model.h"
#include "stats.h"
#include "tensorcaps.h"
#include "timing.h"

static const workload workloads[] = {
  { "seed", "video/x-raw,format=GRAY8,width=1024,height=1024,framerate=0/1", "rows", 16, 1024, 1,
    "compute", "rgb", NULL },
  { "hd", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "H2D", "rgb", NULL },
  /* A decoder's frames as they come: 1.5 bytes a pixel cross the bus, the
   * conversion to R,G,B happens in the kernels' loads. */
  { "hd-nv12", "video/x-raw,format=NV12,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "MLP", "rgb", NULL },
  { "hd-luma", "video/x-raw,format=NV12,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "MLP", "luma", NULL },
  { "tiny", "video/x-raw,format=GRAY8,width=256,height=256,framerate=0/1", "rows", 16, 64, 1,
    "launch latency", "rgb", NULL },
  { "balanced",
    "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)256:4096:1:1,"
    "framerate=0/1",
    "rows", 16, 1024, 256, "all three", "rgb", NULL },
  /* A deeper network of the kind PyTorch users train: four layers, GELU
   * and SiLU, a plain last Linear. */
  { "deep", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 0, 1,
    "MLP", "rgb",
    "linear(192,512), gelu, linear(512,256), gelu, linear(256,64), silu, linear(64,1)" },
  /* Narrow and deep, the case for a kernel that keeps every layer on chip:
   * four hidden layers of 64. */
  { "narrow", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 0, 1,
    "H2D", "rgb",
    "linear(192,64), relu, linear(64,64), relu, linear(64,64), relu, linear(64,64), relu, "
    "linear(64,1)" },
};

typedef struct {
  char *workloads, *slots, *completion, *precision, *trace_dir, *backend, *devices;
  char *tuning, *plan;
  const char *trace_file; /* the traced run's */
  int frames, warmup, repeats, streams, interval_us, max_batch;
  gboolean shared;
} options;

typedef struct {
  double fps, p50_us, p99_us;
  /* With several streams, each device's share: its streams' measured
   * frames over their own first-to-last span. */
  double device_fps[PP_MAX_DEVICES];
  /* From the element's stats: GPU stages inside the pipeline (sampled), and
   * the host side of a frame's latency. */
  double h2d_us, mlp_us, d2h_us, submit_us, complete_us, handoff_us;
  guint64 staged;
  double batch_mean; /* frames a job (shared backends with max-batch) */
  char plan[512];    /* the element's plan line */
  /* With several streams: a plan line unlike the first stream's, and whose. */
  char other_plan[512];
  guint other_stream;
} run_result;

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
static gboolean
run_pipeline(const workload *w, guint slots, const options *o, run_result *out, stage_times *stages)
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

/* A stage's time for the table: "–" where there is no such stage. */
static gchar *
micros(double us)
{
  return us < 0 ? g_strdup("–") : g_strdup_printf("%.1f", us);
}

static gboolean
listed(const char *list, const char *name)
{
  g_auto(GStrv) items = g_strsplit(list, ",", -1);
  return g_strv_contains((const char *const *) items, name);
}

/* A run of its own, not measured: tracing times every frame and holds each
 * slot until its frame is popped, which changes the overlap a little. */
static void
trace_run(const workload *w, guint slots, const options *o)
{
  g_mkdir_with_parents(o->trace_dir, 0755);
  g_autofree gchar *name = g_strdup_printf("%s-slots%u.json", w->name, slots);
  g_autofree gchar *path = g_build_filename(o->trace_dir, name, NULL);
  options traced = *o;
  traced.frames = MIN(o->frames, 512);
  traced.trace_file = path;
  run_result unused;
  if (!run_pipeline(w, slots, &traced, &unused, NULL))
    fprintf(stderr, "%s: the traced run failed\n", w->name);
}

int
main(int argc, char **argv)
{
  options o = { .frames = 4096, .warmup = 128, .repeats = 3, .streams = 1 };
  GOptionEntry entries[] = {
    { "workloads", 0, 0, G_OPTION_ARG_STRING, &o.workloads,
      "seed,hd,hd-nv12,hd-luma,tiny,balanced,deep,narrow", "LIST" },
    { "slots", 0, 0, G_OPTION_ARG_STRING, &o.slots, "slot counts, 1,2,3,4", "LIST" },
    { "frames", 0, 0, G_OPTION_ARG_INT, &o.frames, "measured frames per run (4096)", "N" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "frames before measuring (128)", "N" },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &o.repeats, "runs per cell, median taken (3)", "N" },
    { "completion", 0, 0, G_OPTION_ARG_STRING, &o.completion,
      "auto (default: consumer), consumer or event-thread", "MODE" },
    { "tuning", 0, 0, G_OPTION_ARG_STRING, &o.tuning,
      "cudamlp's tuning: cached (default), full or quick", "T" },
    { "plan", 0, 0, G_OPTION_ARG_STRING, &o.plan,
      "cudamlp's plan property: a plan line, or part of one, to run", "LINE" },
    { "precision", 0, 0, G_OPTION_ARG_STRING, &o.precision, "fp32|tf32|bf16|fp16", "P" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o.backend,
      "cuda (default), or cpu: frames/s and latency only, no GPU timings (small workloads: tiny)",
      "B" },
    { "devices", 0, 0, G_OPTION_ARG_STRING, &o.devices,
      "CUDA devices (0): with one stream, cudamlp's device-id, its slots spread over the list "
      "(slots must be at least its length); with --streams, stream s on the (s mod G)-th",
      "LIST" },
    { "streams", 0, 0, G_OPTION_ARG_INT, &o.streams,
      "S appsrc ! cudamlp ! fakesink branches in one pipeline, each fed by its own thread; "
      "frames/s is their sum, --frames per stream (1)",
      "S" },
    { "shared", 0, 0, G_OPTION_ARG_NONE, &o.shared,
      "every stream's cudamlp with shared=true: one backend (weights, plan, slots) for all the "
      "streams of a device",
      NULL },
    { "max-batch", 0, 0, G_OPTION_ARG_INT, &o.max_batch,
      "with --shared, frames of up to B streams run as one job (cudamlp's max-batch; 1)", "B" },
    { "interval-us", 0, 0, G_OPTION_ARG_INT, &o.interval_us,
      "push a frame every U microseconds, like a live source, instead of as fast as taken: latency "
      "is "
      "then each frame's own (0)",
      "U" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace_dir,
      "after each cell's runs, one more of 512 frames traced (trace-file) into "
      "DIR/WORKLOAD-slotsN.json",
      "DIR" },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new("- cudamlp on the reference workloads");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "%s\n", err->message);
    return 2;
  }
  g_option_context_free(ctx);
  if (!o.workloads)
    o.workloads = g_strdup("seed,hd,hd-nv12,hd-luma,tiny,balanced,deep,narrow");
  if (!o.slots)
    o.slots = g_strdup("1,2,3,4");
  /* A shared backend reports through its completion thread, whatever the
   * element's completion says: the stages alone are timed the same way. */
  if (o.shared) {
    g_free(o.completion);
    o.completion = g_strdup("event-thread");
  }
  if (!o.completion)
    o.completion = g_strdup("auto");
  if (!o.precision)
    o.precision = g_strdup("fp32");
  pp_precision precision;
  if (pp_precision_parse(o.precision, &precision) < 0) {
    fprintf(stderr, "--precision %s: fp32, tf32, bf16 or fp16\n", o.precision);
    return 2;
  }
  if (!o.tuning)
    o.tuning = g_strdup("cached");
  if (o.frames > PP_STATS_WINDOW)
    fprintf(stderr, "note: latency percentiles cover the last %d frames\n", PP_STATS_WINDOW);

  /* The plugin from the build tree this program came from, when it is
   * neither installed nor on GST_PLUGIN_PATH. */
  GstElementFactory *factory = gst_element_factory_find("cudamlp");
  if (!factory) {
    gst_registry_scan_path(gst_registry_get(), PP_BUILD_ROOT "/plugins");
    factory = gst_element_factory_find("cudamlp");
  }
  if (!factory) {
    fprintf(stderr, "pingpong-bench: no cudamlp element: install the plugins (README, "
                    "\"Installing\") or set GST_PLUGIN_PATH to the build's plugins folder\n");
    return 1;
  }
  gst_object_unref(factory);

  if (!o.backend)
    o.backend = g_strdup("cuda");
  if (!o.devices)
    o.devices = g_strdup("0");
  int devices = 0;
  struct cudaDeviceProp prop = { .name = "the CPU" };
  const gboolean on_gpu = g_str_equal(o.backend, "cuda");
  if (g_str_equal(o.backend, "cuda") &&
      (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    fprintf(stderr, "pingpong-bench: no CUDA device\n");
    return 77;
  }
  if (devices)
    cudaGetDeviceProperties(&prop, 0);
  g_autofree gchar *sharing =
      o.shared ? g_strdup_printf(" (shared, max-batch %d)", MAX(o.max_batch, 1)) : g_strdup("");
  printf("# device: %s, %d SMs (%d visible); backend=%s devices=%s streams=%d%s completion=%s "
         "precision=%s; %d measured frames after %d, median of %d runs; %s\n",
         prop.name, prop.multiProcessorCount, devices, o.backend, o.devices, o.streams, sharing,
         o.completion, o.precision, o.frames, o.warmup, o.repeats,
         o.interval_us ? "paced" : "saturated");
  if (o.interval_us)
    printf("# paced: a frame every %d µs\n", o.interval_us);
  double h2d_rate = 0, d2h_rate = 0, flops_rate = 0;
  if (on_gpu && bench_copy_bandwidth(atoi(o.devices), &h2d_rate, &d2h_rate)) {
    flops_rate = bench_peak_flops_per_us(atoi(o.devices), o.precision);
    printf("# bound: pinned H2D %.1f GB/s, D2H %.1f GB/s (64 MiB copies, medians), %s peak "
           "%.0f TFLOP/s (%d SMs at their clock)\n",
           h2d_rate / 1e3, d2h_rate / 1e3, o.precision, flops_rate / 1e6, prop.multiProcessorCount);
  }
  printf("| workload | slots | frames/s | period µs | latency p50 µs | p99 µs | H2D µs | MLP µs | "
         "D2H µs | %s | bound by | of bound | cuBLAS MLP µs | MLP/cuBLAS | path |\n",
         o.interval_us ? "latency floor µs" : "bound µs");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failures = 0;
  GString *inside = g_string_new(
      "\n| workload | slots | H2D µs | MLP µs | D2H µs | submit call µs | submit→completion µs | "
      "completion→pop µs | staged inputs | frames a job "
      "|\n|---|---|---|---|---|---|---|---|---|---|"
      "\n");
  for (size_t wi = 0; wi < G_N_ELEMENTS(workloads); wi++) {
    const workload *w = &workloads[wi];
    if (!listed(o.workloads, w->name))
      continue;
    g_auto(GStrv) slot_list = g_strsplit(o.slots, ",", -1);
    stage_times t = { 0 };
    gboolean timed = FALSE;
    /* The workload's bound, from the element's own layout and model. */
    bench_bound_times bound = { .period_us = -1, .by = "–" };
    pp_frame_layout layout;
    pp_model *model = NULL;
    g_autofree char *why = NULL;
    if (flops_rate > 0 && bench_workload_model(w, &layout, &model, &why))
      bench_bound(&layout, model, h2d_rate, d2h_rate, flops_rate, &bound);
    g_clear_pointer(&model, pp_model_free);
    /* Lines for after the workload's rows, which they would split. */
    g_autoptr(GString) notes = g_string_new(NULL);
    for (int si = 0; slot_list[si]; si++) {
      const guint slots = atoi(slot_list[si]);
      double fps[16];
      run_result r = { 0 }, runs[16];
      int good = 0;
      /* What is under way, on stderr: a full run takes minutes. */
      fprintf(stderr, "pingpong-bench: %s, %u slots, %d runs of %d frames...\n", w->name, slots,
              MIN(o.repeats, 16), o.frames);
      for (int rep = 0; rep < o.repeats && rep < 16; rep++) {
        /* The first good run of a workload also times its stages alone. */
        if (run_pipeline(w, slots, &o, &runs[good], timed ? NULL : &t)) {
          timed = TRUE;
          fps[good] = runs[good].fps;
          good++;
        }
      }
      if (o.trace_dir)
        trace_run(w, slots, &o);
      if (good == 0) {
        failures++;
        printf("| %s | %u | failed |\n", w->name, slots);
        continue;
      }
      /* The run whose frames/s is the median; paced, whose latency p50 is
       * (every paced run has the source's frames/s). */
      double key[16], sorted[16];
      for (int i = 0; i < good; i++)
        key[i] = o.interval_us ? runs[i].p50_us : fps[i];
      memcpy(sorted, key, good * sizeof(double));
      const double med = pp_median(sorted, good);
      for (int i = 0; i < good; i++)
        if (key[i] == med)
          r = runs[i];
      const double period = 1e6 / r.fps;
      const pp_cuda_stage_times *st = &t.stages;
      g_autofree gchar *h2d = micros(st->h2d_us), *mlp = micros(st->mlp_us),
                       *d2h = micros(st->d2h_us), *ref = micros(t.ref_mlp_us);
      /* Saturated: the bound period against the measured one; paced: one
       * frame's floor (its slowest stage at the bound rates, every stage
       * overlapped in chunks) against its latency p50. */
      g_autofree gchar *bound_us = micros(bound.period_us);
      g_autofree gchar *of_bound =
          bound.period_us > 0
              ? g_strdup_printf("%.2f", bound.period_us / (o.interval_us ? r.p50_us : period))
              : g_strdup("–");
      g_autofree gchar *ratio =
          t.ref_mlp_us > 0 ? g_strdup_printf("%.2f", st->mlp_us / t.ref_mlp_us) : g_strdup("–");
      /* Several devices' plans are joined by '|', a table's separator. */
      g_auto(GStrv) plan_parts = g_strsplit(r.plan, "|", -1);
      g_autofree gchar *plan = g_strjoinv("\\|", plan_parts);
      printf(
          "| %s | %u | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
          w->name, slots, r.fps, period, r.p50_us, r.p99_us, h2d, mlp, d2h, bound_us, bound.by,
          of_bound, ref, ratio, plan);
      if (o.streams > 1 && strchr(o.devices, ',')) {
        g_auto(GStrv) ids = g_strsplit(o.devices, ",", PP_MAX_DEVICES);
        g_string_append_printf(notes, "# %s, %u slots: frames/s by device:", w->name, slots);
        for (guint d = 0; ids[d]; d++)
          g_string_append_printf(notes, " %s %.0f", ids[d], r.device_fps[d]);
        g_string_append(notes, "\n");
      }
      if (r.other_plan[0])
        g_string_append_printf(notes, "# %s, %u slots: stream %u runs another plan: %s\n", w->name,
                               slots, r.other_stream, r.other_plan);
      fflush(stdout);
      g_string_append_printf(
          inside,
          "| %s | %u | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %" G_GUINT64_FORMAT " | %.2f |\n",
          w->name, slots, r.h2d_us, r.mlp_us, r.d2h_us, r.submit_us, r.complete_us, r.handoff_us,
          r.staged, r.batch_mean);
    }
    if (timed && on_gpu) {
      printf("# %s MLP alone per path (µs):", w->name);
      for (unsigned p = 0; p < t.n_paths; p++)
        printf(" %s %.1f", t.paths[p].path, t.paths[p].us);
      printf("; plain cuBLAS %.1f\n", t.ref_mlp_us);
    }
    if (timed && o.streams <= 1 && strchr(o.devices, ','))
      printf("# %s: the stages alone on device %d, with its part of the plan\n", w->name, t.device);
    fputs(notes->str, stdout);
  }
  printf("\n# Inside the pipeline (element stats; GPU stages sampled 1 frame in 8, means):%s",
         inside->str);
  g_string_free(inside, TRUE);
  g_free(o.workloads), g_free(o.slots), g_free(o.completion), g_free(o.precision);
  g_free(o.devices), g_free(o.backend), g_free(o.trace_dir), g_free(o.tuning), g_free(o.plan);
  return failures ? 1 : 0;
}
