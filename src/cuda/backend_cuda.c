/* The CUDA backend. Each slot owns a non-blocking stream, pinned host
 * staging for a frame and its result, and device buffers; the weights are
 * uploaded once and shared. A frame is, on its slot's stream only:
 *
 *   H2D copy → MLP kernels → D2H copy → completion (host function or event)
 *
 * The MLP's kernels are captured once per slot as a CUDA graph, so a frame
 * costs two copies, one graph launch and one completion call. Only the
 * kernels go in the graph (docs/PERFORMANCE.md, measured on the H100 host):
 * a graph with a host node took 37 µs to launch instead of 6, and copy
 * nodes re-pointed at each frame's pinned buffer made launches cost
 * 25-71 µs, growing with the frame, where a direct cudaMemcpyAsync of a
 * 6 MB frame costs 2.2 µs. Nothing runs on the default stream and nothing is
 * allocated or synchronised per frame. */
#include "backend_cuda.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "host_memory.h"
#include "stats.h"

/* Stage times are read back for one frame in this many: reading them costs
 * the consumer thread a few microseconds. */
#define TIMING_PERIOD 8

/* ---- errors ------------------------------------------------------------- */

int
pp_cuda_fail(char **msg, const char *call, cudaError_t err, const char *file, int line)
{
  const char *base = strrchr(file, '/');
  if (msg && !*msg)
    *msg = g_strdup_printf("%s failed: %s (%s) [%s:%d]", call, cudaGetErrorString(err),
                           cudaGetErrorName(err), base ? base + 1 : file, line);
  return -EIO;
}

int
pp_blas_fail(char **msg, const char *call, cublasStatus_t status, const char *file, int line)
{
  const char *base = strrchr(file, '/');
  if (msg && !*msg)
    *msg = g_strdup_printf("%s failed: %s [%s:%d]", call, cublasLtGetStatusString(status),
                           base ? base + 1 : file, line);
  return -EIO;
}

/* ---- context ------------------------------------------------------------- */

/* Makes the backend's context current on the calling thread: the primary
 * context of its device, or the shared one it was given. The runtime API
 * then runs everything in it. */
cudaError_t
cuda_bind_context(cuda_backend *b)
{
  if (!b->context)
    return cudaSetDevice(b->device);
  return b->ctx_set_current(b->context) == 0 ? cudaSuccess : cudaErrorDeviceUninitialized;
}

/* cuCtxSetCurrent and cuCtxGetDevice from the driver through the runtime, so
 * nothing links libcuda (a machine without a driver still loads us). */
static int
adopt_context(cuda_backend *b, void *context, char **msg)
{
  void *set_current = NULL, *get_device = NULL;
  enum cudaDriverEntryPointQueryResult found;
  CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", &set_current, 12000,
                                              cudaEnableDefault, &found));
  if (found == cudaDriverEntryPointSuccess)
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetDevice", &get_device, 12000,
                                                cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !set_current || !get_device) {
    *msg = g_strdup("the CUDA driver lacks cuCtxSetCurrent/cuCtxGetDevice");
    return -ENOSYS;
  }
  int device = -1;
  b->ctx_set_current = (int (*)(void *)) set_current;
  if (b->ctx_set_current(context) != 0 || ((int (*)(int *)) get_device)(&device) != 0) {
    *msg = g_strdup("cannot make the shared CUDA context current");
    return -EIO;
  }
  if (device != b->device) {
    *msg = g_strdup_printf("the pipeline's CUDA context is on GPU %d but device-id is %d; set "
                           "device-id=%d or give the elements upstream the same device",
                           device, b->device, device);
    return -ENODEV;
  }
  b->context = context;
  return 0;
}

/* ---- one frame ------------------------------------------------------------ */

/* Whether finish has nothing to do for the slot's current frame. */
bool
cuda_slot_free(const cuda_slot *s)
{
  return !s->staged_out && !s->timed;
}

static void CUDART_CB
host_done(void *data)
{
  /* Runs on CUDA's callback thread: no CUDA calls here. */
  cuda_slot *s = data;
  s->owner->base.complete(s->owner->base.complete_data, s->index, 0, NULL, cuda_slot_free(s));
}

/* A timing event, only on the frames whose stage times are read. */
static cudaError_t
mark(cuda_slot *s, cudaEvent_t event)
{
  return s->timed ? cudaEventRecord(event, s->stream) : cudaSuccess;
}

static int
enqueue_mlp(cuda_backend *b, cuda_slot *s, char **msg)
{
  if (!s->exec)
    return pp_gpu_mlp_run(b, s, PP_N_PATHS, s->stream, msg);
  CUDA_CHECK(cudaGraphLaunch(s->exec, s->stream));
  return 0;
}

static int
enqueue_completion(cuda_backend *b, cuda_slot *s, char **msg)
{
  if (b->completion == PP_COMPLETION_HOST_FUNC)
    CUDA_CHECK(cudaLaunchHostFunc(s->stream, host_done, s));
  else
    CUDA_CHECK(cudaEventRecord(s->ev_done, s->stream));
  return 0;
}

/* ---- graphs -------------------------------------------------------------- */

static void
drop_graph(cuda_slot *s)
{
  if (s->exec)
    cudaGraphExecDestroy(s->exec);
  s->exec = NULL;
}

/* Captures the MLP's kernels for this slot. A failure leaves the slot on
 * direct launches, which do the same work. */
static int
capture_graph(cuda_backend *b, cuda_slot *s, char **msg)
{
  cudaGraph_t graph = NULL;
  CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  char *reason = NULL;
  const int rc = pp_gpu_mlp_run(b, s, PP_N_PATHS, s->stream, &reason);
  const cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
  if (rc < 0) {
    if (graph)
      cudaGraphDestroy(graph);
    *msg = reason;
    return rc;
  }
  g_free(reason);
  CUDA_CHECK(end);
  const cudaError_t err = cudaGraphInstantiate(&s->exec, graph, 0);
  cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    s->exec = NULL;
    return pp_cuda_fail(msg, "cudaGraphInstantiate", err, __FILE__, __LINE__);
  }
  return 0;
}

/* ---- pp_backend_ops ----------------------------------------------------------- */

/* A frame already on the device: each plane copied into the slot's frame
 * at the layout's strides by a kernel (a few µs of device bandwidth for
 * 1080p NV12), so the captured graph reads it where it reads uploaded
 * frames, whatever pitch upstream allocated with. */
static cudaError_t
gather_device_planes(cuda_backend *b, cuda_slot *s, const pp_job *job)
{
  const pp_frame_layout *l = &b->layout;
  for (uint32_t i = 0; i < l->n_planes; i++) {
    const pp_plane *p = &l->planes[i];
    const cudaError_t err =
        pp_cuda_copy_2d(s->stream, (uint8_t *) s->d_in + p->offset, p->stride,
                        job->device_planes[i], job->device_pitch[i], p->row_bytes, p->rows);
    if (err != cudaSuccess)
      return err;
  }
  __atomic_add_fetch(&b->base.device_inputs, 1, __ATOMIC_RELAXED);
  return cudaSuccess;
}

static int
cuda_submit(pp_backend *base, unsigned index, const pp_job *job, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  cuda_slot *s = &b->slots[index];
  const int64_t t0 = pp_now_ns();
  CUDA_CHECK(cuda_bind_context(b));

  const void *src = job->input;
  if (job->input_on_device) {
    src = NULL;
  } else if (!job->input_pinned) {
    memcpy(s->staging_in, job->input, b->layout.frame_bytes);
    src = s->staging_in;
    __atomic_add_fetch(&b->base.staged_inputs, 1, __ATOMIC_RELAXED);
  }
  float *dst = job->output_pinned ? job->output : s->staging_out;
  s->staged_out = !job->output_pinned;
  s->timed = s->frames++ % b->timing_period == 0;

  const int64_t t1 = b->trace ? pp_now_ns() : 0;
  int rc = 0;
  cudaError_t err = mark(s, s->ev_start);
  if (err == cudaSuccess)
    err = src ? cudaMemcpyAsync(s->d_in, src, b->layout.frame_bytes, cudaMemcpyHostToDevice,
                                s->stream)
              : gather_device_planes(b, s, job);
  if (err == cudaSuccess)
    err = mark(s, s->ev_h2d);
  if (err != cudaSuccess)
    rc = pp_cuda_fail(msg, "uploading a frame", err, __FILE__, __LINE__);
  const int64_t t2 = b->trace ? pp_now_ns() : 0;
  if (rc == 0)
    rc = enqueue_mlp(b, s, msg);
  const int64_t t3 = b->trace ? pp_now_ns() : 0;
  if (rc == 0) {
    err = mark(s, s->ev_mlp);
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(dst, s->d_out, b->out_bytes, cudaMemcpyDeviceToHost, s->stream);
    if (err == cudaSuccess)
      err = mark(s, s->ev_d2h);
    if (err != cudaSuccess)
      rc = pp_cuda_fail(msg, "downloading a result", err, __FILE__, __LINE__);
  }
  if (rc == 0)
    rc = enqueue_completion(b, s, msg);
  if (b->trace) {
    const int64_t t4 = pp_now_ns();
    const int64_t marks[5] = { t0, t1, t2, t3, t4 };
    for (int i = 0; i < 4; i++)
      b->trace_us[i] += (marks[i + 1] - marks[i]) / 1000.0;
    b->trace_us[4] += (t4 - t0) / 1000.0;
    b->trace_frames++;
  }
  if (rc < 0) {
    /* Whatever part of the frame was queued finishes before we say no. */
    cudaStreamSynchronize(s->stream);
    return rc;
  }
  if (b->completion == PP_COMPLETION_EVENT_THREAD) {
    g_mutex_lock(&b->lock);
    s->submitted_ns = t0;
    g_queue_push_tail(&b->pending, GUINT_TO_POINTER(index));
    g_cond_broadcast(&b->wake);
    g_mutex_unlock(&b->lock);
  }
  return 0;
}

static int
cuda_finish(pp_backend *base, unsigned index, const pp_job *job, pp_stage_times *times)
{
  cuda_backend *b = (cuda_backend *) base;
  cuda_slot *s = &b->slots[index];
  if (s->staged_out)
    memcpy(job->output, s->staging_out, b->out_bytes);
  if (s->timed) {
    float h2d = -1, mlp = -1, d2h = -1, since = -1;
    if (cudaEventElapsedTime(&h2d, s->ev_start, s->ev_h2d) == cudaSuccess &&
        cudaEventElapsedTime(&mlp, s->ev_h2d, s->ev_mlp) == cudaSuccess &&
        cudaEventElapsedTime(&d2h, s->ev_mlp, s->ev_d2h) == cudaSuccess)
      *times = (pp_stage_times){ .h2d_us = h2d * 1000.0,
                                 .mlp_us = mlp * 1000.0,
                                 .d2h_us = d2h * 1000.0 };
    if (times->h2d_us >= 0 && b->anchor_ns &&
        cudaEventElapsedTime(&since, b->anchor, s->ev_start) == cudaSuccess) {
      times->h2d_start_ns = b->anchor_ns + (int64_t) (since * 1e6);
      times->mlp_start_ns = times->h2d_start_ns + (int64_t) (h2d * 1e6);
      times->d2h_start_ns = times->mlp_start_ns + (int64_t) (mlp * 1e6);
    }
  }
  return 0;
}

int
cuda_sync(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  cuda_bind_context(b);
  for (unsigned i = 0; i < b->n_slots; i++)
    cudaStreamSynchronize(b->slots[i].stream);
  g_mutex_lock(&b->lock);
  while (!g_queue_is_empty(&b->pending))
    g_cond_wait(&b->wake, &b->lock);
  g_mutex_unlock(&b->lock);
  return 0;
}

static int
cuda_poll(pp_backend *base, unsigned index, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  CUDA_CHECK(cuda_bind_context(b));
  const cudaError_t err = cudaStreamQuery(b->slots[index].stream);
  if (err == cudaSuccess || err == cudaErrorNotReady)
    return 0;
  return pp_cuda_fail(msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
}

static const char *
cuda_describe(pp_backend *base)
{
  return ((cuda_backend *) base)->description;
}

/* ---- configure ------------------------------------------------------------------ */

static void
free_slot(cuda_slot *s, size_t frame_bytes, size_t out_bytes)
{
  drop_graph(s);
  if (s->stream)
    cudaStreamDestroy(s->stream);
  cudaEvent_t *events[] = { &s->ev_start, &s->ev_h2d, &s->ev_mlp, &s->ev_d2h, &s->ev_done };
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++)
    if (*events[i])
      cudaEventDestroy(*events[i]);
  cudaFree(s->d_in);
  cudaFree(s->d_x);
  cudaFree(s->d_h[0]);
  cudaFree(s->d_h[1]);
  cudaFree(s->d_out);
  cudaFree(s->workspace);
  cuda_staging_free(s->staging_in, frame_bytes);
  cuda_staging_free(s->staging_out, out_bytes);
  memset(s, 0, sizeof *s);
}

static void
free_slots(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_slots; i++)
    free_slot(&b->slots[i], b->layout.frame_bytes, b->out_bytes);
  b->n_slots = 0;
  pp_gpu_mlp_unplan(b);
  cudaFree(b->d_koff);
  g_free(b->h_koff);
  b->d_koff = NULL;
  b->h_koff = NULL;
}

static int
alloc_slot(cuda_backend *b, cuda_slot *s, unsigned index, char **msg)
{
  const pp_frame_layout *l = &b->layout;
  s->owner = b;
  s->index = index;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  cudaEvent_t *timing[] = { &s->ev_start, &s->ev_h2d, &s->ev_mlp, &s->ev_d2h };
  for (size_t i = 0; i < G_N_ELEMENTS(timing); i++)
    CUDA_CHECK(cudaEventCreate(timing[i]));
  /* The completion waiter sleeps rather than spins on its event. */
  CUDA_CHECK(cudaEventCreateWithFlags(&s->ev_done, cudaEventDisableTiming | cudaEventBlockingSync));
  if (!(s->staging_in = cuda_staging_alloc(l->frame_bytes, msg)) ||
      !(s->staging_out = cuda_staging_alloc(b->out_bytes, msg)))
    return -ENOMEM;
  CUDA_CHECK(cudaMalloc(&s->d_in, l->frame_bytes));
  if (l->kind != PP_LAYOUT_TENSOR)
    CUDA_CHECK(cudaMalloc((void **) &s->d_x, (size_t) l->n * l->k * sizeof(float)));
  for (unsigned i = 0; i < 2 && i + 1 < b->n_layers; i++) {
    CUDA_CHECK(cudaMalloc((void **) &s->d_h[i], (size_t) l->n * b->ldh * sizeof(float)));
    s->h[i] = (pp_cuda_a){ .kind = PP_A_F32, .data = s->d_h[i], .ld = b->ldh };
  }
  CUDA_CHECK(cudaMalloc((void **) &s->d_out, b->out_bytes));
  CUDA_CHECK(cudaMalloc(&s->workspace, LT_WORKSPACE_BYTES));
  s->x = pp_cuda_a_for_layout(l, b->h_koff, s->d_in, b->d_koff);
  return 0;
}

/* Random frame bytes in slot 0, so timing never runs on zeros. */
static int
fill_random_frame(cuda_backend *b, char **msg)
{
  cuda_slot *s = &b->slots[0];
  GRand *rng = g_rand_new_with_seed(2026);
  if (b->layout.kind == PP_LAYOUT_TENSOR) {
    float *f = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes / sizeof(float); i++)
      f[i] = (float) g_rand_double_range(rng, -1, 1);
  } else {
    uint8_t *bytes = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes; i++)
      bytes[i] = (uint8_t) g_rand_int(rng);
  }
  g_rand_free(rng);
  CUDA_CHECK(cudaMemcpyAsync(s->d_in, s->staging_in, b->layout.frame_bytes, cudaMemcpyHostToDevice,
                             s->stream));
  CUDA_CHECK(cudaStreamSynchronize(s->stream));
  return 0;
}

/* PINGPONG_CUDA_TRACE: what one frame's launch costs the CPU here, back to
 * back and with the GPU idle in between, to set against what it costs in
 * the pipeline (printed at destroy). */
static void
probe_launch_cost(cuda_backend *b)
{
  cuda_slot *s = &b->slots[0];
  for (int idle = 0; idle < 2; idle++) {
    double total = 0;
    for (int i = 0; i < 32; i++) {
      const int64_t t0 = pp_now_ns();
      cudaError_t err = s->exec ? cudaGraphLaunch(s->exec, s->stream) : cudaSuccess;
      total += (pp_now_ns() - t0) / 1000.0;
      if (err != cudaSuccess || idle)
        cudaStreamSynchronize(s->stream);
    }
    cudaStreamSynchronize(s->stream);
    g_printerr("pingpong cuda probe: graph launch %.2f µs (%s) [%s]\n", total / 32,
               idle ? "GPU idle before each" : "back to back", b->description);
  }
}

static int
cuda_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
               unsigned n_slots, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  if (layout->k != model->k) {
    *msg = g_strdup_printf("frames give K=%u but the model takes %u", layout->k, model->k);
    return -EINVAL;
  }
  CUDA_CHECK(cuda_bind_context(b));
  cuda_sync(base);
  free_slots(b);
  int rc = 0;
  if (b->model_id != model->id && (rc = pp_gpu_mlp_load_weights(b, model, msg)) < 0)
    return rc;

  b->layout = *layout;
  b->out_bytes = (size_t) layout->n * b->o * sizeof(float);
  if (layout->kind != PP_LAYOUT_TENSOR) {
    b->h_koff = g_new(int32_t, layout->k);
    pp_cuda_k_offsets(layout, b->h_koff);
    CUDA_CHECK(cudaMalloc((void **) &b->d_koff, layout->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMemcpyAsync(b->d_koff, b->h_koff, layout->k * sizeof(int32_t),
                               cudaMemcpyHostToDevice, b->setup_stream));
    CUDA_CHECK(cudaStreamSynchronize(b->setup_stream));
  }
  for (unsigned i = 0; i < n_slots; i++) {
    b->n_slots = i + 1;
    if ((rc = alloc_slot(b, &b->slots[i], i, msg)) < 0)
      goto fail;
  }
  if ((rc = fill_random_frame(b, msg)) < 0)
    goto fail;
  if ((rc = pp_gpu_mlp_plan(b, msg)) < 0)
    goto fail;
  if ((rc = cuda_anchor_clock(b, msg)) < 0)
    goto fail;

  const bool graphs = b->use_graphs;
  for (unsigned i = 0; i < n_slots && graphs; i++) {
    char *why = NULL;
    if (capture_graph(b, &b->slots[i], &why) < 0) {
      g_warning("slot %u runs without a CUDA graph: %s", i, why);
      g_free(why);
    }
  }
  char kernels[96];
  pp_gpu_mlp_describe(b, kernels, sizeof kernels);
  g_snprintf(b->description, sizeof b->description, "%s, %s, %s%s", kernels,
             b->slots[0].x.kind == PP_A_U8_VEC4     ? "u8x4 loads"
             : b->slots[0].x.kind == PP_A_U8_GATHER ? "u8 gather"
                                                    : "f32 loads",
             b->completion == PP_COMPLETION_HOST_FUNC ? "host-func" : "event-thread",
             b->slots[0].exec ? ", graphs" : "");
  if (b->trace)
    probe_launch_cost(b);
  return 0;

fail:
  free_slots(b);
  return rc;
}

/* What open_device() and cuda_backend_new() set up, also on their error path. */
static void
free_backend(cuda_backend *b)
{
  if (b->lt)
    cublasLtDestroy(b->lt);
  if (b->anchor)
    cudaEventDestroy(b->anchor);
  if (b->anchor_spare)
    cudaEventDestroy(b->anchor_spare);
  if (b->setup_stream)
    cudaStreamDestroy(b->setup_stream);
  g_mutex_clear(&b->lock);
  g_cond_clear(&b->wake);
  g_free(b);
}

static void
cuda_destroy(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  if (b->trace && b->trace_frames) {
    const double n = b->trace_frames;
    g_printerr("pingpong cuda submit, mean µs over %" G_GUINT64_FORMAT " frames: staging %.2f, "
               "upload %.2f, MLP %.2f, download + completion %.2f, total %.2f [%s]\n",
               b->trace_frames, b->trace_us[0] / n, b->trace_us[1] / n, b->trace_us[2] / n,
               b->trace_us[3] / n, b->trace_us[4] / n, b->description);
  }
  cuda_bind_context(b);
  cuda_sync(base);
  g_mutex_lock(&b->lock);
  b->quit = true;
  g_cond_broadcast(&b->wake);
  g_mutex_unlock(&b->lock);
  if (b->waiter)
    g_thread_join(b->waiter);
  free_slots(b);
  pp_gpu_mlp_free_weights(b);
  free_backend(b);
}

static const pp_backend_ops cuda_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "cuda",
  .configure = cuda_configure,
  .submit = cuda_submit,
  .finish = cuda_finish,
  .sync = cuda_sync,
  .destroy = cuda_destroy,
  .poll = cuda_poll,
  .describe = cuda_describe,
};

static int
open_device(cuda_backend *b, int device, void *context, char **msg)
{
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    *msg = g_strdup_printf("no CUDA device: %s",
                           err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return -ENODEV;
  }
  if (device < 0 || device >= count) {
    *msg = g_strdup_printf("device-id is %d but there %s %d CUDA device%s", device,
                           count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
    return -ENODEV;
  }
  if (context) {
    const int rc = adopt_context(b, context, msg);
    if (rc < 0)
      return rc;
  } else {
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaFree(0)); /* creates the context now, not on the first frame */
  }
  CUDA_CHECK(cudaStreamCreateWithFlags(&b->setup_stream, cudaStreamNonBlocking));
  BLAS_CHECK(cublasLtCreate(&b->lt));
  return 0;
}

int
cuda_device_count(void)
{
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

int
cuda_backend_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  cuda_backend *b = g_new0(cuda_backend, 1);
  b->base.ops = &cuda_ops;
  b->device = opts->device_id;
  b->precision = opts->precision;
  b->completion = opts->completion;
  const char *graphs = g_getenv("PINGPONG_CUDA_GRAPHS");
  b->use_graphs = !graphs || strcmp(graphs, "0") != 0;
  b->trace = g_strcmp0(g_getenv("PINGPONG_CUDA_TRACE"), "1") == 0;
  b->timing_period = opts->time_every_frame ? 1 : TIMING_PERIOD;
  g_mutex_init(&b->lock);
  g_cond_init(&b->wake);
  g_queue_init(&b->pending);
  const int rc = open_device(b, opts->device_id, opts->cuda_context, msg);
  if (rc < 0) {
    free_backend(b);
    return rc;
  }
  if (b->completion == PP_COMPLETION_EVENT_THREAD)
    b->waiter = g_thread_new("pp-cuda-wait", cuda_waiter_main, b);
  *out = &b->base;
  return 0;
}
