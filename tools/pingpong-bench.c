/* pingpong-bench: each reference workload of docs/ARCHITECTURE.md (seed, hd,
 * hd-nv12, hd-luma, tiny, balanced, deep) through cudamlp on the GPU with slots = 1, 2, 3, 4, in a
 * real pipeline:
 *
 *   appsrc (frames in cudamlp's own pinned pool) ! cudamlp ! fakesink
 *
 * and one table: frames/s (median of repeated runs, measured at the sink
 * after a warm-up), the element's per-frame latency p50/p99 over exactly the
 * measured frames, each stage alone on the same pinned frame (H2D, MLP, D2H;
 * CUDA events, medians), the ideal period (the slowest stage alone), the
 * efficiency (ideal / measured period), and the MLP of a plain-cuBLAS
 * implementation of the same math, timed in the same run.
 *
 *   pingpong-bench [--workloads seed,hd,tiny,balanced] [--slots 1,2,3,4]
 *                  [--frames 4096] [--warmup 128] [--repeats 3]
 *                  [--completion host-func|event-thread] [--precision fp32|tf32]
 */
#include <cuda_runtime_api.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "cublas_reference.h"
#include "cuda_kernels.h"
#include "frame.h"
#include "model.h"
#include "stats.h"
#include "tensorcaps.h"

typedef struct {
  const char *name, *caps, *mapping;
  guint patch, hidden, outputs;
  const char *bound;
  const char *color;
  const char *layers; /* the layers property, for more than the seed's two layers */
} workload;

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
};

typedef struct {
  char *workloads, *slots, *completion, *precision, *trace_dir, *backend;
  int frames, warmup, repeats;
} options;

typedef struct {
  double fps, p50_us, p99_us;
  /* From the element's stats: GPU stages inside the pipeline (sampled), and
   * the host side of a frame's latency. */
  double h2d_us, mlp_us, d2h_us, submit_us, complete_us, handoff_us;
  guint64 staged;
  char detail[128];
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

typedef struct {
  pp_cuda_stage_times stages;
  double ref_mlp_us;
  double paths_us[PP_N_PATHS];
} gpu_times;

static gboolean time_gpu(const workload *w, const options *o, const char *element_path,
                         GstBuffer *frame, gpu_times *t);

/* One pipeline run. With `gpu`, also the GPU timings, after EOS, on the
 * run's own pinned frames. */
static gboolean
run_pipeline(const workload *w, guint slots, const options *o, run_result *out, gpu_times *gpu)
{
  GstBuffer *ring[RING] = { NULL };
  g_autofree gchar *desc = g_strdup_printf(
      "appsrc name=src format=time is-live=false max-bytes=0 caps=\"%s\" ! "
      "cudamlp name=mlp backend=%s slots=%u mapping=%s patch-size=%u hidden-size=%u outputs=%u "
      "completion=%s precision=%s color=%s layers=\"%s\" ! fakesink name=sink sync=false",
      w->caps, o->backend, slots, w->mapping, w->patch, w->hidden ? w->hidden : 1, w->outputs,
      o->completion, o->precision, w->color, w->layers ? w->layers : "");
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &err);
  if (!pipeline || err) {
    fprintf(stderr, "pipeline: %s (is the plugin on GST_PLUGIN_PATH?)\n",
            err ? err->message : "cannot be built");
    g_clear_error(&err);
    gst_clear_object(&pipeline);
    return FALSE;
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *sink_pad = gst_element_get_static_pad(sink, "sink");
  arrivals a = { .warmup = o->warmup };
  g_mutex_init(&a.lock);
  gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_BUFFER, on_result, &a, NULL);
  gst_element_set_state(pipeline, GST_STATE_PAUSED);

  /* Frames live in cudamlp's own pinned pool, as a source that honours the
   * ALLOCATION query would write them. */
  GstCaps *caps = gst_caps_from_string(w->caps);
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  GstPad *mlp_sink = gst_element_get_static_pad(mlp, "sink");
  gboolean ok = gst_pad_query(mlp_sink, query) && gst_query_get_n_allocation_pools(query) > 0;
  GstBufferPool *pool = NULL;
  if (ok) {
    gst_query_parse_nth_allocation_pool(query, 0, &pool, NULL, NULL, NULL);
    GstStructure *config = gst_buffer_pool_get_config(pool);
    guint size;
    gst_buffer_pool_config_get_params(config, NULL, &size, NULL, NULL);
    gst_buffer_pool_config_set_params(config, caps, size, RING, RING);
    ok = gst_buffer_pool_set_config(pool, config) && gst_buffer_pool_set_active(pool, TRUE);
  }
  GRand *rng = g_rand_new_with_seed(7);
  for (int i = 0; ok && i < RING; i++) {
    ok = gst_buffer_pool_acquire_buffer(pool, &ring[i], NULL) == GST_FLOW_OK;
    if (ok)
      fill_random(ring[i], g_str_has_prefix(w->caps, "other/tensors"), rng);
  }
  g_rand_free(rng);
  if (!ok) {
    fprintf(stderr, "%s: cudamlp offered no usable pool\n", w->name);
  } else {
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    const int total = o->warmup + o->frames;
    for (int i = 0; i < total; i++) {
      /* A new GstBuffer sharing the pinned memory: cheap, and its own
       * timestamps. */
      GstBuffer *frame = gst_buffer_copy(ring[i % RING]);
      GST_BUFFER_PTS(frame) = i * GST_MSECOND;
      if (gst_app_src_push_buffer(GST_APP_SRC(src), frame) != GST_FLOW_OK) {
        ok = FALSE;
        break;
      }
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *msg =
        gst_bus_timed_pop_filtered(bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (!msg || GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      if (msg) {
        GError *e = NULL;
        gchar *dbg = NULL;
        gst_message_parse_error(msg, &e, &dbg);
        fprintf(stderr, "%s: %s (%s)\n", w->name, e->message, dbg);
        g_error_free(e);
        g_free(dbg);
      }
      ok = FALSE;
    }
    if (msg)
      gst_message_unref(msg);
    gst_object_unref(bus);
  }
  if (ok) {
    GstStructure *stats;
    g_object_get(mlp, "stats", &stats, NULL);
    gst_structure_get_double(stats, "latency-p50-us", &out->p50_us);
    gst_structure_get_double(stats, "latency-p99-us", &out->p99_us);
    gst_structure_get_double(stats, "h2d-mean-us", &out->h2d_us);
    gst_structure_get_double(stats, "mlp-mean-us", &out->mlp_us);
    gst_structure_get_double(stats, "d2h-mean-us", &out->d2h_us);
    gst_structure_get_double(stats, "submit-mean-us", &out->submit_us);
    gst_structure_get_double(stats, "complete-mean-us", &out->complete_us);
    gst_structure_get_double(stats, "handoff-mean-us", &out->handoff_us);
    gst_structure_get_uint64(stats, "staged-inputs", &out->staged);
    g_strlcpy(out->detail, gst_structure_get_string(stats, "detail"), sizeof out->detail);
    gst_structure_free(stats);
    out->fps = (a.seen - a.warmup - 1) * 1e9 / (double) (a.last_ns - a.first_ns);
    ok = a.seen == o->warmup + o->frames;
  }
  if (ok && gpu && g_str_equal(o->backend, "cuda")) {
    char path[64] = "";
    sscanf(out->detail, "%63[a-z0-9+]", path);
    ok = time_gpu(w, o, path, ring[0], gpu);
  }
  for (int i = 0; i < RING; i++)
    gst_clear_buffer(&ring[i]);
  if (pool) {
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_query_unref(query);
  gst_caps_unref(caps);
  gst_object_unref(mlp_sink);
  gst_object_unref(sink_pad);
  gst_object_unref(sink);
  gst_object_unref(mlp);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  g_mutex_clear(&a.lock);
  return ok;
}

/* The same shapes and weights as the element, on a backend of our own: each
 * stage alone on the element's path, every path's MLP, and plain cuBLAS. */
static gboolean
time_gpu(const workload *w, const options *o, const char *element_path, GstBuffer *frame,
         gpu_times *t)
{
  GstCaps *caps = gst_caps_from_string(w->caps);
  pp_frame_layout layout;
  char *msg = NULL;
  gint fps_n, fps_d;
  /* The element's own caps → layout, so YUV workloads read what it reads. */
  gboolean ok = pp_caps_to_layout(
      caps, g_str_equal(w->mapping, "rows") ? PP_MAPPING_ROWS : PP_MAPPING_PATCHES, w->patch,
      g_str_equal(w->color, "luma") ? PP_COLOR_LUMA : PP_COLOR_RGB, &layout, &fps_n, &fps_d, &msg);
  gst_caps_unref(caps);
  pp_model *model = NULL;
  pp_backend *b = NULL;
  pp_backend_options opts = {
    .kind = PP_BACKEND_CUDA,
    .precision = g_str_equal(o->precision, "tf32") ? PP_PRECISION_TF32 : PP_PRECISION_FP32,
  };
  pp_model_desc desc;
  if (w->layers)
    ok = ok && pp_model_desc_parse(w->layers, &desc, &msg) == 0 &&
         pp_model_generate_desc(layout.k, &desc, &model, &msg) == 0;
  else
    ok = ok && pp_model_generate(layout.k, w->hidden, w->outputs, PP_HIDDEN_AUTO, &model) == 0;
  g_setenv("PINGPONG_CUDA_PATH", element_path, TRUE);
  ok = ok && pp_backend_cuda_new(&opts, &b, &msg) == 0 &&
       b->ops->configure(b, model, &layout, 1, &msg) == 0;
  g_unsetenv("PINGPONG_CUDA_PATH");

  GstMapInfo map;
  gst_buffer_map(frame, &map, GST_MAP_READ);
  const size_t out_bytes = ok ? (size_t) layout.n * model->o * sizeof(float) : 0;
  float *out = ok ? pp_host_alloc(out_bytes, true, &msg) : NULL;
  ok = ok && out && pp_cuda_time_stages(b, map.data, out, 31, &t->stages, &msg) == 0 &&
       pp_cuda_time_paths(b, 31, t->paths_us, &msg) == 0;

  /* Plain cuBLAS on the same frame, weights and precision. */
  if (ok) {
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaEvent_t start, stop;
    int32_t *h_koff = g_new(int32_t, layout.k), *d_koff = NULL;
    void *d_frame;
    float *d_w[2 * PP_MAX_LAYERS] = { NULL }, *x_scratch, *h_scratch[2] = { NULL }, *y;
    pp_reference_layer ref[PP_MAX_LAYERS];
    const size_t hidden_bytes = (size_t) layout.n * MAX(pp_model_max_hidden(model), 1) * 4;
    ok = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
         cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS && cudaEventCreate(&start) == cudaSuccess &&
         cudaEventCreate(&stop) == cudaSuccess &&
         cudaMalloc(&d_frame, layout.frame_bytes) == cudaSuccess &&
         cudaMalloc((void **) &d_koff, layout.k * sizeof(int32_t)) == cudaSuccess &&
         cudaMalloc((void **) &x_scratch, (size_t) layout.n * layout.k * 4) == cudaSuccess &&
         cudaMalloc((void **) &h_scratch[0], hidden_bytes) == cudaSuccess &&
         cudaMalloc((void **) &h_scratch[1], hidden_bytes) == cudaSuccess &&
         cudaMalloc((void **) &y, out_bytes) == cudaSuccess;
    for (unsigned l = 0; ok && l < model->n_layers; l++) {
      const pp_layer *ml = &model->layers[l];
      const size_t weights = (size_t) ml->out * ml->in * 4, biases = (size_t) ml->out * 4;
      ok = cudaMalloc((void **) &d_w[2 * l], weights) == cudaSuccess &&
           cudaMalloc((void **) &d_w[2 * l + 1], biases) == cudaSuccess &&
           cudaMemcpyAsync(d_w[2 * l], ml->w, weights, cudaMemcpyHostToDevice, stream) ==
               cudaSuccess &&
           cudaMemcpyAsync(d_w[2 * l + 1], ml->b, biases, cudaMemcpyHostToDevice, stream) ==
               cudaSuccess;
      ref[l] = (pp_reference_layer){ d_w[2 * l], ml->b ? d_w[2 * l + 1] : NULL, ml->in, ml->out,
                                     ml->act };
    }
    if (layout.kind != PP_LAYOUT_TENSOR)
      pp_cuda_k_offsets(&layout, h_koff);
    ok = ok &&
         cudaMemcpyAsync(d_frame, map.data, layout.frame_bytes, cudaMemcpyHostToDevice, stream) ==
             cudaSuccess &&
         cudaMemcpyAsync(d_koff, h_koff, layout.k * sizeof(int32_t), cudaMemcpyHostToDevice,
                         stream) == cudaSuccess;
    const pp_cuda_a x = pp_cuda_a_for_layout(&layout, h_koff, d_frame, d_koff);
    double samples[31];
    for (int i = -3; ok && i < 31; i++) {
      float ms = 0;
      ok = cudaEventRecord(start, stream) == cudaSuccess &&
           pp_cublas_reference_mlp(blas, stream, &x, layout.n, ref, model->n_layers,
                                   opts.precision == PP_PRECISION_TF32, x_scratch, h_scratch,
                                   y) == CUBLAS_STATUS_SUCCESS &&
           cudaEventRecord(stop, stream) == cudaSuccess &&
           cudaEventSynchronize(stop) == cudaSuccess &&
           cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
      if (i >= 0)
        samples[i] = ms * 1000.0;
    }
    if (ok)
      t->ref_mlp_us = pp_median(samples, 31);
    cudaStreamSynchronize(stream);
    for (unsigned i = 0; i < 2 * PP_MAX_LAYERS; i++)
      cudaFree(d_w[i]);
    cudaFree(d_frame), cudaFree(d_koff), cudaFree(x_scratch), cudaFree(y);
    cudaFree(h_scratch[0]), cudaFree(h_scratch[1]);
    g_free(h_koff);
    cublasDestroy(blas);
    cudaEventDestroy(start), cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
  }
  if (!ok)
    fprintf(stderr, "%s: GPU timing failed: %s\n", w->name, msg ? msg : "CUDA error");
  gst_buffer_unmap(frame, &map);
  pp_host_free(out, out_bytes, true);
  if (b)
    b->ops->destroy(b);
  pp_model_free(model);
  g_free(msg);
  return ok;
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
  run_result unused;
  g_setenv("PINGPONG_TRACE", path, TRUE);
  if (!run_pipeline(w, slots, &traced, &unused, NULL))
    fprintf(stderr, "%s: the traced run failed\n", w->name);
  g_unsetenv("PINGPONG_TRACE");
}

int
main(int argc, char **argv)
{
  options o = { NULL, NULL, NULL, NULL, NULL, NULL, 4096, 128, 3 };
  GOptionEntry entries[] = {
    { "workloads", 0, 0, G_OPTION_ARG_STRING, &o.workloads,
      "seed,hd,hd-nv12,hd-luma,tiny,balanced,deep", "LIST" },
    { "slots", 0, 0, G_OPTION_ARG_STRING, &o.slots, "slot counts, 1,2,3,4", "LIST" },
    { "frames", 0, 0, G_OPTION_ARG_INT, &o.frames, "measured frames per run (4096)", "N" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "frames before measuring (128)", "N" },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &o.repeats, "runs per cell, median taken (3)", "N" },
    { "completion", 0, 0, G_OPTION_ARG_STRING, &o.completion, "host-func|event-thread", "MODE" },
    { "precision", 0, 0, G_OPTION_ARG_STRING, &o.precision, "fp32|tf32", "P" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o.backend,
      "cuda (default), or cpu: frames/s and latency only, no GPU timings (small workloads: tiny)",
      "B" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace_dir,
      "after each cell's runs, one more of 512 frames traced (PINGPONG_TRACE) into "
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
    o.workloads = g_strdup("seed,hd,hd-nv12,hd-luma,tiny,balanced,deep");
  if (!o.slots)
    o.slots = g_strdup("1,2,3,4");
  if (!o.completion)
    o.completion = g_strdup("event-thread");
  if (!o.precision)
    o.precision = g_strdup("fp32");
  if (o.frames > PP_STATS_WINDOW)
    fprintf(stderr, "note: latency percentiles cover the last %d frames\n", PP_STATS_WINDOW);

  if (!o.backend)
    o.backend = g_strdup("cuda");
  int devices = 0;
  struct cudaDeviceProp prop = { .name = "the CPU" };
  if (g_str_equal(o.backend, "cuda") &&
      (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    fprintf(stderr, "pingpong-bench: no CUDA device\n");
    return 77;
  }
  if (devices)
    cudaGetDeviceProperties(&prop, 0);
  printf("# device: %s, %d SMs; backend=%s completion=%s precision=%s; %d measured frames after "
         "%d, median of %d runs\n",
         prop.name, prop.multiProcessorCount, o.backend, o.completion, o.precision, o.frames,
         o.warmup, o.repeats);
  printf("| workload | slots | frames/s | period µs | latency p50 µs | p99 µs | H2D µs | MLP µs | "
         "D2H µs | ideal µs | efficiency | cuBLAS MLP µs | MLP/cuBLAS | path |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failures = 0;
  GString *inside = g_string_new(
      "\n| workload | slots | H2D µs | MLP µs | D2H µs | submit call µs | submit→completion µs | "
      "completion→pop µs | staged inputs |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t wi = 0; wi < G_N_ELEMENTS(workloads); wi++) {
    const workload *w = &workloads[wi];
    if (!listed(o.workloads, w->name))
      continue;
    g_auto(GStrv) slot_list = g_strsplit(o.slots, ",", -1);
    gpu_times t = { 0 };
    gboolean timed = FALSE;
    for (int si = 0; slot_list[si]; si++) {
      const guint slots = atoi(slot_list[si]);
      double fps[16];
      run_result r = { 0 }, runs[16];
      int good = 0;
      for (int rep = 0; rep < o.repeats && rep < 16; rep++) {
        /* The first good run of a workload also times its GPU stages. */
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
      /* The run whose frames/s is the median. */
      double sorted[16];
      memcpy(sorted, fps, good * sizeof(double));
      const double med = pp_median(sorted, good);
      for (int i = 0; i < good; i++)
        if (fps[i] == med)
          r = runs[i];
      const double period = 1e6 / r.fps;
      const double ideal = fmax(t.stages.h2d_us, fmax(t.stages.mlp_us, t.stages.d2h_us));
      printf("| %s | %u | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | "
             "%.2f | %s |\n",
             w->name, slots, r.fps, period, r.p50_us, r.p99_us, t.stages.h2d_us, t.stages.mlp_us,
             t.stages.d2h_us, ideal, ideal / period, t.ref_mlp_us, t.stages.mlp_us / t.ref_mlp_us,
             r.detail);
      fflush(stdout);
      g_string_append_printf(
          inside, "| %s | %u | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %" G_GUINT64_FORMAT " |\n",
          w->name, slots, r.h2d_us, r.mlp_us, r.d2h_us, r.submit_us, r.complete_us, r.handoff_us,
          r.staged);
    }
    if (timed) {
      printf("# %s MLP alone per path (µs):", w->name);
      for (int p = 0; p < PP_N_PATHS; p++)
        if (t.paths_us[p] >= 0)
          printf(" %s %.1f", pp_cuda_path_name(p), t.paths_us[p]);
      printf("; plain cuBLAS %.1f\n", t.ref_mlp_us);
    }
  }
  printf("\n# Inside the pipeline (element stats; GPU stages sampled 1 frame in 8, means):%s",
         inside->str);
  g_string_free(inside, TRUE);
  g_free(o.workloads), g_free(o.slots), g_free(o.completion), g_free(o.precision);
  return failures ? 1 : 0;
}
