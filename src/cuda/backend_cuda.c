/* The CUDA backend. Each slot owns a non-blocking stream, pinned host
 * staging for a frame and its result, and device buffers; the weights are
 * uploaded once and shared. A frame is, on its slot's stream only:
 *
 *   H2D copy → MLP kernels → D2H copy → completion (host function or event)
 *
 * (a small frame read in place is one kernel that raises its own done
 * signal instead of the event).
 *
 * The MLP's kernels are captured once per slot as a CUDA graph, so a frame
 * costs two copies, one graph launch and one completion call. Only the
 * kernels go in the graph (docs/PERFORMANCE.md, measured on the H100 host):
 * a graph with a host node took 37 µs to launch instead of 6, and copy
 * nodes re-pointed at each frame's pinned buffer made launches cost
 * 25-71 µs, growing with the frame, where a direct cudaMemcpyAsync of a
 * 6 MB frame costs 2.2 µs. A large frame may instead go in chunks whose
 * copies and kernels overlap, a small one be read in place (chunks.c).
 * Nothing runs on the default stream and nothing is allocated or
 * synchronised per frame. Setting the slots up is configure.c's. */
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
enqueue_completion(cuda_backend *b, cuda_slot *s, cudaStream_t stream, char **msg)
{
  if (s->signal_seq)
    return 0; /* the frame's kernel says it is done itself */
  if (b->completion == PP_COMPLETION_HOST_FUNC)
    CUDA_CHECK(cudaLaunchHostFunc(stream, host_done, s));
  else
    CUDA_CHECK(cudaEventRecord(s->ev_done, stream));
  return 0;
}

/* ---- graphs -------------------------------------------------------------- */

int
cuda_capture(cuda_backend *b, cuda_slot *s, cuda_graph_part part, cudaGraphExec_t *exec, char **msg)
{
  cudaGraph_t graph = NULL;
  CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  char *reason = NULL;
  const int rc = part.between
                     ? pp_gpu_mlp_run_between(b, s, s->stream, &reason)
                     : pp_gpu_mlp_run_rows(b, s, PP_N_PATHS, s->stream, part.row0, part.n, &reason);
  const cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
  if (rc < 0) {
    if (graph)
      cudaGraphDestroy(graph);
    *msg = reason;
    return rc;
  }
  g_free(reason);
  CUDA_CHECK(end);
  const cudaError_t err = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    *exec = NULL;
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

cudaStream_t
cuda_last_stream(const cuda_backend *b, const cuda_slot *s, const void *src)
{
  return src && b->chunks > 1 ? s->copy_out : s->stream;
}

/* The done signal a frame read in place raises, or 0 for its event: when
 * one kernel does the whole frame, the waiter polls the word it writes
 * instead of an event recorded after it, which saves a driver call on
 * each side of a paced frame (docs/PERFORMANCE.md). Not on frames whose
 * stage times are read: those come from the events around the kernel. */
static unsigned
next_signal(cuda_backend *b, cuda_slot *s)
{
  if (!b->use_signal || s->timed || b->completion == PP_COMPLETION_HOST_FUNC ||
      !pp_gpu_mlp_can_signal(b))
    return 0;
  if (++s->last_seq == 0) /* 0 means no signal */
    s->last_seq = 1;
  return s->last_seq;
}

/* Zero-copy: one kernel reads the frame where it lies and writes the result
 * where it goes. Its time counts as the MLP's; the copies take none. */
static int
enqueue_in_place(cuda_backend *b, cuda_slot *s, const void *src, float *dst, char **msg)
{
  s->signal_seq = next_signal(b, s);
  CUDA_CHECK(mark(s, s->ev_start));
  CUDA_CHECK(mark(s, s->ev_h2d));
  const int rc = pp_gpu_mlp_run_in_place(b, s, src, dst, s->stream, msg);
  if (rc < 0)
    return rc;
  CUDA_CHECK(mark(s, s->ev_mlp));
  CUDA_CHECK(mark(s, s->ev_d2h));
  return 0;
}

int
cuda_enqueue_frame(cuda_backend *b, cuda_slot *s, const void *src, const pp_job *job, float *dst,
                   char **msg)
{
  if (src && b->zero_copy)
    return enqueue_in_place(b, s, src, dst, msg);
  if (src && b->chunks > 1)
    return cuda_enqueue_chunks(b, s, src, dst, msg);
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
  if (b->trace) {
    b->trace_us[1] += (t2 - t1) / 1000.0;
    b->trace_us[2] += (t3 - t2) / 1000.0;
    b->trace_mark_ns = t3;
  }
  return rc;
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
  s->signal_seq = 0;
  s->timed = s->frames++ % b->timing_period == 0;
  const int64_t t1 = b->trace ? pp_now_ns() : 0;
  b->trace_mark_ns = t1;

  int rc = cuda_enqueue_frame(b, s, src, job, dst, msg);
  if (rc == 0)
    rc = enqueue_completion(b, s, cuda_last_stream(b, s, src), msg);
  if (b->trace) {
    /* Staging, and whatever enqueue_frame did not split into upload and
     * MLP (all of a chunked frame) counts as download + completion. */
    const int64_t t4 = pp_now_ns();
    b->trace_us[0] += (t1 - t0) / 1000.0;
    b->trace_us[3] += (t4 - b->trace_mark_ns) / 1000.0;
    b->trace_us[4] += (t4 - t0) / 1000.0;
    b->trace_frames++;
  }
  if (rc < 0) {
    /* Whatever part of the frame was queued finishes before we say no. */
    cuda_slot_sync(s);
    return rc;
  }
  if (b->completion != PP_COMPLETION_HOST_FUNC) {
    g_mutex_lock(&b->lock);
    s->submitted_ns = t0;
    g_queue_push_tail(&b->pending, GUINT_TO_POINTER(index));
    if (b->waiter)
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

void
cuda_slot_sync(cuda_slot *s)
{
  cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++)
    if (streams[i])
      cudaStreamSynchronize(streams[i]);
}

int
cuda_sync(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  cuda_bind_context(b);
  for (unsigned i = 0; i < b->n_slots; i++)
    cuda_slot_sync(&b->slots[i]);
  if (b->completion == PP_COMPLETION_CONSUMER)
    cuda_report_pending(b);
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
  const cuda_slot *s = &b->slots[index];
  const cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++) {
    const cudaError_t err = cudaStreamQuery(streams[i]);
    if (err != cudaSuccess && err != cudaErrorNotReady)
      return pp_cuda_fail(msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  }
  return 0;
}

static const char *
cuda_describe(pp_backend *base)
{
  return ((cuda_backend *) base)->description;
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
  cuda_free_slots(b);
  pp_gpu_mlp_free_weights(b);
  free_backend(b);
}

/* An empty kernel on the setup stream, looked at once: a thread that slept
 * 33 ms pays 54 µs for its next launch and event record, 7 when it made a
 * launch of its own 200 µs before (tools/cuda-api-cost, H100). */
static void
cuda_warm(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  if (cuda_bind_context(b) == cudaSuccess && pp_cuda_spin(b->setup_stream, 0) == cudaSuccess)
    cudaStreamQuery(b->setup_stream);
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
  .warm = cuda_warm,
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
  int host_pointers = 0;
  CUDA_CHECK(
      cudaDeviceGetAttribute(&host_pointers, cudaDevAttrCanUseHostPointerForRegisteredMem, device));
  b->host_pointers = host_pointers != 0;
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
  b->ops = cuda_ops;
  if (opts->completion == PP_COMPLETION_CONSUMER)
    b->ops.wait = cuda_wait;
  b->base.ops = &b->ops;
  b->device = opts->device_id;
  b->precision = opts->precision;
  /* Unresolved (pp_completion_resolve), the one that suits any slots. */
  b->completion =
      opts->completion == PP_COMPLETION_AUTO ? PP_COMPLETION_EVENT_THREAD : opts->completion;
  const char *graphs = g_getenv("PINGPONG_CUDA_GRAPHS");
  b->use_graphs = !graphs || strcmp(graphs, "0") != 0;
  b->use_signal = g_strcmp0(g_getenv("PINGPONG_CUDA_SIGNAL"), "0") != 0;
  b->trace = g_strcmp0(g_getenv("PINGPONG_CUDA_TRACE"), "1") == 0;
  b->quick_tune = g_strcmp0(g_getenv("PINGPONG_CUDA_TUNE"), "quick") == 0;
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
